#!/usr/bin/env node
// Drives `agui-translate serve claude` (no option) with CopilotKit's own
// run handler (@copilotkit/core 1.75: CopilotKitCore.runAgent) and a tool
// of the page's registered as `useFrontendTool` registers one (`addTool`,
// a tool with a handler): the model calls the tool, the run ends with the
// call pending, CopilotKit runs the handler, puts its result in the thread
// as a tool message and starts a follow-up run on its own, whose answer
// reaches the CLI; that run streams the rest of the turn and ends. Then,
// on a second server, the model changes the agent's state through serve's
// own tool: CopilotKit takes the new state, runs nothing for that call
// (it carries its result, and is no tool of the page's) and starts no
// follow-up.
//
//   node tools.cjs URL SENT_FILE STATE_URL
//
// The first server's stand-in CLI replays the real Claude Code calling the
// page's tool `pick_branch`, its input written to SENT_FILE; the second's
// replays it calling the state's tool. Prints what failed and exits 1, or
// prints OK.
"use strict";
const { report, run } = require("../conformance/verdict.cjs");
const fs = require("fs");
const { CopilotKitCore } = require("@copilotkit/core");
const { HttpAgent } = require("@ag-ui/client");
// CopilotKit's own dependency, as a page declares a tool's arguments.
const { z } = require("zod");

const [url, sentFile, stateUrl] = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

// The texts of the `tools/call` results the CLI was sent.
function results() {
  return fs
    .readFileSync(sentFile, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .map((l) => l.type === "control_response" && l.response.response && l.response.response.mcp_response)
    .filter((r) => r && r.result && r.result.content)
    .map((r) => r.result.content[0].text);
}

async function main() {
  const agent = new HttpAgent({ url, agentId: "default", threadId: "thread-frontend-tool" });
  const core = new CopilotKitCore({});
  core.setAgents__unsafe_dev_only({ default: agent });
  const errors = [];
  core.subscribe({ onError: ({ error }) => errors.push(String(error)) });
  const calls = [];
  // What `useFrontendTool({name, description, handler})` registers.
  core.addTool({
    name: "pick_branch",
    description: "Ask the user which branch to use.",
    parameters: z.object({ branches: z.array(z.string()) }),
    handler: async (args) => {
      calls.push(args);
      return "dev";
    },
  });
  const runs = [];
  agent.subscribe({
    onEvent: ({ event }) => {
      if (event.type === "RUN_STARTED") runs.push({ events: [] });
      if (runs.length) runs[runs.length - 1].events.push(event);
    },
  });
  agent.addMessage({ id: "user-1", role: "user", content: "Which branch?" });
  await core.runAgent({ agent });

  check(errors.length === 0, `no errors: ${errors.join("; ")}`);
  check(calls.length === 1, `the handler ran once: ${JSON.stringify(calls)}`);
  check(JSON.stringify(calls[0]) === JSON.stringify({ branches: ["main", "dev"] }), `the handler got the model's arguments: ${JSON.stringify(calls[0])}`);
  check(runs.length === 2, `two runs, the call's and CopilotKit's follow-up: ${runs.length}`);
  const [first, second] = runs;
  if (first) {
    const start = first.events.find((e) => e.type === "TOOL_CALL_START");
    check(start && start.toolCallName === "pick_branch", `the call is named by the page's tool: ${JSON.stringify(start)}`);
    check(!first.events.some((e) => e.type === "TOOL_CALL_RESULT"), "no result of the page's tool is streamed");
    check(first.events[first.events.length - 1].type === "RUN_FINISHED", "the first run finishes");
  }
  if (second) {
    const last = second.events[second.events.length - 1];
    check(last.type === "RUN_FINISHED", `the follow-up finishes: ${JSON.stringify(last)}`);
    const text = second.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
    check(text === "The page answered: dev", `the rest of the turn streams in the follow-up: ${JSON.stringify(text)}`);
  }
  const call = agent.messages.flatMap((m) => m.toolCalls || []).find((t) => t.function.name === "pick_branch");
  const answers = agent.messages.filter((m) => m.role === "tool" && call && m.toolCallId === call.id);
  check(answers.length === 1 && answers[0].content === "dev", `the thread holds the handler's answer once: ${JSON.stringify(answers)}`);
  const got = results();
  check(JSON.stringify(got) === JSON.stringify(["dev"]), `the CLI got the handler's result: ${JSON.stringify(got)}`);
  const lastMessage = agent.messages[agent.messages.length - 1];
  check(lastMessage.role === "assistant" && lastMessage.content === "The page answered: dev", `the thread ends with the model's answer: ${JSON.stringify(lastMessage)}`);
  await state();
  report(problems);
}

// The model changes the state: CopilotKit takes it, and runs nothing.
async function state() {
  const agent = new HttpAgent({ url: stateUrl, agentId: "default", threadId: "thread-state", initialState: { branch: "main" } });
  const core = new CopilotKitCore({});
  core.setAgents__unsafe_dev_only({ default: agent });
  const errors = [];
  core.subscribe({ onError: ({ error }) => errors.push(String(error)) });
  const ran = [];
  core.addTool({ name: "pick_branch", description: "Ask the user which branch to use.", parameters: z.object({}), handler: async (a) => ran.push(a) });
  // A wildcard tool runs for any call with no tool of its name.
  core.addTool({ name: "*", handler: async (a) => ran.push(a) });
  let runs = 0;
  agent.subscribe({ onRunStartedEvent: () => runs++ });
  agent.addMessage({ id: "user-s", role: "user", content: "Use dev." });
  await core.runAgent({ agent });
  check(errors.length === 0, `state: no errors: ${errors.join("; ")}`);
  check(runs === 1, `state: one run, no follow-up: ${runs}`);
  check(ran.length === 0, `state: no handler ran: ${JSON.stringify(ran)}`);
  // The model's state, and what the run used under serve's own key.
  const { "agui-translate": info, ...own } = agent.state;
  const canon = (v) => JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));
  check(canon(own) === '{"branch":"dev","files":["src/lib.rs","a/b~c.rs"],"view":{"a/b":1,"pane":"diff"}}', `state: the agent's state is the model's: ${JSON.stringify(agent.state)}`);
  check(info && Array.isArray(info.usage) && info.usage.length > 0, `state: with what the run used: ${JSON.stringify(agent.state)}`);
}

run(main);
