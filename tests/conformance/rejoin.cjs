#!/usr/bin/env node
// A page reloaded mid-run, with the official @ag-ui/client HttpAgent (1.0,
// or 0.0.59, CopilotKit's pin, with the client given as 0.0): a
// run is aborted while the CLI still writes (the page's connection closes),
// and a fresh agent on the same threadId that sends no message rejoins it
// within the server's rejoin grace: it gets the run from its RUN_STARTED to
// its one RUN_FINISHED, the whole answer, through the client's own
// enforceEvents, transformChunks and verifyEvents, and the events it saw pass
// them again on their own.
//
//   node rejoin.cjs URL TOKEN GATE [1.0|0.0]
//
// The CLI behind URL writes the start of its answer and waits for the file
// GATE to exist before it writes the rest. Prints what failed and exits 1,
// or prints OK.
"use strict";
const fs = require("fs");
const { from, lastValueFrom } = require("rxjs");
const { toArray } = require("rxjs/operators");
const [url, token, gate, release = "1.0"] = process.argv.slice(2);
const client = require(release === "0.0" ? "@ag-ui/client-0.0" : "@ag-ui/client");
const headers = { Authorization: `Bearer ${token}` };
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const answer = (messages) =>
  messages.filter((m) => m.role === "assistant" && typeof m.content === "string").map((m) => m.content).join("");

async function main() {
  // The page sends its message and is reloaded once the answer has begun.
  const page = new client.HttpAgent({ url, threadId: "thread-reload", headers });
  page.addMessage({ id: "user-reload", role: "user", content: "Say hello in several languages." });
  let begun;
  const begunP = new Promise((r) => (begun = r));
  const first = [];
  const run = page
    .runAgent(
      { runId: "run-reload" },
      {
        onEvent: ({ event }) => {
          first.push(event);
          if (event.type === "TEXT_MESSAGE_CONTENT" && /Héllo/.test(event.delta)) begun();
        },
      },
    )
    .catch(() => {});
  await begunP;
  page.abortRun();
  await run;
  check(!first.some((e) => e.type === "RUN_FINISHED"), "the first page saw the run finish");
  await sleep(300);

  // The reloaded page: a fresh agent, no message.
  const back = new client.HttpAgent({ url, threadId: "thread-reload", headers });
  const seen = [];
  let started;
  const startedP = new Promise((r) => (started = r));
  const rejoined = back.runAgent(
    { runId: "run-back" },
    {
      onEvent: ({ event }) => {
        seen.push(event);
        if (event.type === "RUN_STARTED") started();
      },
    },
  );
  await startedP;
  fs.writeFileSync(gate, "");
  await rejoined;

  const types = seen.map((e) => e.type);
  check(types[0] === "RUN_STARTED" && seen[0].runId === "run-reload", `the run's own RUN_STARTED first: ${JSON.stringify(seen[0])}`);
  check(types.filter((t) => t === "RUN_FINISHED").length === 1, `one RUN_FINISHED: ${types}`);
  check(types[types.length - 1] === "RUN_FINISHED", `RUN_FINISHED last: ${types}`);
  check(!types.includes("RUN_ERROR"), `no RUN_ERROR: ${types}`);
  const text = answer(back.messages);
  check(text.startsWith("Héllo wörld") && text.endsWith("🇫🇷."), `the whole answer: ${JSON.stringify(back.messages)}`);
  // The events the rejoined agent saw, through the official checks again.
  try {
    const out = await lastValueFrom(
      // 0.0.59 has no enforceEvents: its transformChunks and verifyEvents.
      from(seen).pipe(...(client.enforceEvents ? [client.enforceEvents()] : []), client.transformChunks(), client.verifyEvents(), toArray()),
    );
    check(out.length > 0, "the verifier passed no event");
  } catch (e) {
    problems.push(`the verifier: ${e.message || e}`);
  }
}

main().then(
  () => {
    if (problems.length) {
      console.log(problems.join("\n"));
      process.exit(1);
    }
    console.log("OK");
  },
  (e) => {
    console.log(`failed: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
