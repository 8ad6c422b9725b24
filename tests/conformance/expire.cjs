#!/usr/bin/env node
// Drives `agui-translate serve claude -- --approval ask --approval-timeout
// SHORT` with the official @ag-ui/client 1.0 HttpAgent, as a page whose
// person walked away does: a run ends with an interrupt, its `expiresAt`
// passes, the agent refuses anything but a cancel of it, the cancel is a
// run that finishes (so the agent lets go of the interrupt), and the next
// message on the thread runs.
//
//   node expire.cjs URL
//
// Prints what failed and exits 1, or prints OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const { HttpAgent } = require("@ag-ui/client");

const [url] = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const a = new HttpAgent({ url, threadId: "thread-expire" });
  a.addMessage({ id: "user-1", role: "user", content: "List the files." });
  await a.runAgent({ runId: "expire-1" });
  const pending = a.pendingInterrupts;
  check(pending.length === 1, `one pending interrupt: ${JSON.stringify(pending)}`);
  const it = pending[0];
  const expires = Date.parse(it.expiresAt);
  check(Number.isFinite(expires), `the interrupt says when it expires: ${JSON.stringify(it)}`);
  // Past its expiry, and the server's reaping of the run.
  await sleep(Math.max(0, expires - Date.now()) + 1000);

  // The agent itself refuses to approve an expired interrupt.
  let refused = null;
  try {
    await a.runAgent({ runId: "expire-2", resume: [{ interruptId: it.id, status: "resolved", payload: { approved: true } }] });
  } catch (e) {
    refused = e;
  }
  check(refused && /expired/.test(String(refused)), `the agent refuses to approve an expired interrupt: ${refused}`);

  const cancelled = [];
  await a.runAgent(
    { runId: "expire-3", resume: [{ interruptId: it.id, status: "cancelled" }] },
    { onEvent: ({ event }) => cancelled.push(event) },
  );
  const types = cancelled.map((e) => e.type).join(",");
  check(types === "RUN_STARTED,RUN_FINISHED", `the cancel is a run that finishes: ${types}`);
  const end = cancelled[cancelled.length - 1];
  check(end && (!end.outcome || end.outcome.type === "success"), `it finishes with success: ${JSON.stringify(end)}`);
  check(a.pendingInterrupts.length === 0, `nothing pending after the cancel: ${JSON.stringify(a.pendingInterrupts)}`);

  // The thread is usable again.
  a.addMessage({ id: "user-2", role: "user", content: "List them again." });
  const next = [];
  await a.runAgent({ runId: "expire-4" }, { onEvent: ({ event }) => next.push(event) });
  check(next.length > 0 && next[0].type === "RUN_STARTED" && next[0].runId === "expire-4", `the next message runs: ${JSON.stringify(next[0])}`);
  check(next[next.length - 1].type === "RUN_FINISHED", `and its run finishes: ${JSON.stringify(next[next.length - 1])}`);

  report(problems);
}

run(main);
