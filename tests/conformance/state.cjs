// serve with the page's state, driven by the official 1.0 HttpAgent and
// the 0.0.59 one (CopilotKit's pin), for each CLI that takes the state's
// tool, by each of its routes (Copilot CLI and OpenCode in their JSON modes
// and over ACP, named copilot-acp and opencode-acp): the page sends a
// state, the
// model changes it through serve's own tool, the run streams the new state
// as STATE_SNAPSHOT, and the agent's state is the model's when the run has
// ended (either client throws on an event its schema or its verifier
// rejects). The call is shown by the tool's own name with its result, and
// is not pending. What the run used is in the agent's state too, under
// "agui-translate", and not in the state the thread keeps (STATE_FILE_1.0,
// STATE_FILE_0.0).
//
//   node state.cjs STATE CLI=URL_1.0,URL_0.0,STATE_FILE_1.0,STATE_FILE_0.0 ...
//
// Each server's stand-in CLI replays the real CLI calling the state's tool
// with {"state": STATE}. Prints what failed and exits 1, or prints OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const fs = require("fs");
const clients = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent };

const [want, ...servers] = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

// JSON with the keys of every object sorted: equal values, equal text.
const canon = (v) =>
  JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));

// The page's own part of a state: without what the run used.
const own = (state) => {
  const { "agui-translate": _, ...rest } = state;
  return canon(rest);
};

async function one(cli, version, url, stateFile) {
  const who = `${cli} ${version}`;
  const agent = new clients[version]({ url, threadId: `thread-state-${cli}-${version}`, initialState: { branch: "main" } });
  agent.addMessage({ id: "user-1", role: "user", content: "Use dev." });
  const seen = [];
  await agent.runAgent({ runId: `state-${cli}-${version}` }, { onEvent: ({ event }) => seen.push(event) });
  const snapshots = seen.filter((e) => e.type === "STATE_SNAPSHOT");
  const owns = snapshots.map((e) => own(e.snapshot)).join(" ");
  check(owns === `${canon({ branch: "main" })} ${canon(JSON.parse(want))}`, `${who}: the page's state, then the model's: ${JSON.stringify(snapshots)}`);
  check(snapshots.every((e) => e.snapshot["agui-translate"]), `${who}: each with what the run used: ${JSON.stringify(snapshots)}`);
  const end = seen[seen.length - 1];
  check(end.type === "RUN_FINISHED", `${who}: the run finishes: ${JSON.stringify(end)}`);
  check(seen.indexOf(snapshots[snapshots.length - 1]) < seen.indexOf(end), `${who}: the state comes before the run's end`);
  const last = seen[seen.length - 2];
  check(last && last.type === "STATE_DELTA", `${who}: what the run used, updated just before the run's end: ${JSON.stringify(last)}`);
  const pending = end.outcome && end.outcome.pendingToolCallIds;
  check(!pending || pending.length === 0, `${who}: nothing is pending: ${JSON.stringify(end)}`);
  check(own(agent.state) === canon(JSON.parse(want)), `${who}: the agent's state is the model's: ${JSON.stringify(agent.state)}`);
  const info = agent.state["agui-translate"] || {};
  check(info.approval === "default" && typeof info.cwd === "string", `${who}: what the run used: ${JSON.stringify(info)}`);
  check(Array.isArray(info.usage), `${who}: with the run's usage: ${JSON.stringify(info)}`);
  // (0.0.59 takes no `usage` in its RUN_FINISHED.)
  check(!end.usage || canon(info.usage) === canon(end.usage), `${who}: the usage the run finished with: ${JSON.stringify(end)}`);
  const kept = fs.readFileSync(stateFile, "utf8");
  check(canon(JSON.parse(kept)) === canon(JSON.parse(want)), `${who}: the thread keeps the page's state alone: ${kept}`);
  const calls = agent.messages.flatMap((m) => m.toolCalls || []).filter((c) => c.function.name !== "tool_search");
  const call = calls[0];
  check(calls.length === 1 && call.function.name === "ag_ui_update_state", `${who}: the call is shown by the tool's name: ${JSON.stringify(agent.messages)}`);
  const result = call && agent.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  check(result && JSON.stringify(result.content).includes("state is now"), `${who}: with the result the CLI got: ${JSON.stringify(result)}`);
}

async function main() {
  for (const arg of servers) {
    const eq = arg.indexOf("=");
    const [cli, rest] = [arg.slice(0, eq), arg.slice(eq + 1)];
    const [one0, zero0, file0, file1] = rest.split(",");
    await one(cli, "1.0", one0, file0);
    await one(cli, "0.0.59", zero0, file1);
  }
  report(problems);
}

run(main);
