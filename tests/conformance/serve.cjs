#!/usr/bin/env node
// Drives `agui-translate serve` with the official @ag-ui/client HttpAgent,
// as a front end does: two turns on one thread, two threads at once, a wrong
// token, and a client that aborts its run.
//
//   node serve.cjs URL HANGING_URL TOKEN PID_FILE
//
// URL serves a CLI that answers; HANGING_URL one that starts, writes its
// first records and then hangs, writing its process id to PID_FILE. Both
// want `Authorization: Bearer TOKEN`. Prints what failed and exits 1, or
// prints OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const fs = require("fs");
const { HttpAgent } = require("@ag-ui/client");

const [url, hangingUrl, token, pidFile] = process.argv.slice(2);
const auth = { Authorization: `Bearer ${token}` };
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

function agent(threadId, u = url, headers = auth) {
  return new HttpAgent({ url: u, threadId, headers });
}

let nextId = 0;
async function turn(a, text) {
  a.addMessage({ id: `user-${++nextId}`, role: "user", content: text });
  const seen = [];
  const result = await a.runAgent(
    { runId: `${a.threadId}-run-${nextId}` },
    { onEvent: ({ event }) => seen.push(event) },
  );
  return { seen, result };
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  // Two turns on one thread: each run has the request's ids, and the
  // agent's messages keep the turns apart.
  const a = agent("thread-1");
  const first = await turn(a, "Remember the word teal.");
  const second = await turn(a, "Which word?");
  for (const [i, t] of [first, second].entries()) {
    const started = t.seen.find((e) => e.type === "RUN_STARTED");
    const ended = t.seen.find((e) => e.type === "RUN_FINISHED");
    check(started && started.threadId === "thread-1", `turn ${i + 1}: RUN_STARTED threadId`);
    check(started && started.runId === `thread-1-run-${i + 1}`, `turn ${i + 1}: runId is the request's`);
    check(ended && ended.runId === started.runId, `turn ${i + 1}: RUN_FINISHED`);
  }
  const assistant = a.messages.filter((m) => m.role === "assistant" && m.content);
  check(assistant.length >= 2, `two turns' answers in the messages: ${JSON.stringify(a.messages)}`);
  const ids = a.messages.map((m) => m.id);
  check(new Set(ids).size === ids.length, `message ids repeat: ${ids}`);

  // Two threads at once.
  const [x, y] = await Promise.all([turn(agent("thread-x"), "Hello"), turn(agent("thread-y"), "Hello")]);
  check(x.seen[0].threadId === "thread-x" && y.seen[0].threadId === "thread-y", "two threads at once");
  check(x.seen.some((e) => e.type === "RUN_FINISHED") && y.seen.some((e) => e.type === "RUN_FINISHED"), "both finish");

  // A wrong token is refused, and the agent says so.
  let refused = null;
  try {
    await turn(agent("thread-z", url, { Authorization: "Bearer wrong" }), "Hello");
  } catch (e) {
    refused = e;
  }
  check(refused && /401/.test(String(refused.message || refused)), `a wrong token: ${refused}`);

  // A client that aborts its run ends the CLI.
  const h = agent("thread-h", hangingUrl);
  h.addMessage({ id: "user-h", role: "user", content: "Hello" });
  let started;
  const startedP = new Promise((r) => (started = r));
  const run = h.runAgent({ runId: "run-h" }, { onRunStartedEvent: () => started() }).catch(() => {});
  await startedP;
  for (let i = 0; i < 200 && !fs.existsSync(pidFile); i++) await sleep(50);
  const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
  check(alive(pid), "the hanging CLI runs");
  h.abortRun();
  await run;
  for (let i = 0; i < 400 && alive(pid); i++) await sleep(50);
  check(!alive(pid), "the CLI outlived the aborted run");

  report(problems);
}

run(main);
