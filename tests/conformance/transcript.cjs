#!/usr/bin/env node
// A page that comes back to a thread whose history the server did not keep,
// with the official @ag-ui/client HttpAgent (1.0, or 0.0.59 as CopilotKit
// pins it): a fresh agent that sends no message gets the thread rebuilt
// from the CLI's transcript, a message with files back with a stand-in for
// each, or, where the thread cannot be rebuilt, a run error saying why.
//
//   node transcript.cjs URL CLIENT rebuilt|files|unavailable THREAD
//
// Prints what failed and exits 1, or prints OK.
"use strict";
const [url, client, mode, threadId] = process.argv.slice(2);
const HttpAgent = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent }[client];
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};

async function main() {
  const agent = new HttpAgent({ url, threadId });
  const seen = [];
  let failed = null;
  try {
    await agent.runAgent({ runId: `${mode}-${client}` }, { onEvent: ({ event }) => seen.push(event) });
  } catch (e) {
    failed = e;
  }
  const all = JSON.stringify(agent.messages);
  if (mode === "rebuilt") {
    check(!failed, `failed: ${failed}`);
    const users = agent.messages.filter((m) => m.role === "user").map((m) => m.content);
    check(JSON.stringify(users) === JSON.stringify(["Remember the word 'teal'.", "Which word did I ask you to remember?"]), `the user's turns: ${all}`);
    const answers = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content);
    check(JSON.stringify(answers) === JSON.stringify(["I will remember teal.", "The word was teal."]), `the answers: ${all}`);
  } else if (mode === "files") {
    check(!failed, `failed: ${failed}`);
    const user = agent.messages.find((m) => m.role === "user");
    const parts = user && Array.isArray(user.content) ? user.content : [];
    check(parts.length === 2 && parts[0].text === "What is on this page?", `the user's message: ${all}`);
    check(parts[1] && /^\[image "shot\.png" \(image\/png, \d+ bytes\): not kept/.test(parts[1].text), `the image's stand-in: ${all}`);
  } else {
    const error = seen.find((e) => e.type === "RUN_ERROR");
    check(error && error.code === "history_unavailable", `no RUN_ERROR history_unavailable: ${JSON.stringify(seen)}`);
    check(error && /not kept/.test(error.message), `the error says why: ${JSON.stringify(error)}`);
    check(agent.messages.length === 0, `messages: ${all}`);
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
