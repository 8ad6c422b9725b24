#!/usr/bin/env node
// A page that comes back to its thread: with the official @ag-ui/client
// HttpAgent (1.0, and 0.0.59 as CopilotKit pins it), two turns on a thread,
// then a fresh agent on the same threadId that sends no message gets both
// turns back; a fresh agent that sends a new message gets the earlier turns
// before it. The fresh agent's state holds what the thread's last run
// used (the key "agui-translate"), as each run publishes it.
//
//   node history.cjs URL TOKEN ask [EFFORT]   two turns (choosing EFFORT in
//                                             forwardedProps), then a fresh
//                                             agent asks
//   node history.cjs URL TOKEN only [EFFORT]  a fresh agent asks (after a
//                                             restart)
//
// Without EFFORT, a reloaded page that sends a new message gets the
// earlier turns before it.
//
// Prints what failed and exits 1, or prints OK.
"use strict";
const [url, token, mode, effort] = process.argv.slice(2);
const props = effort ? { forwardedProps: { effort } } : {};
const headers = { Authorization: `Bearer ${token}` };
const clients = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent };
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

async function main() {
  if (mode === "ask") {
    const a = new clients["1.0"]({ url, threadId: "thread-back", headers });
    for (const [i, text] of ["Remember teal.", "Which word?"].entries()) {
      a.addMessage({ id: `page-user-${i + 1}`, role: "user", content: text });
      await a.runAgent({ runId: `back-run-${i + 1}`, ...props });
      const used = (a.state || {})["agui-translate"];
      check(used && used.effort === (effort || null), `turn ${i + 1}: what the run used: ${JSON.stringify(a.state)}`);
    }
  }
  for (const [name, HttpAgent] of Object.entries(clients)) {
    const fresh = new HttpAgent({ url, threadId: "thread-back", headers });
    const seen = [];
    await fresh.runAgent({ runId: `back-ask-${name}` }, { onEvent: ({ event }) => seen.push(event.type) });
    check(seen.includes("MESSAGES_SNAPSHOT"), `${name}: no MESSAGES_SNAPSHOT: ${seen}`);
    const users = fresh.messages.filter((m) => m.role === "user").map((m) => m.content);
    check(JSON.stringify(users.slice(0, 2)) === JSON.stringify(["Remember teal.", "Which word?"]), `${name}: the user's turns: ${JSON.stringify(fresh.messages)}`);
    const answers = fresh.messages.filter((m) => m.role === "assistant" && m.content);
    check(answers.length >= 2, `${name}: both answers: ${JSON.stringify(fresh.messages)}`);
    const info = (fresh.state || {})["agui-translate"];
    check(
      info && info.approval === "default" && info.effort === (effort || null) && Array.isArray(info.usage) && info.usage.length > 0,
      `${name}: what the last run used: ${JSON.stringify(fresh.state)}`,
    );
  }
  // A reloaded page sends a new message: the earlier turns come first
  // (with a CLI whose replayed answers have message ids of their own: not
  // with EFFORT, whose stand-in gives each turn the same).
  for (const [name, HttpAgent] of effort ? [] : Object.entries(clients)) {
    const page = new HttpAgent({ url, threadId: "thread-back", headers });
    const text = `Again, ${name}?`;
    page.addMessage({ id: `page-again-${name}-${mode}`, role: "user", content: text });
    await page.runAgent({ runId: `back-again-${name}-${mode}` });
    const users = page.messages.filter((m) => m.role === "user").map((m) => m.content);
    const at = (t) => users.indexOf(t);
    check(at("Remember teal.") === 0 && at("Which word?") > 0 && at(text) > at("Which word?"), `${name}: in order: ${JSON.stringify(page.messages)}`);
    const answers = page.messages.filter((m) => m.role === "assistant" && m.content);
    check(answers.length >= 3, `${name}: three answers: ${JSON.stringify(page.messages)}`);
    const ids = page.messages.map((m) => m.id);
    check(new Set(ids).size === ids.length, `${name}: message ids repeat: ${ids}`);
  }
}

main().then(
  () => {
    if (problems.length) {
      console.log(problems.join("\n"));
      process.exit(1);
    }
    console.log("OK");
  },
  (e) => {
    console.log(`failed: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
