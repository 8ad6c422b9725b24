#!/usr/bin/env node
// Checks AG-UI NDJSON files with the official AG-UI 1.0 packages, the way a
// 1.0 client takes events in:
//   1. every event against @ag-ui/core's zod EventSchema;
//   2. enforceEvents (@ag-ui/client), which strips properties the schema does
//      not describe: any such property is a failure here;
//   3. enforceEvents -> transformChunks -> verifyEvents over the whole stream;
//   4. the rules `agui-translate check` adds to those (see ourRules), which
//      a 1.0 client lets pass but every stream of ours keeps.
//
//   node verify.cjs FILE.ndjson...
//
// Prints one line per file (OK or FAIL with the reasons) and exits 1 if any
// file fails.
"use strict";
const fs = require("fs");
const schemas = require("@ag-ui/core/schemas");
const client = require("@ag-ui/client");
const { from, of } = require("rxjs");
const { concatMap } = require("rxjs/operators");

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

function verify(file) {
  const problems = [];
  const events = [];
  const lines = fs.readFileSync(file, "utf8").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  lines.forEach((text, i) => {
    const line = i + 1;
    let ev;
    try {
      ev = JSON.parse(text);
    } catch (e) {
      problems.push(`line ${line}: not JSON (${e.message})`);
      return;
    }
    const parsed = schemas.EventSchema.safeParse(ev);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((x) => `${x.path.join("/")}: ${x.message}`).join("; ");
      problems.push(`line ${line}: ${ev && ev.type}: rejected by the schema: ${issues}`);
      return;
    }
    const said = quietly(() => of(ev).pipe(client.enforceEvents()).subscribe({ error() {} }));
    for (const s of said) problems.push(`line ${line}: ${ev.type}: ${s}`);
    events.push({ line, ev });
  });
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

let failed = 0;
for (const file of process.argv.slice(2)) {
  const problems = verify(file);
  if (problems.length === 0) {
    console.log(`OK ${file}`);
  } else {
    failed++;
    console.log(`FAIL ${file}: ${problems.slice(0, 5).join(" | ")}`);
  }
}
console.log(`${process.argv.length - 2 - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
