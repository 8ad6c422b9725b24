#!/usr/bin/env node
// `agui-translate serve` seen from web pages in headless Chromium: a page
// from a foreign origin can neither start a run nor read one, and a page
// from an origin given with --allow-origin runs one end to end with the
// official @ag-ui/client HttpAgent (bundled for the browser by esbuild),
// approves a tool call from that page, and, reloaded after two turns,
// shows both turns again (the thread's history). A page reloaded during a
// long run shows the run's text so far, then the rest as it comes, ending
// in one RUN_FINISHED; a second tab on the same thread reads the same run
// and gets the same events.
//
//   node browser.cjs SERVER_URL ALLOWED_PORT ARGV_FILE CHROMIUM [ASK_URL [LONG_URL GATE]]
//
// ASK_URL, if given, serves `claude -- --approval ask` (allowing the same
// origin) with a stand-in CLI that asks before running a command.
// LONG_URL, if given, serves a stand-in CLI that writes the start of its
// answer, waits for the file GATE to exist, then writes the rest slowly.
//
// SERVER_URL serves a stand-in CLI that writes its arguments to ARGV_FILE
// when it runs, and allows the origin http://localhost:ALLOWED_PORT. The
// foreign page is served from http://127.0.0.1 on another port. Prints
// what failed and exits 1, or prints OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const fs = require("fs");
const http = require("http");
const path = require("path");
const esbuild = require("esbuild");
const { chromium } = require("playwright-core");

const [serverUrl, allowedPort, argvFile, executable = "/usr/bin/chromium", askUrl, longUrl, gate] =
  process.argv.slice(2);
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what.slice(0, 300));
};

// Chromium on a machine without a network: nothing started but the page.
const CHROMIUM_ARGS = [
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

async function bundle() {
  const out = await esbuild.build({
    stdin: {
      contents: 'import { HttpAgent } from "@ag-ui/client"; window.HttpAgent = HttpAgent;',
      resolveDir: __dirname,
    },
    bundle: true,
    format: "iife",
    platform: "browser",
    write: false,
    logLevel: "silent",
  });
  return out.outputFiles[0].text;
}

// A page server: `/` is an empty page that loads the agent, `/agent.js`.
function pageServer(agentJs, port) {
  const server = http.createServer((req, res) => {
    if (req.url === "/agent.js") {
      res.writeHead(200, { "Content-Type": "text/javascript" });
      res.end(agentJs);
    } else {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end('<!doctype html><title>page</title><script src="/agent.js"></script>');
    }
  });
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}

// What a page does: plain fetches and an HttpAgent run; each outcome as
// text ("status 200: …" or "threw: …").
async function tryAll(serverUrl) {
  const input = (threadId) => ({
    threadId,
    runId: `${threadId}-run`,
    state: {},
    tools: [],
    context: [],
    forwardedProps: {},
    messages: [{ id: `${threadId}-m`, role: "user", content: "Hello" }],
  });
  const attempt = async (f) => {
    try {
      return await f();
    } catch (e) {
      return `threw: ${e && e.message}`;
    }
  };
  const read = async (r) => `status ${r.status}: ${await r.text()}`;
  const out = {};
  // A simple request (no preflight): text/plain.
  out.simple = await attempt(async () =>
    read(await fetch(serverUrl, { method: "POST", body: JSON.stringify(input("simple")) })),
  );
  // Sent blind, the answer unreadable.
  out.blind = await attempt(async () => {
    const r = await fetch(serverUrl, { method: "POST", mode: "no-cors", body: JSON.stringify(input("blind")) });
    return `opaque ${r.type}`;
  });
  // JSON, preflighted.
  out.json = await attempt(async () =>
    read(
      await fetch(serverUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(input("json")),
      }),
    ),
  );
  // The official client, with a header of the front end's own.
  out.agent = await attempt(async () => {
    const agent = new window.HttpAgent({
      url: serverUrl,
      threadId: "browser-thread",
      headers: { "X-Request-Id": "req-1" },
    });
    agent.addMessage({ id: "browser-m1", role: "user", content: "Hello" });
    const types = [];
    await agent.runAgent({ runId: "browser-run" }, { onEvent: ({ event }) => types.push(event.type) });
    const said = agent.messages
      .filter((m) => m.role === "assistant")
      .map((m) => m.content)
      .join("");
    return `ran: ${types.join(",")} said: ${said}`;
  });
  return out;
}

// What a page that asks its user does: a run that ends in an interrupt,
// then one that resumes it with an approval.
async function approve(askUrl) {
  const agent = new window.HttpAgent({ url: askUrl, threadId: "browser-ask" });
  agent.addMessage({ id: "ask-m1", role: "user", content: "List the files" });
  const first = [];
  await agent.runAgent({ runId: "ask-1" }, { onEvent: ({ event }) => first.push(event) });
  const pending = agent.pendingInterrupts.map((i) => `${i.reason}:${i.toolCallId}`);
  const it = agent.pendingInterrupts[0];
  const second = [];
  await agent.runAgent(
    { runId: "ask-2", resume: [{ interruptId: it.id, status: "resolved", payload: { approved: true } }] },
    { onEvent: ({ event }) => second.push(event) },
  );
  const result = second.find((e) => e.type === "TOOL_CALL_RESULT");
  return `pending: ${pending.join(",")} result: ${result && result.toolCallId} left: ${agent.pendingInterrupts.length} end: ${second[second.length - 1].type}`;
}

// Two turns on a thread whose id the page keeps, as a chat page does.
async function twoTurns(serverUrl) {
  localStorage.setItem("threadId", "browser-back");
  const agent = new window.HttpAgent({ url: serverUrl, threadId: "browser-back" });
  for (const [i, text] of ["First turn.", "Second turn."].entries()) {
    agent.addMessage({ id: `back-m${i + 1}`, role: "user", content: text });
    await agent.runAgent({ runId: `back-run-${i + 1}` });
  }
  return agent.messages.length;
}

// What the reloaded page shows: a fresh agent on the kept thread, asking
// for it with no message.
async function comeBack(serverUrl) {
  const agent = new window.HttpAgent({ url: serverUrl, threadId: localStorage.getItem("threadId") });
  await agent.runAgent({ runId: "back-run-reload" });
  const users = agent.messages.filter((m) => m.role === "user").map((m) => m.content);
  const answers = agent.messages.filter((m) => m.role === "assistant" && m.content).length;
  return `users: ${users.join("|")} answers: ${answers}`;
}

// What a chat page does with a run (in the page): on the thread
// `threadId`, it sends `message` if given (else it asks for the thread, as
// a reloaded page does), and shows the answer's text as it comes, in a
// <pre>; window.events holds the events, each with the time it came, and
// window.done says how the run ended.
function follow([url, threadId, message]) {
  const agent = new window.HttpAgent({ url, threadId });
  if (message) agent.addMessage({ id: "mid-m1", role: "user", content: message });
  const out = document.body.appendChild(document.createElement("pre"));
  window.said = out;
  window.events = [];
  const answers = new Set();
  window.done = agent
    .runAgent(message ? { runId: "mid-run" } : {}, {
      onEvent: ({ event }) => {
        window.events.push({ event, at: Date.now() });
        if (event.type === "TEXT_MESSAGE_START" && event.role === "assistant") answers.add(event.messageId);
        if (event.type === "TEXT_MESSAGE_CONTENT" && answers.has(event.messageId)) out.textContent += event.delta;
      },
    })
    .then(
      () => agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join(""),
      (e) => `threw: ${e.message}`,
    );
}

// A page reloaded during a long run, and a second tab on its thread: both
// show the text so far while the run waits, then the rest as it comes, and
// get the same events, one RUN_FINISHED last.
async function reloadMidRun(browser) {
  const origin = `http://localhost:${allowedPort}/`;
  const open = async (page) => {
    await page.goto(origin);
    await page.waitForFunction(() => typeof window.HttpAgent === "function");
  };
  const shown = (page, text) =>
    page
      .waitForFunction((t) => window.said && window.said.textContent.includes(t), text, { timeout: 20000 })
      .catch(async (e) => {
        const what = await page.evaluate(() =>
          Promise.race([window.done, new Promise((r) => setTimeout(() => r("going"), 100))]).then((d) => [
            d,
            window.said && window.said.textContent,
            window.events,
          ]),
        );
        throw new Error(`${e.message}: ${JSON.stringify(text)} not shown: ${JSON.stringify(what)}`);
      });
  const tab = await browser.newPage();
  await open(tab);
  await tab.evaluate(follow, [longUrl, "browser-mid", "Say hello in several languages."]);
  await shown(tab, "Héllo wörld");
  await tab.reload();
  await tab.waitForFunction(() => typeof window.HttpAgent === "function");
  await tab.evaluate(follow, [longUrl, "browser-mid"]);
  const other = await browser.newPage();
  await open(other);
  await other.evaluate(follow, [longUrl, "browser-mid"]);
  const tabs = [tab, other];
  for (const t of tabs) await shown(t, "Héllo wörld — “quoted” a");
  const early = await Promise.all(tabs.map((t) => t.evaluate(() => window.events.map((e) => e.event.type))));
  for (const types of early) {
    check(types[0] === "RUN_STARTED" && !types.includes("RUN_FINISHED"), `before the rest came: ${types}`);
  }
  const opened = Date.now();
  fs.writeFileSync(gate, "");
  const answers = await Promise.all(tabs.map((t) => t.evaluate(() => window.done)));
  const seen = await Promise.all(tabs.map((t) => t.evaluate(() => window.events)));
  for (const [i, answer] of answers.entries()) {
    const which = i === 0 ? "the reloaded page" : "the second tab";
    check(answer.startsWith("Héllo wörld — “quoted” a") && answer.endsWith("🇫🇷."), `${which}'s answer: ${answer}`);
    const shownText = await tabs[i].evaluate(() => window.said.textContent);
    check(shownText === answer, `${which} shows ${JSON.stringify(shownText)}, not its answer`);
    const types = seen[i].map((e) => e.event.type);
    check(types.filter((t) => t === "RUN_FINISHED").length === 1, `${which}: one RUN_FINISHED: ${types}`);
    check(types[types.length - 1] === "RUN_FINISHED" && !types.includes("RUN_ERROR"), `${which}: ${types}`);
    check(seen[i][0].event.runId === "mid-run", `${which} read another run: ${JSON.stringify(seen[i][0])}`);
    // The rest came as the CLI wrote it, a line at a time, not at the end.
    const rest = seen[i].filter((e) => e.event.type === "TEXT_MESSAGE_CONTENT" && e.at >= opened);
    const spread = rest.length > 1 ? rest[rest.length - 1].at - rest[0].at : 0;
    check(rest.length >= 5 && spread >= 400, `${which}: the rest came at once (${rest.length} pieces in ${spread} ms)`);
  }
  const same = (e) => JSON.stringify(e.map((x) => x.event));
  check(same(seen[0]) === same(seen[1]), "the two tabs got different events");
  await tab.close();
  await other.close();
}

async function visit(browser, origin) {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => typeof window.HttpAgent === "function");
  const out = await page.evaluate(tryAll, serverUrl);
  await page.close();
  return out;
}

async function main() {
  const agentJs = await bundle();
  const foreign = await pageServer(agentJs, 0);
  const allowed = await pageServer(agentJs, Number(allowedPort));
  const browser = await chromium.launch({
    executablePath: executable,
    headless: true,
    chromiumSandbox: false,
    args: CHROMIUM_ARGS,
    timeout: 60000,
  });
  try {
    const bad = await visit(browser, `http://127.0.0.1:${foreign.address().port}`);
    for (const [what, outcome] of Object.entries(bad)) {
      check(/^threw|^opaque/.test(outcome), `a foreign page's ${what}: ${outcome}`);
      check(!/RUN_STARTED|RUN_FINISHED/.test(outcome), `a foreign page read a run (${what}): ${outcome}`);
    }
    check(!fs.existsSync(argvFile), "a foreign page started the CLI");

    const good = await visit(browser, `http://localhost:${allowedPort}`);
    check(/^ran: RUN_STARTED,.*RUN_FINISHED/.test(good.agent), `the allowed page's agent: ${good.agent}`);
    check(/said: \S/.test(good.agent), `the allowed page's agent heard no answer: ${good.agent}`);
    check(/^status 415/.test(good.simple), `the allowed page's text/plain POST: ${good.simple}`);
    check(/^status 200: (id: \S+\n)?data: /.test(good.json), `the allowed page's JSON POST: ${good.json}`);
    check(fs.existsSync(argvFile), "the allowed page's runs started no CLI");

    if (askUrl) {
      const page = await browser.newPage();
      await page.goto(`http://localhost:${allowedPort}/`);
      await page.waitForFunction(() => typeof window.HttpAgent === "function");
      const asked = await page.evaluate(approve, askUrl).catch((e) => `threw: ${e.message}`);
      await page.close();
      check(
        asked === "pending: tool_call:toolu_m0000scripted result: toolu_m0000scripted left: 0 end: RUN_FINISHED",
        `the page's approval: ${asked}`,
      );
    }
    const page = await browser.newPage();
    const ready = () => page.waitForFunction(() => typeof window.HttpAgent === "function");
    await page.goto(`http://localhost:${allowedPort}/`);
    await ready();
    const before = await page.evaluate(twoTurns, serverUrl).catch((e) => `threw: ${e.message}`);
    await page.reload();
    await ready();
    const back = await page.evaluate(comeBack, serverUrl).catch((e) => `threw: ${e.message}`);
    await page.close();
    check(
      back === "users: First turn.|Second turn. answers: 2",
      `the reloaded page's thread (${before} messages before): ${back}`,
    );
    if (longUrl) await reloadMidRun(browser);
  } finally {
    await browser.close();
    foreign.close();
    allowed.close();
  }
  report(problems);
}

run(main);
