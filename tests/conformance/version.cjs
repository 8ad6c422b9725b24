#!/usr/bin/env node
// Drives `agui-translate serve` (started with no --agui-version) with the
// official HttpAgent of each AG-UI release: the 0.0.59 one that
// CopilotKit's runtime pins, which sends no `protocolVersion` and refuses
// the 1.0 shapes, and the 1.0 one, which sends `protocolVersion`. Each must
// complete a run with a tool result, the 1.0 one with its 1.0 shape.
//
//   node version.cjs URL
//
// Prints what failed and exits 1, or prints OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

async function turn(pkg, threadId) {
  const { HttpAgent } = require(pkg);
  const a = new HttpAgent({ url: process.argv[2], threadId });
  a.addMessage({ id: `${threadId}-user`, role: "user", content: "Start a subagent" });
  const seen = [];
  let error = null;
  try {
    await a.runAgent({ runId: `${threadId}-run` }, { onEvent: ({ event }) => seen.push(event) });
  } catch (e) {
    error = e;
  }
  return { seen, error, messages: a.messages };
}

async function main() {
  const old = await turn("@ag-ui/client-0.0", "thread-0");
  check(old.error === null, `0.0.59: the run failed: ${old.error}`);
  const oldResults = old.seen.filter((e) => e.type === "TOOL_CALL_RESULT");
  check(oldResults.length > 0, "0.0.59: no TOOL_CALL_RESULT");
  check(oldResults.every((e) => typeof e.content === "string"), "0.0.59: a result's content is not text");
  check(old.seen.some((e) => e.type === "RUN_FINISHED"), "0.0.59: no RUN_FINISHED");
  check(old.messages.some((m) => m.role === "tool"), "0.0.59: no tool message");

  const now = await turn("@ag-ui/client", "thread-1");
  check(now.error === null, `1.0: the run failed: ${now.error}`);
  const results = now.seen.filter((e) => e.type === "TOOL_CALL_RESULT");
  check(results.some((e) => Array.isArray(e.content)), "1.0: no result with content parts (the 1.0 shape)");
  check(now.seen.some((e) => e.type === "RUN_FINISHED"), "1.0: no RUN_FINISHED");

  report(problems);
}

run(main);
