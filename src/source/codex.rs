//! Codex CLI: `codex exec --json PROMPT`, in both formats Codex has shipped.
//! The format is told per line by its shape, so a stream may hold either.
//!
//! Current format (0.44 and later), one event per line:
//! ```text
//! {"type":"thread.started","thread_id":"01a202ca-6a79-7e40-9707-33237cd13af4"}
//! {"type":"turn.started"}
//! {"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'ls'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
//! {"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"…","aggregated_output":"README.md\n","exit_code":0,"status":"completed"}}
//! {"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Done."}}
//! {"type":"turn.completed","usage":{"input_tokens":2400,"cached_input_tokens":2048,"cache_write_input_tokens":0,"output_tokens":90,"reasoning_output_tokens":24}}
//! ```
//! Legacy format (0.42 and earlier): two preamble lines (a config summary and
//! `{"prompt":…}`), then `{"id":"0","msg":{"type":…}}` events; see
//! [`Codex::legacy`]. Legacy streams have no closing event: the end of input
//! closes the run.

use foldhash::{HashMap, HashSet};
use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;

use base64::Engine as _;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{input_text, parse_record, record_json, Held, Line, LineError, Translate};
use crate::agui::{
    code, Content, Digest, Emitter, MetaField, MetaValue, Outcome, Part, Role, Text, Usage,
};
use crate::base::json::{self, text_of};

const SOURCE: &str = "codex";

/// One line, of either format: every top-level field either has.
#[derive(Deserialize, Default)]
struct Record<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    session_id: Option<Cow<'a, str>>,
    /// Parsed with the line: no second pass over its strings.
    #[serde(borrow)]
    item: Option<Item<'a>>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    item_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    // Legacy events and preamble. The event is parsed with the line: no
    // second pass over its strings.
    #[serde(borrow, default, deserialize_with = "some_msg")]
    msg: Option<Msg<'a>>,
    #[serde(borrow)]
    prompt: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    model: Option<Cow<'a, str>>,
}

/// A current-format item. Parsed by hand because `web_search` items repeat
/// the key `id` (the derived parser rejects duplicate keys): the first wins.
#[derive(Default)]
struct Item<'a> {
    id: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
    text: Option<&'a RawValue>,
    command: Option<&'a RawValue>,
    aggregated_output: Option<&'a RawValue>,
    exit_code: Option<&'a RawValue>,
    status: Option<Cow<'a, str>>,
    changes: Option<&'a RawValue>,
    server: Option<Cow<'a, str>>,
    tool: Option<Cow<'a, str>>,
    arguments: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    query: Option<&'a RawValue>,
    action: Option<&'a RawValue>,
    items: Option<&'a RawValue>,
    message: Option<&'a RawValue>,
    prompt: Option<&'a RawValue>,
    sender_thread_id: Option<&'a RawValue>,
    receiver_thread_ids: Option<&'a RawValue>,
    agents_states: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Item<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an item object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Item<'a>, M::Error> {
                let mut it = Item::default();
                while let Some(json::Borrowed(key)) = m.next_key()? {
                    macro_rules! set {
                        ($field:ident) => {{
                            let v = m.next_value()?;
                            if it.$field.is_none() {
                                it.$field = v;
                            }
                        }};
                    }
                    macro_rules! set_str {
                        ($field:ident) => {{
                            let v: Option<json::Borrowed> = m.next_value()?;
                            if it.$field.is_none() {
                                it.$field = v.map(|b| b.0);
                            }
                        }};
                    }
                    match &*key {
                        "id" => set_str!(id),
                        // `item_type` in the first JSON format (0.43).
                        "type" | "item_type" => set_str!(kind),
                        "text" => set!(text),
                        "command" => set!(command),
                        "aggregated_output" => set!(aggregated_output),
                        "exit_code" => set!(exit_code),
                        "status" => set_str!(status),
                        "changes" => set!(changes),
                        "server" => set_str!(server),
                        "tool" => set_str!(tool),
                        "arguments" => set!(arguments),
                        "result" => set!(result),
                        "error" => set!(error),
                        "query" => set!(query),
                        "action" => set!(action),
                        "items" => set!(items),
                        "message" => set!(message),
                        "prompt" => set!(prompt),
                        "sender_thread_id" => set!(sender_thread_id),
                        "receiver_thread_ids" => set!(receiver_thread_ids),
                        "agents_states" => set!(agents_states),
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(it)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A legacy event's `msg`: every field any event type has.
#[derive(Deserialize, Default)]
struct Msg<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    command: Option<&'a RawValue>,
    #[serde(borrow)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow)]
    parsed_cmd: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    stream: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    chunk: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stdout: Option<&'a RawValue>,
    #[serde(borrow)]
    stderr: Option<&'a RawValue>,
    #[serde(borrow)]
    aggregated_output: Option<&'a RawValue>,
    #[serde(borrow)]
    exit_code: Option<&'a RawValue>,
    #[serde(borrow)]
    duration: Option<&'a RawValue>,
    #[serde(borrow)]
    changes: Option<&'a RawValue>,
    #[serde(borrow)]
    auto_approved: Option<&'a RawValue>,
    success: Option<bool>,
    #[serde(borrow)]
    invocation: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    query: Option<&'a RawValue>,
    #[serde(borrow)]
    plan: Option<&'a RawValue>,
    #[serde(borrow)]
    explanation: Option<&'a RawValue>,
    #[serde(borrow)]
    info: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reason: Option<&'a RawValue>,
    // A `token_count` before `info` (0.2x–0.3x): the counts are the
    // event's own fields.
    #[serde(borrow, alias = "inputTokens")]
    input_tokens: Option<&'a RawValue>,
    #[serde(borrow, alias = "cachedInputTokens")]
    cached_input_tokens: Option<&'a RawValue>,
    #[serde(borrow, alias = "cacheWriteInputTokens")]
    cache_write_input_tokens: Option<&'a RawValue>,
    #[serde(borrow, alias = "outputTokens")]
    output_tokens: Option<&'a RawValue>,
    #[serde(borrow, alias = "reasoningOutputTokens")]
    reasoning_output_tokens: Option<&'a RawValue>,
    #[serde(borrow, alias = "totalTokens")]
    total_tokens: Option<&'a RawValue>,
}

/// `msg`, when present, is an event: `null` is not one.
fn some_msg<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Msg<'a>>, D::Error> {
    Msg::deserialize(d).map(Some)
}

impl Msg<'_> {
    /// The counts an old `token_count` carries as its own fields, if it has
    /// any (all numbers or null).
    fn own_counts(&self) -> Option<TokenUsage> {
        let count = |f: Option<&RawValue>| -> Result<Option<u64>, ()> {
            match f {
                None => Ok(None),
                Some(v) if v.get() == "null" => Ok(None),
                Some(v) => v.get().parse().map(Some).map_err(|_| ()),
            }
        };
        let t = TokenUsage {
            input_tokens: count(self.input_tokens).ok()?,
            cached_input_tokens: count(self.cached_input_tokens).ok()?,
            cache_write_input_tokens: count(self.cache_write_input_tokens).ok()?,
            output_tokens: count(self.output_tokens).ok()?,
            reasoning_output_tokens: count(self.reasoning_output_tokens).ok()?,
            total_tokens: count(self.total_tokens).ok()?,
        };
        (t.input_tokens.is_some() || t.output_tokens.is_some()).then_some(t)
    }
}

#[derive(Deserialize)]
struct Invocation<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    server: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// Token counts, as `codex exec` (snake_case) and the app-server
/// (camelCase) report them.
#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct TokenUsage {
    #[serde(alias = "inputTokens")]
    input_tokens: Option<u64>,
    #[serde(alias = "cachedInputTokens")]
    cached_input_tokens: Option<u64>,
    #[serde(alias = "cacheWriteInputTokens")]
    cache_write_input_tokens: Option<u64>,
    #[serde(alias = "outputTokens")]
    output_tokens: Option<u64>,
    #[serde(alias = "reasoningOutputTokens")]
    reasoning_output_tokens: Option<u64>,
    #[serde(alias = "totalTokens")]
    total_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct TokenInfo {
    total_token_usage: Option<TokenUsage>,
}

/// A streaming UTF-8 decoder for one command's output: a character split
/// between two chunks is kept until its last byte arrives.
#[derive(Clone, Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Decode `bytes` after what is pending; invalid bytes in the middle
    /// become U+FFFD, an incomplete character at the end waits.
    fn push(&mut self, bytes: &[u8], out: &mut String) {
        self.pending.extend_from_slice(bytes);
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(good).expect("checked"));
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{fffd}');
                            rest = &bad[n..];
                        }
                        None => {
                            rest = bad;
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.len();
        let len = self.pending.len();
        self.pending.copy_within(len - keep.., 0);
        self.pending.truncate(keep);
    }

    /// The end of the output: an incomplete character is invalid after all.
    fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            out.push_str(&String::from_utf8_lossy(&self.pending));
            self.pending.clear();
        }
    }
}

/// A tool call in flight (legacy format).
#[derive(Clone)]
struct Call {
    /// One decoder per output stream (stdout, stderr).
    decoders: [Utf8Stream; 2],
    running_command: bool,
}

#[derive(Default, Clone)]
pub struct Codex {
    /// The model named by the legacy preamble, for usage.
    model: Option<String>,
    /// The legacy `{"prompt":…}`, sent as the user's message once the run has
    /// started (a `session_configured` event may still name the session).
    prompt: Option<String>,
    /// The last legacy `token_count` totals.
    totals: Option<TokenUsage>,
    /// The message of an `error` event that is so far the last word.
    last_error: Option<String>,
    /// Legacy tool calls in flight, by `call_id`.
    calls: HashMap<String, Call>,
    /// Legacy `web_search_begin` call ids waiting for their query, with the
    /// order they began in.
    searches: HashMap<String, u64>,
    began: u64,
    /// Legacy streamed text and reasoning (`agent_message_delta`, …).
    text: Held,
    reasoning: Held,
    /// Current-format items whose text is streaming (`item.plan.delta`).
    streamed: HashSet<String>,
    /// Derived message ids in this run.
    n: u64,
    /// Whether this stream used the legacy format, and whether any legacy
    /// event (beyond the preamble) arrived.
    legacy: bool,
    legacy_events: bool,
    /// A stream of the first JSON format (`session.created`), which has no
    /// closing event.
    ends_at_eof: bool,
    /// Legacy call ids that have ended (the most recent ones), so that a
    /// repeated begin does not open a second tool call.
    ended: std::collections::VecDeque<String>,
    /// The thread a run is announced for (`thread.started`), and whether
    /// that run is still to start: it starts with its first record that
    /// carries content, whose digest its id is derived from.
    thread: Held,
    pending: bool,
    /// The digest of what came before the run's first record of content
    /// (the announcing records, the legacy preamble).
    seed: Digest,
    /// Scratch space for an item id scoped by the run.
    scoped: String,
    /// Scratch space for decoded command output (legacy).
    decoded: Vec<u8>,
    scratch: Option<Vec<u8>>,
    buf: String,
    /// The last derived message id.
    id: String,
}

impl Translate for Codex {
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

    fn finish(&mut self, em: &mut Emitter) {
        if self.pending {
            self.open_run(None, b"", em);
        }
        self.flush_prompt(em);
        if !em.in_run() {
            return;
        }
        // Legacy searches still waiting for their query were running.
        let mut searches: Vec<(String, u64)> = self.searches.drain().collect();
        searches.sort_unstable_by_key(|s| s.1);
        for (id, _) in searches {
            em.tool_start(&id, "web_search", None);
        }
        let running =
            self.calls.values().any(|c| c.running_command) || em.open_tool_calls().next().is_some();
        if running {
            em.fail_run(
                "the input ended while a tool call was still running (the CLI was stopped)",
                code::INPUT_ENDED,
                self.usage(self.totals).as_slice(),
                None,
            );
        } else if let Some(msg) = self.last_error.take() {
            em.fail_run(
                &msg,
                error_code(&msg),
                self.usage(self.totals).as_slice(),
                None,
            );
        } else if self.ends_at_eof {
            em.finish_run(None, None, &[]);
        } else if self.legacy && !self.legacy_events {
            em.fail_run(
                "the input ended after the preamble, before the CLI's first event",
                code::INPUT_ENDED,
                &[],
                None,
            );
        } else if self.legacy {
            // Legacy streams have no closing event: a stream that ends
            // cleanly is a finished run.
            self.close_streams(em);
            em.finish_run(None, None, self.usage(self.totals).as_slice());
        }
    }

    fn source(&self) -> &'static str {
        SOURCE
    }
}

impl Codex {
    fn record(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        if let Some(msg) = &rec.msg {
            self.legacy = true;
            return self.legacy(msg, line, em);
        }
        match rec.kind.as_deref() {
            None => {
                // The legacy preamble: a config summary, then the prompt.
                if self.legacy_events {
                    // After events it is the next invocation's (a log of
                    // several): the last one's stream has ended, and nothing
                    // of it carries over.
                    self.finish(em);
                    em.end_run();
                    self.restart();
                }
                self.legacy = true;
                self.seed.add(&line);
                if let Some(p) = rec.prompt {
                    if em.user_messages() {
                        self.prompt = Some(text_of(p).into_owned());
                    } else {
                        // Kept as RAW only; written once the run starts.
                        raw(em, line);
                    }
                } else {
                    if let Some(m) = rec.model.as_deref() {
                        self.model = Some(m.to_owned());
                    }
                    // Kept as RAW; written once the run starts.
                    raw(em, line);
                }
                Ok(())
            }
            Some(kind) => self.current(kind, rec, line, em),
        }
    }

    // ---- current format -------------------------------------------------

    fn current(
        &mut self,
        kind: &str,
        rec: &Record,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let announces = matches!(kind, "thread.started" | "session.created" | "turn.started");
        if !announces && (self.pending || !em.in_run() && !em.run_ended()) {
            self.open_run(None, &line, em);
        }
        match kind {
            "thread.started" | "session.created" => {
                self.restart();
                // The first JSON format has no turn events: its stream ends
                // with the run.
                self.ends_at_eof = kind == "session.created";
                let thread = rec.thread_id.as_deref().or(rec.session_id.as_deref());
                self.thread.set_opt(thread);
                self.pending = true;
                self.seed = Digest::of(&line);
                em.announce_thread(self.thread.get());
            }
            "turn.started" => {
                // Every turn of a thread starts the same way: its run starts
                // with its first record of content.
                if !em.in_run() && !self.pending {
                    self.pending = true;
                    self.seed = Digest::of(&line);
                    em.announce_thread(self.thread.get());
                }
            }
            "item.started" | "item.updated" | "item.completed" => {
                let Some(item) = &rec.item else {
                    return Err(LineError::Shape(format!("{kind} without item")));
                };
                self.last_error = None;
                self.item(kind, item, line, em)?;
            }
            "item.plan.delta" => {
                let mut id = std::mem::take(&mut self.scoped);
                scope(&mut id, em, rec.item_id.as_deref().unwrap_or("plan"));
                if !self.streamed.contains(&id) {
                    self.streamed.insert(id.clone());
                }
                if let Some(d) = rec.delta {
                    delta_text(em, &id, d);
                }
                self.scoped = id;
            }
            "turn.completed" => {
                self.close_streams(em);
                let usage = rec
                    .usage
                    .and_then(|u| serde_json::from_str::<TokenUsage>(u.get()).ok());
                em.finish_run(record_json(line), None, self.usage(usage).as_slice());
                self.last_error = None;
            }
            "turn.failed" => {
                let msg = rec
                    .error
                    .and_then(|e| serde_json::from_str::<ErrorMsg>(e.get()).ok())
                    .and_then(|e| e.message)
                    .or_else(|| self.last_error.take().map(Cow::Owned))
                    .unwrap_or(Cow::Borrowed("the turn failed"));
                let meta = [("record", record_json(line))];
                em.fail_run(&msg, error_code(&msg), &[], &meta);
                self.last_error = None;
            }
            "error" => {
                // Retry notices ("Reconnecting... 1/5") and the error before
                // turn.failed: kept, and fatal only if nothing follows.
                raw(em, line);
                self.last_error = Some(rec.message.map(text_of).unwrap_or_default().into_owned());
            }
            other => {
                em.unknown(format!("event type {other:?}"));
                raw(em, line);
            }
        }
        Ok(())
    }

    fn item(
        &mut self,
        event: &str,
        it: &Item,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let Some(id) = it.id.as_deref() else {
            return Err(LineError::Shape("item without id".into()));
        };
        let mut scoped = std::mem::take(&mut self.scoped);
        scope(&mut scoped, em, id);
        let result = self.scoped_item(event, it, &scoped, line, em);
        self.scoped = scoped;
        result
    }

    /// An item, whose id scoped by the run is `id`.
    fn scoped_item(
        &mut self,
        event: &str,
        it: &Item,
        id: &str,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let done = event == "item.completed";
        let kind = match it.kind.as_deref().unwrap_or("") {
            // The first JSON format's names.
            "assistant_message" => "agent_message",
            "patch_apply" => "file_change",
            k => k,
        };
        match kind {
            "agent_message" | "plan" => {
                if self.streamed.contains(id) {
                    // Its text already arrived as deltas.
                    if done {
                        em.text_end(id);
                        self.streamed.remove(id);
                    }
                } else if done {
                    let text = it.text.map(text_of).unwrap_or_default();
                    em.text_message(id, Role::Assistant, &text);
                }
            }
            "reasoning" => {
                if done {
                    let text = it.text.map(text_of).unwrap_or_default();
                    em.reasoning_message(id, &text);
                }
            }
            "command_execution" | "file_change" | "mcp_tool_call" | "web_search"
            | "collab_tool_call" => {
                let name: Cow<str> = match kind {
                    "mcp_tool_call" => Cow::Owned(format!(
                        "mcp:{}/{}",
                        it.server.as_deref().unwrap_or(""),
                        it.tool.as_deref().unwrap_or("")
                    )),
                    "collab_tool_call" => Cow::Owned(
                        it.tool
                            .as_deref()
                            .map_or("collab_tool_call".to_owned(), str::to_owned),
                    ),
                    k => Cow::Borrowed(k),
                };
                if !em.is_open(id) {
                    if em.tool_start(id, &name, None) {
                        item_args(kind, it, id, em);
                    } else if !done {
                        // An item id this run has seen already: kept as it is.
                        raw(em, line);
                    }
                }
                if done {
                    self.item_result(kind, id, it, em);
                }
            }
            "todo_list" => {
                crate::agui::plan::snapshot(em, id, it.items, crate::agui::plan::CODEX_TODO, &[]);
            }
            "error" => {
                // A non-fatal error: kept as it is.
                if done || event == "item.started" {
                    raw(em, line);
                }
            }
            other => {
                em.unknown(format!("item type {other:?}"));
                raw(em, line);
            }
        }
        Ok(())
    }

    fn item_result(&mut self, kind: &str, id: &str, it: &Item, em: &mut Emitter) {
        let status = it.status.as_deref();
        let failed = matches!(status, Some("failed" | "declined")) || it.error.is_some();
        let is_error = failed.then_some(MetaValue::Bool(true));
        match kind {
            "command_execution" => {
                let meta = [
                    ("status", status.map(MetaValue::Str)),
                    ("exitCode", it.exit_code.map(MetaValue::Json)),
                    ("isError", is_error),
                ];
                let decoded;
                let content = match it.aggregated_output {
                    None => Content::Text(""),
                    Some(out) => match json::literal(out) {
                        Some(lit) => Content::Parts(lit),
                        None => {
                            decoded = text_of(out);
                            Content::Text(&decoded)
                        }
                    },
                };
                em.tool_result(id, content, &meta);
            }
            "file_change" => {
                let mut text = String::new();
                if let Some(changes) = it
                    .changes
                    .and_then(|c| serde_json::from_str::<Vec<Change>>(c.get()).ok())
                {
                    for c in changes {
                        let _ = writeln!(
                            text,
                            "{} {}",
                            c.kind.as_deref().unwrap_or("?"),
                            c.path.as_deref().unwrap_or("?")
                        );
                    }
                }
                let _ = write!(text, "{}", status.unwrap_or("completed"));
                let meta = [
                    ("status", status.map(MetaValue::Str)),
                    ("isError", is_error),
                ];
                em.tool_result(id, Content::Text(&text), &meta);
            }
            "mcp_tool_call" => {
                let err_msg = it
                    .error
                    .and_then(|e| serde_json::from_str::<ErrorMsg>(e.get()).ok())
                    .and_then(|e| e.message);
                let parts = it.result.and_then(mcp_content);
                let structured = it
                    .result
                    .and_then(|r| serde_json::from_str::<McpResult>(r.get()).ok())
                    .and_then(|r| r.structured_content)
                    .filter(|s| s.get() != "null");
                let meta = [
                    ("status", status.map(MetaValue::Str)),
                    ("isError", is_error),
                    ("error", it.error.map(MetaValue::Json)),
                    ("structuredContent", structured.map(MetaValue::Json)),
                ];
                match (&parts, err_msg) {
                    (Some(c), _) => c.result(em, id, &meta),
                    (None, Some(m)) => em.tool_result(id, Content::Text(&m), &meta),
                    (None, None) => em.tool_result(id, Content::Text(""), &meta),
                }
            }
            "web_search" => {
                let meta = [
                    ("status", status.map(MetaValue::Str)),
                    ("action", it.action.map(MetaValue::Json)),
                ];
                let query = it.query.map(text_of).unwrap_or_default();
                em.tool_result(id, Content::Text(&query), &meta);
            }
            _ => {
                let meta = [
                    ("status", status.map(MetaValue::Str)),
                    ("isError", is_error),
                    ("agentsStates", it.agents_states.map(MetaValue::Json)),
                ];
                em.tool_result(id, Content::Text(status.unwrap_or("")), &meta);
            }
        }
    }

    // ---- legacy format --------------------------------------------------

    /// Legacy `{"id","msg":{…}}` events.
    fn legacy(&mut self, msg: &Msg, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        let kind = msg.kind.as_deref().unwrap_or("");
        self.legacy_events = true;
        if kind == "session_configured" {
            if !em.in_run() {
                self.open_run(msg.session_id.as_deref(), &line, em);
            }
            if let Some(m) = msg.model.as_deref() {
                self.model = Some(m.to_owned());
            }
            raw(em, line);
            self.flush_prompt(em);
            return Ok(());
        }
        if !em.in_run() && !em.run_ended() {
            self.open_run(None, &line, em);
        }
        self.flush_prompt(em);
        if !matches!(kind, "token_count" | "error" | "stream_error") {
            self.last_error = None;
        }
        match kind {
            "task_started" => raw(em, line),
            "token_count" => self.legacy_tokens(msg),
            "agent_message_delta" => self.text_delta(msg, em),
            "agent_message" => self.text_done(msg, em),
            "agent_reasoning_delta" | "agent_reasoning_raw_content_delta" => {
                self.reasoning_delta(msg, em)
            }
            "agent_reasoning" | "agent_reasoning_raw_content" => self.reasoning_done(msg, em),
            "agent_reasoning_section_break" => {
                if let Some(id) = self.reasoning.take() {
                    em.reasoning_end(id);
                }
            }
            "exec_command_begin" => self.exec_begin(msg, line, em)?,
            "exec_command_output_delta" => self.exec_output(msg, em)?,
            "exec_command_end" => self.exec_end(msg, em)?,
            "patch_apply_begin" => self.patch_begin(msg, line, em)?,
            "patch_apply_end" => self.patch_end(msg, em)?,
            "mcp_tool_call_begin" => self.mcp_begin(msg, line, em)?,
            "mcp_tool_call_end" => self.mcp_end(msg, em)?,
            "web_search_begin" => self.search_begin(msg, em)?,
            "web_search_end" => self.search_end(msg, em)?,
            "plan_update" => {
                let id = crate::agui::plan::id(em, None);
                let extra = [("explanation", msg.explanation)];
                crate::agui::plan::snapshot(
                    em,
                    &id,
                    msg.plan,
                    crate::agui::plan::CODEX_PLAN,
                    &extra,
                );
            }
            "error" => {
                raw(em, line);
                self.last_error = Some(msg.message.map(text_of).unwrap_or_default().into_owned());
            }
            "task_complete" => {
                self.close_streams(em);
                em.finish_run(record_json(line), None, self.usage(self.totals).as_slice());
            }
            "turn_aborted" => {
                self.close_streams(em);
                em.finish_run(
                    record_json(line),
                    Some(Outcome::Cancelled),
                    self.usage(self.totals).as_slice(),
                );
            }
            "stream_error"
            | "turn_diff"
            | "background_event"
            | "exec_approval_request"
            | "apply_patch_approval_request"
            | "get_history_entry_response"
            | "shutdown_complete"
            | "user_message"
            | "list_custom_prompts_response"
            | "mcp_list_tools_response" => raw(em, line),
            other => {
                em.unknown(format!("event type {other:?}"));
                raw(em, line);
            }
        }
        let _ = msg.reason;
        Ok(())
    }

    /// `token_count`: the session's totals so far.
    #[inline]
    fn legacy_tokens(&mut self, msg: &Msg) {
        let totals = match msg.info {
            Some(info) => serde_json::from_str::<TokenInfo>(info.get())
                .ok()
                .and_then(|i| i.total_token_usage),
            // Before `info` (0.2x–0.3x) the counts were the event's
            // own fields, for the whole session.
            None => msg.own_counts(),
        };
        if let Some(t) = totals {
            self.totals = Some(t);
        }
    }

    /// `agent_message_delta`: text of the message, started by the first.
    #[inline]
    fn text_delta(&mut self, msg: &Msg, em: &mut Emitter) {
        if !self.text.is_set() {
            self.next_id(em, "msg");
            self.text.set(&self.id);
        }
        if let (Some(id), Some(d)) = (self.text.get(), msg.delta) {
            delta_text(em, id, d);
        }
    }

    /// `agent_message`: the end of the message that streamed, or the whole
    /// of one that did not.
    #[inline]
    fn text_done(&mut self, msg: &Msg, em: &mut Emitter) {
        match self.text.take() {
            // Its text already arrived as deltas.
            Some(id) => em.text_end(id),
            None => {
                let id = self.next_id(em, "msg");
                let text = msg.message.map(text_of).unwrap_or_default();
                em.text_message(id, Role::Assistant, &text);
            }
        }
    }

    /// `agent_reasoning_delta` and its raw twin: text of the reasoning,
    /// started by the first.
    #[inline]
    fn reasoning_delta(&mut self, msg: &Msg, em: &mut Emitter) {
        if !self.reasoning.is_set() {
            self.next_id(em, "reasoning");
            self.reasoning.set(&self.id);
        }
        if let (Some(id), Some(d)) = (self.reasoning.get(), msg.delta) {
            let mut decoded = None;
            em.reasoning_content_text(id, input_text(d, &mut decoded));
        }
    }

    /// `agent_reasoning` and its raw twin: the end of the reasoning that
    /// streamed, or the whole of one that did not.
    #[inline]
    fn reasoning_done(&mut self, msg: &Msg, em: &mut Emitter) {
        match self.reasoning.take() {
            Some(id) => em.reasoning_end(id),
            None => {
                let id = self.next_id(em, "reasoning");
                let text = msg.text.map(text_of).unwrap_or_default();
                em.reasoning_message(id, &text);
            }
        }
    }

    /// `exec_command_begin`: a tool call with the command as its arguments
    /// (a command announced again is the same call).
    #[inline]
    fn exec_begin(&mut self, msg: &Msg, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "exec_command_begin")?;
        if self.call(id).is_some() || em.is_open(id) || self.has_ended(id) {
            // The same command announced again (a retry): one tool call.
            raw(em, line);
            return Ok(());
        }
        self.close_streams(em);
        if !em.tool_start(id, "exec_command", None) {
            raw(em, line);
            return Ok(());
        }
        em.tool_args_fields(
            id,
            &[
                ("command", msg.command.map(MetaValue::Json)),
                ("cwd", msg.cwd.map(MetaValue::Json)),
                ("parsed_cmd", msg.parsed_cmd.map(MetaValue::Json)),
            ],
        );
        self.calls.insert(
            id.to_owned(),
            Call {
                decoders: Default::default(),
                running_command: true,
            },
        );
        Ok(())
    }

    /// `exec_command_output_delta`: a base64 chunk of the command's stdout
    /// or stderr, decoded as UTF-8 across chunks.
    #[inline]
    fn exec_output(&mut self, msg: &Msg, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "exec_command_output_delta")?;
        let mut bytes = std::mem::take(&mut self.decoded);
        bytes.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(msg.chunk.as_deref().unwrap_or("").as_bytes(), &mut bytes)
            .map_err(|e| {
                LineError::Shape(format!(
                    "exec_command_output_delta: chunk is not base64 ({e})"
                ))
            })?;
        let stream = msg.stream.as_deref().unwrap_or("stdout");
        let which = usize::from(stream == "stderr");
        self.buf.clear();
        match self.calls.get_mut(id) {
            Some(call) => call.decoders[which].push(&bytes, &mut self.buf),
            None => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
        }
        if !self.buf.is_empty() {
            output_event(em, id, stream, &self.buf);
        }
        self.decoded = bytes;
        Ok(())
    }

    /// `exec_command_end`: the command's result, with its exit code.
    #[inline]
    fn exec_end(&mut self, msg: &Msg, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "exec_command_end")?;
        self.end_call(id, em);
        let failed = msg.exit_code.is_some_and(|c| c.get() != "0");
        let stderr = msg.stderr.filter(|s| s.get() != "\"\"");
        let meta = [
            ("exitCode", msg.exit_code.map(MetaValue::Json)),
            ("duration", msg.duration.map(MetaValue::Json)),
            ("stderr", stderr.map(MetaValue::Json)),
            ("isError", failed.then_some(MetaValue::Bool(true))),
        ];
        let out = msg.aggregated_output.or(msg.stdout);
        let decoded;
        let content = match out {
            None => Content::Text(""),
            Some(o) => match json::literal(o) {
                Some(lit) => Content::Parts(lit),
                None => {
                    decoded = text_of(o);
                    Content::Text(&decoded)
                }
            },
        };
        if !em.is_open(id) {
            em.tool_start(id, "exec_command", None);
        }
        em.tool_result(id, content, &meta);
        self.ended(id);
        Ok(())
    }

    /// `patch_apply_begin`: an `apply_patch` tool call with the changes as
    /// its arguments.
    #[inline]
    fn patch_begin(
        &mut self,
        msg: &Msg,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let id = need_call_id(msg, "patch_apply_begin")?;
        if em.is_open(id) || self.has_ended(id) {
            raw(em, line);
            return Ok(());
        }
        self.close_streams(em);
        em.tool_start(id, "apply_patch", None);
        em.tool_args_fields(
            id,
            &[
                ("changes", msg.changes.map(MetaValue::Json)),
                ("auto_approved", msg.auto_approved.map(MetaValue::Json)),
            ],
        );
        Ok(())
    }

    /// `patch_apply_end`: the patch's result, its stdout and stderr.
    #[inline]
    fn patch_end(&mut self, msg: &Msg, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "patch_apply_end")?;
        let ok = msg.success.unwrap_or(true);
        let stdout = msg.stdout.map(text_of).unwrap_or_default();
        let stderr = msg.stderr.map(text_of).unwrap_or_default();
        let content = if stderr.is_empty() {
            stdout.into_owned()
        } else if stdout.is_empty() {
            stderr.into_owned()
        } else {
            format!("{stdout}{stderr}")
        };
        let meta = [
            ("success", Some(MetaValue::Bool(ok))),
            ("isError", (!ok).then_some(MetaValue::Bool(true))),
        ];
        if !em.is_open(id) {
            em.tool_start(id, "apply_patch", None);
        }
        em.tool_result(id, Content::Text(&content), &meta);
        self.ended(id);
        Ok(())
    }

    /// `mcp_tool_call_begin`: an `mcp:SERVER/TOOL` tool call with its
    /// arguments.
    #[inline]
    fn mcp_begin(&mut self, msg: &Msg, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "mcp_tool_call_begin")?;
        if em.is_open(id) || self.has_ended(id) {
            raw(em, line);
            return Ok(());
        }
        self.close_streams(em);
        let inv = msg
            .invocation
            .and_then(|i| serde_json::from_str::<Invocation>(i.get()).ok());
        let name = format!(
            "mcp:{}/{}",
            inv.as_ref().and_then(|i| i.server.as_deref()).unwrap_or(""),
            inv.as_ref().and_then(|i| i.tool.as_deref()).unwrap_or("")
        );
        em.tool_start(id, &name, None);
        let args = inv.as_ref().and_then(|i| i.arguments);
        em.tool_args_given(id, args.filter(|a| a.get() != "null"));
        Ok(())
    }

    /// `mcp_tool_call_end`: the MCP tool's result (`Ok`) or error (`Err`).
    #[inline]
    fn mcp_end(&mut self, msg: &Msg, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "mcp_tool_call_end")?;
        if !em.is_open(id) {
            em.tool_start(id, "mcp", None);
        }
        let res = msg
            .result
            .and_then(|r| serde_json::from_str::<OkErr>(r.get()).ok());
        match res {
            Some(OkErr { ok: Some(ok), .. }) => {
                let r: Option<McpResult> = serde_json::from_str(ok.get()).ok();
                let is_error = r.as_ref().and_then(|r| r.is_error).unwrap_or(false);
                let meta = [
                    ("isError", is_error.then_some(MetaValue::Bool(true))),
                    (
                        "structuredContent",
                        r.as_ref()
                            .and_then(|r| r.structured_content)
                            .map(MetaValue::Json),
                    ),
                    ("duration", msg.duration.map(MetaValue::Json)),
                ];
                match mcp_content(ok) {
                    Some(c) => c.result(em, id, &meta),
                    None => em.tool_result(id, Content::Text(""), &meta),
                }
            }
            Some(OkErr { err: Some(err), .. }) => {
                let meta = [
                    ("isError", Some(MetaValue::Bool(true))),
                    ("error", Some(MetaValue::Json(err))),
                ];
                em.tool_result(id, Content::Text(&text_of(err)), &meta);
            }
            _ => {
                let meta = [("result", msg.result.map(MetaValue::Json))];
                em.tool_result(id, Content::Text(""), &meta);
            }
        }
        self.ended(id);
        Ok(())
    }

    /// `web_search_begin`: a search counted, its call started at its end
    /// (which has the query).
    #[inline]
    fn search_begin(&mut self, msg: &Msg, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "web_search_begin")?;
        if !self.searches.contains_key(id) && !em.is_open(id) {
            self.began += 1;
            self.searches.insert(id.to_owned(), self.began);
        }
        Ok(())
    }

    /// `web_search_end`: the search as a tool call, the query its result.
    #[inline]
    fn search_end(&mut self, msg: &Msg, em: &mut Emitter) -> Result<(), LineError> {
        let id = need_call_id(msg, "web_search_end")?;
        self.searches.remove(id);
        if !em.is_open(id) {
            self.close_streams(em);
            em.tool_start(id, "web_search", None);
            em.tool_args_fields(id, &[("query", msg.query.map(MetaValue::Json))]);
        }
        let query = msg.query.map(text_of).unwrap_or_default();
        em.tool_result(id, Content::Text(&query), None);
        self.ended(id);
        Ok(())
    }

    /// How many ended call ids are remembered.
    const ENDED: usize = 64;

    fn ended(&mut self, id: &str) {
        if self.ended.len() == Self::ENDED {
            self.ended.pop_front();
        }
        self.ended.push_back(id.to_owned());
    }

    fn has_ended(&self, id: &str) -> bool {
        self.ended.iter().any(|e| e == id)
    }

    fn call(&self, id: &str) -> Option<&Call> {
        self.calls.get(id)
    }

    /// A command ended: flush its decoders' incomplete characters.
    fn end_call(&mut self, id: &str, em: &mut Emitter) {
        if let Some(mut call) = self.calls.remove(id) {
            for (which, stream) in [(0, "stdout"), (1, "stderr")] {
                self.buf.clear();
                call.decoders[which].finish(&mut self.buf);
                if !self.buf.is_empty() {
                    output_event(em, id, stream, &self.buf);
                }
            }
        }
    }

    /// Close streamed text and reasoning (before a tool call, or at the end).
    fn close_streams(&mut self, em: &mut Emitter) {
        if let Some(id) = self.text.take() {
            em.text_end(id);
        }
        if let Some(id) = self.reasoning.take() {
            em.reasoning_end(id);
        }
    }

    /// Send the legacy prompt as the user's message, once a run is open.
    fn flush_prompt(&mut self, em: &mut Emitter) {
        if let Some(prompt) = self.prompt.take() {
            if !em.in_run() {
                self.open_run(None, b"", em);
            }
            let id = self.next_id(em, "user");
            em.text_message(id, Role::User, &prompt);
        }
    }

    /// Start the run whose first record of content is `line`: its id is
    /// `run-` and a digest of the records before it and of `line` (with the
    /// run's number on this output); its thread is `thread`, else the
    /// announced one.
    fn open_run(&mut self, thread: Option<&str>, line: &[u8], em: &mut Emitter) {
        self.seed.add(line);
        let run_id = self.seed.run_id(em.run_number() + 1);
        em.start_run(thread.or(self.thread.get()), Some(&run_id));
        self.pending = false;
    }

    fn next_id(&mut self, em: &Emitter, what: &str) -> &str {
        self.n += 1;
        self.id.clear();
        let _ = write!(self.id, "{}-{what}-{}", em.run_id(), self.n);
        &self.id
    }

    /// Forget everything of the last invocation but the buffers.
    fn restart(&mut self) {
        let mut fresh = Codex {
            scratch: self.scratch.take(),
            scoped: std::mem::take(&mut self.scoped),
            decoded: std::mem::take(&mut self.decoded),
            buf: std::mem::take(&mut self.buf),
            id: std::mem::take(&mut self.id),
            text: std::mem::take(&mut self.text),
            reasoning: std::mem::take(&mut self.reasoning),
            thread: std::mem::take(&mut self.thread),
            streamed: std::mem::take(&mut self.streamed),
            ..Codex::default()
        };
        fresh.text.clear();
        fresh.reasoning.clear();
        fresh.thread.clear();
        fresh.streamed.clear();
        *self = fresh;
    }

    fn usage(&self, t: Option<TokenUsage>) -> Option<Usage<'_>> {
        t.map(|t| openai_usage(self.model.as_deref(), t))
    }
}

/// Codex token counts as the run's usage (the one usage rule).
pub(super) fn openai_usage(model: Option<&str>, t: TokenUsage) -> Usage<'_> {
    Usage {
        provider: Some("openai"),
        model: model.map(Cow::Borrowed),
        input_tokens: t.input_tokens,
        output_tokens: t.output_tokens,
        total_tokens: t
            .total_tokens
            .or_else(|| Some(t.input_tokens? + t.output_tokens?)),
        reasoning_tokens: t.reasoning_output_tokens,
        cached_input_tokens: t.cached_input_tokens,
        cache_write_input_tokens: t.cache_write_input_tokens,
    }
}

#[derive(Deserialize)]
struct ErrorMsg<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Change<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    path: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct OkErr<'a> {
    #[serde(rename = "Ok", borrow)]
    ok: Option<&'a RawValue>,
    #[serde(rename = "Err", borrow)]
    err: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct McpResult<'a> {
    #[serde(borrow)]
    content: Option<Vec<&'a RawValue>>,
    #[serde(alias = "structuredContent", borrow)]
    structured_content: Option<&'a RawValue>,
    #[serde(alias = "isError")]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct McpBlock<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    data: Option<Cow<'a, str>>,
    #[serde(
        alias = "mimeType",
        borrow,
        default,
        deserialize_with = "json::opt_str"
    )]
    mime_type: Option<Cow<'a, str>>,
}

/// An MCP result's content blocks, each read once.
pub(super) struct McpContent<'a> {
    blocks: Vec<&'a RawValue>,
    read: Vec<Option<McpBlock<'a>>>,
}

/// An MCP result's content blocks (none if it has no `content` list).
pub(super) fn mcp_content(result: &RawValue) -> Option<McpContent<'_>> {
    let r: McpResult = serde_json::from_str(result.get()).ok()?;
    let blocks = r.content?;
    let read = blocks
        .iter()
        .map(|b| serde_json::from_str(b.get()).ok())
        .collect();
    Some(McpContent { blocks, read })
}

impl McpContent<'_> {
    /// Write the tool result: the text when every block is text, else
    /// content parts (images and audio as data sources, anything else as its
    /// JSON in a text part).
    pub(super) fn result(&self, em: &mut Emitter, id: &str, meta: &[MetaField]) {
        fn text_of<'b>(b: &'b Option<McpBlock>) -> Option<&'b str> {
            match b {
                Some(McpBlock {
                    kind: Some(k),
                    text: Some(t),
                    ..
                }) if k == "text" => Some(t),
                _ => None,
            }
        }
        if self.read.iter().all(|b| text_of(b).is_some()) {
            let text: Vec<&str> = self.read.iter().filter_map(text_of).collect();
            em.tool_result(id, Content::Text(&text.join("\n")), meta);
            return;
        }
        let parts: Vec<Part> = self
            .blocks
            .iter()
            .zip(&self.read)
            .map(|(raw, b)| match (b, text_of(b)) {
                (_, Some(t)) => Part::Text(Text::Str(t)),
                (
                    Some(McpBlock {
                        kind: Some(k),
                        data: Some(d),
                        mime_type,
                        ..
                    }),
                    None,
                ) if matches!(&**k, "image" | "audio") => Part::Data {
                    kind: k,
                    value: d,
                    mime_type: mime_type.as_deref(),
                },
                _ => Part::Text(Text::Str(raw.get())),
            })
            .collect();
        em.tool_result(id, Content::List(&parts), meta);
    }
}

/// The arguments of a current-format tool item, as TOOL_CALL_ARGS.
fn item_args(kind: &str, it: &Item, id: &str, em: &mut Emitter) {
    fn json(v: Option<&RawValue>) -> Option<MetaValue<'_>> {
        v.map(MetaValue::Json)
    }
    match kind {
        "command_execution" => em.tool_args_fields(id, &[("command", json(it.command))]),
        "file_change" => em.tool_args_fields(id, &[("changes", json(it.changes))]),
        "mcp_tool_call" => em.tool_args_given(id, it.arguments.filter(|a| a.get() != "null")),
        "web_search" => em.tool_args_fields(
            id,
            &[("query", json(it.query)), ("action", json(it.action))],
        ),
        _ => em.tool_args_fields(
            id,
            &[
                ("prompt", json(it.prompt)),
                ("sender_thread_id", json(it.sender_thread_id)),
                ("receiver_thread_ids", json(it.receiver_thread_ids)),
            ],
        ),
    };
}

/// Item ids restart at `item_0` in every `codex exec` (and every turn): they
/// are scoped by the run (`<runId>-item_0`), so that no id is used twice in
/// one output nor across the outputs of one resumed thread.
fn scope(buf: &mut String, em: &Emitter, id: &str) {
    buf.clear();
    buf.push_str(em.run_id());
    buf.push('-');
    buf.push_str(id);
}

/// Streamed text for message `id`.
fn delta_text(em: &mut Emitter, id: &str, delta: &RawValue) {
    let mut decoded = None;
    em.text_content_text(id, input_text(delta, &mut decoded));
}

fn need_call_id<'m>(msg: &'m Msg, kind: &str) -> Result<&'m str, LineError> {
    msg.call_id
        .as_deref()
        .ok_or_else(|| LineError::Shape(format!("{kind} without call_id")))
}

/// Live command output: a CUSTOM `tool_output` event per decoded chunk (the
/// final TOOL_CALL_RESULT still holds the whole output).
fn output_event(em: &mut Emitter, id: &str, stream: &str, text: &str) {
    em.tool_output(id, stream, Text::Str(text));
}

/// The outcome-table code for a Codex error message.
fn error_code(msg: &str) -> &'static str {
    let lower = msg.to_ascii_lowercase();
    if lower.contains("unauthorized")
        || lower.contains("401")
        || lower.contains("api key")
        || lower.contains("log in")
    {
        code::AUTH_ERROR
    } else if lower.contains("high demand")
        || lower.contains("stream disconnected")
        || lower.contains("reconnecting")
        || lower.contains("rate limit")
        || lower.contains("usage limit")
        || lower.contains("status")
        || lower.contains("server")
        || lower.contains("http")
        || lower.contains("timeout")
        || lower.contains("timed out")
    {
        code::API_ERROR
    } else {
        code::CLI_ERROR
    }
}

/// Keep a record that parsed as RAW, copied as it is.
fn raw(em: &mut Emitter, line: Line<'_>) {
    super::raw_record(em, line, SOURCE);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events for `input`, as the filter gives them.
    fn translate(input: &str, run_id: Option<&str>, user_messages: bool) -> Vec<serde_json::Value> {
        let mut em = Emitter::new(crate::agui::Format::Ndjson, None, run_id.map(str::to_owned));
        em.set_user_messages(user_messages);
        let mut codex = Codex::default();
        for line in input.lines() {
            em.note_line(line.as_bytes());
            codex.line(&mut line.as_bytes().to_vec(), &mut em).unwrap();
        }
        codex.finish(&mut em);
        em.end_of_input(true);
        std::str::from_utf8(em.output())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    const THREAD: &str =
        "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.started\"}\n";

    fn turn(text: &str) -> String {
        format!(
            "{{\"type\":\"item.completed\",\"item\":{{\"id\":\"item_0\",\"type\":\"agent_message\",\"text\":\"{text}\"}}}}\n\
             {{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}\n"
        )
    }

    #[test]
    fn each_half_of_a_resumed_thread_is_its_own_run() {
        let first = translate(&(THREAD.to_owned() + &turn("one")), None, true);
        let second = translate(&(THREAD.to_owned() + &turn("two")), None, true);
        assert_eq!(
            first,
            translate(&(THREAD.to_owned() + &turn("one")), None, true)
        );
        let run = |evs: &[serde_json::Value]| evs[0]["runId"].as_str().unwrap().to_owned();
        assert_eq!(first[0]["type"], "RUN_STARTED");
        assert_eq!(
            (&first[0]["threadId"], &second[0]["threadId"]),
            (&"t1".into(), &"t1".into())
        );
        assert_ne!(run(&first), run(&second));
        for evs in [&first, &second] {
            assert_eq!(evs[1]["type"], "TEXT_MESSAGE_START");
            assert_eq!(evs[1]["messageId"], format!("{}-item_0", run(evs)));
        }
    }

    #[test]
    fn turns_of_one_process_are_runs_of_its_thread() {
        let evs = translate(
            &(THREAD.to_owned() + &turn("a") + "{\"type\":\"turn.started\"}\n" + &turn("a")),
            None,
            true,
        );
        let starts: Vec<_> = evs.iter().filter(|e| e["type"] == "RUN_STARTED").collect();
        assert_eq!(starts.len(), 2);
        assert_eq!(
            (&starts[0]["threadId"], &starts[1]["threadId"]),
            (&"t1".into(), &"t1".into())
        );
        assert_ne!(starts[0]["runId"], starts[1]["runId"]);
    }

    #[test]
    fn an_announced_run_that_is_cut_off_still_starts_and_ends() {
        let evs = translate(THREAD, None, true);
        let types: Vec<_> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["RUN_STARTED", "RUN_ERROR"]);
        assert_eq!(evs[0]["threadId"], "t1");
        assert_eq!(evs[1]["code"], "input_ended");
    }

    #[test]
    fn an_announced_run_interrupted_before_content_keeps_its_thread() {
        let mut em = Emitter::new(crate::agui::Format::Ndjson, None, None);
        let mut codex = Codex::default();
        for line in THREAD.lines() {
            em.note_line(line.as_bytes());
            codex.line(&mut line.as_bytes().to_vec(), &mut em).unwrap();
        }
        em.cancel_run();
        let evs: Vec<serde_json::Value> = std::str::from_utf8(em.output())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(evs.len(), 2);
        assert_eq!(
            (&evs[0]["threadId"], &evs[1]["threadId"]),
            (&"t1".into(), &"t1".into())
        );
        assert_eq!(evs[1]["outcome"]["type"], "cancelled");
    }

    #[test]
    fn a_run_id_given_scopes_every_derived_id() {
        let evs = translate(
            &(THREAD.to_owned() + &turn("a") + "{\"type\":\"turn.started\"}\n" + &turn("b")),
            Some("R"),
            true,
        );
        let ids: Vec<_> = evs
            .iter()
            .filter_map(|e| e["runId"].as_str().or(e["messageId"].as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                "R",
                "R-item_0",
                "R-item_0",
                "R-item_0",
                "R",
                "R-2",
                "R-2-item_0",
                "R-2-item_0",
                "R-2-item_0",
                "R-2"
            ]
        );
        let legacy = translate(&legacy_input("hi"), Some("R"), true);
        assert_eq!(
            (&legacy[0]["threadId"], &legacy[0]["runId"]),
            (&"thread-R".into(), &"R".into())
        );
        assert_eq!(legacy[2]["messageId"], "R-user-1");
    }

    fn legacy_input(prompt: &str) -> String {
        format!(
            "{{\"model\":\"gpt-5-codex\",\"provider\":\"openai\"}}\n\
             {{\"prompt\":\"{prompt}\"}}\n\
             {{\"id\":\"0\",\"msg\":{{\"type\":\"task_started\"}}}}\n\
             {{\"id\":\"0\",\"msg\":{{\"type\":\"agent_message\",\"message\":\"ok\"}}}}\n"
        )
    }

    #[test]
    fn legacy_runs_take_their_ids_from_the_preamble() {
        let a = translate(&legacy_input("one"), None, true);
        let b = translate(&legacy_input("two"), None, true);
        let run = a[0]["runId"].as_str().unwrap();
        assert_ne!(a[0]["runId"], b[0]["runId"]);
        assert_ne!(a[0]["threadId"], b[0]["threadId"]);
        let user = a.iter().find(|e| e["role"] == "user").unwrap();
        assert_eq!(user["messageId"], format!("{run}-user-1"));
    }

    #[test]
    fn old_token_counts_are_the_events_own_fields() {
        let usage = |counts: &str| {
            let input = format!(
                "{{\"id\":\"0\",\"msg\":{{\"type\":\"token_count\",{counts}}}}}\n\
                 {{\"id\":\"0\",\"msg\":{{\"type\":\"task_complete\"}}}}\n"
            );
            translate(&input, None, true).last().unwrap()["usage"].clone()
        };
        let u = usage(r#""input_tokens":10,"output_tokens":3,"total_tokens":null"#);
        assert_eq!(u[0]["inputTokens"], 10);
        assert_eq!(u[0]["outputTokens"], 3);
        assert_eq!(u[0]["totalTokens"], 13);
        // Not all numbers: not counts.
        assert!(usage(r#""input_tokens":10,"output_tokens":"3""#).is_null());
        assert!(usage(r#""model_context_window":5"#).is_null());
    }

    #[test]
    fn without_user_messages_the_legacy_prompt_stays_raw() {
        let with = translate(&legacy_input("hi"), None, true);
        let without = translate(&legacy_input("hi"), None, false);
        assert!(with.iter().any(|e| e["role"] == "user"));
        assert!(!without.iter().any(|e| e["role"] == "user"));
        let raw: Vec<_> = without
            .iter()
            .filter(|e| e["type"] == "RAW")
            .map(|e| &e["event"])
            .collect();
        assert!(
            raw.contains(&&serde_json::json!({"prompt": "hi"})),
            "{raw:?}"
        );
        // Only the prompt's message is gone: the assistant's is still there.
        let said =
            |evs: &[serde_json::Value]| evs.iter().filter(|e| e["role"] == "assistant").count();
        assert_eq!(said(&with), said(&without));
        assert_eq!(without.first().unwrap()["type"], "RUN_STARTED");
        assert_eq!(without.last().unwrap()["type"], "RUN_FINISHED");
    }

    #[test]
    fn utf8_stream_keeps_split_characters() {
        // "é" (2 bytes), "☃" (3), "🚀" (4), each split at every point.
        for s in ["é", "☃", "🚀", "a🚀b☃c"] {
            let bytes = s.as_bytes();
            for cut in 0..=bytes.len() {
                let mut d = Utf8Stream::default();
                let mut out = String::new();
                d.push(&bytes[..cut], &mut out);
                d.push(&bytes[cut..], &mut out);
                d.finish(&mut out);
                assert_eq!(out, s, "cut at {cut}");
            }
        }
    }

    #[test]
    fn utf8_stream_replaces_invalid_bytes_only_when_known() {
        let mut d = Utf8Stream::default();
        let mut out = String::new();
        d.push(b"a\xffb\xe2\x98", &mut out);
        assert_eq!(out, "a\u{fffd}b");
        d.finish(&mut out);
        assert_eq!(out, "a\u{fffd}b\u{fffd}");
    }

    #[test]
    fn a_legacy_preamble_after_events_starts_the_next_run() {
        let invocation = |n: u32| {
            format!(
                "{{\"model\":\"gpt-5-codex\",\"provider\":\"openai\"}}\n\
                 {{\"prompt\":\"task {n}\"}}\n\
                 {{\"id\":\"0\",\"msg\":{{\"type\":\"session_configured\",\"session_id\":\"s{n}\",\"model\":\"m{n}\"}}}}\n\
                 {{\"id\":\"0\",\"msg\":{{\"type\":\"exec_command_begin\",\"call_id\":\"c{n}\",\"command\":[\"true\"],\"cwd\":\"/\"}}}}\n\
                 {{\"id\":\"0\",\"msg\":{{\"type\":\"agent_message\",\"message\":\"done {n}\"}}}}\n"
            )
        };
        let input = invocation(1) + &invocation(2);
        let mut em = Emitter::new(crate::agui::Format::Ndjson, None, None);
        let mut codex = Codex::default();
        for line in input.lines() {
            codex.line(&mut line.as_bytes().to_vec(), &mut em).unwrap();
        }
        codex.finish(&mut em);
        em.end_of_input(true);
        let events: Vec<serde_json::Value> = std::str::from_utf8(em.output())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let runs: Vec<(String, String)> = events
            .iter()
            .filter(|e| e["type"].as_str().unwrap().starts_with("RUN_"))
            .map(|e| {
                let t = e["type"].as_str().unwrap().to_owned();
                (t, e["threadId"].as_str().unwrap_or("").to_owned())
            })
            .collect();
        // Each invocation is its own run, named by its own session, and the
        // first one's unended command ends with its run, not the log.
        let runs: Vec<(&str, &str)> = runs.iter().map(|(a, b)| (&**a, &**b)).collect();
        assert_eq!(
            runs,
            [
                ("RUN_STARTED", "s1"),
                ("RUN_ERROR", ""),
                ("RUN_STARTED", "s2"),
                ("RUN_ERROR", ""),
            ]
        );
        let second = events
            .iter()
            .position(|e| e["type"] == "RUN_STARTED" && e["threadId"] == "s2")
            .unwrap();
        assert_eq!(
            events[second + 1]["type"],
            "RAW",
            "the preamble opens run 2"
        );
        assert_eq!(events[second + 1]["event"]["provider"], "openai");
    }

    #[test]
    fn duplicate_item_ids_are_tolerated() {
        let item: Item = serde_json::from_str(
            r#"{"id":"item_3","type":"web_search","id":"ws_1","query":"rust","action":{"type":"search"}}"#,
        )
        .unwrap();
        assert_eq!(item.id.as_deref(), Some("item_3"));
        assert_eq!(item.kind.as_deref(), Some("web_search"));
    }
}
