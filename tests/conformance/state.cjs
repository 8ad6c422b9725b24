#!/usr/bin/env node
// Drives `agui-translate serve CLI` with the official @ag-ui/client
// HttpAgent (1.0, then 0.0.59, CopilotKit's pin) holding a state: the
// model changes it through serve's own tool, the run streams the new state
// as STATE_SNAPSHOT, and the agent's state is the model's when the run has
// ended (either client throws on an event its schema or its verifier
// rejects). The call is shown by the tool's own name with its result, and
// is not pending.
//
//   node state.cjs STATE CLI=URL_1.0,URL_0.0 ...
//
// Each server's stand-in CLI replays the real CLI calling the state's tool
// with {"state": STATE}. Prints what failed and exits 1, or prints OK.
"use strict";
const clients = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent };

const [want, ...servers] = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

// JSON with the keys of every object sorted: equal values, equal text.
const canon = (v) =>
  JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));

async function one(cli, version, url) {
  const who = `${cli} ${version}`;
  const agent = new clients[version]({ url, threadId: `thread-state-${cli}-${version}`, initialState: { branch: "main" } });
  agent.addMessage({ id: "user-1", role: "user", content: "Use dev." });
  const seen = [];
  await agent.runAgent({ runId: `state-${cli}-${version}` }, { onEvent: ({ event }) => seen.push(event) });
  const snapshots = seen.filter((e) => e.type === "STATE_SNAPSHOT");
  check(snapshots.length === 1 && canon(snapshots[0].snapshot) === canon(JSON.parse(want)), `${who}: one STATE_SNAPSHOT of the model's state: ${JSON.stringify(snapshots)}`);
  const end = seen[seen.length - 1];
  check(end.type === "RUN_FINISHED", `${who}: the run finishes: ${JSON.stringify(end)}`);
  check(seen.indexOf(snapshots[0]) < seen.indexOf(end), `${who}: the state comes before the run's end`);
  const pending = end.outcome && end.outcome.pendingToolCallIds;
  check(!pending || pending.length === 0, `${who}: nothing is pending: ${JSON.stringify(end)}`);
  check(canon(agent.state) === canon(JSON.parse(want)), `${who}: the agent's state is the model's: ${JSON.stringify(agent.state)}`);
  const calls = agent.messages.flatMap((m) => m.toolCalls || []).filter((c) => c.function.name !== "tool_search");
  const call = calls[0];
  check(calls.length === 1 && call.function.name === "ag_ui_update_state", `${who}: the call is shown by the tool's name: ${JSON.stringify(agent.messages)}`);
  const result = call && agent.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  check(result && JSON.stringify(result.content).includes("state is now"), `${who}: with the result the CLI got: ${JSON.stringify(result)}`);
}

async function main() {
  for (const arg of servers) {
    const [cli, urls] = arg.split("=");
    const [one0, zero0] = urls.split(",");
    await one(cli, "1.0", one0);
    await one(cli, "0.0.59", zero0);
  }
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
