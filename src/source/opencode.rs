//! OpenCode: `opencode run --format json [--thinking] PROMPT`.
//!
//! One record per line, `{type, timestamp, sessionID, …}` (the timestamp in
//! milliseconds), each carrying one finished part of the session's
//! assistant messages:
//! ```text
//! {"type":"step_start","timestamp":1795661939190,"sessionID":"ses_…","part":{"id":"prt_…","messageID":"msg_…","type":"step-start"}}
//! {"type":"reasoning",…,"part":{"id":"prt_…","messageID":"msg_…","type":"reasoning","text":"17 * 20 = 340 …","time":{…}}}
//! {"type":"text",…,"part":{"id":"prt_…","messageID":"msg_…","type":"text","text":"I will run a command.","time":{…}}}
//! {"type":"tool_use",…,"part":{"type":"tool","tool":"bash","callID":"call_…","state":{"status":"completed","input":{…},"output":"hello\n","metadata":{…},"title":"…"},…}}
//! {"type":"step_finish",…,"part":{"reason":"tool-calls","tokens":{"total":1245,"input":176,"output":33,"reasoning":12,"cache":{"write":0,"read":1024}},"cost":0,…}}
//! {"type":"error",…,"error":{"name":"APIError","data":{"message":"…","statusCode":400,…}}}
//! ```
//! Nothing streams: a text, a reasoning or a tool call (with its input and
//! its output or error) arrives once, whole, when it has ended; reasoning
//! only with `--thinking`. A step that finishes for any reason but
//! `tool-calls` ends the run (a later step takes it up again), with the
//! steps' tokens summed into RUN_FINISHED's usage and their cost into its
//! result; `error` fails it. Later releases end with `done`. The user's
//! prompt and a subagent's own parts are not in the stream.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{input_text, parse_record, raw_record, Held, Line, LineError, Translate};
use crate::agui::{code, plan, Content, Emitter, MetaValue, Role, Usage};
use crate::base::json::{self, text_of};

const SOURCE: &str = "opencode";

/// One line.
#[derive(Deserialize, Default)]
struct Record<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    timestamp: Option<f64>,
    #[serde(
        rename = "sessionID",
        borrow,
        default,
        deserialize_with = "json::opt_str"
    )]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    part: Option<Part<'a>>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// A message part: every field of the parts the stream carries.
#[derive(Deserialize, Default)]
struct Part<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    id: Option<Cow<'a, str>>,
    #[serde(
        rename = "messageID",
        borrow,
        default,
        deserialize_with = "json::opt_str"
    )]
    message_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    reason: Option<Cow<'a, str>>,
    tokens: Option<Tokens>,
    cost: Option<f64>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool: Option<Cow<'a, str>>,
    #[serde(rename = "callID", borrow, default, deserialize_with = "json::opt_str")]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    state: Option<State<'a>>,
}

/// A tool part's state.
#[derive(Deserialize, Default)]
struct State<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    title: Option<Cow<'a, str>>,
}

/// A step's tokens: `input` leaves out the cached ones; `output` leaves out
/// the reasoning ones from 1.18 on, and counts them before (`total` is the
/// sum of what it counts).
#[derive(Deserialize, Default, Clone, Copy)]
struct Tokens {
    total: Option<u64>,
    input: Option<u64>,
    output: Option<u64>,
    reasoning: Option<u64>,
    cache: Option<Cache>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Cache {
    read: Option<u64>,
    write: Option<u64>,
}

/// An `error`: `{name, data: {message, statusCode, …}}`.
#[derive(Deserialize)]
struct Failure<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<FailureData<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FailureData<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
    status_code: Option<u64>,
}

/// The run's steps so far: their tokens and cost, summed.
#[derive(Clone, Default)]
struct Steps {
    count: u64,
    seen: bool,
    input: u64,
    /// The output tokens, reasoning included.
    output: u64,
    reasoning: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
    /// The last step's finish reason.
    reason: Held,
}

#[derive(Default, Clone)]
pub struct OpenCode {
    /// The session the run belongs to.
    session: Held,
    /// The assistant message of the last part, and the last text sent of it
    /// (the parent of its tool calls).
    message: Held,
    text: Held,
    steps: Steps,
    /// The cost, written as JSON for RUN_FINISHED.
    cost: String,
    scratch: Option<Vec<u8>>,
}

impl Translate for OpenCode {
    fn line(&mut self, line: &mut [u8], em: &mut Emitter) -> Result<(), LineError> {
        let mut scratch = self.scratch.take();
        let mut rec = Record::default();
        let result = match parse_record(line, &mut scratch, &mut rec) {
            Ok(line) => self.record(&rec, line, em),
            Err(e) => Err(e),
        };
        self.scratch = scratch;
        result
    }

    fn finish(&mut self, _em: &mut Emitter) {}

    fn source(&self) -> &'static str {
        SOURCE
    }
}

impl OpenCode {
    fn record(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        em.set_timestamp(rec.timestamp.map(|t| t as i64));
        let Some(kind) = rec.kind.as_deref() else {
            em.unknown("record without a type");
            raw(em, line);
            return Ok(());
        };
        let session = rec.session_id.as_deref();
        let other_session =
            session.is_some() && self.session.is_set() && self.session.get() != session;
        if kind != "done" && kind != "error" {
            // A step after the run's end takes it up again; another
            // session's record starts a run of its own.
            let reopened = !other_session && em.run_ended() && em.reopen_run();
            if !reopened && (!em.in_run() || other_session) {
                self.start(session, em);
            }
        }
        let empty = Part::default();
        let part = rec.part.as_ref().unwrap_or(&empty);
        match kind {
            "step_start" => {
                if let Some(m) = part.message_id.as_deref() {
                    self.enter(m);
                }
                raw(em, line);
            }
            "text" => {
                let (Some(id), Some(text)) = (part.id.as_deref(), part.text) else {
                    return Err(LineError::Shape("a text part without id or text".into()));
                };
                if let Some(m) = part.message_id.as_deref() {
                    self.enter(m);
                }
                self.text.set(id);
                em.text_start(id, Role::Assistant);
                let mut decoded = None;
                let text = input_text(text, &mut decoded);
                if !text.is_empty() {
                    em.text_content_text(id, text);
                }
                em.text_end(id);
            }
            "reasoning" => {
                let (Some(id), Some(text)) = (part.id.as_deref(), part.text) else {
                    return Err(LineError::Shape(
                        "a reasoning part without id or text".into(),
                    ));
                };
                em.reasoning_start(id);
                let mut decoded = None;
                let text = input_text(text, &mut decoded);
                if !text.is_empty() {
                    em.reasoning_content_text(id, text);
                }
                em.reasoning_end(id);
            }
            "tool_use" => self.tool(part, em)?,
            "step_finish" => {
                raw(em, line);
                self.step(part, session, em);
            }
            "error" => self.error(rec, line, em),
            "done" => {
                raw(em, line);
                if em.in_run() && !em.run_ended() {
                    self.finish_run(session, em);
                }
            }
            other => {
                em.unknown(format!("record type {other:?}"));
                raw(em, line);
            }
        }
        Ok(())
    }

    /// A new run: nothing of the last one is kept (the buffers are).
    fn start(&mut self, session: Option<&str>, em: &mut Emitter) {
        self.session.set_opt(session);
        self.message.clear();
        self.text.clear();
        self.steps.count = 0;
        self.steps.seen = false;
        self.steps.input = 0;
        self.steps.output = 0;
        self.steps.reasoning = 0;
        self.steps.cache_read = 0;
        self.steps.cache_write = 0;
        self.steps.cost = 0.0;
        self.steps.reason.clear();
        em.start_run(session, None);
    }

    /// A part of assistant message `m`: a new message has no text yet.
    fn enter(&mut self, m: &str) {
        if self.message.get() != Some(m) {
            self.message.set(m);
            self.text.clear();
        }
    }

    /// A tool call that has ended: its call, arguments and result at once.
    fn tool(&mut self, part: &Part, em: &mut Emitter) -> Result<(), LineError> {
        let Some(id) = part.call_id.as_deref().or(part.id.as_deref()) else {
            return Err(LineError::Shape("a tool part without callID".into()));
        };
        if let Some(m) = part.message_id.as_deref() {
            self.enter(m);
        }
        let empty = State::default();
        let state = part.state.as_ref().unwrap_or(&empty);
        let name = part.tool.as_deref().unwrap_or("unknown");
        em.close_texts();
        if em.tool_start(id, name, self.text.get()) {
            em.tool_args_given(id, state.input);
            em.tool_end(id);
            if name == "todowrite" {
                if let Some(input) = state.input {
                    plan::todos(em, None, input, plan::CLAUDE);
                }
            }
        }
        let status = state.status.as_deref();
        let failed = status == Some("error");
        let said = if failed { state.error } else { state.output };
        let decoded;
        let content = match said.and_then(json::literal) {
            Some(lit) => Content::Parts(lit),
            None => {
                decoded = said.map(text_of).unwrap_or_default();
                Content::Text(&decoded)
            }
        };
        let meta = [
            ("isError", failed.then_some(MetaValue::Bool(true))),
            (
                "status",
                status
                    .filter(|s| !matches!(*s, "completed" | "error"))
                    .map(MetaValue::Str),
            ),
            ("title", state.title.as_deref().map(MetaValue::Str)),
            ("metadata", state.metadata.map(MetaValue::Json)),
        ];
        em.tool_result(id, content, &meta);
        Ok(())
    }

    /// A step has finished: its tokens and cost are counted, and a reason
    /// other than more tool calls ends the run.
    fn step(&mut self, part: &Part, session: Option<&str>, em: &mut Emitter) {
        let s = &mut self.steps;
        s.count += 1;
        if let Some(t) = part.tokens {
            s.seen = true;
            let cache = t.cache.unwrap_or_default();
            let (read, write) = (cache.read.unwrap_or(0), cache.write.unwrap_or(0));
            let input = t.input.unwrap_or(0);
            let (output, reasoning) = (t.output.unwrap_or(0), t.reasoning.unwrap_or(0));
            // The output with its reasoning: what the total holds beyond the
            // input, whichever way `output` counts.
            let all_input = input + read + write;
            s.output += match t.total {
                Some(total) if total >= all_input + output => total - all_input,
                _ => output + reasoning,
            };
            s.input += input;
            s.reasoning += reasoning;
            s.cache_read += read;
            s.cache_write += write;
        }
        if let Some(c) = part.cost.filter(|c| c.is_finite()) {
            s.cost += c;
        }
        s.reason.set_opt(part.reason.as_deref());
        if part.reason.as_deref() != Some("tool-calls") {
            self.finish_run(session, em);
        }
    }

    /// The steps' tokens, as AG-UI counts them (cached input and reasoning
    /// are parts of the totals).
    fn usage(&self) -> Vec<Usage<'static>> {
        let s = &self.steps;
        if !s.seen {
            return Vec::new();
        }
        let input = s.input + s.cache_read + s.cache_write;
        let output = s.output;
        vec![Usage {
            provider: None,
            model: None,
            input_tokens: Some(input),
            output_tokens: Some(output),
            total_tokens: Some(input + output),
            reasoning_tokens: (s.reasoning > 0).then_some(s.reasoning),
            cached_input_tokens: Some(s.cache_read),
            cache_write_input_tokens: (s.cache_write > 0).then_some(s.cache_write),
        }]
    }

    fn finish_run(&mut self, session: Option<&str>, em: &mut Emitter) {
        let usage = self.usage();
        self.cost.clear();
        let _ = write!(self.cost, "{}", self.steps.cost);
        let cost: Option<&RawValue> = serde_json::from_str(&self.cost).ok();
        let steps = i64::try_from(self.steps.count).unwrap_or(i64::MAX);
        let fields = [
            (
                "sessionID",
                session.or(self.session.get()).map(MetaValue::Str),
            ),
            ("reason", self.steps.reason.get().map(MetaValue::Str)),
            ("steps", Some(MetaValue::Int(steps))),
            ("cost", cost.map(MetaValue::Json)),
        ];
        em.finish_run(Some(MetaValue::Object(&fields)), None, &usage);
    }

    /// An `error`: the run fails (if it had finished, it fails after all).
    fn error(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) {
        if !em.in_run() && !em.run_ended() {
            self.start(rec.session_id.as_deref(), em);
        }
        raw(em, line);
        let failure = rec
            .error
            .and_then(|e| serde_json::from_str::<Failure>(e.get()).ok());
        let name = failure.as_ref().and_then(|f| f.name.as_deref());
        let data = failure.as_ref().and_then(|f| f.data.as_ref());
        let status = data.and_then(|d| d.status_code);
        let message = match data.and_then(|d| d.message.as_deref()) {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => format!(
                "the session failed ({})",
                name.unwrap_or("an unnamed error")
            ),
        };
        let code = match (status, name) {
            (Some(401 | 403), _) | (_, Some("ProviderAuthError")) => code::AUTH_ERROR,
            (Some(_), _) | (_, Some("APIError")) => code::API_ERROR,
            _ => code::CLI_ERROR,
        };
        let usage = self.usage();
        let meta = [("error", rec.error.map(MetaValue::Json))];
        if em.run_ended() {
            em.refail_run(&message, code, &usage, &meta);
        } else {
            em.fail_run(&message, code, &usage, &meta);
        }
    }
}

/// Keep a record that parsed as RAW, copied as it is.
fn raw(em: &mut Emitter, line: Line<'_>) {
    raw_record(em, line, SOURCE);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn translate(lines: &[String]) -> Vec<serde_json::Value> {
        let input = lines.join("\n");
        let out = crate::run::translate_bytes(
            crate::dialect::FromCli::named("opencode").unwrap(),
            input.as_bytes(),
        );
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn rec(kind: &str, body: &str) -> String {
        format!(r#"{{"type":"{kind}","timestamp":1795661939190,"sessionID":"S",{body}}}"#)
    }

    fn step_finish(reason: &str, cost: &str) -> String {
        rec(
            "step_finish",
            &format!(
                r#""part":{{"id":"f","messageID":"m","type":"step-finish","reason":"{reason}","tokens":{{"total":120,"input":10,"output":5,"reasoning":2,"cache":{{"write":3,"read":100}}}},"cost":{cost}}}"#
            ),
        )
    }

    fn types(out: &[serde_json::Value]) -> Vec<&str> {
        out.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    /// A step that stops ends the run, but a step after it takes the run up
    /// again: one run, its steps' tokens and costs summed.
    #[test]
    fn steps_after_a_stop_continue_the_run() {
        let out = translate(&[
            rec(
                "step_start",
                r#""part":{"id":"a","messageID":"m1","type":"step-start"}"#,
            ),
            rec(
                "text",
                r#""part":{"id":"t1","messageID":"m1","type":"text","text":"Hi"}"#,
            ),
            step_finish("unknown", "0.25"),
            rec(
                "step_start",
                r#""part":{"id":"b","messageID":"m2","type":"step-start"}"#,
            ),
            rec(
                "tool_use",
                r#""part":{"type":"tool","tool":"bash","callID":"c1","messageID":"m2","state":{"status":"error","input":{"command":"false"},"error":"boom"}}"#,
            ),
            step_finish("stop", "0.5"),
        ]);
        let kinds = types(&out);
        assert_eq!(kinds.iter().filter(|&&k| k == "RUN_STARTED").count(), 1);
        assert_eq!(kinds.iter().filter(|&&k| k == "RUN_FINISHED").count(), 1);
        let result = out
            .iter()
            .find(|e| e["type"] == "TOOL_CALL_RESULT")
            .unwrap();
        assert_eq!(result["content"], "boom");
        assert_eq!(result["metadata"]["isError"], true);
        let end = out.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED");
        assert_eq!(end["threadId"], "S");
        assert_eq!(end["result"]["steps"], 2);
        assert_eq!(end["result"]["cost"], 0.75);
        assert_eq!(end["result"]["reason"], "stop");
        let usage = &end["usage"][0];
        // Cached input and reasoning are parts of the totals.
        assert_eq!(usage["inputTokens"], 226);
        assert_eq!(usage["cachedInputTokens"], 200);
        assert_eq!(usage["cacheWriteInputTokens"], 6);
        assert_eq!(usage["outputTokens"], 14);
        assert_eq!(usage["reasoningTokens"], 4);
        assert_eq!(usage["totalTokens"], 240);
    }

    /// Before 1.18 a step's `output` counted its reasoning tokens (and its
    /// `total` did not add them again): they are not counted twice.
    #[test]
    fn output_tokens_that_count_the_reasoning() {
        let tokens = |t: &str| {
            let finish = rec(
                "step_finish",
                &format!(r#""part":{{"type":"step-finish","reason":"stop","tokens":{t}}}"#),
            );
            let end = translate(&[finish]).pop().unwrap();
            (
                end["usage"][0]["outputTokens"].clone(),
                end["usage"][0]["totalTokens"].clone(),
            )
        };
        let old = r#"{"total":1245,"input":176,"output":45,"reasoning":12,"cache":{"read":1024,"write":0}}"#;
        let new = r#"{"total":1245,"input":176,"output":33,"reasoning":12,"cache":{"write":0,"read":1024}}"#;
        assert_eq!(tokens(old), (45.into(), 1245.into()));
        assert_eq!(tokens(new), (45.into(), 1245.into()));
        // Without a total: `output` and `reasoning` are taken as parts.
        let bare = r#"{"input":1,"output":2,"reasoning":3,"cache":{"write":0,"read":0}}"#;
        assert_eq!(tokens(bare), (5.into(), 6.into()));
    }

    /// `error` fails the run, even one a step had finished; its status says
    /// the code.
    #[test]
    fn errors_fail_the_run() {
        let error = |data: &str| rec("error", &format!(r#""error":{data}"#));
        let last = |lines: &[String]| {
            let e = translate(lines).pop().unwrap();
            format!("{} {} {}", e["type"], e["code"], e["message"])
        };
        assert_eq!(
            last(&[error(
                r#"{"name":"APIError","data":{"message":"bad key","statusCode":401}}"#
            )]),
            r#""RUN_ERROR" "auth_error" "bad key""#
        );
        assert_eq!(
            last(&[
                step_finish("stop", "0"),
                error(r#"{"name":"APIError","data":{"message":"boom","statusCode":500}}"#)
            ]),
            r#""RUN_ERROR" "api_error" "boom""#
        );
        assert_eq!(
            last(&[error(
                r#"{"name":"ProviderAuthError","data":{"providerID":"p","message":"no key"}}"#
            )]),
            r#""RUN_ERROR" "auth_error" "no key""#
        );
        assert_eq!(
            last(&[error(r#"{"name":"MessageAbortedError","data":{}}"#)]),
            r#""RUN_ERROR" "cli_error" "the session failed (MessageAbortedError)""#
        );
    }

    /// `done` (later releases) ends a run no step ended; a record of
    /// another type is unknown to --strict and kept as RAW.
    #[test]
    fn done_and_unknown_records() {
        let out = translate(&[
            step_finish("tool-calls", "0"),
            rec("teleport", r#""to":"mars""#),
            rec("done", r#""reason":"idle","rejected":[]"#),
        ]);
        assert_eq!(
            types(&out),
            ["RUN_STARTED", "RAW", "RAW", "RAW", "RUN_FINISHED"]
        );
        let mut em = crate::agui::Emitter::new(crate::agui::Format::Ndjson, None, None);
        let mut tr = OpenCode::default();
        let mut line = rec("teleport", r#""to":"mars""#).into_bytes();
        tr.line(&mut line, &mut em).unwrap();
        assert_eq!(em.take_unknown(), ["record type \"teleport\""]);
    }
}
