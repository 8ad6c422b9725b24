#!/usr/bin/env node
// Checks AG-UI NDJSON files with the official AG-UI 1.0 packages, the way a
// 1.0 client takes events in:
//   1. every event against @ag-ui/core's zod EventSchema;
//   2. enforceEvents (@ag-ui/client), which strips properties the schema does
//      not describe: any such property is a failure here;
//   3. enforceEvents -> transformChunks -> verifyEvents over the whole stream.
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
  if (failure) {
    problems.push(`line ${at ? at.line : "?"}: the sequence verifier stopped: ${failure.message || failure}`);
  } else if (!completed) {
    problems.push("the sequence verifier did not complete");
  }
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
