#!/usr/bin/env node
// Drives `agui-translate serve claude` with the official @ag-ui/client
// HttpAgent (1.0, then 0.0.59, CopilotKit's pin) holding a state: the
// model changes it through serve's own tool, the run streams the new state
// as STATE_SNAPSHOT, and the agent's state is the model's when the run has
// ended (either client throws on an event its schema or its verifier
// rejects). The call is shown with its result and is not pending. What the
// run used is in the agent's state too, under "agui-translate", and not in
// the state the thread keeps (STATE_FILE_1.0, STATE_FILE_0.0).
//
//   node state.cjs URL_1.0 URL_0.0 STATE_FILE_1.0 STATE_FILE_0.0
//
// Each server's stand-in CLI replays Claude Code calling the state's tool
// with {"state": {"branch": "dev"}}. Prints what failed and exits 1, or
// prints OK.
"use strict";
const fs = require("fs");
const clients = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent };

const args = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

// JSON with the keys of each object in order, to compare values.
const canonical = (v) =>
  JSON.stringify(v, (_, x) =>
    x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x,
  );

// The page's own part of a state: without what the run used.
const own = (state) => {
  const { "agui-translate": _, ...rest } = state;
  return JSON.stringify(rest);
};

async function one(version, url, stateFile) {
  const agent = new clients[version]({ url, threadId: `thread-state-${version}`, initialState: { branch: "main" } });
  agent.addMessage({ id: "user-1", role: "user", content: "Use dev." });
  const seen = [];
  await agent.runAgent({ runId: `state-${version}` }, { onEvent: ({ event }) => seen.push(event) });
  const snapshots = seen.filter((e) => e.type === "STATE_SNAPSHOT");
  const owns = snapshots.map((e) => own(e.snapshot)).join(" ");
  check(owns === '{"branch":"main"} {"branch":"dev"} {"branch":"dev"}', `${version}: the page's state, then the model's: ${JSON.stringify(snapshots)}`);
  check(snapshots.every((e) => e.snapshot["agui-translate"]), `${version}: each with what the run used: ${JSON.stringify(snapshots)}`);
  const end = seen[seen.length - 1];
  check(end.type === "RUN_FINISHED", `${version}: the run finishes: ${JSON.stringify(end)}`);
  check(seen.indexOf(snapshots[2]) === seen.length - 2, `${version}: the last state comes just before the run's end`);
  const pending = end.outcome && end.outcome.pendingToolCallIds;
  check(!pending || pending.length === 0, `${version}: nothing is pending: ${JSON.stringify(end)}`);
  check(own(agent.state) === '{"branch":"dev"}', `${version}: the agent's state is the model's: ${JSON.stringify(agent.state)}`);
  const info = agent.state["agui-translate"] || {};
  check(info.approval === "default" && typeof info.cwd === "string", `${version}: what the run used: ${JSON.stringify(info)}`);
  check(Array.isArray(info.usage) && info.usage.length > 0, `${version}: with the run's usage: ${JSON.stringify(info)}`);
  // (0.0.59 takes no `usage` in its RUN_FINISHED.)
  check(!end.usage || canonical(info.usage) === canonical(end.usage), `${version}: the usage the run finished with: ${JSON.stringify(end)}`);
  const kept = fs.readFileSync(stateFile, "utf8");
  check(kept === '{"branch":"dev"}', `${version}: the thread keeps the page's state alone: ${kept}`);
  const call = agent.messages.flatMap((m) => m.toolCalls || [])[0];
  check(call && call.function.name === "mcp__page__ag_ui_update_state", `${version}: the call is shown: ${JSON.stringify(agent.messages)}`);
  const result = call && agent.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  check(result && JSON.stringify(result.content).includes("state is now"), `${version}: with the result the CLI got: ${JSON.stringify(result)}`);
}

async function main() {
  await one("1.0", args[0], args[2]);
  await one("0.0.59", args[1], args[3]);
  if (problems.length) {
    console.log(`FAIL ${problems.join("\nFAIL ")}`);
    process.exit(1);
  }
  console.log("OK");
}

main().catch((e) => {
  console.log(`FAIL ${e.stack || e}`);
  process.exit(1);
});
