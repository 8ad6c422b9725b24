#!/usr/bin/env node
// Drives `agui-translate serve claude -- --approval ask` with the official
// @ag-ui/client 1.0 HttpAgent, as a front end that asks its user does: a run
// ends with an interrupt, and the next run resumes it with an approval, an
// approval with edited arguments, a denial or a cancel; and the 0.0.59
// HttpAgent (CopilotKit's pin), which sends no protocolVersion, through an
// approval with no option given to serve; then `serve codex -- --approval
// ask` over Codex's app-server (the real approval_shell recording), through
// an approval, a denial and a cancel (Codex takes no edited command); and
// `serve gemini|opencode|copilot|qwen -- --approval ask` over the Agent Client Protocol
// (the real CLIs' approval recordings), through the same three.
//
//   node approve.cjs URL SENT_FILE [URL SENT_FILE]...
//
// One server per case, in the order below (approve, approve-with-edit,
// deny, cancel, approve with 0.0.59; Codex: approve, deny, cancel), each
// serving the stand-in CLI replaying a tool call that asks, its CLI's input
// written to SENT_FILE. Prints what failed and exits 1, or prints
// OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const fs = require("fs");
const clients = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent };

const args = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

const cases = [
  { name: "approve", status: "resolved", payload: { approved: true } },
  { name: "approve-with-edit", status: "resolved", payload: { approved: true, editedArgs: { command: "ls -l" } } },
  { name: "deny", status: "resolved", payload: { approved: false } },
  { name: "cancel", status: "cancelled" },
  { name: "approve-0.0", status: "resolved", payload: { approved: true }, client: "0.0.59" },
  { name: "codex-approve", status: "resolved", payload: { approved: true }, cli: "codex" },
  { name: "codex-deny", status: "resolved", payload: { approved: false }, cli: "codex" },
  { name: "codex-cancel", status: "cancelled", cli: "codex" },
  // Gemini CLI leaves a refused or cancelled call without a result.
  { name: "gemini-approve", status: "resolved", payload: { approved: true }, cli: "gemini" },
  { name: "gemini-deny", status: "resolved", payload: { approved: false }, cli: "gemini", noResult: true },
  { name: "gemini-cancel", status: "cancelled", cli: "gemini", noResult: true, ends: "cancelled" },
  { name: "opencode-approve", status: "resolved", payload: { approved: true }, cli: "opencode" },
  { name: "opencode-deny", status: "resolved", payload: { approved: false }, cli: "opencode" },
  { name: "opencode-cancel", status: "cancelled", cli: "opencode", ends: "cancelled" },
  { name: "copilot-approve", status: "resolved", payload: { approved: true }, cli: "copilot" },
  { name: "copilot-deny", status: "resolved", payload: { approved: false }, cli: "copilot" },
  { name: "copilot-cancel", status: "cancelled", cli: "copilot", noResult: true, ends: "cancelled" },
  { name: "qwen-approve", status: "resolved", payload: { approved: true }, cli: "qwen" },
  { name: "qwen-deny", status: "resolved", payload: { approved: false }, cli: "qwen" },
  { name: "qwen-cancel", status: "cancelled", cli: "qwen", ends: "cancelled" },
];

// The CLIs that speak the Agent Client Protocol.
const acp = { gemini: true, opencode: true, copilot: true, qwen: true };

// The call each CLI's replay asks about.
const asked = { claude: "toolu_m0000scripted", codex: "call_0001" };

// What the CLI was answered: Claude's control_response, the decision in
// the app-server's JSON-RPC response to its request, or the option an ACP
// agent was answered (or `cancelled`).
function answer(cli, sentFile, id) {
  const lines = fs.readFileSync(sentFile, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  if (acp[cli]) {
    const r = lines.find((l) => l.result !== undefined && l.result.outcome && String(l.id) === String(id));
    return r && (r.result.outcome.optionId || r.result.outcome.outcome);
  }
  if (cli === "codex") {
    const r = lines.find((l) => l.result !== undefined && String(l.id) === String(id));
    return r && r.result.decision;
  }
  const r = lines.find((l) => l.type === "control_response" && l.response.request_id === id);
  return r && r.response.response;
}

async function one(c, url, sentFile) {
  const a = new clients[c.client || "1.0"]({ url, threadId: `thread-${c.name}` });
  a.addMessage({ id: `user-${c.name}`, role: "user", content: "List the files." });
  const seen = [];
  // Either client throws on an event its schema rejects.
  await a.runAgent({ runId: `${c.name}-1` }, { onEvent: ({ event }) => seen.push(event) });
  const end = seen[seen.length - 1];
  check(end.type === "RUN_FINISHED" && end.outcome && end.outcome.type === "interrupt", `${c.name}: the run ends in an interrupt: ${JSON.stringify(end)}`);
  const pending = a.pendingInterrupts;
  check(pending.length === 1, `${c.name}: the agent keeps one pending interrupt: ${JSON.stringify(pending)}`);
  const it = pending[0];
  const cli = c.cli || "claude";
  const call = acp[cli] ? it.metadata && it.metadata.toolCall && it.metadata.toolCall.toolCallId : asked[cli];
  // For a 0.0 client (CopilotKit's pin) an approval has a reason of
  // serve's own namespace (see docs/serve.md).
  const reason = c.client === "0.0.59" ? "agui-translate:tool_approval" : "tool_call";
  check(it.reason === reason && it.toolCallId === call, `${c.name}: a tool_call interrupt for the streamed call: ${JSON.stringify(it)}`);
  if (cli === "claude") {
    check(it.responseSchema && it.responseSchema.properties && it.responseSchema.properties.editedArgs, `${c.name}: the schema offers editedArgs`);
  }

  // The client refuses a run that leaves the interrupt unanswered.
  let refused = null;
  try {
    await a.runAgent({ runId: `${c.name}-x` });
  } catch (e) {
    refused = e;
  }
  check(refused !== null, `${c.name}: the client refuses a run without a resume`);

  const resumed = [];
  const entry = { interruptId: it.id, status: c.status };
  if (c.payload) entry.payload = c.payload;
  await a.runAgent({ runId: `${c.name}-2`, resume: [entry] }, { onEvent: ({ event }) => resumed.push(event) });
  const started = resumed[0];
  check(started.type === "RUN_STARTED" && started.runId === `${c.name}-2`, `${c.name}: the resumed run is the request's`);
  check(
    c.noResult || resumed.some((e) => e.type === "TOOL_CALL_RESULT" && e.toolCallId === it.toolCallId),
    `${c.name}: a TOOL_CALL_RESULT for the original call`,
  );
  check(!resumed.some((e) => e.type === "TOOL_CALL_START"), `${c.name}: the call is not repeated`);
  const last = resumed[resumed.length - 1];
  const ends = (o) => (c.ends ? o && o.type === c.ends : !o || o.type === "success");
  check(last.type === "RUN_FINISHED" && ends(last.outcome), `${c.name}: the resumed run finishes: ${JSON.stringify(last)}`);
  check(a.pendingInterrupts.length === 0, `${c.name}: nothing pending after the resume`);

  const got = answer(cli, sentFile, it.id);
  const want = {
    approve: { behavior: "allow", updatedInput: { command: "echo hello from the shell", description: "Run echo" } },
    "approve-0.0": { behavior: "allow", updatedInput: { command: "echo hello from the shell", description: "Run echo" } },
    "approve-with-edit": { behavior: "allow", updatedInput: { command: "ls -l" } },
    deny: { behavior: "deny", message: "The user denied this tool call." },
    cancel: { behavior: "deny", message: "The user cancelled this tool call.", interrupt: true },
    "codex-approve": "accept",
    "codex-deny": "decline",
    "codex-cancel": "cancel",
    "gemini-approve": "proceed_once",
    "gemini-deny": "cancel",
    "gemini-cancel": "cancelled",
    "opencode-approve": "once",
    "opencode-deny": "reject",
    "opencode-cancel": "cancelled",
    "copilot-approve": "allow_once",
    "copilot-deny": "reject_once",
    "copilot-cancel": "cancelled",
    "qwen-approve": "proceed_once",
    "qwen-deny": "cancel",
    "qwen-cancel": "cancelled",
  }[c.name];
  check(JSON.stringify(got) === JSON.stringify(want), `${c.name}: the CLI got ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
}

async function main() {
  for (const [i, c] of cases.entries()) await one(c, args[2 * i], args[2 * i + 1]);
  report(problems);
}

run(main);
