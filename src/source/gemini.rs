//! Gemini CLI: `gemini -p PROMPT --output-format stream-json`.
//!
//! One JSON object per line, each with `type` and an ISO `timestamp`:
//! ```text
//! {"type":"init","timestamp":"2026-11-22T10:35:42.152Z","session_id":"dad7…","model":"auto"}
//! {"type":"message","timestamp":"…","role":"user","content":"Say hello."}
//! {"type":"message","timestamp":"…","role":"assistant","content":"Hello! ","delta":true}
//! {"type":"tool_use","timestamp":"…","tool_name":"run_shell_command","tool_id":"run_shell_command__…_0","parameters":{"command":"ls"}}
//! {"type":"tool_result","timestamp":"…","tool_id":"run_shell_command__…_0","status":"success","output":"README.md"}
//! {"type":"error","timestamp":"…","severity":"warning","message":"Loop detected, stopping execution"}
//! {"type":"result","timestamp":"…","status":"success","stats":{"total_tokens":1295,"input_tokens":1250,"output_tokens":45,"cached":0,"input":1250,"duration_ms":602,"tool_calls":0,"models":{…}}}
//! ```
//! `result` may carry `error{type,message}` with `status:"error"`; older
//! versions (0.11.x) have no `cached`/`input`/`models` in `stats`, 0.30.x no
//! `models`, and `init` may name a routing alias (`auto`, `auto-gemini-3`).
//! 0.11.x reports a failed model call as `result` `status:"success"` with no
//! reply and no `error` record before it.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{input_text, parse_record, record_json, Held, Line, LineError, Translate};
use crate::agui::{code, Content, Emitter, MetaValue, Metadata, Outcome, Role, Text, Usage};
use crate::base::json::{self, text_of, timestamp_ms};

const SOURCE: &str = "gemini";

/// The message of a run that the CLI called a success though the model never
/// answered the last prompt or tool result.
const NO_ANSWER: &str =
    "the model did not answer (the CLI reported success without a reply or an error)";

/// One line of Gemini's stream; every field that any event type has.
#[derive(Deserialize, Default)]
struct Record<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    delta: Option<bool>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    parameters: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    severity: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    stats: Option<&'a RawValue>,
}

/// `result.error` / `tool_result.error`: `{type, message}` (a bare string is
/// accepted too).
#[derive(Deserialize)]
struct ErrorInfo<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Tokens {
    total_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cached: Option<u64>,
}

/// `result.stats`: the totals, and the same by model.
#[derive(Deserialize, Default)]
struct Stats<'a> {
    total_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cached: Option<u64>,
    #[serde(borrow, default)]
    models: Option<json::Entries<'a, Tokens>>,
}

#[derive(Default, Clone)]
pub struct Gemini {
    /// The open assistant message, if text is streaming.
    text: Held,
    /// The last assistant message of the current model turn: the parent of
    /// the tool calls that follow it.
    parent: Held,
    /// Messages in this run, for derived message ids.
    messages: u64,
    /// The model named by `init`, for usage.
    model: Held,
    /// A fatal `error` event waiting for the `result` that follows it.
    error: Option<String>,
    /// A prompt or tool result that nothing has answered yet (no model text,
    /// tool call or `error` record since).
    unanswered: bool,
    scratch: Option<Vec<u8>>,
    /// The last derived message id.
    id: String,
    /// The run id an `init` record's time gives.
    run_id: String,
}

impl Translate for Gemini {
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

    fn source(&self) -> &'static str {
        SOURCE
    }

    fn finish(&mut self, em: &mut Emitter) {
        if let Some(msg) = self.error.take() {
            let code = error_code(None, &msg);
            em.fail_run(&msg, code, &[], Metadata::None);
        }
    }
}

impl Gemini {
    fn record(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        em.set_timestamp(rec.timestamp.as_deref().and_then(timestamp_ms));
        match &*rec.kind {
            "init" => self.init(rec, line, em),
            "message" => self.message(rec, line, em),
            "tool_use" => self.tool_use(rec, line, em)?,
            "tool_result" => self.tool_result(rec, em)?,
            "error" => self.error(rec, line, em),
            "result" => self.result(rec, line, em),
            other => {
                em.unknown(format!("record type {other:?}"));
                raw(em, line);
            }
        }
        Ok(())
    }

    fn init(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) {
        // A new run: nothing of the last one is kept (the buffers are).
        self.text.clear();
        self.parent.clear();
        self.messages = 0;
        self.model.set_opt(rec.model.as_deref());
        self.error = None;
        self.unanswered = false;
        self.run_id.clear();
        let ms = rec.timestamp.as_deref().and_then(timestamp_ms);
        if let Some(ms) = ms {
            let _ = write!(self.run_id, "run-{ms}");
        }
        em.start_run(rec.session_id.as_deref(), ms.map(|_| &*self.run_id));
        // The init record (model name and anything newer versions add).
        raw(em, line);
    }

    fn next_id(&mut self, em: &Emitter, what: &str) -> &str {
        self.messages += 1;
        self.id.clear();
        let _ = write!(self.id, "{}-{what}-{}", em.run_id(), self.messages);
        &self.id
    }

    fn message(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) {
        match rec.role.as_deref() {
            Some("assistant") => {
                self.unanswered = false;
                if rec.delta == Some(true) {
                    // The hot path: copy the delta's JSON string as it is.
                    let mut decoded = None;
                    let text = match rec.content {
                        Some(c) => input_text(c, &mut decoded),
                        None => Text::Str(""),
                    };
                    let open = self.text.get().is_some_and(|id| em.is_open(id));
                    if !open {
                        self.next_id(em, "msg");
                        em.text_start(&self.id, Role::Assistant);
                        self.parent.set(&self.id);
                        self.text.set(&self.id);
                    }
                    if let (Some(id), false) = (self.text.get(), text.is_empty()) {
                        em.text_content_text(id, text);
                    }
                } else {
                    // A complete message: it stands on its own.
                    let text = rec.content.map(text_of).unwrap_or_default();
                    self.close_text(em);
                    self.next_id(em, "msg");
                    em.text_message(&self.id, Role::Assistant, &text);
                    self.parent.set(&self.id);
                }
            }
            Some("user") => {
                let text = rec.content.map(text_of).unwrap_or_default();
                self.unanswered = true;
                self.close_text(em);
                self.next_id(em, "user");
                if em.user_messages() {
                    em.text_message(&self.id, Role::User, &text);
                } else {
                    // `--no-user-messages`: the echoed prompt stays in RAW.
                    raw(em, line);
                }
            }
            role => {
                em.unknown(format!("message role {:?}", role.unwrap_or("")));
                raw(em, line);
            }
        }
    }

    fn close_text(&mut self, em: &mut Emitter) {
        if let Some(id) = self.text.take() {
            em.text_end(id);
        }
    }

    fn tool_use(
        &mut self,
        rec: &Record,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        self.unanswered = false;
        let (Some(id), Some(name)) = (rec.tool_id.as_deref(), rec.tool_name.as_deref()) else {
            return Err(LineError::Shape(
                "tool_use without tool_id or tool_name".into(),
            ));
        };
        if em.is_open(id) {
            // The same call announced twice (a retried turn): keep the record,
            // but do not open the call again.
            raw(em, line);
            return Ok(());
        }
        self.close_text(em);
        if !em.tool_start(id, name, self.parent.get()) {
            // A call id this run has seen already: kept as it is.
            raw(em, line);
            return Ok(());
        }
        if let Some(params) = rec.parameters {
            em.tool_args_value(id, params);
            if name == "write_todos" {
                crate::agui::plan::todos(em, None, params, crate::agui::plan::GEMINI);
            }
        }
        Ok(())
    }

    fn tool_result(&mut self, rec: &Record, em: &mut Emitter) -> Result<(), LineError> {
        let Some(id) = rec.tool_id.as_deref() else {
            return Err(LineError::Shape("tool_result without tool_id".into()));
        };
        self.close_text(em);
        // The model answers the results in a new turn.
        self.parent.clear();
        self.unanswered = true;
        if !em.is_open(id) {
            // A result for a call never announced: announce it, keeping the result.
            em.tool_start(id, "unknown", None);
        }
        let failed = rec.status.as_deref() == Some("error") || rec.error.is_some();
        if !failed {
            let status = rec.status.as_deref().filter(|s| *s != "success");
            // Large outputs are copied as the JSON strings they already are.
            let decoded;
            let content = match rec.output {
                None => Content::Text(""),
                Some(out) => match json::literal(out) {
                    Some(lit) => Content::Parts(lit),
                    None => {
                        decoded = text_of(out);
                        Content::Text(&decoded)
                    }
                },
            };
            em.tool_result(id, content, &[("status", status.map(MetaValue::Str))]);
            return Ok(());
        }
        // The error's message says what failed ("File not found: PATH"),
        // where the output may only say that something did ("File not
        // found."): the message is the content, the output is kept beside
        // in metadata when it says something else.
        let output = rec.output.map(text_of);
        let err = rec.error.and_then(error_info);
        let err_msg = err.as_ref().and_then(|e| e.message.as_deref());
        let err_msg = err_msg.filter(|m| !m.is_empty());
        let content = err_msg.or(output.as_deref()).unwrap_or("");
        let other_output = rec.output.filter(|_| output.as_deref() != Some(content));
        let status = rec.status.as_deref().unwrap_or("error");
        let meta = [
            ("status", Some(MetaValue::Str(status))),
            ("error", rec.error.map(MetaValue::Json)),
            ("output", other_output.map(MetaValue::Json)),
            ("isError", Some(MetaValue::Bool(true))),
        ];
        em.tool_result(id, Content::Text(content), &meta);
        Ok(())
    }

    fn error(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) {
        // The record goes out as it is: a warning is information, and a fatal
        // error's message also becomes the run's RUN_ERROR.
        raw(em, line);
        self.unanswered = false;
        if rec.severity.as_deref() != Some("warning") {
            let msg = rec.message.map(text_of).unwrap_or(Cow::Borrowed("error"));
            self.error = Some(msg.into_owned());
        }
    }

    fn result(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) {
        self.close_text(em);
        let event_msg = self.error.take();
        let usage = self.usage(rec.stats);
        let result = record_json(line);
        let err = rec.error.and_then(error_info);
        let status = rec.status.as_deref().unwrap_or("success");
        if status == "success" && err.is_none() && event_msg.is_none() {
            if !self.unanswered {
                em.finish_run(result, None, &usage);
            } else {
                // 0.11.x reports a failed model call this way: no error
                // record, no answer, and `status: "success"`.
                let meta = [("result", result)];
                em.fail_run(NO_ANSWER, code::API_ERROR, &usage, &meta);
            }
            return;
        }
        // An `error` event and the failed result after it are one failure:
        // keep the more detailed message.
        let result_msg = err.as_ref().and_then(|e| e.message.as_deref());
        let msg = match (result_msg, event_msg.as_deref()) {
            (Some(a), Some(b)) if b.len() > a.len() => b,
            (Some(a), _) => a,
            (None, Some(b)) => b,
            (None, None) => "the CLI reported an error",
        };
        let kind = err.as_ref().and_then(|e| e.kind.as_deref());
        if is_cancellation(kind) && event_msg.is_none() {
            em.finish_run(result, Some(Outcome::Cancelled), &usage);
            return;
        }
        let code = error_code(kind, msg);
        let meta = [("result", result)];
        em.fail_run(msg, code, &usage, &meta);
    }

    fn usage<'a>(&'a self, stats: Option<&'a RawValue>) -> Vec<Usage<'a>> {
        let Some(stats) = stats.and_then(|s| serde_json::from_str::<Stats>(s.get()).ok()) else {
            return Vec::new();
        };
        let usage = |model: Option<Cow<'a, str>>, t: &Tokens| Usage {
            provider: Some("google"),
            model,
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            total_tokens: t.total_tokens,
            cached_input_tokens: t.cached,
            ..Usage::default()
        };
        match stats.models {
            Some(json::Entries(models)) if !models.is_empty() => {
                let mut v: Vec<Usage> = models
                    .into_iter()
                    .map(|(m, t)| usage(Some(m), &t))
                    .collect();
                Usage::by_model(&mut v);
                v
            }
            _ => {
                // `auto`, `auto-gemini-3`: a routing alias, not a model.
                let model = self.model.get().filter(|m| !m.starts_with("auto"));
                let total = Tokens {
                    total_tokens: stats.total_tokens,
                    input_tokens: stats.input_tokens,
                    output_tokens: stats.output_tokens,
                    cached: stats.cached,
                };
                vec![usage(model.map(Cow::Borrowed), &total)]
            }
        }
    }
}

fn error_info(v: &RawValue) -> Option<ErrorInfo<'_>> {
    match json::str_of(v) {
        Some(msg) => Some(ErrorInfo {
            kind: None,
            message: Some(msg),
        }),
        None => serde_json::from_str(v.get()).ok(),
    }
}

/// The outcome-table code for a Gemini error (`kind` is `error.type`).
fn error_code(kind: Option<&str>, message: &str) -> &'static str {
    let kind = kind.unwrap_or("");
    let lower = message.to_ascii_lowercase();
    if kind.contains("TurnLimit") || lower.contains("session turns") {
        code::MAX_TURNS
    } else if kind.contains("Auth") || lower.starts_with("authentication") {
        code::AUTH_ERROR
    } else if message.contains("API Error")
        || kind.contains("Api")
        || kind.contains("Quota")
        || lower.contains("invalid stream")
        || lower.contains("the model returned")
    {
        code::API_ERROR
    } else {
        code::CLI_ERROR
    }
}

/// Whether a failed result is a cancellation (Ctrl-C, a signal), which
/// AG-UI ends as a cancelled run rather than an error.
fn is_cancellation(kind: Option<&str>) -> bool {
    kind.is_some_and(|k| k.contains("Cancel"))
}

/// Keep a record that parsed as RAW, copied as it is.
fn raw(em: &mut Emitter, line: Line<'_>) {
    super::raw_record(em, line, SOURCE);
}
