#!/usr/bin/env node
// Feeds one @ag-ui/client HttpAgent two consecutive runs of one resumed
// thread, as a front end does that keeps one agent per thread, and checks
// the message list it ends with: every message comes from one run only, and
// every message of the second run is there; and the two runs' ids differ.
//
//   node resume.cjs FIRST.sse SECOND.sse [FIRST.sse SECOND.sse]...
//
// Each file is one run's output in `--format sse`, served as the response
// body of one request. Prints one line per pair (OK or FAIL with the
// reasons) and exits 1 if any pair fails.
"use strict";
const fs = require("fs");
const client = require("@ag-ui/client");

// The ids an event names, and which of them start a message of its own.
function idsOf(ev) {
  const ids = [];
  for (const key of ["messageId", "toolCallId", "parentMessageId"]) {
    if (typeof ev[key] === "string") ids.push(ev[key]);
  }
  return ids;
}

function startsMessage(ev) {
  switch (ev.type) {
    case "TEXT_MESSAGE_START":
    case "TEXT_MESSAGE_CHUNK":
    case "REASONING_MESSAGE_START":
      return ev.messageId;
    case "TOOL_CALL_RESULT":
      return ev.messageId;
    case "TOOL_CALL_START":
      return ev.toolCallId;
    default:
      return undefined;
  }
}

async function pair(first, second) {
  const bodies = [fs.readFileSync(first, "utf8"), fs.readFileSync(second, "utf8")];
  let served = 0;
  const agent = new client.HttpAgent({
    url: "http://agent.invalid/run",
    fetch: async () => {
      const body = bodies[served++];
      return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
    },
  });
  // Which runs (0, 1) name each id.
  const runsOf = new Map();
  const started = [new Set(), new Set()];
  const runIds = [undefined, undefined];
  const problems = [];
  for (let run = 0; run < 2; run++) {
    const subscriber = {
      onEvent({ event }) {
        for (const id of idsOf(event)) {
          if (!runsOf.has(id)) runsOf.set(id, new Set());
          runsOf.get(id).add(run);
        }
        const id = startsMessage(event);
        if (id !== undefined) started[run].add(id);
        if (event.type === "RUN_STARTED") runIds[run] = event.runId;
      },
    };
    try {
      await agent.runAgent({}, subscriber);
    } catch (e) {
      problems.push(`run ${run + 1} failed in the client: ${e.message || e}`);
    }
  }
  const present = new Set();
  for (const m of agent.messages) {
    const ids = [m.id, ...(m.toolCalls || []).map((c) => c.id)];
    if (m.toolCallId) ids.push(m.toolCallId);
    const runs = new Set();
    for (const id of ids) {
      present.add(id);
      for (const r of runsOf.get(id) || []) runs.add(r);
    }
    if (runs.size > 1) {
      problems.push(`message ${m.id} (${m.role}) mixes both runs: ${JSON.stringify(m).slice(0, 200)}`);
    }
  }
  for (const id of started[1]) {
    if (!present.has(id)) problems.push(`the second run's message ${id} is missing`);
  }
  if (started[1].size === 0) problems.push("the second run has no message");
  if (runIds[0] === runIds[1]) problems.push(`both runs are runId ${JSON.stringify(runIds[0])}`);
  return problems;
}

(async () => {
  const files = process.argv.slice(2);
  let failed = 0;
  for (let i = 0; i + 1 < files.length; i += 2) {
    const problems = await pair(files[i], files[i + 1]);
    if (problems.length === 0) {
      console.log(`OK ${files[i]} ${files[i + 1]}`);
    } else {
      failed++;
      console.log(`FAIL ${files[i]} ${files[i + 1]}: ${problems.slice(0, 5).join(" | ")}`);
    }
  }
  console.log(`${files.length / 2 - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
