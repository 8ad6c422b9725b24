//! The AG-UI 1.0 validator behind `agui-translate check`, the tests and the
//! fuzzers.
//!
//! A stream is NDJSON (one event per line) or server-sent events (`data:`
//! lines, events separated by a blank line), told from its first line. Every
//! event is checked against the AG-UI 1.0 schema ([`crate::check::schema`]), and the
//! stream against the sequence rules a 1.0 client (`verifyEvents` of
//! `@ag-ui/client` 1.0) enforces:
//!
//! - the first event is RUN_STARTED or RUN_ERROR; RUN_STARTED does not come
//!   while a run is open; after RUN_FINISHED only RUN_STARTED or RUN_ERROR
//!   follow, after RUN_ERROR only RUN_STARTED;
//! - RUN_FINISHED comes with nothing open; RUN_ERROR may come at any time;
//! - a text message, reasoning message, reasoning span, tool call or step is
//!   not started while open, and its CONTENT, ARGS or END come while it is;
//! - a subagent is not started twice in a run, its parent was started, and
//!   it is finished (or fails) while active;
//! - an event that names a subagent (`subagentRunId`) names the one its START
//!   named.
//!
//! And the promises this program's streams keep beyond those (a 1.0 client
//! lets them pass):
//!
//! - the stream does not end inside a run, and a run has one terminal event
//!   (no RUN_ERROR after RUN_FINISHED);
//! - RUN_FINISHED has the RUN_STARTED's threadId and runId;
//! - a tool call id is started once in the stream, a TOOL_CALL_RESULT names
//!   a call started before it, and a call's ARGS join into JSON.
//!
//! The `*_CHUNK` events are checked against the schema only.

pub mod schema;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::Read;

use crate::check::schema::Members;

use crate::base::lines::Lines;

/// One broken rule, at a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// 1-based line number, or 0 for the end of the stream.
    pub line: u64,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "end of stream: {}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

/// How the stream was framed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    #[default]
    Ndjson,
    Sse,
}

/// What a valid stream held.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub events: u64,
    pub runs: u64,
    pub framing: Framing,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} event{} in {} run{}",
            self.events,
            plural(self.events),
            self.runs,
            plural(self.runs)
        )?;
        if self.framing == Framing::Sse {
            f.write_str(" (server-sent events)")?;
        }
        Ok(())
    }
}

/// Check a stream; all violations, or a summary.
pub fn check(rdr: impl Read) -> std::io::Result<Result<Summary, Vec<Violation>>> {
    let mut lines = Lines::new(rdr);
    let mut c = Checker::default();
    let mut framing = None;
    // SSE: the pending event's data, and the line it began on.
    let mut data = String::new();
    let mut data_line = 0;
    let mut lineno = 0;
    while let Some(line) = lines.next_line()? {
        lineno += 1;
        let framing = *framing.get_or_insert_with(|| {
            if is_sse_line(line) {
                Framing::Sse
            } else {
                Framing::Ndjson
            }
        });
        if framing == Framing::Ndjson {
            c.event(lineno, line);
            continue;
        }
        if line.is_empty() {
            if data_line > 0 {
                c.event(data_line, data.as_bytes());
                data.clear();
                data_line = 0;
            }
            continue;
        }
        let Some(rest) = line.strip_prefix(b"data:") else {
            if !is_sse_line(line) {
                c.lineno = lineno;
                c.bad(format!(
                    "not a server-sent events line: {}",
                    crate::base::json::preview(line)
                ));
            }
            continue; // event:, id:, retry:, comments
        };
        let rest = rest.strip_prefix(b" ").unwrap_or(rest);
        match std::str::from_utf8(rest) {
            Ok(text) => {
                if data_line == 0 {
                    data_line = lineno;
                } else {
                    data.push('\n');
                }
                data.push_str(text);
            }
            Err(e) => {
                c.lineno = lineno;
                c.bad(format!("not UTF-8: {e}"));
            }
        }
    }
    if data_line > 0 {
        c.event(data_line, data.as_bytes());
    }
    c.summary.framing = framing.unwrap_or_default();
    Ok(c.finish())
}

/// Whether a line is one of server-sent events (a field or a comment).
fn is_sse_line(line: &[u8]) -> bool {
    [&b"data:"[..], b"event:", b"id:", b"retry:", b":"]
        .iter()
        .any(|p| line.starts_with(p))
}

/// The checks of an NDJSON stream taken a line at a time, for a caller
/// that has the lines already: [`check`] gives for an NDJSON stream what
/// its lines given here give. A copy taken between two lines goes on from
/// there: the reliability sweep checks thousands of outputs that begin
/// alike by checking their beginning once.
#[derive(Default, Clone)]
pub struct NdjsonLines {
    checker: Checker,
    lineno: u64,
}

impl NdjsonLines {
    /// The next line, without its `\n`.
    pub fn line(&mut self, line: &[u8]) {
        self.lineno += 1;
        self.checker.event(self.lineno, line);
    }

    /// The end of the stream: all violations, or a summary.
    pub fn finish(self) -> Result<Summary, Vec<Violation>> {
        self.checker.finish()
    }
}

/// Check a stream held in memory.
pub fn check_bytes(data: &[u8]) -> Result<Summary, Vec<Violation>> {
    check(data).expect("reading from memory cannot fail")
}

/// What can be open in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Family {
    Text,
    ReasoningMessage,
    Reasoning,
    Tool,
    Step,
}

impl Family {
    fn name(self) -> &'static str {
        match self {
            Family::Text => "text message",
            Family::ReasoningMessage => "reasoning message",
            Family::Reasoning => "reasoning",
            Family::Tool => "tool call",
            Family::Step => "step",
        }
    }
}

#[derive(Default, Clone)]
struct Run {
    ids: (String, String),
    /// Open items, with the subagent that started each (`None`: the parent
    /// agent) and the order they opened in.
    open: HashMap<(Family, String), (Option<String>, u64)>,
    opened: u64,
    /// Open tool calls' arguments so far.
    args: HashMap<String, String>,
    subagents_active: HashSet<String>,
    subagents_seen: HashSet<String>,
}

impl Run {
    fn open_items(&self) -> Vec<String> {
        let mut v: Vec<_> = self
            .open
            .iter()
            .map(|((f, id), (_, n))| (*n, format!("{} {id}", f.name())))
            .chain(
                self.subagents_active
                    .iter()
                    .map(|id| (u64::MAX, format!("subagent {id}"))),
            )
            .collect();
        v.sort();
        v.into_iter().map(|(_, s)| s).collect()
    }
}

/// Where the stream is.
#[derive(Default, Clone)]
enum Phase {
    /// No event yet.
    #[default]
    Start,
    Run(Box<Run>),
    /// After RUN_FINISHED.
    Finished,
    /// After RUN_ERROR.
    Failed,
}

#[derive(Default, Clone)]
struct Checker {
    /// Tool calls started in the stream (clients match results by id
    /// across runs), each with the line and the run (by number) it started
    /// in.
    started_tools: HashMap<String, (u64, u64)>,
    lineno: u64,
    phase: Phase,
    summary: Summary,
    violations: Vec<Violation>,
}

fn str_field(ev: &Members, key: &str) -> Option<String> {
    ev.get(key).and_then(|v| crate::check::schema::as_str(v))
}

impl Checker {
    fn bad(&mut self, message: String) {
        if self.violations.len() < 1000 {
            self.violations.push(Violation {
                line: self.lineno,
                message,
            });
        }
    }

    fn event(&mut self, lineno: u64, text: &[u8]) {
        self.lineno = lineno;
        let ev: Members = match crate::check::schema::members_of_event(text) {
            Ok(ev) => ev,
            Err(problem) => return self.bad(problem),
        };
        let problems = crate::check::schema::check_event(&ev);
        let kind = str_field(&ev, "type").unwrap_or_default();
        let known = crate::check::schema::is_event_type(&kind);
        for p in problems {
            self.bad(p);
        }
        if known {
            self.summary.events += 1;
            self.sequence(&kind, &ev);
        }
    }

    fn sequence(&mut self, kind: &str, ev: &Members) {
        let phase = std::mem::take(&mut self.phase);
        self.phase = match (kind, phase) {
            ("RUN_STARTED", Phase::Run(run)) => {
                self.bad("RUN_STARTED while a run is open".into());
                Phase::Run(run)
            }
            ("RUN_STARTED", _) => {
                self.summary.runs += 1;
                let id = |k| str_field(ev, k).unwrap_or_default().to_owned();
                Phase::Run(Box::new(Run {
                    ids: (id("threadId"), id("runId")),
                    ..Run::default()
                }))
            }
            ("RUN_FINISHED", Phase::Run(run)) => {
                let open = run.open_items();
                if !open.is_empty() {
                    self.bad(format!("RUN_FINISHED while {} still open", open.join(", ")));
                }
                let ids = (str_field(ev, "threadId"), str_field(ev, "runId"));
                if ids != (Some(run.ids.0.clone()), Some(run.ids.1.clone())) {
                    self.bad("RUN_FINISHED ids differ from RUN_STARTED's".into());
                }
                Phase::Finished
            }
            ("RUN_ERROR", Phase::Run(_)) => Phase::Failed,
            ("RUN_ERROR", Phase::Start) => {
                self.summary.runs += 1;
                Phase::Failed
            }
            ("RUN_ERROR", Phase::Finished) => {
                self.bad("RUN_ERROR after RUN_FINISHED: a run has one terminal event".into());
                Phase::Failed
            }
            (_, Phase::Start) => {
                self.bad(format!(
                    "{kind} before RUN_STARTED: the first event must be RUN_STARTED or RUN_ERROR"
                ));
                Phase::Start
            }
            (_, phase @ (Phase::Finished | Phase::Failed)) => {
                self.bad(format!(
                    "{kind} after the run ended (only RUN_STARTED may follow{})",
                    if matches!(phase, Phase::Finished) {
                        ", or RUN_ERROR"
                    } else {
                        ""
                    }
                ));
                phase
            }
            (_, Phase::Run(mut run)) => {
                let mut problems = Vec::new();
                self.in_run(kind, ev, &mut run, &mut problems);
                for p in problems {
                    self.bad(p);
                }
                Phase::Run(run)
            }
        };
    }

    fn in_run(&mut self, kind: &str, ev: &Members, run: &mut Run, problems: &mut Vec<String>) {
        use Family::*;
        let sub = str_field(ev, "subagentRunId");
        let (family, id_key, act) = match kind {
            "TEXT_MESSAGE_START" => (Text, "messageId", Act::Start),
            "TEXT_MESSAGE_CONTENT" => (Text, "messageId", Act::Continue),
            "TEXT_MESSAGE_END" => (Text, "messageId", Act::End),
            "REASONING_START" => (Reasoning, "messageId", Act::Start),
            "REASONING_END" => (Reasoning, "messageId", Act::End),
            "REASONING_MESSAGE_START" => (ReasoningMessage, "messageId", Act::Start),
            "REASONING_MESSAGE_CONTENT" => (ReasoningMessage, "messageId", Act::Continue),
            "REASONING_MESSAGE_END" => (ReasoningMessage, "messageId", Act::End),
            "TOOL_CALL_START" => (Tool, "toolCallId", Act::Start),
            "TOOL_CALL_ARGS" => (Tool, "toolCallId", Act::Continue),
            "TOOL_CALL_END" => (Tool, "toolCallId", Act::End),
            "STEP_STARTED" => (Family::Step, "stepName", Act::Start),
            "STEP_FINISHED" => (Family::Step, "stepName", Act::End),
            "TOOL_CALL_RESULT" => {
                if let Some(id) = str_field(ev, "toolCallId") {
                    if !self.started_tools.contains_key(&id) {
                        problems.push(format!("a result for tool call {id}, never started"));
                    }
                }
                return;
            }
            "SUBAGENT_STARTED" => {
                let Some(id) = str_field(ev, "subagentRunId") else {
                    return;
                };
                if let Some(parent) = str_field(ev, "parentSubagentRunId") {
                    if !run.subagents_seen.contains(&parent) {
                        problems.push(format!("SUBAGENT_STARTED for {id} names parent subagent {parent}, never started"));
                    }
                }
                if !run.subagents_seen.insert(id.to_owned()) {
                    problems.push(format!(
                        "SUBAGENT_STARTED for {id}, already started in this run"
                    ));
                }
                run.subagents_active.insert(id.to_owned());
                return;
            }
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => {
                let Some(id) = str_field(ev, "subagentRunId") else {
                    return;
                };
                if !run.subagents_active.remove(&id) {
                    problems.push(format!("{kind} for subagent {id}, which is not active"));
                }
                return;
            }
            _ => return,
        };
        // A schema problem, already reported.
        let Some(id) = str_field(ev, id_key) else {
            return;
        };
        let key = (family, id.to_owned());
        match act {
            Act::Start => {
                if run.open.contains_key(&key) {
                    problems.push(format!("{kind} for {id}, which is already open"));
                    return;
                }
                if family == Tool {
                    let run_now = self.summary.runs;
                    let first = *self
                        .started_tools
                        .entry(id.to_owned())
                        .or_insert((self.lineno, run_now));
                    if first.0 != self.lineno {
                        let (line, run_no) = first;
                        problems.push(if run_no == run_now {
                            format!("tool call {id} started twice (first at line {line})")
                        } else {
                            format!(
                                "tool call {id} started twice (first at line {line}, in an earlier run): a stream joined from translations of the same input repeats its ids"
                            )
                        });
                    }
                    run.args.insert(id.to_owned(), String::new());
                }
                run.opened += 1;
                run.open.insert(key, (sub, run.opened));
            }
            Act::Continue | Act::End => {
                let Some((owner, _)) = run.open.get(&key) else {
                    problems.push(format!("{kind} for {id}, which is not open"));
                    return;
                };
                if let Some(s) = sub {
                    if owner.as_deref() != Some(s.as_str()) {
                        problems.push(format!(
                            "{kind} for {id} with subagentRunId {s}, but its start was {}'s",
                            owner.as_deref().unwrap_or("the parent agent")
                        ));
                    }
                }
                if family == Tool && act == Act::Continue {
                    if let (Some(args), Some(delta)) =
                        (run.args.get_mut(&id), str_field(ev, "delta"))
                    {
                        args.push_str(&delta);
                    }
                }
                if act == Act::End {
                    run.open.remove(&key);
                    // A tool call's arguments, not those of another item
                    // that happens to share its id.
                    let args = if family == Tool {
                        run.args.remove(&id)
                    } else {
                        None
                    };
                    if let Some(args) = args {
                        if !args.is_empty()
                            && serde_json::from_str::<serde::de::IgnoredAny>(&args).is_err()
                        {
                            problems.push(format!(
                                "the arguments of tool call {id} are not JSON: {args:.80}"
                            ));
                        }
                    }
                }
            }
        }
    }

    fn finish(mut self) -> Result<Summary, Vec<Violation>> {
        self.lineno = 0;
        if self.summary.events == 0 && self.violations.is_empty() {
            self.bad("no events".into());
        } else if matches!(self.phase, Phase::Run(_)) {
            self.bad("the stream ends inside a run (no RUN_FINISHED or RUN_ERROR)".into());
        }
        if self.violations.is_empty() {
            Ok(self.summary)
        } else {
            Err(self.violations)
        }
    }
}

/// Where an event takes its item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Act {
    Start,
    Continue,
    End,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(s: &str) -> Result<Summary, Vec<String>> {
        check_bytes(s.as_bytes()).map_err(|v| v.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_good_stream_passes() {
        let s = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}
{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}
{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}
{"type":"TEXT_MESSAGE_END","messageId":"m"}
{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"x"}
{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{\"a\":"}
{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"1}"}
{"type":"TOOL_CALL_END","toolCallId":"c"}
{"type":"TOOL_CALL_RESULT","messageId":"c-r","toolCallId":"c","content":"ok"}
{"type":"RUN_FINISHED","threadId":"t","runId":"r"}
{"type":"RUN_STARTED","threadId":"t","runId":"r2"}
{"type":"RUN_ERROR","message":"boom"}
"#;
        assert_eq!(
            verdict(s),
            Ok(Summary {
                events: 12,
                runs: 2,
                framing: Framing::Ndjson,
            })
        );
    }

    #[test]
    fn broken_streams_are_caught() {
        let cases = [
            ("", "no events"),
            ("{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n", "ends inside a run"),
            ("not json\n", "not JSON"),
            ("{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n", "before RUN_STARTED"),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n",
                "text message m still open",
            ),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n",
                "RUN_ERROR after RUN_FINISHED",
            ),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"x\"}\n{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"c\",\"delta\":\"{oops\"}\n{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n",
                "not JSON: {oops",
            ),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TOOL_CALL_RESULT\",\"messageId\":\"m\",\"toolCallId\":\"z\",\"content\":\"\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n",
                "never started",
            ),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"other\"}\n",
                "ids differ",
            ),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\",\"subagentRunId\":\"s\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n",
                "with subagentRunId s, but its start was the parent agent's",
            ),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"x\",\"subagentRunId\":\"a\"}\n{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"c\",\"delta\":\"{}\",\"subagentRunId\":\"b\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n",
                "with subagentRunId b, but its start was a's",
            ),
        ];
        for (input, want) in cases {
            let errs = verdict(input).expect_err(input);
            assert!(errs.iter().any(|e| e.contains(want)), "{input:?}: {errs:?}");
        }
    }

    /// One run around `events`, as NDJSON.
    fn in_run(events: &[&str]) -> String {
        let mut s = String::from("{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n");
        for e in events {
            s.push_str(e);
            s.push('\n');
        }
        s.push_str("{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n");
        s
    }

    #[test]
    fn events_are_checked_against_the_schema() {
        let cases = [
            (
                r#"{"type":"BANANA"}"#,
                r#""BANANA" is not an AG-UI 1.0 event type"#,
            ),
            (
                r#"{"type":"THINKING_START"}"#,
                "THINKING_START was removed in AG-UI 1.0",
            ),
            (
                r#"{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"x"}"#,
                "removed in AG-UI 1.0",
            ),
            (
                r#"{"type":"TOOL_CALL_START","toolCallId":"c"}"#,
                "TOOL_CALL_START without toolCallName",
            ),
            (
                r#"{"type":"CUSTOM","name":"n","value":1,"colour":"red"}"#,
                r#"CUSTOM: "colour" is not a property of CUSTOM"#,
            ),
            (
                r#"{"type":"RAW","event":{},"source":null}"#,
                "source must be a string, not null",
            ),
            (
                r#"{"type":"RAW","event":{},"timestamp":1.5}"#,
                "timestamp must be an integer, not 1.5",
            ),
            (
                r#"{"type":"RAW","event":{},"metadata":[]}"#,
                "metadata must be an object",
            ),
            (
                r#"{"type":"RAW","event":{},"rawEvent":null}"#,
                "rawEvent must be a value other than null",
            ),
            (
                r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"tool"}"#,
                "role must be one of developer, system, assistant, user",
            ),
            (
                r#"{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text"}]}"#,
                "content/0 without text",
            ),
            (
                r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"x","value":1}]}"#,
                "delta/0/path must be a JSON Pointer",
            ),
            (
                r#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":"hi","mood":"ok"}]}"#,
                r#"messages/0: "mood" is not a property here"#,
            ),
            (
                r#"{"type":"MESSAGES_SNAPSHOT","messages":[],"subagentRunId":"s"}"#,
                r#""subagentRunId" is not a property of MESSAGES_SNAPSHOT"#,
            ),
            ("[1]", "an event must be a JSON object, not an array"),
        ];
        for (event, want) in cases {
            let input = in_run(&[event]);
            let errs = verdict(&input).expect_err(event);
            assert!(errs.iter().any(|e| e.contains(want)), "{event}: {errs:?}");
        }
        let usage =
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":-1}]}"#;
        let input =
            format!("{{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}}\n{usage}\n");
        let errs = verdict(&input).unwrap_err();
        assert!(
            errs.iter()
                .any(|e| e.contains("usage/0/inputTokens must be an integer ≥ 0, not -1")),
            "{errs:?}"
        );
        let outcome = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"result":{"a":null}}"#;
        let input =
            format!("{{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}}\n{outcome}\n");
        assert!(verdict(&input).is_ok());
    }

    #[test]
    fn server_sent_events_are_read() {
        let ndjson = in_run(&[
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"m"}"#,
        ]);
        let sse: String = ndjson.lines().map(|l| format!("data: {l}\n\n")).collect();
        let summary = verdict(&sse).unwrap();
        // Open values are not decoded: numbers beyond f64, deep nesting.
        let deep = format!("{}1e400{}", "[".repeat(5000), "]".repeat(5000));
        let raw = format!("{{\"type\":\"RUN_ERROR\",\"message\":\"m\",\"rawEvent\":{deep}}}\n");
        assert!(verdict(&raw).is_ok());
        let huge = "{\"type\":\"RUN_ERROR\",\"message\":\"m\",\"timestamp\":1e400}\n";
        assert!(verdict(huge).unwrap_err()[0].contains("timestamp must be an integer, not 1e400"));
        let surrogate = "{\"type\":\"RUN_ERROR\",\"message\":\"half \\ud83d of a pair\"}\n";
        assert!(verdict(surrogate).is_ok());
        assert_eq!(summary.framing, Framing::Sse);
        assert_eq!(summary.events, 4);
        assert_eq!(
            summary.to_string(),
            "4 events in 1 run (server-sent events)"
        );
        // A data field split over lines, comments and other fields.
        let split = ": hello\nevent: x\ndata: {\"type\":\"RUN_STARTED\",\ndata: \"threadId\":\"t\",\"runId\":\"r\"}\n\ndata:{\"type\":\"RUN_ERROR\",\"message\":\"m\"}\n\n";
        assert_eq!(verdict(split).unwrap().events, 2);
        // The line of a bad event is its first data line.
        let bad = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: {\"type\":\"BANANA\"}\n\n";
        let errs = check_bytes(bad.as_bytes()).unwrap_err();
        assert_eq!(errs[0].line, 3, "{errs:?}");
    }

    #[test]
    fn summaries_count_in_words() {
        let one = "{\"type\":\"RUN_ERROR\",\"message\":\"m\"}\n";
        assert_eq!(verdict(one).unwrap().to_string(), "1 event in 1 run");
    }

    #[test]
    fn sequence_rules_of_a_1_0_client() {
        let cases: &[(&[&str], &str)] = &[
            (
                &[r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{}"}"#],
                "TOOL_CALL_ARGS for c, which is not open",
            ),
            (
                &[r#"{"type":"STEP_FINISHED","stepName":"s"}"#],
                "STEP_FINISHED for s, which is not open",
            ),
            (
                &[r#"{"type":"STEP_STARTED","stepName":"s"}"#],
                "RUN_FINISHED while step s still open",
            ),
            (
                &[
                    r#"{"type":"SUBAGENT_STARTED","subagentRunId":"a","name":"n"}"#,
                    r#"{"type":"SUBAGENT_FINISHED","subagentRunId":"a"}"#,
                    r#"{"type":"SUBAGENT_STARTED","subagentRunId":"a","name":"n"}"#,
                ],
                "already started in this run",
            ),
            (
                &[
                    r#"{"type":"SUBAGENT_STARTED","subagentRunId":"a","name":"n","parentSubagentRunId":"p"}"#,
                ],
                "parent subagent p, never started",
            ),
            (
                &[r#"{"type":"SUBAGENT_ERROR","subagentRunId":"a","message":"m"}"#],
                "subagent a, which is not active",
            ),
        ];
        for (events, want) in cases {
            let input = in_run(events);
            let errs = verdict(&input).expect_err(&input);
            assert!(errs.iter().any(|e| e.contains(want)), "{input}: {errs:?}");
        }
        // After RUN_ERROR only RUN_STARTED.
        let input = "{\"type\":\"RUN_ERROR\",\"message\":\"m\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"m\"}\n";
        assert!(verdict(input).unwrap_err()[0].contains("after the run ended"));
    }
    /// A text message may share its id with a tool call: its end does not
    /// end the call, nor judge the call's arguments so far.
    #[test]
    fn a_message_with_a_tool_call_s_id_leaves_the_call_alone() {
        let input = in_run(&[
            r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"x"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{\"a\":"}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"c","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"c"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"1}"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"c"}"#,
        ]);
        verdict(&input).unwrap();
    }
}
