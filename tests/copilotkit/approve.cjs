#!/usr/bin/env node
// Drives `agui-translate serve claude -- --approval ask` with CopilotKit's
// own run handler (@copilotkit/core 1.75: CopilotKitCore.runAgent and its
// framework-neutral interrupt state, which its `useInterrupt` hook uses),
// as CopilotKit's stock interrupt card does: the run ends with an
// interrupt, the card's answer goes through the interrupt state, the tool
// messages that state hands back are added to the thread, and the run
// handler resumes. After an approval the thread must hold the command's
// real output for the call, after a denial or a cancel what the CLI made of
// it (the TOOL_CALL_RESULT serve streamed), and no other tool message for
// the call: what the card shows.
//
//   node approve.cjs APPROVE_URL DENY_URL CANCEL_URL
//
// Prints what failed and exits 1, or prints OK.
"use strict";
const { report, run } = require("../conformance/verdict.cjs");
const { CopilotKitCore, ɵInterruptState: InterruptState } = require("@copilotkit/core");
const { HttpAgent } = require("@ag-ui/client");

const [approveUrl, denyUrl, cancelUrl] = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

// CopilotKit's tool messages for a call, as its card reads them.
const results = (agent, call) => agent.messages.filter((m) => m.role === "tool" && m.toolCallId === call);

async function one(name, url, answer, want) {
  const agent = new HttpAgent({ url, agentId: "default", threadId: `thread-${name}` });
  const core = new CopilotKitCore({});
  // As CopilotKit's provider hands a page's agents to its core: the core
  // then follows the agent's runs (its state manager).
  core.setAgents__unsafe_dev_only({ default: agent });
  const errors = [];
  core.subscribe({ onError: ({ error }) => errors.push(String(error)) });
  agent.addMessage({ id: `user-${name}`, role: "user", content: "List the files." });
  await core.runAgent({ agent });
  const pending = agent.pendingInterrupts;
  check(pending.length === 1, `${name}: one pending interrupt: ${JSON.stringify(pending)}`);
  if (pending.length !== 1) return;
  const it = pending[0];
  check(it.toolCallId === "toolu_m0000scripted", `${name}: the interrupt names the streamed call: ${JSON.stringify(it)}`);

  // The card's answer, through CopilotKit's interrupt state.
  const state = new InterruptState();
  state.setStandard(pending);
  const action = answer === "cancel" ? state.cancel(it.id) : state.resolve(answer, it.id);
  check(action.kind === "resume", `${name}: the interrupt state resumes: ${JSON.stringify(action)}`);
  if (action.kind !== "resume") return;
  // What useInterrupt does with the action: a tool message for each
  // tool result it hands back, then a resume of the interrupted run.
  for (const [i, r] of action.toolResults.entries()) {
    agent.addMessage({ id: `ck-${name}-${i}`, role: "tool", toolCallId: r.toolCallId, content: r.content });
  }
  const streamed = [];
  const sub = agent.subscribe({ onToolCallResultEvent: ({ event }) => streamed.push(event) });
  await core.runAgent({ agent, resume: action.resume });
  sub.unsubscribe();
  const real = streamed.find((e) => e.toolCallId === it.toolCallId);
  check(real !== undefined, `${name}: serve streamed a TOOL_CALL_RESULT for the call`);

  check(errors.length === 0, `${name}: no errors: ${errors.join("; ")}`);
  check(agent.pendingInterrupts.length === 0, `${name}: nothing pending after the resume`);
  const shown = results(agent, it.toolCallId);
  check(shown.length === 1, `${name}: one tool message for the call: ${JSON.stringify(shown)}`);
  const content = shown.length > 0 ? String(shown[0].content) : "";
  check(real !== undefined && content === real.content && want(content), `${name}: the card shows ${JSON.stringify(shown.map((m) => m.content))}, not the CLI's result`);
}

async function main() {
  await one("approve", approveUrl, { approved: true }, (c) => c.includes("hello from the shell"));
  await one("deny", denyUrl, { approved: false }, (c) => c.includes("denied"));
  // The stand-in CLI replays a denial for a cancel too.
  await one("cancel", cancelUrl, "cancel", (c) => c.includes("denied"));
  report(problems);
}

run(main);
