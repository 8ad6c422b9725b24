//! The invariant checker behind `agui-translate check`, the tests and the
//! fuzzers: what every AG-UI stream this program writes must satisfy.
//!
//! - every line is a JSON object with a string `type`;
//! - a run starts with RUN_STARTED (or is a lone RUN_ERROR), nothing but a new
//!   RUN_STARTED follows its terminal event, and it has exactly one terminal
//!   event, RUN_FINISHED (with the RUN_STARTED's ids) or RUN_ERROR;
//! - the stream does not end inside a run;
//! - every START has its END with the same id, before the run ends: text and
//!   reasoning messages, reasoning spans, tool calls, steps, subagents;
//!   CONTENT and ARGS only for what is open;
//! - an event of a message, reasoning or tool call that names a subagent
//!   (`subagentRunId`) names the one its START named;
//! - a tool call's ARGS deltas join into valid JSON; a tool call id is not
//!   started twice in the stream, and a TOOL_CALL_RESULT names a call started
//!   before it.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use serde::Deserialize;

use crate::lines::Lines;

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

/// What a valid stream held.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub events: u64,
    pub runs: u64,
}

#[derive(Deserialize)]
struct Ev<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "messageId", borrow)]
    message_id: Option<Cow<'a, str>>,
    #[serde(rename = "toolCallId", borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(rename = "threadId", borrow)]
    thread_id: Option<Cow<'a, str>>,
    #[serde(rename = "runId", borrow)]
    run_id: Option<Cow<'a, str>>,
    #[serde(rename = "stepName", borrow)]
    step_name: Option<Cow<'a, str>>,
    #[serde(rename = "subagentRunId", borrow)]
    subagent_run_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct Run {
    ids: Option<(String, String)>,
    texts: Vec<String>,
    reasoning_spans: Vec<String>,
    reasoning_messages: Vec<String>,
    /// Open tool calls with their arguments so far.
    tools: Vec<(String, String)>,
    steps: Vec<String>,
    subagents: Vec<String>,
    /// The subagent that started each open message, reasoning or tool call
    /// (`None`: the parent agent), by family and id.
    owners: Vec<(&'static str, String, Option<String>)>,
}

impl Run {
    /// A START: remember whose item this is.
    fn own(&mut self, family: &'static str, id: Option<&str>, sub: Option<&str>) {
        let Some(id) = id else { return };
        self.owners.retain(|(f, i, _)| !(*f == family && i == id));
        self.owners
            .push((family, id.to_owned(), sub.map(str::to_owned)));
    }

    /// A CONTENT, ARGS or END: one that names a subagent must name the
    /// START's (AG-UI rejects it otherwise; naming none is always fine).
    fn check_owner(
        &mut self,
        family: &'static str,
        id: Option<&str>,
        sub: Option<&str>,
        end: bool,
        kind: &str,
        problems: &mut Vec<String>,
    ) {
        let Some(id) = id else { return };
        let Some(p) = self
            .owners
            .iter()
            .position(|(f, i, _)| *f == family && i == id)
        else {
            return;
        };
        if let Some(s) = sub {
            if self.owners[p].2.as_deref() != Some(s) {
                problems.push(format!(
                    "{kind} for {id} with subagentRunId {s}, but its start was {}'s",
                    self.owners[p].2.as_deref().unwrap_or("the parent agent")
                ));
            }
        }
        if end {
            self.owners.remove(p);
        }
    }
}

impl Run {
    fn open_items(&self) -> Vec<String> {
        let mut v = Vec::new();
        v.extend(self.texts.iter().map(|i| format!("text message {i}")));
        v.extend(
            self.reasoning_messages
                .iter()
                .map(|i| format!("reasoning message {i}")),
        );
        v.extend(
            self.reasoning_spans
                .iter()
                .map(|i| format!("reasoning {i}")),
        );
        v.extend(self.tools.iter().map(|(i, _)| format!("tool call {i}")));
        v.extend(self.steps.iter().map(|i| format!("step {i}")));
        v.extend(self.subagents.iter().map(|i| format!("subagent {i}")));
        v
    }
}

/// Check a stream; all violations, or a summary.
pub fn check(rdr: impl Read) -> std::io::Result<Result<Summary, Vec<Violation>>> {
    let mut lines = Lines::new(rdr);
    let mut c = Checker::default();
    while let Some(line) = lines.next_line()? {
        c.line(line);
    }
    Ok(c.finish())
}

/// Check a stream held in memory.
pub fn check_bytes(data: &[u8]) -> Result<Summary, Vec<Violation>> {
    check(data).expect("reading from memory cannot fail")
}

#[derive(Default)]
struct Checker {
    /// Tool calls started in the stream (clients match results by id
    /// across runs).
    started_tools: std::collections::HashSet<String>,
    lineno: u64,
    run: Option<Run>,
    summary: Summary,
    violations: Vec<Violation>,
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

    fn line(&mut self, line: &[u8]) {
        self.lineno += 1;
        let ev: Ev = match serde_json::from_slice(line) {
            Ok(ev) => ev,
            Err(e) => {
                let what = if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() {
                    format!("not an event object ({e})")
                } else {
                    format!("not JSON ({e})")
                };
                return self.bad(what);
            }
        };
        let Some(kind) = ev.kind.as_deref() else {
            return self.bad("an event without a string type".into());
        };
        self.summary.events += 1;
        match kind {
            "RUN_STARTED" => {
                if self.run.is_some() {
                    self.bad("RUN_STARTED while a run is open".into());
                }
                self.summary.runs += 1;
                let ids = ev.thread_id.as_deref().zip(ev.run_id.as_deref());
                if ids.is_none() {
                    self.bad("RUN_STARTED without threadId and runId".into());
                }
                self.run = Some(Run {
                    ids: ids.map(|(t, r)| (t.to_owned(), r.to_owned())),
                    ..Run::default()
                });
                return;
            }
            "RUN_FINISHED" | "RUN_ERROR" => {
                let Some(run) = self.run.take() else {
                    if kind == "RUN_ERROR" && self.summary.events == 1 {
                        // A stream may open with RUN_ERROR alone.
                        self.summary.runs += 1;
                        return;
                    }
                    return self.bad(format!("{kind} outside a run (a second terminal event?)"));
                };
                let open = run.open_items();
                if !open.is_empty() {
                    self.bad(format!("{kind} while {} still open", open.join(", ")));
                }
                if kind == "RUN_FINISHED" {
                    let ids = ev.thread_id.as_deref().zip(ev.run_id.as_deref());
                    if ids != run.ids.as_ref().map(|(t, r)| (t.as_str(), r.as_str())) {
                        self.bad("RUN_FINISHED ids differ from RUN_STARTED's".into());
                    }
                }
                return;
            }
            _ => {}
        }
        if self.run.is_none() {
            return self.bad(format!("{kind} outside a run"));
        }
        let msg = ev.message_id.as_deref();
        let tool = ev.tool_call_id.as_deref();
        let sub = ev.subagent_run_id.as_deref();
        let mut problems = Vec::new();
        {
            let run = self.run.as_mut().expect("checked");
            let started_tools = &mut self.started_tools;
            let need =
                |id: Option<&str>, what: &str, problems: &mut Vec<String>| -> Option<String> {
                    match id {
                        Some(i) => Some(i.to_owned()),
                        None => {
                            problems.push(format!("{kind} without {what}"));
                            None
                        }
                    }
                };
            match kind {
                "TEXT_MESSAGE_START" => run.own("text", msg, sub),
                "REASONING_START" => run.own("reasoning", msg, sub),
                "REASONING_MESSAGE_START" => run.own("reasoning message", msg, sub),
                "TOOL_CALL_START" => run.own("tool", tool, sub),
                "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_END" => {
                    let end = kind.ends_with("END");
                    run.check_owner("text", msg, sub, end, kind, &mut problems);
                }
                "REASONING_END" => {
                    run.check_owner("reasoning", msg, sub, true, kind, &mut problems);
                }
                "REASONING_MESSAGE_CONTENT" | "REASONING_MESSAGE_END" => {
                    let end = kind.ends_with("END");
                    run.check_owner("reasoning message", msg, sub, end, kind, &mut problems);
                }
                "TOOL_CALL_ARGS" | "TOOL_CALL_END" => {
                    let end = kind.ends_with("END");
                    run.check_owner("tool", tool, sub, end, kind, &mut problems);
                }
                _ => {}
            }
            match kind {
                "TEXT_MESSAGE_START" => {
                    if let Some(i) = need(msg, "messageId", &mut problems) {
                        open(&mut run.texts, i, kind, &mut problems);
                    }
                }
                "TEXT_MESSAGE_CONTENT" => is_open(&run.texts, msg, kind, &mut problems),
                "TEXT_MESSAGE_END" => close(&mut run.texts, msg, kind, &mut problems),
                "REASONING_START" => {
                    if let Some(i) = need(msg, "messageId", &mut problems) {
                        open(&mut run.reasoning_spans, i, kind, &mut problems);
                    }
                }
                "REASONING_END" => close(&mut run.reasoning_spans, msg, kind, &mut problems),
                "REASONING_MESSAGE_START" => {
                    if let Some(i) = need(msg, "messageId", &mut problems) {
                        open(&mut run.reasoning_messages, i, kind, &mut problems);
                    }
                }
                "REASONING_MESSAGE_CONTENT" => {
                    is_open(&run.reasoning_messages, msg, kind, &mut problems)
                }
                "REASONING_MESSAGE_END" => {
                    close(&mut run.reasoning_messages, msg, kind, &mut problems)
                }
                "TOOL_CALL_START" => {
                    if let Some(i) = need(tool, "toolCallId", &mut problems) {
                        if !started_tools.insert(i.clone()) {
                            problems.push(format!("tool call {i} started twice"));
                        } else {
                            run.tools.push((i, String::new()));
                        }
                    }
                }
                "TOOL_CALL_ARGS" => {
                    match run.tools.iter_mut().find(|(i, _)| Some(i.as_str()) == tool) {
                        Some((_, args)) => args.push_str(ev.delta.as_deref().unwrap_or("")),
                        None => problems.push(format!(
                            "{kind} for tool call {} that is not open",
                            tool.unwrap_or("?")
                        )),
                    }
                }
                "TOOL_CALL_END" => {
                    match run.tools.iter().position(|(i, _)| Some(i.as_str()) == tool) {
                        Some(p) => {
                            let (id, args) = run.tools.remove(p);
                            if !args.is_empty()
                                && serde_json::from_str::<serde::de::IgnoredAny>(&args).is_err()
                            {
                                problems.push(format!(
                                    "the arguments of tool call {id} are not JSON: {args:.80}"
                                ));
                            }
                        }
                        None => problems.push(format!(
                            "{kind} for tool call {} that is not open",
                            tool.unwrap_or("?")
                        )),
                    }
                }
                "TOOL_CALL_RESULT" => {
                    if let Some(i) = need(tool, "toolCallId", &mut problems) {
                        if !started_tools.contains(&i) {
                            problems.push(format!("a result for tool call {i}, never started"));
                        }
                    }
                    need(msg, "messageId", &mut problems);
                }
                "STEP_STARTED" => {
                    if let Some(i) = need(ev.step_name.as_deref(), "stepName", &mut problems) {
                        open(&mut run.steps, i, kind, &mut problems);
                    }
                }
                "STEP_FINISHED" => {
                    close(&mut run.steps, ev.step_name.as_deref(), kind, &mut problems)
                }
                "SUBAGENT_STARTED" => {
                    if let Some(i) = need(
                        ev.subagent_run_id.as_deref(),
                        "subagentRunId",
                        &mut problems,
                    ) {
                        open(&mut run.subagents, i, kind, &mut problems);
                    }
                }
                "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => close(
                    &mut run.subagents,
                    ev.subagent_run_id.as_deref(),
                    kind,
                    &mut problems,
                ),
                _ => {}
            }
        }
        for p in problems {
            self.bad(p);
        }
    }

    fn finish(mut self) -> Result<Summary, Vec<Violation>> {
        self.lineno = 0;
        if self.summary.events == 0 {
            self.bad("no events".into());
        } else if self.run.is_some() {
            self.bad("the stream ends inside a run (no RUN_FINISHED or RUN_ERROR)".into());
        }
        if self.violations.is_empty() {
            Ok(self.summary)
        } else {
            Err(self.violations)
        }
    }
}

fn open(set: &mut Vec<String>, id: String, kind: &str, problems: &mut Vec<String>) {
    if set.contains(&id) {
        problems.push(format!("{kind} for {id}, which is already open"));
    } else {
        set.push(id);
    }
}

fn is_open(set: &[String], id: Option<&str>, kind: &str, problems: &mut Vec<String>) {
    if !id.is_some_and(|i| set.iter().any(|s| s == i)) {
        problems.push(format!(
            "{kind} for {}, which is not open",
            id.unwrap_or("?")
        ));
    }
}

fn close(set: &mut Vec<String>, id: Option<&str>, kind: &str, problems: &mut Vec<String>) {
    match id.and_then(|i| set.iter().position(|s| s == i)) {
        Some(p) => {
            set.remove(p);
        }
        None => problems.push(format!(
            "{kind} for {}, which is not open",
            id.unwrap_or("?")
        )),
    }
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
                runs: 2
            })
        );
    }

    #[test]
    fn broken_streams_are_caught() {
        let cases = [
            ("", "no events"),
            ("{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n", "ends inside a run"),
            ("not json\n", "not JSON"),
            ("{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n", "outside a run"),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n",
                "text message m still open",
            ),
            (
                "{\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n{\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n",
                "outside a run",
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
}
