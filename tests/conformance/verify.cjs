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
//   node verify.cjs [--agui-version 0.0] --stdin
//
// Prints one line per file (OK or FAIL with the reasons) and exits 1 if any
// file fails. With --stdin, the streams come on standard input instead of
// from files, each as a line `NAME<TAB>LENGTH` and then LENGTH bytes, and
// each verdict names the stream: one process checks thousands of streams.
//
// The checks of one event alone (the schema, enforceEvents on that event)
// depend on its text only, and the streams of a sweep (a recording cut at
// every line) share most of their lines: each distinct line is checked
// once per process and its verdict remembered. The checks of a whole stream
// run on every stream.
"use strict";
const fs = require("fs");
const { from, of, lastValueFrom, throwError } = require("rxjs");
const { concatMap, toArray } = require("rxjs/operators");

// The official packages, each loaded when first used (a check of one
// release loads only that release's): a `require` each time would look for
// the module's file again, for every event and stream.
const loaded = new Map();
function pkg(name) {
  let m = loaded.get(name);
  if (m === undefined) {
    m = require(name);
    loaded.set(name, m);
  }
  return m;
}

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

// A copy of `v`, JSON-like data (a parsed event), for each stream's checks
// to have as their own: every own key, `undefined` values too.
function copy(v) {
  if (Array.isArray(v)) return v.map(copy);
  if (v === null || typeof v !== "object") return v;
  const o = {};
  for (const k of Object.keys(v)) o[k] = copy(v[k]);
  return o;
}

// The events of `file`, each with its line number; what is not JSON goes
// into `problems`.
function read(text, problems) {
  const events = [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  lines.forEach((text, i) => {
    try {
      events.push({ line: i + 1, ev: JSON.parse(text), key: text });
    } catch (e) {
      problems.push(`line ${i + 1}: not JSON (${e.message})`);
    }
  });
  return events;
}

// What the checks of one event alone found, by the event's text: `null`
// for a schema rejection (with the reasons in `said`), else what
// enforceEvents said about it (nothing for a good event) and what it let
// through.
const seen10 = new Map();

// The checks of one event alone, for AG-UI 1.0: [accepted, what was said,
// what enforceEvents made of it: { out: the events it passed on, error: what
// it threw, if it did }].
//
// enforceEvents takes each event on its own (a strip and a schema parse of
// that event, nothing kept from the events before; it changes no event it
// is given), so what it makes of an event depends on its text only: the
// stream checks take it from here, a fresh copy for each stream, instead of
// running it again on every line of every stream.
function eventAlone10(ev, key) {
  let found = seen10.get(key);
  if (found === undefined) {
    const schemas = pkg("@ag-ui/core/schemas");
    const client = pkg("@ag-ui/client");
    const parsed = schemas.EventSchema.safeParse(ev);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((x) => `${x.path.join("/")}: ${x.message}`).join("; ");
      found = [false, [`rejected by the schema: ${issues}`], null];
    } else {
      const enforced = { out: [], error: null };
      const said = quietly(() =>
        of(ev)
          .pipe(client.enforceEvents())
          .subscribe({
            next(e) {
              enforced.out.push(e);
            },
            error(e) {
              enforced.error = e;
            },
          }),
      );
      found = [true, said, enforced];
    }
    seen10.set(key, found);
  }
  return found;
}

function verify(text) {
  const client = pkg("@ag-ui/client");
  const problems = [];
  const events = [];
  for (const { line, ev, key } of read(text, problems)) {
    const [accepted, said, enforced] = eventAlone10(ev, key);
    for (const s of said) problems.push(`line ${line}: ${ev && ev.type}: ${s}`);
    if (accepted) events.push({ line, ev, enforced });
  }
  if (events.length === 0) problems.push("no events");
  let at = null;
  let failure = null;
  let completed = false;
  // Each event as enforceEvents passes it on (see eventAlone10).
  quietly(() =>
    from(events)
      .pipe(
        concatMap((e) => {
          at = e;
          const { out, error } = e.enforced;
          return error ? throwError(() => error) : from(out.map(copy));
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
// As `seen10`, for the 0.0 schema: [the parsed event as JSON, or null
// for a rejection; what was found].
const seen00 = new Map();

function eventAlone00(ev, key) {
  let found = seen00.get(key);
  if (found === undefined) {
    const core = pkg("@ag-ui/core-0.0");
    const parsed = core.EventSchemas.safeParse(ev);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((x) => `${x.path.join("/")}: ${x.message}`).join("; ");
      found = [null, [`rejected by the 0.0 schema: ${issues}`]];
    } else {
      const changed = canonical(parsed.data) !== canonical(ev);
      found = [
        JSON.stringify(parsed.data),
        changed ? [`the 0.0 schema changes it to ${canonical(parsed.data)}`] : [],
      ];
    }
    seen00.set(key, found);
  }
  return found;
}

async function verify00(text) {
  const client = pkg("@ag-ui/client-0.0");
  const problems = [];
  const events = [];
  for (const { line, ev, key } of read(text, problems)) {
    const [parsed, said] = eventAlone00(ev, key);
    for (const s of said) problems.push(`line ${line}: ${ev && ev.type}: ${s}`);
    // A fresh copy for each stream: the client's apply step may change it.
    if (parsed !== null) events.push({ line, ev: JSON.parse(parsed) });
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

// The streams framed on standard input (see the top of this file), as
// [name, text] pairs, one at a time. The chunks read are joined only once
// a whole header or stream is there: joining at each chunk would copy a
// large stream over and over.
async function* framed(input) {
  let chunks = []; // what is read and not yet taken, in order
  let have = 0; // their length
  let want = null; // [name, length] of the stream being read
  const joined = () => {
    if (chunks.length > 1) chunks = [Buffer.concat(chunks, have)];
    return chunks[0];
  };
  const take = (n) => {
    const all = joined();
    chunks = n < all.length ? [all.subarray(n)] : [];
    have -= n;
    return all.subarray(0, n);
  };
  for await (const chunk of input) {
    chunks.push(chunk);
    have += chunk.length;
    for (;;) {
      if (want === null) {
        if (have === 0) break;
        const nl = joined().indexOf(10);
        if (nl < 0) break;
        const [name, length] = take(nl + 1).subarray(0, nl).toString("utf8").split("\t");
        want = [name, Number(length)];
      }
      if (have < want[1]) break;
      yield [want[0], take(want[1]).toString("utf8")];
      want = null;
    }
  }
  if (want !== null || have) throw new Error("standard input ends inside a stream");
}

async function* files(names) {
  for (const name of names) yield [name, fs.readFileSync(name, "utf8")];
}

async function main() {
  let args = process.argv.slice(2);
  let check = verify;
  if (args[0] === "--agui-version") {
    if (args[1] === "0.0") check = verify00;
    else if (args[1] !== "1.0") throw new Error(`unknown AG-UI version ${args[1]}`);
    args = args.slice(2);
  }
  const streams = args[0] === "--stdin" ? framed(process.stdin) : files(args);
  let failed = 0;
  let total = 0;
  const out = [];
  for await (const [name, text] of streams) {
    total++;
    const found = await check(text);
    const { problems, warnings } = Array.isArray(found) ? { problems: found, warnings: [] } : found;
    for (const w of warnings) out.push(`WARN ${name}: ${w}\n`);
    if (problems.length === 0) {
      out.push(`OK ${name}\n`);
    } else {
      failed++;
      out.push(`FAIL ${name}: ${problems.slice(0, 5).join(" | ")}\n`);
    }
    if (out.length >= 64) process.stdout.write(out.splice(0).join(""));
  }
  out.push(`${total - failed} passed, ${failed} failed\n`);
  process.stdout.write(out.join(""), () => process.exit(failed ? 1 : 0));
}

main();
