//! Codex app-server: what `codex app-server` writes to its stdout, JSON-RPC
//! 2.0 without the `jsonrpc` member, one message per line:
//! ```text
//! {"id":1,"result":{"thread":{"id":"01a2…"},"model":"gpt-5.1",…}}
//! {"method":"turn/started","params":{"threadId":"01a2…","turn":{"id":"01a3…","status":"inProgress",…}},"emittedAtMs":1795346458651}
//! {"method":"item/agentMessage/delta","params":{"threadId":"…","turnId":"…","itemId":"msg_1","delta":"Hel"},"emittedAtMs":1795346458779}
//! {"method":"item/commandExecution/requestApproval","id":0,"params":{"itemId":"call_1","command":"…",…}}
//! {"method":"turn/completed","params":{"threadId":"…","turn":{"id":"01a3…","status":"completed",…}},"emittedAtMs":1795346458797}
//! ```
//! Three shapes: responses to the client's requests (`id` and `result` or
//! `error`), notifications (`method`, `params`, `emittedAtMs`), and requests
//! the server sends to the client (`method`, `id`, `params`). Each turn is a
//! run on the thread.
//!
//! A line is parsed once: `params` is read into the record its `method`
//! calls for as the parser reaches it (the method comes first on the wire;
//! when it does not, `params` is kept as it is and read after).

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::codex::{mcp_content, openai_usage, TokenUsage};
use super::{input_text, parse_record, record_json, Line, LineError, Translate};
use crate::agui::{code, Content, Digest, Emitter, MetaValue, Outcome, Role, Usage};
use crate::base::json::{self, text_of};

const SOURCE: &str = "codex-app-server";

/// How many subagents' tool calls in flight are remembered.
const MAX_SUBAGENT_CALLS: usize = 256;

/// One line: a response, a notification or a server→client request.
#[derive(Default)]
struct Message<'a> {
    method: Option<Cow<'a, str>>,
    id: Option<&'a RawValue>,
    params: Option<Params<'a>>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    emitted_at_ms: Option<&'a RawValue>,
}

/// A notification's `params`, read as its method says. One lives on the
/// stack per line: boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Params<'a> {
    /// Methods whose parameters are copied as they are (and `params` that
    /// came before `method`).
    Raw(&'a RawValue),
    /// Methods whose parameters are not read (the line is copied as it is).
    Other,
    Item(ItemEvent<'a>),
    Delta(DeltaEvent<'a>),
    Turn(TurnEvent<'a>),
    Error(ErrorEvent<'a>),
    Usage(UsageEvent<'a>),
    Plan(PlanEvent<'a>),
    Thread(ThreadEvent<'a>),
}

/// Reads `params` for one method.
struct ParamsFor<'m>(&'m str);

impl<'de> DeserializeSeed<'de> for ParamsFor<'_> {
    type Value = Params<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Params<'de>, D::Error> {
        Ok(match self.0 {
            "item/started" | "item/completed" => Params::Item(ItemEvent::deserialize(d)?),
            "item/agentMessage/delta"
            | "item/plan/delta"
            | "item/reasoning/summaryTextDelta"
            | "item/reasoning/summaryPartAdded"
            | "item/reasoning/textDelta"
            | "item/commandExecution/outputDelta"
            | "item/fileChange/outputDelta" => Params::Delta(DeltaEvent::deserialize(d)?),
            "turn/started" | "turn/completed" => Params::Turn(TurnEvent::deserialize(d)?),
            "error" => Params::Error(ErrorEvent::deserialize(d)?),
            "thread/tokenUsage/updated" => Params::Usage(UsageEvent::deserialize(d)?),
            "turn/plan/updated" => Params::Plan(PlanEvent::deserialize(d)?),
            "thread/started" => Params::Thread(ThreadEvent::deserialize(d)?),
            _ => {
                json::Skip::deserialize(d)?;
                Params::Other
            }
        })
    }
}

/// A string borrowed from the line unless it holds escapes.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Message<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Message<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC message")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Message<'a>, M::Error> {
                let mut msg = Message::default();
                while let Some(key) = m.next_key::<Str<'de>>()? {
                    match &*key.0 {
                        "method" if msg.method.is_none() => {
                            msg.method = m.next_value::<Option<Str>>()?.map(|s| s.0);
                        }
                        "params" if msg.params.is_none() => {
                            msg.params = Some(match msg.method.as_deref() {
                                Some(method) => m.next_value_seed(ParamsFor(method))?,
                                None => Params::Raw(m.next_value()?),
                            });
                        }
                        "id" if msg.id.is_none() => msg.id = Some(m.next_value()?),
                        "result" if msg.result.is_none() => msg.result = Some(m.next_value()?),
                        "error" if msg.error.is_none() => msg.error = Some(m.next_value()?),
                        "emittedAtMs" if msg.emitted_at_ms.is_none() => {
                            msg.emitted_at_ms = Some(m.next_value()?);
                        }
                        _ => {
                            m.next_value::<json::Skip>()?;
                        }
                    }
                }
                // `params` before `method`: read it now.
                if let (Some(method), Some(Params::Raw(raw))) = (&msg.method, &msg.params) {
                    let mut de = serde_json::Deserializer::from_str(raw.get());
                    msg.params = Some(
                        ParamsFor(method)
                            .deserialize(&mut de)
                            .map_err(serde::de::Error::custom)?,
                    );
                }
                Ok(msg)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ItemEvent<'a> {
    #[serde(borrow)]
    item: Option<Item<'a>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    turn_id: Option<Cow<'a, str>>,
}

/// A thread item: a flat object tagged by `type`; the fields of every type.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Item<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    /// `userMessage`: input parts; `reasoning`: raw reasoning strings.
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    summary: Option<&'a RawValue>,
    #[serde(borrow)]
    command: Option<&'a RawValue>,
    #[serde(borrow)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    aggregated_output: Option<&'a RawValue>,
    #[serde(borrow)]
    exit_code: Option<&'a RawValue>,
    #[serde(borrow)]
    duration_ms: Option<&'a RawValue>,
    #[serde(borrow)]
    changes: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    server: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    query: Option<&'a RawValue>,
    #[serde(borrow)]
    action: Option<&'a RawValue>,
    #[serde(borrow)]
    results: Option<&'a RawValue>,
    #[serde(borrow)]
    content_items: Option<&'a RawValue>,
    #[serde(borrow)]
    success: Option<&'a RawValue>,
    #[serde(borrow)]
    prompt: Option<&'a RawValue>,
    #[serde(borrow)]
    sender_thread_id: Option<&'a RawValue>,
    #[serde(borrow)]
    receiver_thread_ids: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    agents_states: Option<&'a RawValue>,
    #[serde(borrow)]
    path: Option<&'a RawValue>,
}

/// The deltas: agent message and plan text, reasoning, command output.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaEvent<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    item_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    summary_index: Option<u64>,
    content_index: Option<u64>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    turn_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TurnEvent<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    turn: Option<Turn<'a>>,
}

#[derive(Deserialize)]
struct Turn<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    error: Option<TurnError<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TurnError<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    codex_error_info: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorEvent<'a> {
    #[serde(borrow)]
    error: Option<TurnError<'a>>,
    will_retry: Option<bool>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    turn_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageEvent<'a> {
    token_usage: Option<ThreadTokenUsage>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ThreadTokenUsage {
    /// Running totals for the thread.
    total: Option<TokenUsage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlanEvent<'a> {
    #[serde(borrow)]
    explanation: Option<&'a RawValue>,
    #[serde(borrow)]
    plan: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    turn_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ThreadEvent<'a> {
    #[serde(borrow)]
    thread: Option<ThreadRef<'a>>,
}

#[derive(Deserialize)]
struct ThreadRef<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    id: Option<Cow<'a, str>>,
}

/// What a response's `result` may tell: `thread/start` and `thread/resume`
/// answer with the thread and its model.
#[derive(Deserialize)]
struct ResponseResult<'a> {
    #[serde(borrow)]
    thread: Option<ThreadRef<'a>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UserInput<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct FileUpdateChange<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    path: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<ChangeKind<'a>>,
}

#[derive(Deserialize)]
struct ChangeKind<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorMessage<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DynamicContent<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    text: Option<Cow<'a, str>>,
}

/// The reasoning part being streamed.
#[derive(Clone)]
struct ReasoningPart {
    item: String,
    /// `summaryIndex`, or `contentIndex` for raw reasoning.
    index: u64,
    raw: bool,
    /// The message id: the item id for the first summary part, else the
    /// item id and the part.
    id: String,
    /// The subagent it belongs to.
    owner: Option<String>,
}

#[derive(Default, Clone)]
pub struct CodexAppServer {
    /// The thread, from the `thread/start` (or `resume`) response or the
    /// first `thread/started`. Other threads are subagents' (spawned by a
    /// collaboration tool call).
    thread: Option<String>,
    /// Subagent threads and the collaboration tool call that spawned them.
    spawned: Vec<(String, String)>,
    /// The thread's model, from the `thread/start` response.
    model: Option<String>,
    /// The turn of the current (or last) run.
    turn: Option<String>,
    /// The thread's token totals as last reported.
    totals: Option<TokenUsage>,
    /// A fatal `error` (no retry) waiting for its `turn/completed`: its
    /// message and code.
    last_error: Option<(String, &'static str)>,
    /// Messages of this run whose text arrived as deltas, and the subagent
    /// each belongs to: an item's events stay with the agent that started
    /// it, whatever thread a later line names.
    streamed: Vec<(String, Option<String>)>,
    /// Tool calls started by subagents, and whose.
    subagent_calls: Vec<(String, String)>,
    /// Reasoning items of this run that streamed, and the open part.
    reasoned: Vec<String>,
    reasoning: Option<ReasoningPart>,
    /// Scratch space for a user message's text.
    text: String,
    scratch: Option<Vec<u8>>,
    /// The lines since the last run ended: what a run's id is derived from
    /// when its turn id is a server's counter (see [`run_id`]).
    seed: Digest,
}

/// Whether a turn id can be a run id: servers since 0.100 give UUIDs, older
/// ones count turns per process (`"0"`, `"1"`), which every resumed half of
/// a thread repeats. Those runs get an id derived from the lines that led to
/// the turn (a resumed thread's history among them).
fn unique(turn_id: &str) -> bool {
    !turn_id.bytes().all(|b| b.is_ascii_digit())
}

impl Translate for CodexAppServer {
    fn line(&mut self, line: &mut [u8], em: &mut Emitter) -> Result<(), LineError> {
        if !em.in_run() {
            self.seed.add(line);
        }
        let mut scratch = self.scratch.take();
        let mut msg = Message::default();
        let result = match parse_record(line, &mut scratch, &mut msg) {
            Ok(line) => self.message(msg, line, em),
            Err(e) => Err(e),
        };
        self.scratch = scratch;
        result
    }

    fn finish(&mut self, em: &mut Emitter) {
        if !em.in_run() {
            return;
        }
        let last_error = self.last_error.take();
        let usage = self.usage();
        let usage = usage.as_slice();
        match last_error {
            Some((msg, code)) => em.fail_run(&msg, code, usage, None),
            None => em.fail_run(
                "the input ended before the turn completed (the server was stopped or the log was cut)",
                code::INPUT_ENDED,
                usage,
                None,
            ),
        }
    }

    fn source(&self) -> &'static str {
        SOURCE
    }
}

impl CodexAppServer {
    fn message(&mut self, msg: Message, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        let ts = msg.emitted_at_ms.and_then(|t| t.get().parse::<i64>().ok());
        em.set_timestamp(ts);
        // The client's agent, unless the line names a subagent's thread.
        em.set_subagent(None);
        let Some(method) = msg.method.as_deref() else {
            if msg.id.is_none() || (msg.result.is_none() && msg.error.is_none()) {
                return Err(LineError::Shape(
                    "neither a response (id, result or error) nor a method".into(),
                ));
            }
            return self.response(msg.result, line, em);
        };
        if msg.id.is_some() {
            server_request(method, line, em);
            return Ok(());
        }
        let thread = msg.params.as_ref().and_then(Params::thread_id);
        let child = match thread.filter(|t| self.is_child(t)) {
            Some(t) => {
                em.set_subagent(Some(t));
                self.enter_subagent(em, t);
                true
            }
            None => false,
        };
        match msg.params {
            Some(Params::Item(ev)) => self.item(method, ev, line, em)?,
            Some(Params::Delta(ev)) => self.delta(method, ev, line, em),
            Some(Params::Turn(ev)) => self.turn(method, ev, line, em),
            Some(Params::Error(ev)) => self.error(&ev, child, line, em),
            Some(Params::Usage(_)) if child => raw(em, line),
            Some(Params::Usage(ev)) => {
                if let Some(total) = ev.token_usage.and_then(|u| u.total) {
                    self.totals = Some(total);
                }
            }
            Some(Params::Plan(ev)) => self.plan(&ev, child, em),
            Some(Params::Thread(ev)) => {
                if self.thread.is_none() {
                    self.thread = ev.thread.and_then(|t| t.id).map(Cow::into_owned);
                }
                raw(em, line);
            }
            Some(Params::Raw(_) | Params::Other) | None => {
                if !known_notification(method) {
                    em.unknown(format!("method {method:?}"));
                }
                raw(em, line);
            }
        }
        Ok(())
    }

    /// An `error` notification (after its RAW event): the run's error, kept
    /// for its end; a retry notice abandons the attempt's unfinished
    /// messages; a subagent's error is its own (its turn ends it).
    #[inline]
    fn error(&mut self, ev: &ErrorEvent, child: bool, line: Line<'_>, em: &mut Emitter) {
        self.enter_turn(em, ev.thread_id.as_deref(), ev.turn_id.as_deref());
        raw(em, line);
        let err = ev.error.as_ref();
        let message = err.and_then(|e| e.message.as_deref()).unwrap_or("error");
        if child {
            // A subagent's error is its own (its turn ends it).
        } else if ev.will_retry == Some(true) {
            // A retry notice: the attempt's unfinished messages are
            // abandoned, and the next attempt streams anew.
            self.close_streams(em);
        } else {
            let code = error_code(err.and_then(|e| e.codex_error_info));
            self.last_error = Some((message.to_owned(), code));
        }
    }

    /// A plan update: a PLAN snapshot, of the run's plan or of a
    /// subagent's (`child`).
    #[inline]
    fn plan(&mut self, ev: &PlanEvent, child: bool, em: &mut Emitter) {
        self.enter_turn(em, ev.thread_id.as_deref(), ev.turn_id.as_deref());
        let scope = ev.thread_id.as_deref().filter(|_| child);
        let id = match scope {
            Some(child) => format!("{child}-plan"),
            None => crate::agui::plan::id(em, None),
        };
        let extra = [("explanation", ev.explanation)];
        crate::agui::plan::snapshot(em, &id, ev.plan, crate::agui::plan::CODEX_PLAN, &extra);
    }

    /// A response to one of the client's requests: kept as RAW; the thread
    /// and model are noted.
    fn response(
        &mut self,
        result: Option<&RawValue>,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        if let Some(r) = result.and_then(|r| serde_json::from_str::<ResponseResult>(r.get()).ok()) {
            if let Some(id) = r.thread.and_then(|t| t.id) {
                self.thread = Some(id.into_owned());
            }
            if let Some(m) = r.model {
                self.model = Some(m.into_owned());
            }
        }
        raw(em, line);
        Ok(())
    }

    /// Make sure the run of turn `turn_id` is open: a stream cut before its
    /// `turn/started`, or a turn that began without one. Events of a turn
    /// that has ended (a command that outlives its turn) stay in its run.
    fn enter_turn(&mut self, em: &mut Emitter, thread_id: Option<&str>, turn_id: Option<&str>) {
        if thread_id.is_some_and(|t| self.is_child(t)) {
            return;
        }
        let same = turn_id.is_none() || turn_id == self.turn.as_deref();
        if em.in_run() || (em.run_ended() && same) {
            return;
        }
        self.start(em, thread_id, turn_id);
    }

    /// Whether `thread` is a subagent's.
    fn is_child(&self, thread: &str) -> bool {
        self.thread.as_deref().is_some_and(|main| main != thread)
    }

    /// Make sure subagent thread `thread` is running (SUBAGENT_STARTED,
    /// under the collaboration tool call that spawned it); its events follow.
    fn enter_subagent(&mut self, em: &mut Emitter, thread: &str) {
        if em.subagent_open(thread) {
            return;
        }
        let call = self
            .spawned
            .iter()
            .find(|(t, _)| t == thread)
            .map(|(_, c)| c.as_str());
        em.set_subagent(None);
        em.subagent_start(thread, "agent", None, call, None);
        em.set_subagent(Some(thread));
    }

    fn start(&mut self, em: &mut Emitter, thread_id: Option<&str>, turn_id: Option<&str>) {
        if let Some(t) = thread_id {
            if self.thread.as_deref() != Some(t) {
                self.thread = Some(t.to_owned());
            }
        }
        let derived;
        let run_id = match turn_id {
            Some(t) if unique(t) => Some(t),
            _ => {
                derived = self.seed.run_id(em.run_number() + 1);
                Some(derived.as_str())
            }
        };
        em.start_run(self.thread.as_deref(), run_id);
        self.seed = Digest::default();
        self.turn = turn_id.map(str::to_owned);
        self.last_error = None;
        self.streamed.clear();
        self.reasoned.clear();
        self.reasoning = None;
    }

    fn turn(&mut self, method: &str, ev: TurnEvent, line: Line<'_>, em: &mut Emitter) {
        let turn = ev.turn.as_ref();
        let turn_id = turn.and_then(|t| t.id.as_deref());
        if let Some(t) = ev.thread_id.as_deref().filter(|t| self.is_child(t)) {
            // A subagent's turn: it is the subagent's whole run.
            if method == "turn/completed" {
                em.set_subagent(None);
                match turn.and_then(|t| t.status.as_deref()) {
                    Some("failed") => {
                        let err = turn.and_then(|t| t.error.as_ref());
                        let message = err
                            .and_then(|e| e.message.as_deref())
                            .unwrap_or("the turn failed");
                        let code = error_code(err.and_then(|e| e.codex_error_info));
                        em.subagent_fail(t, message, Some(code));
                    }
                    _ => em.subagent_finish(t, record_json(line)),
                }
            } else {
                raw(em, line);
            }
            return;
        }
        if method == "turn/started" {
            if em.in_run() && turn_id.is_some() && turn_id == self.turn.as_deref() {
                // The same turn announced again.
                raw(em, line);
                return;
            }
            self.start(em, ev.thread_id.as_deref(), turn_id);
            return;
        }
        self.enter_turn(em, ev.thread_id.as_deref(), turn_id);
        if em.run_ended() {
            // A second completion of the same turn.
            raw(em, line);
            return;
        }
        self.close_streams(em);
        let last_error = self.last_error.take();
        let usage = self.usage();
        let usage = usage.as_slice();
        match turn.and_then(|t| t.status.as_deref()) {
            Some("failed") => {
                let err = turn.and_then(|t| t.error.as_ref());
                let (message, code) = match (err, last_error) {
                    (
                        Some(TurnError {
                            message: Some(m),
                            codex_error_info,
                        }),
                        _,
                    ) => (m.clone(), error_code(*codex_error_info)),
                    (_, Some((m, c))) => (Cow::Owned(m), c),
                    _ => (Cow::Borrowed("the turn failed"), code::CLI_ERROR),
                };
                let meta = [("result", record_json(line))];
                em.fail_run(&message, code, usage, &meta);
            }
            Some("interrupted") => {
                em.finish_run(record_json(line), Some(Outcome::Cancelled), usage);
            }
            _ => em.finish_run(record_json(line), None, usage),
        }
    }

    fn item(
        &mut self,
        method: &str,
        ev: ItemEvent,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let Some(it) = ev.item else {
            return Err(LineError::Shape(format!("{method} without item")));
        };
        let Some(id) = it.id.as_deref() else {
            return Err(LineError::Shape(format!("{method}: an item without id")));
        };
        self.enter_turn(em, ev.thread_id.as_deref(), ev.turn_id.as_deref());
        let done = method == "item/completed";
        let kind = it.kind.as_deref().unwrap_or("");
        match kind {
            "userMessage" => {
                if done {
                    user_text(it.content, &mut self.text);
                    em.text_message(id, Role::User, &self.text);
                }
            }
            "agentMessage" | "plan" => {
                if !done {
                    return Ok(());
                }
                if let Some(i) = self.streamed.iter().position(|(s, _)| s == id) {
                    self.streamed.swap_remove(i);
                    em.text_end(id);
                } else if !em.is_open(id) {
                    let text = it.text.map(text_of).unwrap_or_default();
                    em.text_message(id, Role::Assistant, &text);
                }
            }
            "reasoning" => {
                if !done {
                    return Ok(());
                }
                if let Some(i) = self.reasoned.iter().position(|s| s == id) {
                    self.reasoned.swap_remove(i);
                    if self.reasoning.as_ref().is_some_and(|p| p.item == id) {
                        self.end_reasoning(em);
                    }
                } else {
                    self.reasoning_whole(id, &it, em);
                }
            }
            "commandExecution"
            | "fileChange"
            | "mcpToolCall"
            | "webSearch"
            | "dynamicToolCall"
            | "collabAgentToolCall"
            | "imageView" => {
                if kind == "collabAgentToolCall" {
                    self.note_spawned(id, it.receiver_thread_ids);
                }
                if let Some(i) = self.subagent_calls.iter().position(|(c, _)| c == id) {
                    em.set_subagent(Some(&self.subagent_calls[i].1));
                    if done {
                        self.subagent_calls.swap_remove(i);
                    }
                } else if em.tool_started(id) {
                    // Started by the client's agent.
                    em.set_subagent(None);
                }
                if !em.is_open(id) {
                    if em.tool_start(id, &tool_name(kind, &it), None) {
                        tool_args(kind, &it, id, em);
                        if let (Some(owner), false) = (em.subagent(), done) {
                            if self.subagent_calls.len() == MAX_SUBAGENT_CALLS {
                                self.subagent_calls.remove(0);
                            }
                            self.subagent_calls.push((id.to_owned(), owner.to_owned()));
                        }
                    } else if !done {
                        // An item id this output has seen already.
                        raw(em, line);
                        return Ok(());
                    }
                }
                if done {
                    tool_result(kind, id, &it, em);
                }
            }
            "hookPrompt" | "functionCallOutput" | "subAgentActivity" | "sleep"
            | "imageGeneration" | "enteredReviewMode" | "exitedReviewMode"
            | "contextCompaction" => raw(em, line),
            other => {
                em.unknown(format!("item type {other:?}"));
                raw(em, line);
            }
        }
        Ok(())
    }

    fn delta(&mut self, method: &str, ev: DeltaEvent, line: Line<'_>, em: &mut Emitter) {
        self.enter_turn(em, ev.thread_id.as_deref(), ev.turn_id.as_deref());
        let Some(id) = ev.item_id.as_deref() else {
            em.unknown(format!("{method} without itemId"));
            return raw(em, line);
        };
        let mut decoded = None;
        match method {
            "item/agentMessage/delta" | "item/plan/delta" => {
                match self.streamed.iter().find(|(s, _)| s == id) {
                    Some((_, owner)) => em.set_subagent(owner.as_deref()),
                    None => self
                        .streamed
                        .push((id.to_owned(), em.subagent().map(str::to_owned))),
                }
                match ev.delta.map(|d| input_text(d, &mut decoded)) {
                    Some(text) if !text.is_empty() => em.text_content_text(id, text),
                    _ => {}
                }
            }
            "item/reasoning/summaryPartAdded"
            | "item/reasoning/summaryTextDelta"
            | "item/reasoning/textDelta" => {
                let raw_part = method == "item/reasoning/textDelta";
                let index = if raw_part {
                    ev.content_index
                } else {
                    ev.summary_index
                };
                self.enter_reasoning(id, index.unwrap_or(0), raw_part, em);
                let text = ev.delta.map(|d| input_text(d, &mut decoded));
                if let (Some(text), Some(part)) = (text, &self.reasoning) {
                    if !text.is_empty() {
                        em.set_subagent(part.owner.as_deref());
                        em.reasoning_content_text(&part.id, text);
                    }
                }
            }
            _ => {
                // Live output of a command or a patch: the final result
                // still holds the whole output.
                let delta = match ev.delta.map(|d| input_text(d, &mut decoded)) {
                    Some(text) if !text.is_empty() => text,
                    _ => return,
                };
                em.tool_output(id, "output", delta);
            }
        }
    }

    /// Note the threads a collaboration tool call works with.
    fn note_spawned(&mut self, call: &str, threads: Option<&RawValue>) {
        let threads: Vec<Cow<str>> = threads
            .and_then(|t| serde_json::from_str(t.get()).ok())
            .unwrap_or_default();
        for t in threads {
            if !self.spawned.iter().any(|(s, _)| *s == t) {
                self.spawned.push((t.into_owned(), call.to_owned()));
            }
        }
    }

    /// Open reasoning part `index` of item `item`, closing the part before.
    fn enter_reasoning(&mut self, item: &str, index: u64, raw_part: bool, em: &mut Emitter) {
        if let Some(p) = &self.reasoning {
            if p.item == item && p.index == index && p.raw == raw_part {
                return;
            }
            self.end_reasoning(em);
        }
        if !self.reasoned.iter().any(|s| s == item) {
            self.reasoned.push(item.to_owned());
        }
        let id = part_id(item, index, raw_part);
        em.reasoning_start(&id);
        self.reasoning = Some(ReasoningPart {
            item: item.to_owned(),
            index,
            raw: raw_part,
            id,
            owner: em.subagent().map(str::to_owned),
        });
    }

    fn end_reasoning(&mut self, em: &mut Emitter) {
        if let Some(p) = self.reasoning.take() {
            em.reasoning_end(&p.id);
        }
    }

    /// A reasoning item that did not stream: one message per summary part,
    /// or per raw part when there is no summary.
    fn reasoning_whole(&mut self, id: &str, it: &Item, em: &mut Emitter) {
        let parts = |v: Option<&RawValue>| -> Vec<String> {
            v.and_then(|v| serde_json::from_str::<Vec<Cow<str>>>(v.get()).ok())
                .unwrap_or_default()
                .into_iter()
                .map(Cow::into_owned)
                .collect()
        };
        let (texts, raw_part) = match parts(it.summary) {
            s if !s.is_empty() => (s, false),
            _ => (parts(it.content), true),
        };
        for (i, text) in texts.iter().enumerate() {
            if !text.is_empty() {
                em.reasoning_message(&part_id(id, i as u64, raw_part), text);
            }
        }
    }

    /// Close the text and reasoning still streaming (an abandoned attempt,
    /// the end of a turn).
    fn close_streams(&mut self, em: &mut Emitter) {
        for (id, _) in self.streamed.drain(..) {
            em.text_end(&id);
        }
        self.end_reasoning(em);
        self.reasoned.clear();
    }

    fn usage(&self) -> Option<Usage<'_>> {
        self.totals.map(|t| openai_usage(self.model.as_deref(), t))
    }
}

/// The message id of a reasoning part.
fn part_id(item: &str, index: u64, raw_part: bool) -> String {
    match (index, raw_part) {
        (0, false) => item.to_owned(),
        (i, false) => format!("{item}-{i}"),
        (i, true) => format!("{item}-content-{i}"),
    }
}

/// The text of a user message's input parts, into `out`.
fn user_text(content: Option<&RawValue>, out: &mut String) {
    out.clear();
    if let Some(c) = content {
        let mut de = serde_json::Deserializer::from_str(c.get());
        // Not a list of parts: no text.
        if UserText(out).deserialize(&mut de).is_err() {
            out.clear();
        }
    }
}

/// Reads a list of user input parts, appending their text to a string.
struct UserText<'s>(&'s mut String);

impl<'de> DeserializeSeed<'de> for UserText<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for UserText<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of input parts")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(p) = seq.next_element::<UserInput>()? {
            if p.kind.as_deref() != Some("text") {
                continue;
            }
            if !self.0.is_empty() {
                self.0.push('\n');
            }
            self.0.push_str(p.text.as_deref().unwrap_or(""));
        }
        Ok(())
    }
}

/// A tool item's name: the names `codex exec --json` gives the same items.
fn tool_name<'i>(kind: &str, it: &'i Item) -> Cow<'i, str> {
    match kind {
        "commandExecution" => Cow::Borrowed("command_execution"),
        "fileChange" => Cow::Borrowed("file_change"),
        "webSearch" => Cow::Borrowed("web_search"),
        "imageView" => Cow::Borrowed("view_image"),
        "mcpToolCall" => Cow::Owned(format!(
            "mcp:{}/{}",
            it.server.as_deref().unwrap_or(""),
            it.tool.as_deref().unwrap_or("")
        )),
        "dynamicToolCall" => Cow::Borrowed(it.tool.as_deref().unwrap_or("dynamic_tool_call")),
        // `spawnAgent` here is `spawn_agent` there.
        _ => match it.tool.as_deref() {
            Some(tool) => Cow::Owned(snake_case(tool)),
            None => Cow::Borrowed("collab_tool_call"),
        },
    }
}

/// `spawnAgent` → `spawn_agent`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A tool item's arguments, as TOOL_CALL_ARGS.
fn tool_args(kind: &str, it: &Item, id: &str, em: &mut Emitter) {
    fn json(v: Option<&RawValue>) -> Option<MetaValue<'_>> {
        v.map(MetaValue::Json)
    }
    match kind {
        "commandExecution" => {
            em.tool_args_fields(id, &[("command", json(it.command)), ("cwd", json(it.cwd))])
        }
        "fileChange" => em.tool_args_fields(id, &[("changes", json(it.changes))]),
        "mcpToolCall" | "dynamicToolCall" => match it.arguments {
            Some(a) if a.get().starts_with('{') => em.tool_args_value(id, a),
            Some(a) if a.get() != "null" => {
                em.tool_args_fields(id, &[("arguments", Some(MetaValue::Json(a)))])
            }
            _ => em.tool_args_fields(id, &[]),
        },
        "webSearch" => em.tool_args_fields(
            id,
            &[("query", json(it.query)), ("action", json(it.action))],
        ),
        "imageView" => em.tool_args_fields(id, &[("path", json(it.path))]),
        _ => em.tool_args_fields(
            id,
            &[
                ("prompt", json(it.prompt)),
                ("senderThreadId", json(it.sender_thread_id)),
                ("receiverThreadIds", json(it.receiver_thread_ids)),
                ("model", json(it.model)),
            ],
        ),
    };
}

/// TOOL_CALL_RESULT for a completed tool item; failed and declined ones
/// carry `metadata.isError`.
fn tool_result(kind: &str, id: &str, it: &Item, em: &mut Emitter) {
    let status = it.status.as_deref();
    let failed = matches!(status, Some("failed" | "declined"))
        || it.error.is_some_and(|e| e.get() != "null")
        || it.success.is_some_and(|s| s.get() == "false");
    let is_error = failed.then_some(MetaValue::Bool(true));
    match kind {
        "commandExecution" => command_result(id, it, status, is_error, em),
        "fileChange" => file_change_result(id, it, status, is_error, em),
        "mcpToolCall" => mcp_result(id, it, status, is_error, em),
        "webSearch" => {
            let meta = [
                ("status", status.map(MetaValue::Str)),
                ("action", it.action.map(MetaValue::Json)),
                (
                    "results",
                    it.results
                        .filter(|r| r.get() != "null")
                        .map(MetaValue::Json),
                ),
            ];
            let query = it.query.map(text_of).unwrap_or_default();
            em.tool_result(id, Content::Text(&query), &meta);
        }
        "dynamicToolCall" => dynamic_result(id, it, status, is_error, em),
        "imageView" => {
            let path = it.path.map(text_of).unwrap_or_default();
            em.tool_result(id, Content::Text(&path), None);
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

/// `commandExecution`: the command's output, with its exit code.
#[inline]
fn command_result(
    id: &str,
    it: &Item,
    status: Option<&str>,
    is_error: Option<MetaValue>,
    em: &mut Emitter,
) {
    let meta = [
        ("status", status.map(MetaValue::Str)),
        ("exitCode", it.exit_code.map(MetaValue::Json)),
        ("durationMs", it.duration_ms.map(MetaValue::Json)),
        ("isError", is_error),
    ];
    let decoded;
    let content = match it.aggregated_output {
        None => Content::Text(""),
        Some(out) if out.get() == "null" => Content::Text(""),
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

/// `fileChange`: a line per changed file (kind and path), then the status.
#[inline]
fn file_change_result(
    id: &str,
    it: &Item,
    status: Option<&str>,
    is_error: Option<MetaValue>,
    em: &mut Emitter,
) {
    let mut text = String::new();
    let changes: Vec<FileUpdateChange> = it
        .changes
        .and_then(|c| serde_json::from_str(c.get()).ok())
        .unwrap_or_default();
    for c in &changes {
        let kind = c.kind.as_ref().and_then(|k| k.kind.as_deref());
        let _ = writeln!(
            text,
            "{} {}",
            kind.unwrap_or("?"),
            c.path.as_deref().unwrap_or("?")
        );
    }
    text.push_str(status.unwrap_or("completed"));
    let meta = [
        ("status", status.map(MetaValue::Str)),
        ("isError", is_error),
    ];
    em.tool_result(id, Content::Text(&text), &meta);
}

/// `mcpToolCall`: the MCP tool's content, else its error's message.
#[inline]
fn mcp_result(
    id: &str,
    it: &Item,
    status: Option<&str>,
    is_error: Option<MetaValue>,
    em: &mut Emitter,
) {
    let err_msg = it
        .error
        .and_then(|e| serde_json::from_str::<Option<ErrorMessage>>(e.get()).ok())
        .flatten()
        .and_then(|e| e.message);
    let result = it.result.filter(|r| r.get() != "null");
    let structured = result.and_then(structured_content);
    let meta = [
        ("status", status.map(MetaValue::Str)),
        ("isError", is_error),
        (
            "error",
            it.error.filter(|e| e.get() != "null").map(MetaValue::Json),
        ),
        ("structuredContent", structured.map(MetaValue::Json)),
        ("durationMs", it.duration_ms.map(MetaValue::Json)),
    ];
    match (result.and_then(mcp_content), err_msg) {
        (Some(c), _) => c.result(em, id, &meta),
        (None, Some(m)) => em.tool_result(id, Content::Text(&m), &meta),
        (None, None) => em.tool_result(id, Content::Text(""), &meta),
    }
}

/// `dynamicToolCall`: its text items, one a line (other items stay in
/// `metadata.contentItems`).
#[inline]
fn dynamic_result(
    id: &str,
    it: &Item,
    status: Option<&str>,
    is_error: Option<MetaValue>,
    em: &mut Emitter,
) {
    let items: Vec<DynamicContent> = it
        .content_items
        .and_then(|c| serde_json::from_str::<Option<Vec<DynamicContent>>>(c.get()).ok())
        .flatten()
        .unwrap_or_default();
    let all_text = items.iter().all(|c| c.kind.as_deref() == Some("inputText"));
    let mut text = String::new();
    if all_text {
        for c in &items {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(c.text.as_deref().unwrap_or(""));
        }
    }
    let meta = [
        ("status", status.map(MetaValue::Str)),
        ("success", it.success.map(MetaValue::Json)),
        ("isError", is_error),
        (
            "contentItems",
            it.content_items.map(MetaValue::Json).filter(|_| !all_text),
        ),
    ];
    em.tool_result(id, Content::Text(&text), &meta);
}

/// A request of the server to the client (an approval, a question, a tool
/// call): a CUSTOM event of its record.
#[inline]
fn server_request(method: &str, line: Line<'_>, em: &mut Emitter) {
    let name = if method.ends_with("requestApproval")
        || matches!(method, "execCommandApproval" | "applyPatchApproval")
    {
        "approval_request"
    } else {
        "server_request"
    };
    match record_json(line) {
        Some(v) => em.custom(name, v),
        None => raw(em, line),
    }
}

impl Params<'_> {
    /// The thread a notification is about, when it names one.
    #[inline]
    fn thread_id(&self) -> Option<&str> {
        match self {
            Params::Item(ev) => ev.thread_id.as_deref(),
            Params::Delta(ev) => ev.thread_id.as_deref(),
            Params::Turn(ev) => ev.thread_id.as_deref(),
            Params::Error(ev) => ev.thread_id.as_deref(),
            Params::Usage(ev) => ev.thread_id.as_deref(),
            Params::Plan(ev) => ev.thread_id.as_deref(),
            Params::Thread(ev) => ev.thread.as_ref().and_then(|t| t.id.as_deref()),
            Params::Raw(_) | Params::Other => None,
        }
    }
}

fn structured_content(result: &RawValue) -> Option<&RawValue> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct R<'a> {
        #[serde(borrow)]
        structured_content: Option<&'a RawValue>,
    }
    serde_json::from_str::<R>(result.get())
        .ok()
        .and_then(|r| r.structured_content)
        .filter(|s| s.get() != "null")
}

/// The outcome-table code of a turn error, by its `codexErrorInfo`: a
/// string, or an object whose one key names the error.
fn error_code(info: Option<&RawValue>) -> &'static str {
    let Some(info) = info else {
        return code::CLI_ERROR;
    };
    #[derive(Deserialize)]
    struct Tagged<'a>(#[serde(borrow)] std::collections::BTreeMap<Cow<'a, str>, IgnoredAny>);
    let tag: Option<Cow<str>> = match serde_json::from_str::<Cow<str>>(info.get()) {
        Ok(s) => Some(s),
        Err(_) => serde_json::from_str::<Tagged>(info.get())
            .ok()
            .and_then(|t| t.0.into_keys().next()),
    };
    match tag.as_deref() {
        Some("unauthorized") => code::AUTH_ERROR,
        Some(
            "usageLimitExceeded"
            | "rateLimitExceeded"
            | "serverOverloaded"
            | "internalServerError"
            | "httpConnectionFailed"
            | "responseStreamConnectionFailed"
            | "responseStreamDisconnected"
            | "responseTooManyFailedAttempts"
            | "flexUnavailable"
            | "policyCapacityUnavailable"
            | "modelNotFound"
            | "badRequest",
        ) => code::API_ERROR,
        _ => code::CLI_ERROR,
    }
}

/// Notifications this translator knows and keeps as RAW (no AG-UI
/// counterpart): thread and account state, MCP server status, warnings,
/// diffs, hooks, realtime sessions, and the output of client-run commands.
fn known_notification(method: &str) -> bool {
    // Versions before the v2 protocol was complete (0.72.0 and 0.100.0
    // among those recorded) also send each event of the older protocol as
    // `codex/event/<type>`, next to its v2 notification.
    method.starts_with("codex/event/")
        || matches!(
            method,
            "thread/status/changed"
                | "thread/readState/changed"
                | "thread/archived"
                | "thread/deleted"
                | "thread/unarchived"
                | "thread/closed"
                | "thread/reverted"
                | "skills/changed"
                | "thread/name/updated"
                | "thread/section/changed"
                | "thread/attachment/updated"
                | "thread/goal/updated"
                | "thread/prediction/updated"
                | "thread/goal/cleared"
                | "thread/queue/changed"
                | "project/changed"
                | "thread/project/updated"
                | "thread/environment/connected"
                | "thread/environment/disconnected"
                | "thread/settings/updated"
                | "hook/started"
                | "hook/completed"
                | "turn/diff/updated"
                | "item/autoApprovalReview/started"
                | "item/autoApprovalReview/completed"
                | "autoApprovalReview/strictReviewRequired"
                | "command/exec/outputDelta"
                | "process/outputDelta"
                | "process/exited"
                | "item/commandExecution/terminalInteraction"
                | "item/fileChange/patchUpdated"
                | "serverRequest/resolved"
                | "item/mcpToolCall/progress"
                | "mcpServer/oauthLogin/completed"
                | "mcpServer/startupStatus/updated"
                | "mcpServer/event/stream/notification"
                | "account/updated"
                | "account/gatewayOAuth/changed"
                | "account/rateLimits/updated"
                | "account/login/completed"
                | "app/list/updated"
                | "remoteControl/status/changed"
                | "externalAgentConfig/import/progress"
                | "externalAgentConfig/import/completed"
                | "fs/changed"
                | "thread/compacted"
                | "model/rerouted"
                | "model/verification"
                | "modelProvider/authRecoveryStarted"
                | "modelProvider/authRecoveryCompleted"
                | "turn/moderationMetadata"
                | "model/safetyBuffering/updated"
                | "warning"
                | "guardianWarning"
                | "deprecationNotice"
                | "configWarning"
                | "fuzzyFileSearch/sessionUpdated"
                | "fuzzyFileSearch/sessionCompleted"
                | "windows/worldWritableWarning"
                | "windowsSandbox/setupCompleted"
        )
        || method.starts_with("thread/realtime/")
}

/// A value's JSON text.
/// Keep a record that parsed as RAW, copied as it is.
fn raw(em: &mut Emitter, line: Line<'_>) {
    super::raw_record(em, line, SOURCE);
}
