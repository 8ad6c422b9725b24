#!/usr/bin/env node
// Drives `agui-translate serve claude` with the official @ag-ui/client 1.0
// HttpAgent as a page with tools of its own does: the run ends with the
// page's tool calls pending (`pendingToolCallIds`), the page answers each
// with a `role: "tool"` message, and a follow-up run on the same thread
// carries the answers to the CLI and streams the rest of the turn. Cases:
// one call; two calls answered together; one call with the 0.0.59
// HttpAgent (CopilotKit's pin), which gets a plain success; then `serve
// codex`, whose app-server gets them as dynamic tools: two calls answered
// together; then `serve copilot` and `serve opencode`, which reach the
// page's MCP server over HTTP: two calls answered together; then `serve
// qwen`, whose model first selects the tools with Qwen Code's own
// `tool_search` (a call of its own, with its result): two calls answered
// together, and one with the 0.0.59 HttpAgent; then over ACP, the page's
// MCP server given in `session/new`: `serve gemini`, one call with either
// HttpAgent and two calls (Gemini CLI makes them one at a time, a run
// each), and `serve copilot` and `serve opencode` with `--transport acp`,
// two calls answered together; `serve qwen` over ACP (`--transport acp`),
// one call, and two (made one at a time, a run each), its `tool_search` a
// call of its own.
// Then a call answered after an approval, in one turn (`--approval ask`),
// for every CLI that asks, with either HttpAgent: the run ends in an
// interrupt for the CLI's shell command, the resume approves it and streams
// its result, then the model calls the page's tool and the resumed run ends
// with that call pending; the page answers it and the turn ends (Claude
// Code, Codex's app-server, and over ACP Gemini CLI, Copilot CLI, OpenCode
// and Qwen Code, the real CLIs' approval-page-tool recordings). And an
// approval and a page's call pending at once, the model having called both
// together: each is a run of its own, in the order the CLI asks (Claude
// Code, Codex's app-server, Copilot CLI and OpenCode over ACP,
// approval-page-tool-together).
//
//   node tools.cjs URL SENT_FILE [URL SENT_FILE]...
//
// One server per case, in the order below, each serving the stand-in CLI
// replaying the real Claude Code (or Codex, or Qwen Code) calling the page's tools, its CLI's input
// written to SENT_FILE. Prints what failed and exits 1, or prints OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const fs = require("fs");
const clients = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent };

const args = process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

const tool = (name) => ({ name, description: `The page's ${name}.`, parameters: { type: "object", properties: {} } });
const cases = [
  { name: "one", tools: ["pick_branch"], answers: { pick_branch: "dev" } },
  { name: "two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" } },
  { name: "one-0.0", tools: ["pick_branch"], answers: { pick_branch: "dev" }, client: "0.0.59" },
  { name: "codex-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" } },
  { name: "copilot-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" } },
  { name: "opencode-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" } },
  { name: "qwen-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" }, own: ["tool_search"] },
  { name: "qwen-one-0.0", tools: ["pick_branch"], answers: { pick_branch: "dev" }, client: "0.0.59", own: ["tool_search"] },
  { name: "gemini-one", tools: ["pick_branch"], answers: { pick_branch: "dev" } },
  { name: "gemini-one-0.0", tools: ["pick_branch"], answers: { pick_branch: "dev" }, client: "0.0.59" },
  { name: "gemini-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" }, rounds: [["pick_branch"], ["show_diff"]] },
  { name: "copilot-acp-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" } },
  { name: "opencode-acp-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" } },
  { name: "qwen-acp-one", tools: ["pick_branch"], answers: { pick_branch: "dev" }, own: ["tool_search"] },
  // Qwen Code over ACP asks permission for a call only once the one before it is done: one at a time.
  { name: "qwen-acp-two", tools: ["pick_branch", "show_diff"], answers: { pick_branch: "main", show_diff: "shown: 3 hunks" }, own: ["tool_search"], rounds: [["pick_branch"], ["show_diff"]] },
];
// A call answered after an approval: each CLI that asks, with either client.
for (const [cli, own] of [["claude", []], ["codex", []], ["gemini", []], ["copilot-acp", []], ["opencode-acp", []], ["qwen-acp", ["tool_search"]]]) {
  for (const client of [undefined, "0.0.59"]) {
    const name = `${cli}-approved${client ? "-0.0" : ""}`;
    cases.push({ name, tools: ["pick_branch"], answers: { pick_branch: "dev" }, client, own, approve: cli.split("-")[0] });
  }
}
// An approval and a call of the page's tools pending in one turn at once
// (approval-page-tool-together: the model calls both together), either
// first: each is a run of its own, in the order the CLI asks.
for (const cli of ["claude", "codex", "copilot-acp", "opencode-acp"]) {
  cases.push({ name: `${cli}-together`, tools: ["pick_branch"], answers: { pick_branch: "dev" }, together: cli.split("-")[0] });
}

// The texts of the `tools/call` results the CLI was sent (Codex: the
// answers to its `item/tool/call` requests; Copilot CLI and OpenCode: the
// results of their `tools/call` requests over HTTP).
// Over HTTP the calls run at once: their results in the order of `tools`.
function results(sentFile, tools) {
  const lines = fs.readFileSync(sentFile, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const http = lines.filter((l) => Array.isArray(l.content));
  if (http.length) return http.sort((x, y) => tools.indexOf(x.tool) - tools.indexOf(y.tool)).map((l) => l.content[0].text);
  const codex = lines.filter((l) => l.result && Array.isArray(l.result.contentItems));
  if (codex.length) return codex.map((l) => l.result.contentItems[0].text);
  return lines
    .map((l) => l.type === "control_response" && l.response.response && l.response.response.mcp_response)
    .filter((r) => r && r.result && r.result.content)
    .map((r) => r.result.content[0].text);
}

// Whether the CLI was told to run the call interrupt `it` asked about:
// Claude Code's control_response allows it, the app-server's request is
// accepted, an ACP agent's is answered with its `allow_once` option.
function approved(cli, sentFile, it) {
  const lines = fs.readFileSync(sentFile, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  if (cli === "claude") {
    const r = lines.find((l) => l.type === "control_response" && l.response.request_id === it.id);
    return !!r && r.response.response.behavior === "allow";
  }
  const r = lines.find((l) => l.result !== undefined && l.method === undefined && String(l.id) === String(it.id));
  if (cli === "codex") return !!r && r.result.decision === "accept";
  const once = ((it.metadata && it.metadata.options) || []).find((o) => o.kind === "allow_once");
  return !!r && !!once && r.result.outcome.optionId === once.optionId;
}

// The run that ends in an interrupt for the CLI's own shell command, and
// its resume approving it: the resumed run's events.
async function approve(c, a, seen, tools) {
  const end = seen[seen.length - 1];
  check(end.type === "RUN_FINISHED" && end.outcome && end.outcome.type === "interrupt", `${c.name}: the run ends in an interrupt: ${JSON.stringify(end)}`);
  check(a.pendingInterrupts.length === 1, `${c.name}: one interrupt pending: ${JSON.stringify(a.pendingInterrupts)}`);
  const it = a.pendingInterrupts[0];
  const reason = c.client ? "agui-translate:tool_approval" : "tool_call";
  check(it && it.reason === reason && seen.some((e) => e.type === "TOOL_CALL_START" && e.toolCallId === it.toolCallId), `${c.name}: an interrupt for the CLI's call shown: ${JSON.stringify(it)}`);
  check(!seen.some((e) => e.type === "TOOL_CALL_START" && c.tools.includes(e.toolCallName)), `${c.name}: no page call before the approval`);
  const resumed = [];
  await a.runAgent({ runId: `${c.name}-r`, tools, resume: [{ interruptId: it.id, status: "resolved", payload: { approved: true } }] }, { onEvent: ({ event }) => resumed.push(event) });
  check(resumed[0].type === "RUN_STARTED" && resumed[0].runId === `${c.name}-r`, `${c.name}: the resumed run is the request's`);
  check(resumed.some((e) => e.type === "TOOL_CALL_RESULT" && e.toolCallId === it.toolCallId), `${c.name}: the approved call's result is streamed: ${JSON.stringify(resumed)}`);
  check(a.pendingInterrupts.length === 0, `${c.name}: nothing pending after the resume`);
  check(approved(c.approve, c.sent, it), `${c.name}: the CLI was told to run the call`);
  return resumed;
}

async function one(c, url, sentFile) {
  const v1 = !c.client;
  const a = new clients[c.client || "1.0"]({ url, threadId: `thread-${c.name}` });
  const tools = c.tools.map(tool);
  a.addMessage({ id: `user-${c.name}`, role: "user", content: "Which branch?" });
  let seen = [];
  // Either client throws on an event its schema rejects.
  await a.runAgent({ runId: `${c.name}-1`, tools }, { onEvent: ({ event }) => seen.push(event) });
  if (c.approve) seen = await approve(Object.assign(c, { sent: sentFile }), a, seen, tools);
  // A CLI that calls the page's tools one at a time (Gemini CLI) ends a run
  // per call: a round each (`rounds`), else one round with all the calls.
  const rounds = c.rounds || [c.tools];
  for (const [r, round] of rounds.entries()) {
    const end = seen[seen.length - 1];
    // The CLI's own calls first (`own`), with their results; then the page's.
    const own = r === 0 ? c.own || [] : [];
    const all = seen.filter((e) => e.type === "TOOL_CALL_START");
    // The page's calls in any order: a CLI that reaches the page's server
    // over HTTP sends a turn's calls at once, and they are shown as they come.
    const names = all.map((e) => e.toolCallName);
    const named = JSON.stringify([...names.slice(0, own.length), ...names.slice(own.length).sort()]);
    check(named === JSON.stringify([...own, ...[...round].sort()]), `${c.name}: the calls are named by the page's tools: ${JSON.stringify(all)}`);
    const starts = all.slice(own.length);
    const pageIds = starts.map((e) => e.toolCallId);
    check(!seen.some((e) => e.type === "TOOL_CALL_RESULT" && pageIds.includes(e.toolCallId)), `${c.name}: no result is streamed`);
    // (A resumed run opens with the approval_response of the CLI's own call.)
    check(!seen.some((e) => e.type === "CUSTOM" && e.name.startsWith(c.approve ? "approval_request" : "approval_")), `${c.name}: the page is asked no approval of its own tool: ${JSON.stringify(seen)}`);
    check(end.type === "RUN_FINISHED", `${c.name}: the run finishes: ${JSON.stringify(end)}`);
    if (v1) {
      const ids = (end.outcome && end.outcome.pendingToolCallIds) || [];
      check(end.outcome && end.outcome.type === "success" && JSON.stringify(ids) === JSON.stringify(starts.map((e) => e.toolCallId)), `${c.name}: the calls are pending: ${JSON.stringify(end)}`);
    } else {
      check(!end.outcome || end.outcome.pendingToolCallIds === undefined, `${c.name}: a 0.0 client gets a plain success: ${JSON.stringify(end)}`);
    }
    // As CopilotKit's run handler does: every call of the page's tools in the
    // agent's messages with no answer yet is run, and answered.
    const calls = a.messages.flatMap((m) => m.toolCalls || []).filter((t) => !a.messages.some((m) => m.role === "tool" && m.toolCallId === t.id));
    check(calls.length === round.length, `${c.name}: the agent holds the calls: ${JSON.stringify(a.messages)}`);
    for (const call of calls) {
      a.addMessage({ id: `answer-${call.id}`, role: "tool", toolCallId: call.id, content: c.answers[call.function.name] });
    }
    check(results(sentFile, c.tools).length === (r === 0 ? 0 : rounds.slice(0, r).flat().length), `${c.name}: nothing answered before the follow-up`);
    const next = [];
    const runId = `${c.name}-${r + 2}`;
    await a.runAgent({ runId, tools }, { onEvent: ({ event }) => next.push(event) });
    check(next[0].type === "RUN_STARTED" && next[0].runId === runId, `${c.name}: the follow-up is the request's run`);
    seen = next;
  }
  const last = seen[seen.length - 1];
  check(last.type === "RUN_FINISHED" && !(last.outcome && last.outcome.pendingToolCallIds), `${c.name}: the turn finishes: ${JSON.stringify(last)}`);
  const text = seen.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
  const want = c.tools.map((t) => c.answers[t]);
  check(text === `The page answered: ${want.join("; ")}`, `${c.name}: the model's answer (the recording's): ${text}`);
  const got = results(sentFile, c.tools);
  check(JSON.stringify(got) === JSON.stringify(want), `${c.name}: the CLI got ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
}

// The turn of a `together` case: each run ends in the interrupt for the
// CLI's command (approved) or with the page's call pending (answered),
// until the turn finishes; each is asked once.
async function together(c, url, sentFile) {
  const a = new clients["1.0"]({ url, threadId: `thread-${c.name}` });
  const tools = c.tools.map(tool);
  a.addMessage({ id: `user-${c.name}`, role: "user", content: "Which branch?" });
  let seen = [];
  await a.runAgent({ runId: `${c.name}-1`, tools }, { onEvent: ({ event }) => seen.push(event) });
  const rounds = [];
  let text = "";
  for (let r = 2; r < 6; r++) {
    text += seen.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
    const end = seen[seen.length - 1];
    const o = end.type === "RUN_FINISHED" && end.outcome;
    const next = { runId: `${c.name}-${r}`, tools };
    if (o && o.type === "interrupt") {
      check(a.pendingInterrupts.length === 1 && !o.pendingToolCallIds, `${c.name}: one interrupt, alone: ${JSON.stringify(end)}`);
      const it = a.pendingInterrupts[0];
      rounds.push("approval");
      next.resume = [{ interruptId: it.id, status: "resolved", payload: { approved: true } }];
      seen = [];
      await a.runAgent(next, { onEvent: ({ event }) => seen.push(event) });
      check(approved(c.together, sentFile, it), `${c.name}: the CLI was told to run the call`);
    } else if (o && o.pendingToolCallIds) {
      rounds.push("page");
      const calls = a.messages.flatMap((m) => m.toolCalls || []).filter((t) => o.pendingToolCallIds.includes(t.id));
      check(calls.length === 1 && calls[0].function.name === "pick_branch", `${c.name}: the page's call is pending: ${JSON.stringify(end)}`);
      for (const call of calls) a.addMessage({ id: `answer-${call.id}`, role: "tool", toolCallId: call.id, content: "dev" });
      seen = [];
      await a.runAgent(next, { onEvent: ({ event }) => seen.push(event) });
    } else {
      check(end.type === "RUN_FINISHED", `${c.name}: the turn finishes: ${JSON.stringify(end)}`);
      break;
    }
    check(seen[0].type === "RUN_STARTED" && seen[0].runId === next.runId, `${c.name}: each run is its request's`);
  }
  check(JSON.stringify([...rounds].sort()) === JSON.stringify(["approval", "page"]), `${c.name}: one approval and one page call: ${rounds}`);
  check(text.includes("The page answered:") && text.endsWith("dev"), `${c.name}: the model's answer (the recording's): ${text}`);
  check(JSON.stringify(results(sentFile, c.tools)) === JSON.stringify(["dev"]), `${c.name}: the CLI got ${JSON.stringify(results(sentFile, c.tools))}`);
}

async function main() {
  for (const [i, c] of cases.entries()) await (c.together ? together : one)(c, args[2 * i], args[2 * i + 1]);
  report(problems);
}

run(main);
