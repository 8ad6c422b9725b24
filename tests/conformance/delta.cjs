#!/usr/bin/env node
// The official @ag-ui/client HttpAgent (1.0, then 0.0.59) applies the
// STATE_DELTA events this program writes: each case is a run's stream
// (SSE, as the emitter wrote it: a STATE_SNAPSHOT, then each further state
// as a STATE_DELTA when its patch is shorter) served here over HTTP, and
// the agent's state after each change must equal the state the emitter was
// given, that is the STATE_SNAPSHOT it would have sent.
//
//   node delta.cjs CASES.json
//
// CASES.json: [{"name", "sse", "states": [...], "deltas": N}]. Prints what
// failed and exits 1, or prints OK.
"use strict";
const { report, run } = require("./verdict.cjs");
const http = require("http");
const { readFileSync } = require("fs");
const clients = { "1.0": require("@ag-ui/client").HttpAgent, "0.0.59": require("@ag-ui/client-0.0").HttpAgent };

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const problems = [];
const check = (ok, what) => {
  if (!ok) problems.push(what);
};
const canon = (v) =>
  JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));

async function main() {
  const server = http.createServer((req, res) => {
    req.resume();
    const c = cases[Number(req.url.slice(1))];
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.end(c.sse);
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const base = `http://127.0.0.1:${server.address().port}`;
  for (const [i, c] of cases.entries()) {
    for (const version of Object.keys(clients)) {
      const who = `${c.name} (${version})`;
      const agent = new clients[version]({ url: `${base}/${i}`, threadId: "thread-delta", initialState: {} });
      const states = [];
      const types = [];
      const warned = [];
      const warn = console.warn;
      console.warn = (...a) => warned.push(a.join(" "));
      try {
        await agent.runAgent(
          { runId: `delta-${i}` },
          {
            onEvent: ({ event }) => types.push(event.type),
            onStateChanged: ({ state }) => states.push(canon(state)),
          },
        );
      } finally {
        console.warn = warn;
      }
      check(warned.length === 0, `${who}: no patch refused: ${warned.join("; ")}`);
      const deltas = types.filter((t) => t === "STATE_DELTA").length;
      check(deltas === c.deltas, `${who}: ${c.deltas} STATE_DELTA, not ${deltas}: ${types.join(" ")}`);
      const want = c.states.map(canon);
      check(canon(states) === canon(want), `${who}: the states the agent went through ${JSON.stringify(states)}, not ${JSON.stringify(want)}`);
      check(canon(agent.state) === want[want.length - 1], `${who}: the agent's state ${JSON.stringify(agent.state)}`);
    }
  }
  server.close();
  report(problems);
}

run(main);
