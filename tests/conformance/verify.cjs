#!/usr/bin/env node
// Checks AG-UI NDJSON files with the official AG-UI packages, the way a
// client takes events in.
//
// AG-UI 1.0 (the default), with @ag-ui/core and @ag-ui/client 1.0.0:
//   1. every event against @ag-ui/core's zod EventSchema;
//   2. enforceEvents (@ag-ui/client), which strips properties the schema does
//      not describe: any such property is a failure here;
//   3. enforceEvents -> transformChunks -> verifyEvents over the whole stream;
//   4. the rules `agui-translate check` adds to those (see ourRules), which
//      a 1.0 client lets pass but every stream of ours keeps.
//
// AG-UI 0.0 (`--agui-version 0.0`), with @ag-ui/core and @ag-ui/client 0.0.59
// (installed as @ag-ui/core-0.0 and @ag-ui/client-0.0), as HttpAgent takes
// events in:
//   1. EventSchemas.parse on every event; the parsed event must equal the
//      event (a property the parse strips or changes is a failure);
//   2. transformChunks -> verifyEvents -> defaultApplyEvents over the whole
//      stream, the apply step building the client's messages: an error is a
//      failure; what it warns about (and goes on) is printed as WARN, as the
//      1.0 client's apply step would warn about it too;
//   3. ourRules, as for 1.0.
//
//   node verify.cjs [--agui-version 0.0] FILE.ndjson...
//
// Prints one line per file (OK or FAIL with the reasons) and exits 1 if any
// file fails.
"use strict";
const fs = require("fs");
const { from, of, lastValueFrom } = require("rxjs");
const { concatMap, toArray } = require("rxjs/operators");

// Run `fn`, collecting what it writes with console.warn/log/error.
function quietly(fn) {
  const said = [];
  const saved = { warn: console.warn, log: console.log, error: console.error };
  console.warn = console.log = console.error = (...a) => said.push(a.join(" "));
  try {
    fn();
  } finally {
    Object.assign(console, saved);
  }
  return said;
}

// The events of `file`, each with its line number; what is not JSON goes
// into `problems`.
function read(file, problems) {
  const events = [];
  const lines = fs.readFileSync(file, "utf8").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  lines.forEach((text, i) => {
    try {
      events.push({ line: i + 1, ev: JSON.parse(text) });
    } catch (e) {
      problems.push(`line ${i + 1}: not JSON (${e.message})`);
    }
  });
  return events;
}

function verify(file) {
  const schemas = require("@ag-ui/core/schemas");
  const client = require("@ag-ui/client");
  const problems = [];
  const events = [];
  for (const { line, ev } of read(file, problems)) {
    const parsed = schemas.EventSchema.safeParse(ev);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((x) => `${x.path.join("/")}: ${x.message}`).join("; ");
      problems.push(`line ${line}: ${ev && ev.type}: rejected by the schema: ${issues}`);
      continue;
    }
    const said = quietly(() => of(ev).pipe(client.enforceEvents()).subscribe({ error() {} }));
    for (const s of said) problems.push(`line ${line}: ${ev.type}: ${s}`);
    events.push({ line, ev });
  }
  if (events.length === 0) problems.push("no events");
  let at = null;
  let failure = null;
  let completed = false;
  quietly(() =>
    from(events)
      .pipe(
        concatMap((e) => {
          at = e;
          return of(e.ev).pipe(client.enforceEvents());
        }),
        client.transformChunks(),
        client.verifyEvents(),
      )
      .subscribe({
        error(e) {
          failure = e;
        },
        complete() {
          completed = true;
        },
      }),
  );
  for (const p of ourRules(events)) problems.push(p);
  if (failure) {
    problems.push(`line ${at ? at.line : "?"}: the sequence verifier stopped: ${failure.message || failure}`);
  } else if (!completed) {
    problems.push("the sequence verifier did not complete");
  }
  return problems;
}

// What `agui-translate check` requires beyond the official checks: the
// stream does not end inside a run, a run has one terminal event,
// RUN_FINISHED has the RUN_STARTED's ids, a tool call id is started once in
// the stream, a TOOL_CALL_RESULT names a call started before it, and a
// call's ARGS join into JSON.
function ourRules(events) {
  const problems = [];
  const started = new Set();
  const args = new Map();
  let run = null; // the open run's [threadId, runId]
  let finished = false;
  for (const { line, ev } of events) {
    const bad = (why) => problems.push(`line ${line}: ${ev.type}: ${why} (agui-translate check)`);
    switch (ev.type) {
      case "RUN_STARTED":
        if (!run) run = [ev.threadId, ev.runId];
        finished = false;
        break;
      case "RUN_FINISHED":
        if (run && (run[0] !== ev.threadId || run[1] !== ev.runId)) bad("ids differ from RUN_STARTED's");
        run = null;
        finished = true;
        break;
      case "RUN_ERROR":
        if (finished) bad("a second terminal event");
        run = null;
        finished = false;
        break;
      case "TOOL_CALL_START":
        if (started.has(ev.toolCallId)) bad(`tool call ${ev.toolCallId} started twice`);
        started.add(ev.toolCallId);
        args.set(ev.toolCallId, "");
        break;
      case "TOOL_CALL_ARGS":
        if (args.has(ev.toolCallId)) args.set(ev.toolCallId, args.get(ev.toolCallId) + ev.delta);
        break;
      case "TOOL_CALL_END":
        if (args.has(ev.toolCallId)) {
          const text = args.get(ev.toolCallId);
          args.delete(ev.toolCallId);
          if (text !== "") {
            try {
              JSON.parse(text);
            } catch (e) {
              bad("arguments that are not JSON");
            }
          }
        }
        break;
      case "TOOL_CALL_RESULT":
        if (!started.has(ev.toolCallId)) bad(`a result for tool call ${ev.toolCallId}, never started`);
        break;
    }
  }
  if (run) problems.push("the stream ends inside a run (agui-translate check)");
  return problems;
}

// `v` as JSON with every object's keys sorted, for comparing events.
function canonical(v) {
  return JSON.stringify(v, (_, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]]))
      : x,
  );
}

// The checks of an AG-UI 0.0.59 client (see the top of this file).
async function verify00(file) {
  const core = require("@ag-ui/core-0.0");
  const client = require("@ag-ui/client-0.0");
  const problems = [];
  const events = [];
  for (const { line, ev } of read(file, problems)) {
    const parsed = core.EventSchemas.safeParse(ev);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((x) => `${x.path.join("/")}: ${x.message}`).join("; ");
      problems.push(`line ${line}: ${ev && ev.type}: rejected by the 0.0 schema: ${issues}`);
      continue;
    }
    if (canonical(parsed.data) !== canonical(ev)) {
      problems.push(`line ${line}: ${ev.type}: the 0.0 schema changes it to ${canonical(parsed.data)}`);
    }
    events.push({ line, ev: parsed.data });
  }
  if (events.length === 0) problems.push("no events");
  let at = null;
  const saved = { warn: console.warn, log: console.log, error: console.error };
  const said = [];
  console.warn = console.log = console.error = (...a) => said.push(`${at ? `line ${at.line}: ` : ""}${a.join(" ")}`);
  try {
    const agent = new client.AbstractAgent({});
    const input = { threadId: "t", runId: "r", state: {}, messages: [], tools: [], context: [], forwardedProps: {} };
    const verified = from(events).pipe(
      concatMap((e) => {
        at = e;
        return of(e.ev);
      }),
      client.transformChunks(),
      client.verifyEvents(),
    );
    await lastValueFrom(client.defaultApplyEvents(input, verified, agent, []).pipe(toArray()));
  } catch (e) {
    problems.push(`line ${at ? at.line : "?"}: the 0.0 client stopped: ${e.message || e}`);
  } finally {
    Object.assign(console, saved);
  }
  for (const p of ourRules(events)) problems.push(p);
  return { problems, warnings: said };
}

async function main() {
  let files = process.argv.slice(2);
  let check = verify;
  if (files[0] === "--agui-version") {
    if (files[1] === "0.0") check = verify00;
    else if (files[1] !== "1.0") throw new Error(`unknown AG-UI version ${files[1]}`);
    files = files.slice(2);
  }
  let failed = 0;
  for (const file of files) {
    const found = await check(file);
    const { problems, warnings } = Array.isArray(found) ? { problems: found, warnings: [] } : found;
    for (const w of warnings) console.log(`WARN ${file}: ${w}`);
    if (problems.length === 0) {
      console.log(`OK ${file}`);
    } else {
      failed++;
      console.log(`FAIL ${file}: ${problems.slice(0, 5).join(" | ")}`);
    }
  }
  console.log(`${files.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
