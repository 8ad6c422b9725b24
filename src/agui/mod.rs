//! AG-UI 1.0 output: the event types (serialize-only, borrowed) and the
//! [`Emitter`] that every translator writes through.
//!
//! The emitter keeps the output well-formed by construction: it remembers what
//! is open (text messages, tool calls, reasoning, subagents), starts a run when
//! an event arrives outside one, closes everything that is still open before a
//! run's terminal event, and ends a run that the input left open. Translators
//! decide what the input means; the emitter decides what may be written.
//!
//! A run's terminal event (RUN_FINISHED or RUN_ERROR) is held back until the
//! next run starts or the input ends, because AG-UI allows nothing after it:
//! anything the CLI still prints after its final event (a late tool result, a
//! trailing warning) then still belongs to the run instead of being lost.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::hash::{BuildHasher as _, BuildHasherDefault};
use std::io;
use std::sync::Arc;

use foldhash::HashMap;

mod digest;
mod open;
pub mod patch;
pub mod plan;
pub mod tools;
mod wire;
pub use digest::Digest;
use open::{Kind, Open, OpenItems};

use crate::base::held::Held;

use serde_json::value::RawValue;

/// A borrowed piece of JSON copied to the output verbatim.
pub type Json<'a> = &'a RawValue;

pub enum Event<'a> {
    RunStarted {
        thread_id: &'a str,
        run_id: &'a str,
    },
    RunFinished {
        thread_id: &'a str,
        run_id: &'a str,
        result: Option<MetaValue<'a>>,
        outcome: Option<Outcome<'a>>,
        usage: &'a [Usage<'a>],
    },
    RunError {
        message: &'a str,
        code: Option<&'a str>,
        usage: &'a [Usage<'a>],
    },
    StepStarted {
        step_name: &'a str,
    },
    StepFinished {
        step_name: &'a str,
    },
    TextMessageStart {
        message_id: &'a str,
        role: Role,
    },
    TextMessageContent {
        message_id: &'a str,
        delta: Text<'a>,
    },
    TextMessageEnd {
        message_id: &'a str,
    },
    ToolCallStart {
        tool_call_id: &'a str,
        tool_call_name: &'a str,
        parent_message_id: Option<&'a str>,
    },
    ToolCallArgs {
        tool_call_id: &'a str,
        delta: &'a str,
    },
    ToolCallEnd {
        tool_call_id: &'a str,
    },
    ToolCallResult {
        message_id: &'a str,
        tool_call_id: &'a str,
        content: Content<'a>,
        role: &'static str,
    },
    ReasoningStart {
        message_id: &'a str,
    },
    ReasoningMessageStart {
        message_id: &'a str,
        role: &'static str,
    },
    ReasoningMessageContent {
        message_id: &'a str,
        delta: Text<'a>,
    },
    ReasoningMessageEnd {
        message_id: &'a str,
    },
    ReasoningEnd {
        message_id: &'a str,
    },
    ReasoningEncryptedValue {
        subtype: EncryptedSubtype,
        entity_id: &'a str,
        encrypted_value: &'a str,
    },
    ActivitySnapshot {
        message_id: &'a str,
        activity_type: &'a str,
        content: Json<'a>,
        replace: Option<bool>,
    },
    /// An ACTIVITY_SNAPSHOT of type `PLAN` that replaces the last one.
    PlanSnapshot {
        message_id: &'a str,
        plan: &'a plan::Plan<'a>,
    },
    Raw {
        /// The record copied as it is, or an object made here around what
        /// was not JSON.
        event: MetaValue<'a>,
        source: &'a str,
    },
    Custom {
        name: &'a str,
        value: MetaValue<'a>,
    },
    /// A CUSTOM `tool_output` event: live output of a running tool call
    /// (`value: {toolCallId, stream, delta}`).
    ToolOutput {
        tool_call_id: &'a str,
        stream: &'a str,
        delta: Text<'a>,
    },
    SubagentStarted {
        subagent_run_id: &'a str,
        name: &'a str,
        description: Option<&'a str>,
        parent_tool_call_id: Option<&'a str>,
        parent_message_id: Option<&'a str>,
    },
    SubagentFinished {
        subagent_run_id: &'a str,
        result: Option<MetaValue<'a>>,
    },
    SubagentError {
        subagent_run_id: &'a str,
        message: &'a str,
        code: Option<&'a str>,
    },
    /// The application's shared state, whole (`snapshot`).
    StateSnapshot {
        snapshot: Json<'a>,
    },
    /// A change of the application's shared state: an RFC 6902 JSON
    /// Patch (`delta`) of the state sent last.
    StateDelta {
        delta: Json<'a>,
    },
}

/// The `type` of every event this program writes, in [`Event::index`] order.
pub const EVENT_TYPES: [&str; 26] = [
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    "STEP_STARTED",
    "STEP_FINISHED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_END",
    "REASONING_ENCRYPTED_VALUE",
    "ACTIVITY_SNAPSHOT",
    "RAW",
    "CUSTOM",
    "SUBAGENT_STARTED",
    "SUBAGENT_FINISHED",
    "SUBAGENT_ERROR",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
];

impl Event<'_> {
    /// This event's position in [`EVENT_TYPES`].
    pub fn index(&self) -> usize {
        match self {
            Event::RunStarted { .. } => 0,
            Event::RunFinished { .. } => 1,
            Event::RunError { .. } => 2,
            Event::StepStarted { .. } => 3,
            Event::StepFinished { .. } => 4,
            Event::TextMessageStart { .. } => 5,
            Event::TextMessageContent { .. } => 6,
            Event::TextMessageEnd { .. } => 7,
            Event::ToolCallStart { .. } => 8,
            Event::ToolCallArgs { .. } => 9,
            Event::ToolCallEnd { .. } => 10,
            Event::ToolCallResult { .. } => 11,
            Event::ReasoningStart { .. } => 12,
            Event::ReasoningMessageStart { .. } => 13,
            Event::ReasoningMessageContent { .. } => 14,
            Event::ReasoningMessageEnd { .. } => 15,
            Event::ReasoningEnd { .. } => 16,
            Event::ReasoningEncryptedValue { .. } => 17,
            Event::ActivitySnapshot { .. } | Event::PlanSnapshot { .. } => 18,
            Event::Raw { .. } => 19,
            Event::Custom { .. } | Event::ToolOutput { .. } => 20,
            Event::SubagentStarted { .. } => 21,
            Event::SubagentFinished { .. } => 22,
            Event::SubagentError { .. } => 23,
            Event::StateSnapshot { .. } => 24,
            Event::StateDelta { .. } => 25,
        }
    }

    /// Whether this event translates a record: all but RAW and the events
    /// that only close what is open (a record that only closes a message, an
    /// `api_retry`, is not translated by that).
    fn translates(&self) -> bool {
        !matches!(
            self,
            Event::Raw { .. }
                | Event::StepFinished { .. }
                | Event::TextMessageEnd { .. }
                | Event::ToolCallEnd { .. }
                | Event::ReasoningMessageEnd { .. }
                | Event::ReasoningEnd { .. }
        )
    }

    /// Events that may carry `subagentRunId` (all but the run lifecycle).
    fn attributable(&self) -> bool {
        !matches!(
            self,
            Event::RunStarted { .. }
                | Event::RunFinished { .. }
                | Event::RunError { .. }
                | Event::StateSnapshot { .. }
                | Event::StateDelta { .. }
        ) && !matches!(
            self,
            Event::SubagentStarted { .. }
                | Event::SubagentFinished { .. }
                | Event::SubagentError { .. }
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Assistant,
    User,
    System,
    Developer,
}

#[derive(Clone, Copy)]
pub enum EncryptedSubtype {
    ToolCall,
    Message,
}

/// `RUN_FINISHED.outcome`; absent means success.
#[derive(Clone, Copy, Debug)]
pub enum Outcome<'a> {
    Success,
    Cancelled,
    /// The run waits for decisions (at least one): the client answers each
    /// with a `resume` entry in its next run on the thread.
    Interrupt(&'a [Interrupt<'a>]),
    /// Success, with tool calls the client is to run (the page's own tools)
    /// and answer in its next run: `pendingToolCallIds` in AG-UI 1.0, a
    /// plain success in 0.0 (whose schema has no such field).
    Pending(&'a [&'a str]),
}

/// One AG-UI 1.0 interrupt: a decision a run ended waiting for. `reason` is
/// `tool_call` (with `tool_call_id`, the call already streamed),
/// `input_required`, `confirmation`, or a namespaced string of our own.
#[derive(Clone, Copy, Debug)]
pub struct Interrupt<'a> {
    pub id: &'a str,
    pub reason: &'a str,
    pub tool_call_id: Option<&'a str>,
    pub message: Option<&'a str>,
    /// A JSON Schema of the payload the client sends back (an object).
    pub response_schema: Option<MetaValue<'a>>,
    /// When the interrupt stops waiting for an answer (RFC 3339).
    pub expires_at: Option<&'a str>,
    /// An object.
    pub metadata: Option<MetaValue<'a>>,
}

/// `TOOL_CALL_RESULT.content`: a string, JSON copied verbatim (an array of
/// content parts already in AG-UI's shape, or a string literal from the
/// input, see [`crate::base::json::literal`]), or content parts made here.
#[derive(Clone, Copy)]
pub enum Content<'a> {
    Text(&'a str),
    /// JSON from the input copied as it is: a string literal, or parts.
    Parts(Json<'a>),
    /// Content parts, written by the writer.
    List(&'a [Part<'a>]),
}

/// One AG-UI content part of a tool result.
#[derive(Clone, Copy)]
pub enum Part<'a> {
    /// `{"type":"text","text":…}`.
    Text(Text<'a>),
    /// `{"type":KIND,"source":{"type":"data","value":…,"mimeType":…}}`
    /// (KIND `image`, `audio`, `document`, …; `value` base64; an unknown
    /// MIME type written as `application/octet-stream`).
    Data {
        kind: &'a str,
        value: &'a str,
        mime_type: Option<&'a str>,
    },
    /// `{"type":KIND,"source":{"type":"url","value":…[,"mimeType":…]}}`.
    Url {
        kind: &'a str,
        value: &'a str,
        mime_type: Option<&'a str>,
    },
}

/// A value in an event's `metadata` (or in tool arguments made of fields),
/// written as JSON by the typed writer.
#[derive(Clone, Copy, Debug)]
pub enum MetaValue<'a> {
    /// JSON copied as it is (a value from the input).
    Json(Json<'a>),
    /// A whole input record that parsed (so one valid JSON value, its UTF-8
    /// checked), copied as it is: see [`crate::source::record_json`].
    Record(&'a str),
    /// A string, escaped as it is written.
    Str(&'a str),
    Bool(bool),
    Int(i64),
    /// An object made of fields.
    Object(&'a [MetaField<'a>]),
}

/// One entry of a JSON object made of fields; an entry whose value is
/// `None` is left out.
pub type MetaField<'a> = (&'a str, Option<MetaValue<'a>>);

/// An event's `metadata`: none, a JSON object from the input, or an object
/// made of fields (left out when no field has a value).
#[derive(Clone, Copy, Default)]
pub enum Metadata<'a> {
    #[default]
    None,
    Json(Json<'a>),
    Fields(&'a [MetaField<'a>]),
}

impl<'a> From<Option<Json<'a>>> for Metadata<'a> {
    fn from(j: Option<Json<'a>>) -> Self {
        j.map_or(Metadata::None, Metadata::Json)
    }
}

impl<'a> From<Json<'a>> for Metadata<'a> {
    fn from(j: Json<'a>) -> Self {
        Metadata::Json(j)
    }
}

impl<'a> From<&'a [MetaField<'a>]> for Metadata<'a> {
    fn from(f: &'a [MetaField<'a>]) -> Self {
        Metadata::Fields(f)
    }
}

impl<'a, const N: usize> From<&'a [MetaField<'a>; N]> for Metadata<'a> {
    fn from(f: &'a [MetaField<'a>; N]) -> Self {
        Metadata::Fields(f)
    }
}

/// A string for the output: decoded text, or a JSON string literal from the
/// input copied as it is (no decoding and re-escaping of large texts).
#[derive(Clone, Copy)]
pub enum Text<'a> {
    Str(&'a str),
    Literal(Json<'a>),
}

impl Text<'_> {
    pub fn is_empty(&self) -> bool {
        match self {
            Text::Str(s) => s.is_empty(),
            Text::Literal(j) => j.get() == "\"\"",
        }
    }
}

/// AG-UI `TokenUsage`. `inputTokens` and `outputTokens` are totals;
/// `cachedInputTokens`, `cacheWriteInputTokens` and `reasoningTokens` are parts
/// of them. Only numbers the input gives are set.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct Usage<'a> {
    pub provider: Option<&'static str>,
    pub model: Option<Cow<'a, str>>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub cache_write_input_tokens: Option<u64>,
}

impl Usage<'_> {
    /// Entries of several models in the order of the models' names; of a
    /// model named twice, the last entry.
    pub fn by_model(usage: &mut Vec<Self>) {
        // A stable sort keeps a name's entries in input order.
        usage.sort_by(|a, b| a.model.cmp(&b.model));
        usage.dedup_by(|later, kept| {
            let same = later.model == kept.model;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
    }
}

/// Which tool names TOOL_CALL_START carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ToolNames {
    /// Each CLI's own names (`Bash`, `run_shell_command`, `command_execution`).
    #[default]
    Native,
    /// One vocabulary for all CLIs (`shell`, `file_read`, `mcp`, …); the
    /// native name goes into `metadata.nativeName`.
    Canonical,
}

/// Which AG-UI release the output is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AguiVersion {
    /// AG-UI 1.0 (`@ag-ui/core` 1.0.0 and later).
    #[default]
    #[value(name = "1.0")]
    V1_0,
    /// The 0.0 releases (`@ag-ui/core` 0.0.x, as CopilotKit ships it): only
    /// shapes their schemas accept, nothing lost.
    #[value(name = "0.0")]
    V0_0,
}

/// Which RAW events are written (`--raw`). A RAW event is *known* when the
/// input line it carries was also translated into other AG-UI events, and
/// *unknown* when RAW is that line's only trace (see
/// [`Emitter::end_line`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RawMode {
    /// Every RAW event: nothing in the input is lost.
    #[default]
    All,
    /// Only unknown ones: a record that became AG-UI events is not echoed.
    Unknown,
    /// None.
    None,
}

/// How events are framed on the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per line.
    #[default]
    Ndjson,
    /// Server-sent events: `data: <json>` and a blank line, as the official
    /// AG-UI encoder frames them.
    Sse,
}

/// The codes of RUN_ERROR, one per row of the outcome table (docs/output.md).
pub mod code {
    /// The model provider's API failed (HTTP errors, retries exhausted).
    pub const API_ERROR: &str = "api_error";
    /// The CLI stopped at its turn limit.
    pub const MAX_TURNS: &str = "max_turns";
    /// The CLI could not authenticate.
    pub const AUTH_ERROR: &str = "auth_error";
    /// Any other failure the CLI reported.
    pub const CLI_ERROR: &str = "cli_error";
    /// `run`: the CLI is not installed.
    pub const CLI_MISSING: &str = "cli_missing";
    /// The input ended before the CLI's final event (a killed CLI, a cut log).
    pub const INPUT_ENDED: &str = "input_ended";
    /// Non-empty input that held no event of the dialect.
    pub const NO_EVENTS: &str = "no_events";
    /// `--approval ask`: the input that should resume the pending
    /// interrupts does not (stale, unknown or missing ids, or new input).
    pub const INVALID_RESUME: &str = "invalid_resume";
    /// `--approval ask`: the interrupts expired before a decision came.
    pub const INTERRUPT_EXPIRED: &str = "interrupt_expired";
    /// `serve --approval ask`: the run that waited for the decisions was
    /// ended to make room for another.
    pub const INTERRUPT_EVICTED: &str = "interrupt_evicted";
    /// Tools from the page: the answers to the pending tool calls are not
    /// the ones pending (unknown ids, some missing, or new input).
    pub const INVALID_TOOL_RESULT: &str = "invalid_tool_result";
}

#[derive(Clone)]
enum RunState {
    /// No run yet, or the last one has ended and its terminal event is written.
    Idle,
    Active,
    /// The terminal event is serialized in `terminal` and waits for the end.
    Ending,
}

/// Fields added to the next events (see [`Emitter::set_timestamp`] and
/// [`Emitter::set_subagent`]).
#[derive(Clone, Default)]
struct Context {
    timestamp: Option<i64>,
    /// `timestamp` as written after an event, made once per line (a line
    /// gives several events).
    stamp: Stamp,
    subagent: Option<Arc<str>>,
}

/// `,"timestamp":N`, the bytes of a timestamp's member.
#[derive(Clone, Copy)]
struct Stamp {
    bytes: [u8; 34],
    len: u8,
}

impl Default for Stamp {
    fn default() -> Self {
        Stamp {
            bytes: [0; 34],
            len: 0,
        }
    }
}

impl Stamp {
    const KEY: &[u8] = b",\"timestamp\":";

    fn of(ts: i64) -> Self {
        let mut s = Stamp::default();
        let mut n = Self::KEY.len();
        s.bytes[..n].copy_from_slice(Self::KEY);
        if ts < 0 {
            s.bytes[n] = b'-';
            n += 1;
        }
        let mut digits = [0u8; 20];
        let at = wire::u64_digits(&mut digits, ts.unsigned_abs());
        let digits = &digits[at..];
        s.bytes[n..n + digits.len()].copy_from_slice(digits);
        s.len = (n + digits.len()) as u8;
        s
    }

    fn get(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

#[derive(Clone)]
pub struct Emitter {
    out: Vec<u8>,
    format: Format,
    thread_override: Option<String>,
    run_override: Option<String>,
    state: RunState,
    thread_id: String,
    run_id: String,
    /// Runs started so far, for derived run ids.
    runs: u64,
    /// Runs of the outputs before this one, for `--run-id`'s numbers.
    runs_before: u64,
    /// The digest of the first record (or line) since the last run
    /// started, for the next run's ids when the input gives none, and
    /// whether it is a record.
    seed: Option<(Digest, bool)>,
    /// The digest of the input's name, for the ids of a run when the input
    /// holds no line to derive them from (see [`name_input`](Emitter::name_input)).
    name: Option<Digest>,
    /// The thread the input announced for its next run (see
    /// [`announce_thread`](Emitter::announce_thread)).
    announced: Held,
    open: OpenItems,
    terminal: Vec<u8>,
    ctx: Context,
    /// Scratch space for building small JSON values.
    scratch: String,
    events: u64,
    /// RAW and CUSTOM events that arrived before the first event of a run:
    /// written right after the RUN_STARTED, so that a stray line before the
    /// CLI's first event does not start a run with made-up ids.
    held: Vec<u8>,
    held_events: u64,
    /// Events written (or held) so far, by [`Event::index`].
    counts: [u64; EVENT_TYPES.len()],
    /// The [`Event::index`] of the held terminal event.
    terminal_index: usize,
    /// Bytes handed to the writer so far.
    bytes_out: u64,
    /// What the current line held that the translator does not know.
    unknown: Vec<String>,
    tool_names: ToolNames,
    /// The session id the input gave last (whatever `--thread-id` says):
    /// what resumes the CLI's session.
    cli_thread: String,
    /// The AG-UI release the output is written for.
    version: AguiVersion,
    /// Whether the prompt a CLI echoes becomes a user TEXT_MESSAGE (else it
    /// stays in RAW only).
    user_messages: bool,
    /// Scratch space for tool arguments made of fields.
    args_json: Vec<u8>,
    /// Scratch space for checking tool argument deltas.
    args_scratch: crate::base::closer::Closer,
    /// Tool call ids started on this output (the most recent ones): AG-UI
    /// clients match results to calls by id across the whole stream.
    started_tools: RecentSet,
    /// Whether a run was started since the current input began.
    input_had_run: bool,
    /// Subagents named in the current run, and whether each was started:
    /// AG-UI does not let one start twice in a run, even after it finished.
    run_subagents: HashMap<Arc<str>, Started>,
    /// Which RAW events are written.
    raw_mode: RawMode,
    /// Events so far that translate a record (see [`translates`]).
    translated: u64,
    /// `translated` when the current line began, while one is translated.
    line_start: Option<u64>,
    /// The current line's RAW events, framed, until the line ends
    /// (`--raw unknown`), and how many.
    line_raw: Vec<u8>,
    line_raw_events: u64,
    /// The id the next run gets, whatever else would name it (a resumed
    /// run named by the client).
    next_run: Option<String>,
    /// How the CLI names the page's own tools (tools from the page): a
    /// prefix, then one of the names; see [`Emitter::set_page_tools`].
    page_prefix: Option<&'static str>,
    page_names: Vec<String>,
    /// A tool of this program's own served beside the page's (the
    /// state's): see [`Emitter::set_own_tool`].
    own_tool: Option<&'static str>,
    /// The state this run sent last (STATE_SNAPSHOT, STATE_DELTA), which
    /// a STATE_DELTA patches.
    state_sent: Option<serde_json::Value>,
    /// The page's tool calls started, oldest first (id, the page's name).
    page_calls: std::collections::VecDeque<(String, String)>,
    /// The calls of this program's own tool started, oldest first.
    own_calls: std::collections::VecDeque<String>,
    /// The inputs of this program's own tool's calls that reached its
    /// server before the stream showed the call, oldest first: see
    /// [`Emitter::own_call_input`].
    own_inputs: std::collections::VecDeque<Option<Box<RawValue>>>,
    /// The page's tool calls shown before the CLI's stream showed them
    /// (their names, oldest first): see [`Emitter::announce_page_call`].
    page_announced: std::collections::VecDeque<String>,
}

/// The [`Event::index`] of RAW.
const RAW_INDEX: usize = 19;
const _: () = assert!(matches!(EVENT_TYPES[RAW_INDEX].as_bytes(), b"RAW"));

/// How many tool call ids of a run are remembered, so that none is started
/// twice.
const STARTED_TOOLS: usize = 4096;

/// How many of the page's tool calls are remembered (see
/// [`Emitter::page_calls`]).
pub const PAGE_CALLS: usize = 1024;

/// Held events beyond this many bytes start a run without waiting further.
const HOLD_LIMIT: usize = 1024 * 1024;

impl Emitter {
    pub fn new(format: Format, thread_id: Option<String>, run_id: Option<String>) -> Self {
        Emitter {
            out: Vec::with_capacity(64 * 1024),
            format,
            thread_override: thread_id,
            run_override: run_id,
            state: RunState::Idle,
            thread_id: String::new(),
            run_id: String::new(),
            runs: 0,
            runs_before: 0,
            seed: None,
            name: None,
            announced: Held::default(),
            open: OpenItems::default(),
            terminal: Vec::new(),
            ctx: Context::default(),
            scratch: String::new(),
            events: 0,
            held: Vec::new(),
            held_events: 0,
            counts: [0; EVENT_TYPES.len()],
            terminal_index: 0,
            bytes_out: 0,
            unknown: Vec::new(),
            tool_names: ToolNames::Native,
            cli_thread: String::new(),
            version: AguiVersion::V1_0,
            user_messages: true,
            started_tools: RecentSet::default(),
            args_json: Vec::new(),
            args_scratch: crate::base::closer::Closer::default(),
            input_had_run: false,
            run_subagents: HashMap::default(),
            raw_mode: RawMode::All,
            translated: 0,
            line_start: None,
            line_raw: Vec::new(),
            line_raw_events: 0,
            next_run: None,
            page_prefix: None,
            own_tool: None,
            state_sent: None,
            page_names: Vec::new(),
            page_calls: std::collections::VecDeque::new(),
            own_calls: std::collections::VecDeque::new(),
            own_inputs: std::collections::VecDeque::new(),
            page_announced: std::collections::VecDeque::new(),
        }
    }

    /// Which RAW events are written.
    pub fn set_raw_mode(&mut self, mode: RawMode) {
        self.raw_mode = mode;
    }

    /// Whether a RAW event of the current line would reach the output: not
    /// with `--raw none`, nor with `--raw unknown` once the line has been
    /// translated (its RAW events are dropped when it ends). A translator
    /// need not build a RAW event that would not.
    pub fn writes_raw(&self) -> bool {
        match self.raw_mode {
            RawMode::All => true,
            RawMode::None => false,
            RawMode::Unknown => self.line_start.is_none_or(|s| s == self.translated),
        }
    }

    /// An input line is about to be translated: with `--raw unknown`, its
    /// RAW events wait for [`end_line`](Self::end_line).
    pub fn begin_line(&mut self) {
        if self.raw_mode == RawMode::Unknown {
            self.line_start = Some(self.translated);
        }
    }

    /// The line being translated is understood though it gives no event
    /// but RAW (a record whose facts are already in the stream): with
    /// `--raw unknown` its RAW is not written.
    pub fn understood(&mut self) {
        if self.line_start.is_some() {
            self.translated += 1;
        }
    }

    /// The line begun last is translated. Its RAW events (`--raw unknown`)
    /// are written if RAW is the line's only trace, and dropped if it was
    /// also translated: if it gave any event but RAW and those that only
    /// close what is open (`*_END`, `STEP_FINISHED`), or ended the run.
    pub fn end_line(&mut self) {
        let Some(start) = self.line_start.take() else {
            return;
        };
        if self.line_raw_events == 0 {
            return;
        }
        if self.translated == start {
            self.counts[RAW_INDEX] += self.line_raw_events;
            if matches!(self.state, RunState::Idle) {
                self.held.extend_from_slice(&self.line_raw);
                self.held_events += self.line_raw_events;
            } else {
                self.out.extend_from_slice(&self.line_raw);
                self.events += self.line_raw_events;
            }
        }
        self.line_raw.clear();
        self.line_raw_events = 0;
        if self.held.len() > HOLD_LIMIT {
            self.start_run(None, None);
        }
    }

    /// The bytes written so far and not yet taken.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Write the pending output to `w` and forget it.
    pub fn drain_to(&mut self, w: &mut dyn io::Write) -> io::Result<()> {
        if !self.out.is_empty() {
            w.write_all(&self.out)?;
            self.bytes_out += self.out.len() as u64;
            self.out.clear();
            if self.out.capacity() > 4 * 1024 * 1024 {
                // A huge event (a 100 MB tool output) should not pin its memory.
                self.out.shrink_to(64 * 1024);
            }
        }
        Ok(())
    }

    /// Number of events written.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events written, by type (in [`EVENT_TYPES`] order).
    pub fn counts(&self) -> &[u64; EVENT_TYPES.len()] {
        &self.counts
    }

    /// Bytes handed to the writer so far.
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// Note something in the current line that the translator does not know
    /// (a record type, a block type, a field shape). The line still goes out
    /// (as RAW where nothing else fits); `--strict` makes it an error.
    pub fn unknown(&mut self, what: impl Into<String>) {
        self.unknown.push(what.into());
    }

    /// What [`unknown`](Self::unknown) noted since the last call.
    pub fn take_unknown(&mut self) -> Vec<String> {
        std::mem::take(&mut self.unknown)
    }

    /// Which tool names TOOL_CALL_START carries.
    pub fn set_tool_names(&mut self, names: ToolNames) {
        self.tool_names = names;
    }

    /// The page's own tools, `names`, as the CLI names them: `prefix` and
    /// the name (`mcp__page__pick`; Codex: no prefix). TOOL_CALL_START names
    /// such a call by the page's name (`pick`), the one the page finds its
    /// handler by, and its result is not written (the page gave it).
    pub fn set_page_tools(&mut self, prefix: &'static str, names: Vec<String>) {
        self.page_prefix = Some(prefix);
        self.page_names = names;
    }

    /// A tool of this program's own, `name`, served beside the page's by
    /// the same route (the state's): TOOL_CALL_START names its call by
    /// `name` rather than as the CLI does (`mcp__page__NAME`), and, as it
    /// is no page's tool, its result is written.
    pub fn set_own_tool(&mut self, name: &'static str) {
        self.own_tool = Some(name);
    }

    /// A call of the page's tool `name` (with `args`) that the CLI's stream
    /// has not shown (OpenCode writes a call once it has its result): shown
    /// now as the call `id`. The call the stream shows later for that tool
    /// is this one: it is not started again, and its result is not written.
    pub fn announce_page_call(&mut self, id: &str, name: &str, args: Option<&RawValue>) {
        let prefix = self.page_prefix.unwrap_or_default();
        if self.tool_start(id, &format!("{prefix}{name}"), None) {
            self.tool_args_given(id, args);
            self.tool_end(id);
            self.page_announced.push_back(name.to_owned());
        }
    }

    /// Whether the run was given the page's tools.
    pub fn has_page_tools(&self) -> bool {
        self.page_prefix.is_some()
    }

    /// Whether the CLI's tool `name` is one of the page's.
    pub fn is_page_tool(&self, name: &str) -> bool {
        self.page_prefix
            .and_then(|p| name.strip_prefix(p))
            .is_some_and(|n| self.page_names.iter().any(|p| p == n))
    }

    /// Whether the CLI's tool `name` is served by the page's route: one of
    /// the page's, or this program's own ([`Emitter::set_own_tool`]).
    pub fn is_served_tool(&self, name: &str) -> bool {
        self.is_page_tool(name)
            || self
                .page_prefix
                .and_then(|p| name.strip_prefix(p))
                .is_some_and(|n| self.own_tool == Some(n))
    }

    /// The page's tool calls started so far, oldest first: (id, the page's
    /// name of the tool). At most [`PAGE_CALLS`] are remembered.
    pub fn page_calls(&self) -> impl Iterator<Item = (&str, &str)> {
        self.page_calls
            .iter()
            .map(|(id, name)| (id.as_str(), name.as_str()))
    }

    /// Whether `id` is a call of this program's own tool
    /// ([`Emitter::set_own_tool`]); at most [`PAGE_CALLS`] are remembered.
    pub fn is_own_call(&self, id: &str) -> bool {
        self.own_calls.iter().any(|c| c == id)
    }

    /// The input a call of this program's own tool came with, `args`, for
    /// the oldest such call still open (shown without its input: Gemini
    /// CLI's over ACP): its arguments, and it ends. False when no such call
    /// is open.
    /// An input that comes before the stream shows its call (the agent's
    /// request may reach the server before the line that shows the call
    /// is read) is kept for the next such call ([`Emitter::early_own_input`]).
    pub fn own_call_input(&mut self, args: Option<&RawValue>) -> bool {
        let open = self.own_calls.iter().find(|c| self.is_open(c)).cloned();
        let Some(id) = open else {
            if self.own_inputs.len() >= PAGE_CALLS {
                self.own_inputs.pop_front();
            }
            self.own_inputs.push_back(args.map(|a| a.to_owned()));
            return false;
        };
        self.tool_args_given(&id, args);
        self.tool_end(&id);
        true
    }

    /// The input of this program's own tool's call `id`, just started,
    /// if it reached the server before the call was shown; it is taken.
    pub fn early_own_input(&mut self, id: &str) -> Option<Option<Box<RawValue>>> {
        if !self.is_own_call(id) || !self.is_open(id) {
            return None;
        }
        self.own_inputs.pop_front()
    }

    /// The session id the input gave last, even when `--thread-id` replaces
    /// it in the output: what resumes the CLI's session.
    pub fn cli_thread(&self) -> Option<&str> {
        Some(self.cli_thread.as_str()).filter(|t| !t.is_empty())
    }

    /// The AG-UI release the output is written for.
    pub fn set_version(&mut self, version: AguiVersion) {
        self.version = version;
    }

    /// The AG-UI release the output is written for.
    pub fn version(&self) -> AguiVersion {
        self.version
    }

    /// Whether echoed prompts become user TEXT_MESSAGEs (`--no-user-messages`
    /// turns it off; translators then keep the prompt in RAW).
    pub fn set_user_messages(&mut self, on: bool) {
        self.user_messages = on;
    }

    /// Whether echoed prompts become user TEXT_MESSAGEs.
    pub fn user_messages(&self) -> bool {
        self.user_messages
    }

    /// The integer-millisecond timestamp put on the events that follow.
    pub fn set_timestamp(&mut self, ts: Option<i64>) {
        self.ctx.timestamp = ts;
        if let Some(ts) = ts {
            self.ctx.stamp = Stamp::of(ts);
        }
    }

    /// The subagent the events that follow belong to, as set last.
    pub fn subagent(&self) -> Option<&str> {
        self.ctx.subagent.as_deref()
    }

    /// The subagent the events that follow belong to (`subagentRunId`).
    pub fn set_subagent(&mut self, id: Option<&str>) {
        match id {
            None => self.ctx.subagent = None,
            Some(id) => {
                if self.ctx.subagent.as_deref() != Some(id) {
                    // Every item of one subagent shares one copy of its id.
                    let shared = match self.run_subagents.get_key_value(id) {
                        Some((name, _)) => Arc::clone(name),
                        None => {
                            let name = Arc::<str>::from(id);
                            self.run_subagents.insert(Arc::clone(&name), Started(false));
                            name
                        }
                    };
                    self.ctx.subagent = Some(shared);
                }
            }
        }
    }

    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// A run is open (started and not yet given its terminal event).
    pub fn in_run(&self) -> bool {
        matches!(self.state, RunState::Active)
    }

    /// Whether the current run has been given its terminal event.
    pub fn run_ended(&self) -> bool {
        matches!(self.state, RunState::Ending)
    }

    /// How many runs were started on this output (the current one's number).
    pub fn run_number(&self) -> u64 {
        self.runs
    }

    /// This output follows `runs` runs of another (the FILEs before it):
    /// with `--run-id R`, its first run is `R-{runs + 1}`.
    pub fn follow_runs(&mut self, runs: u64) {
        self.runs_before = runs;
    }

    /// The input is called `name` (a FILE as given, `<stdin>`): a run that
    /// has no line to derive its ids from (the input was empty) derives them
    /// from the name, so that two empty FILEs do not share ids.
    pub fn name_input(&mut self, name: &str) {
        let mut d = Digest::default();
        // Apart from any line's digest: a line holds no newline.
        d.add(b"\n");
        d.add(name.as_bytes());
        self.name = Some(d);
    }

    /// Whether any run was started on this output.
    pub fn started_any(&self) -> bool {
        self.runs > 0
    }

    pub fn is_open(&self, id: &str) -> bool {
        self.open.contains_id(id)
    }

    /// Whether tool call `id` was started on this output (open or not).
    pub fn tool_started(&self, id: &str) -> bool {
        self.started_tools.contains(id)
    }

    /// Whether subagent `id` is running.
    pub fn subagent_open(&self, id: &str) -> bool {
        self.is_open_kind(Kind::Subagent, id)
    }

    fn is_open_kind(&self, kind: Kind, id: &str) -> bool {
        self.open.find(kind, id).is_some()
    }

    /// Ids of the open tool calls, oldest first.
    pub fn open_tool_calls(&self) -> impl Iterator<Item = &str> {
        self.open.tool_calls()
    }

    // ---- runs ----------------------------------------------------------

    /// Note an input line before it is translated: the first record (a
    /// line holding a JSON object, rather than the noise a CLI may print)
    /// after a run started, else the first line, is what the next run's ids
    /// are derived from when the input gives none.
    pub fn note_line(&mut self, line: &[u8]) {
        if matches!(self.state, RunState::Active) || self.seed.is_some_and(|s| s.1) {
            return;
        }
        let record = line.trim_ascii_start().first() == Some(&b'{');
        if record || self.seed.is_none() {
            self.seed = Some((Digest::of(line), record));
        }
    }

    /// The CLI named its session only after its run started (Copilot CLI
    /// names it in its last line): the thread `run` keeps for resuming it.
    pub fn name_cli_thread(&mut self, thread_id: &str) {
        self.cli_thread.clear();
        self.cli_thread.push_str(thread_id);
    }

    /// The input named the thread of a run that its translator starts later
    /// (with the run's first record of content): a run that starts before
    /// that (an interrupt) is still on this thread.
    pub fn announce_thread(&mut self, thread_id: Option<&str>) {
        self.announced.set_opt(thread_id);
    }

    /// The next run's id is `id`, whatever `--run-id` or the input say: a
    /// run the client names (a resume).
    pub fn name_next_run(&mut self, id: &str) {
        self.next_run = Some(id.to_owned());
    }

    /// Start a run. The thread and run ids come from `--thread-id`/`--run-id`,
    /// else from the input, else they are derived: `run-` and a digest of the
    /// run's first line (see [`note_line`](Self::note_line)), or `run-N`
    /// when no line was noted; the thread's is `thread-` and what follows
    /// `run-` in the run id. With `--run-id R` runs are `R`, `R-2`, …
    /// A run still open is first ended as cut short; an ended run's terminal
    /// event is written first.
    pub fn start_run(&mut self, thread_id: Option<&str>, run_id: Option<&str>) {
        if matches!(self.state, RunState::Active) {
            self.fail_run(
                "the input started a new run before this one ended",
                code::INPUT_ENDED,
                &[],
                None,
            );
        }
        if matches!(self.state, RunState::Ending) {
            self.write_terminal();
        }
        self.runs += 1;
        self.input_had_run = true;
        self.run_subagents.clear();
        let n = self.runs;
        let seed = self.seed.take();
        let announced = std::mem::take(&mut self.announced);
        let thread_id = thread_id.or(announced.get());
        if let Some(t) = thread_id.filter(|t| !t.is_empty()) {
            self.cli_thread.clear();
            self.cli_thread.push_str(t);
        }
        self.run_id.clear();
        match (&self.run_override, run_id) {
            _ if self.next_run.is_some() => {
                self.run_id = self.next_run.take().expect("some");
            }
            (Some(r), _) if n + self.runs_before == 1 => self.run_id.push_str(r),
            (Some(r), _) => {
                let _ = write!(self.run_id, "{r}-{}", n + self.runs_before);
            }
            (None, Some(r)) if !r.is_empty() => self.run_id.push_str(r),
            _ => match seed.map(|(d, _)| d).or(self.name) {
                Some(d) => self.run_id.push_str(&d.run_id(n)),
                None => {
                    let _ = write!(self.run_id, "run-{n}");
                }
            },
        }
        self.thread_id.clear();
        match (&self.thread_override, thread_id) {
            (Some(t), _) => self.thread_id.push_str(t),
            (None, Some(t)) if !t.is_empty() => self.thread_id.push_str(t),
            _ => {
                // The run's: `thread-` and what follows `run-` in its id.
                let run = self.run_id.strip_prefix("run-").unwrap_or(&self.run_id);
                let _ = write!(self.thread_id, "thread-{run}");
            }
        }
        // Announced for this run only; the buffer is kept for the next.
        self.announced = announced;
        self.announced.clear();
        self.state = RunState::Active;
        self.state_sent = None;
        let (t, r) = (
            std::mem::take(&mut self.thread_id),
            std::mem::take(&mut self.run_id),
        );
        self.write(&Event::RunStarted {
            thread_id: &t,
            run_id: &r,
        });
        self.thread_id = t;
        self.run_id = r;
        if !self.held.is_empty() {
            self.out.extend_from_slice(&self.held);
            self.events += self.held_events;
            self.held.clear();
            self.held_events = 0;
        }
    }

    /// Write a RAW or CUSTOM event, holding it if no run has started yet.
    fn write_or_hold<'e, 'a: 'e>(&mut self, body: impl Into<Body<'e, 'a>>) {
        let body = body.into();
        let (index, translates) = match &body {
            Body::Event(ev) => (ev.index(), ev.translates()),
            Body::RawLine { .. } => (RAW_INDEX, false),
        };
        if index == RAW_INDEX {
            match self.raw_mode {
                RawMode::All => {}
                RawMode::None => return,
                // The line has been translated: its RAW events are dropped.
                RawMode::Unknown if self.line_start.is_some_and(|s| s != self.translated) => return,
                RawMode::Unknown if self.line_start.is_some() => {
                    let mut buf = std::mem::take(&mut self.line_raw);
                    self.frame(body, &mut buf, &[], Metadata::None);
                    self.line_raw = buf;
                    self.line_raw_events += 1;
                    return;
                }
                // Outside a line (what the end of the input settles).
                RawMode::Unknown => {}
            }
        } else if translates {
            self.translated += 1;
        }
        let mut buf = if matches!(self.state, RunState::Idle) {
            std::mem::take(&mut self.held)
        } else {
            std::mem::take(&mut self.out)
        };
        self.frame(body, &mut buf, &[], Metadata::None);
        self.counts[index] += 1;
        if !matches!(self.state, RunState::Idle) {
            self.out = buf;
            self.events += 1;
            return;
        }
        self.held = buf;
        self.held_events += 1;
        if self.held.len() > HOLD_LIMIT {
            self.start_run(None, None);
        }
    }

    /// Make sure a run is open before an event is written.
    fn ensure_run(&mut self) {
        if matches!(self.state, RunState::Idle) {
            self.start_run(None, None);
        }
    }

    /// End the run successfully. Open items are closed now; the RUN_FINISHED
    /// itself is written when the next run starts or the input ends.
    pub fn finish_run(
        &mut self,
        result: Option<MetaValue>,
        outcome: Option<Outcome>,
        usage: &[Usage<'_>],
    ) {
        if !matches!(self.state, RunState::Active) {
            if matches!(self.state, RunState::Ending) {
                return; // one terminal event per run
            }
            self.ensure_run();
        }
        self.close_all();
        let mut buf = std::mem::take(&mut self.terminal);
        buf.clear();
        let ev = Event::RunFinished {
            thread_id: &self.thread_id,
            run_id: &self.run_id,
            result,
            outcome,
            usage,
        };
        self.terminal_index = ev.index();
        self.frame(&ev, &mut buf, &[], Metadata::None);
        self.terminal = buf;
        self.state = RunState::Ending;
        self.translated += 1;
    }

    /// End the run with an error, closing what is open first. `metadata` (a
    /// JSON object) keeps details that RUN_ERROR has no field for.
    pub fn fail_run<'m>(
        &mut self,
        message: &str,
        code: &str,
        usage: &[Usage<'_>],
        metadata: impl Into<Metadata<'m>>,
    ) {
        if !matches!(self.state, RunState::Active) {
            if matches!(self.state, RunState::Ending) {
                return;
            }
            self.ensure_run();
        }
        self.close_all();
        let mut buf = std::mem::take(&mut self.terminal);
        buf.clear();
        let ev = Event::RunError {
            message,
            code: Some(code),
            usage,
        };
        self.terminal_index = ev.index();
        self.frame(&ev, &mut buf, &[], metadata.into());
        self.terminal = buf;
        self.state = RunState::Ending;
        self.translated += 1;
    }

    /// Write the held terminal event now, if there is one: what follows
    /// belongs to the next run (an input that holds several CLI invocations
    /// one after another).
    pub fn end_run(&mut self) {
        if matches!(self.state, RunState::Ending) {
            self.write_terminal();
        }
    }

    /// Whether the last run ended, and in RUN_ERROR.
    pub fn last_run_failed(&self) -> bool {
        matches!(self.state, RunState::Idle) && self.terminal_index == 2
    }

    /// Whether the held terminal event is a RUN_ERROR.
    pub fn terminal_is_error(&self) -> bool {
        matches!(self.state, RunState::Ending) && self.terminal_index == 2
    }

    /// Take back a held terminal event: the run goes on (a CLI that reports a
    /// result and then continues, as a background task does). Returns whether
    /// there was one.
    pub fn reopen_run(&mut self) -> bool {
        if matches!(self.state, RunState::Ending) {
            self.terminal.clear();
            self.state = RunState::Active;
            true
        } else {
            false
        }
    }

    /// Replace a pending terminal event with an error (a later line showed the
    /// run failed after all). Does nothing if the run has not ended.
    pub fn refail_run<'m>(
        &mut self,
        message: &str,
        code: &str,
        usage: &[Usage<'_>],
        metadata: impl Into<Metadata<'m>>,
    ) {
        if matches!(self.state, RunState::Ending) {
            self.state = RunState::Active;
            self.fail_run(message, code, usage, metadata);
        }
    }

    fn write_terminal(&mut self) {
        // Anything opened after the run's end (a late record) is closed first.
        self.close_all();
        self.out.extend_from_slice(&self.terminal);
        self.terminal.clear();
        self.events += 1;
        self.counts[self.terminal_index] += 1;
        self.state = RunState::Idle;
    }

    /// The input has ended: write the held terminal event, or end a run that
    /// is still open as cut short. An input with no run at all (empty, or
    /// nothing but lines of another format) still gets one, ending in
    /// RUN_ERROR, so that a consumer never waits for nothing; `saw_input`
    /// says which message it gets.
    pub fn end_of_input(&mut self, saw_input: bool) {
        match self.state {
            RunState::Ending => self.write_terminal(),
            RunState::Active => {
                self.fail_run(
                    "the input ended before the CLI's final event (the CLI was stopped or the log was cut)",
                    code::INPUT_ENDED,
                    &[],
                    None,
                );
                self.write_terminal();
            }
            RunState::Idle if !self.held.is_empty() || !self.input_had_run => {
                self.start_run(None, None);
                let msg = if saw_input {
                    "the input held no event of the selected CLI's stream format"
                } else {
                    "the input was empty"
                };
                self.fail_run(msg, code::NO_EVENTS, &[], None);
                self.write_terminal();
            }
            RunState::Idle => {}
        }
        self.ctx = Context::default();
        self.input_had_run = false;
        self.name = None;
    }

    /// The input was interrupted (a signal): end the run now, closing what
    /// is open, with RUN_FINISHED `outcome: {type: "cancelled"}`; a run that
    /// has already ended keeps its terminal event. Like
    /// [`end_of_input`](Self::end_of_input), an input with no run yet still
    /// gets one.
    pub fn cancel_run(&mut self) {
        match self.state {
            RunState::Active => self.finish_run(None, Some(Outcome::Cancelled), &[]),
            RunState::Idle if !self.held.is_empty() || !self.input_had_run => {
                self.start_run(None, None);
                self.finish_run(None, Some(Outcome::Cancelled), &[]);
            }
            RunState::Idle | RunState::Ending => {}
        }
        if matches!(self.state, RunState::Ending) {
            self.write_terminal();
        }
        self.ctx = Context::default();
        self.input_had_run = false;
    }

    /// Write `ev`, which goes on with the open item at `seq`, in the lane
    /// of the agent that opened it, whichever subagent is current (a START
    /// and what follows it share one `subagentRunId`).
    fn write_in_lane(&mut self, seq: open::Seq, ev: &Event) {
        let Some(open) = self.open.get_mut(seq) else {
            self.write(ev);
            return;
        };
        if open.owner == self.ctx.subagent {
            self.write(ev);
            return;
        }
        let mut owner = open.owner.take();
        std::mem::swap(&mut self.ctx.subagent, &mut owner);
        self.write(ev);
        std::mem::swap(&mut self.ctx.subagent, &mut owner);
        if let Some(open) = self.open.get_mut(seq) {
            open.owner = owner;
        }
    }

    /// Close every open item, newest first.
    fn close_all(&mut self) {
        while let Some(o) = self.open.pop() {
            self.close_open(o);
        }
    }

    /// Write the end of an item taken off the open list; a tool call whose
    /// arguments were cut short gets the ARGS that complete them first.
    fn close_open(&mut self, mut o: Open) {
        std::mem::swap(&mut self.ctx.subagent, &mut o.owner);
        if let Some(tail) = o.args.as_ref().and_then(|c| c.closing()) {
            self.write(&Event::ToolCallArgs {
                tool_call_id: &o.id,
                delta: &tail,
            });
        }
        self.write_close(o.kind, &o.id);
        std::mem::swap(&mut self.ctx.subagent, &mut o.owner);
        self.open.recycle(o);
    }

    fn write_close(&mut self, kind: Kind, id: &str) {
        let ev = match kind {
            Kind::Text => Event::TextMessageEnd { message_id: id },
            Kind::Tool => Event::ToolCallEnd { tool_call_id: id },
            Kind::ReasoningMessage => Event::ReasoningMessageEnd { message_id: id },
            Kind::Reasoning => Event::ReasoningEnd { message_id: id },
            Kind::Step => Event::StepFinished { step_name: id },
            Kind::Subagent => Event::SubagentFinished {
                subagent_run_id: id,
                result: None,
            },
        };
        self.write(&ev);
    }

    fn open_item(&mut self, kind: Kind, id: &str) {
        self.open.push(kind, id, self.ctx.subagent.clone());
    }

    /// Close one open item (and whatever was opened inside it after it).
    fn close_item(&mut self, kind: Kind, id: &str) -> bool {
        let Some(o) = self.open.find(kind, id).and_then(|i| self.open.remove(i)) else {
            return false;
        };
        self.close_open(o);
        true
    }

    // ---- text ----------------------------------------------------------

    pub fn text_start(&mut self, id: &str, role: Role) {
        self.ensure_run();
        if self.is_open_kind(Kind::Text, id) {
            return;
        }
        self.write(&Event::TextMessageStart {
            message_id: id,
            role,
        });
        self.open_item(Kind::Text, id);
    }

    /// Text for message `id`, opened as an assistant message if it is not open.
    pub fn text_content(&mut self, id: &str, delta: &str) {
        self.text_content_text(id, Text::Str(delta));
    }

    /// Like [`text_content`](Self::text_content) for text that may be a JSON
    /// string literal from the input.
    pub fn text_content_text(&mut self, id: &str, delta: Text) {
        let ev = Event::TextMessageContent {
            message_id: id,
            delta,
        };
        match self.open.find(Kind::Text, id) {
            Some(seq) => self.write_in_lane(seq, &ev),
            None => {
                self.text_start(id, Role::Assistant);
                self.write(&ev);
            }
        }
    }

    pub fn text_end(&mut self, id: &str) {
        self.close_item(Kind::Text, id);
    }

    /// A whole message at once: START, CONTENT (unless empty), END.
    pub fn text_message(&mut self, id: &str, role: Role, text: &str) {
        self.text_start(id, role);
        if !text.is_empty() {
            self.text_content(id, text);
        }
        self.text_end(id);
    }

    /// Close every open text message of the current agent (before a tool
    /// call starts); other agents' messages go on.
    pub fn close_texts(&mut self) {
        while let Some(i) = self.open.newest_text_of(&self.ctx.subagent) {
            match self.open.remove(i) {
                Some(o) => self.close_open(o),
                None => break,
            }
        }
    }

    // ---- tool calls ----------------------------------------------------

    /// Start a tool call. A call id already started on this output is not
    /// started again (false): its arguments would be ignored, and a result
    /// still attaches to the first call.
    pub fn tool_start(&mut self, id: &str, name: &str, parent_message_id: Option<&str>) -> bool {
        self.tool_start_with(id, name, parent_message_id, None)
    }

    /// TOOL_CALL_START with `metadata`.
    pub fn tool_start_with<'m>(
        &mut self,
        id: &str,
        name: &str,
        parent_message_id: Option<&str>,
        metadata: impl Into<Metadata<'m>>,
    ) -> bool {
        self.ensure_run();
        if self.is_open_kind(Kind::Tool, id) {
            return false;
        }
        if !self.started_tools.insert(id) {
            return false;
        }
        let page = self
            .page_prefix
            .and_then(|p| name.strip_prefix(p))
            .filter(|n| self.page_names.iter().any(|p| p == n));
        if let Some(page) = page {
            if self.page_calls.len() >= PAGE_CALLS {
                self.page_calls.pop_front();
            }
            self.page_calls.push_back((id.to_owned(), page.to_owned()));
            if let Some(i) = self.page_announced.iter().position(|n| n == page) {
                // Shown already, under the id the page answered.
                self.page_announced.remove(i);
                return false;
            }
        }
        let own = self
            .page_prefix
            .and_then(|p| name.strip_prefix(p))
            .filter(|n| self.own_tool == Some(*n));
        if own.is_some() {
            if self.own_calls.len() >= PAGE_CALLS {
                self.own_calls.pop_front();
            }
            self.own_calls.push_back(id.to_owned());
        }
        let name = page.or(own).unwrap_or(name);
        let (tool_call_name, extra) = match self.tool_names {
            _ if page.is_some() || own.is_some() => (name, [None, None, None]),
            ToolNames::Native => (name, [None, None, None]),
            ToolNames::Canonical => {
                let canon = crate::agui::tools::canonical(name);
                let (server, tool) = canon.mcp.unzip();
                (
                    canon.name,
                    [
                        Some(MetaValue::Str(name)),
                        server.map(MetaValue::Str),
                        tool.map(MetaValue::Str),
                    ],
                )
            }
        };
        let [native, server, tool] = extra;
        self.write_with(
            &Event::ToolCallStart {
                tool_call_id: id,
                tool_call_name,
                parent_message_id,
            },
            &[
                ("nativeName", native),
                ("mcpServer", server),
                ("mcpTool", tool),
            ],
            metadata,
        );
        self.open.push(Kind::Tool, id, self.ctx.subagent.clone());
        true
    }

    /// Arguments for an open tool call. Ignored (false) for a call that is
    /// not open, or when the delta would make the arguments so far invalid
    /// JSON (pieces out of order in a damaged stream): AG-UI wants a call's
    /// ARGS to join into JSON.
    pub fn tool_args(&mut self, id: &str, delta: &str) -> bool {
        self.args(id, delta, false)
    }

    /// Arguments that are one whole JSON value, as parsed from the input
    /// (the common case: a call's input arrives complete). Its bytes need no
    /// second look.
    pub fn tool_args_value(&mut self, id: &str, value: &RawValue) -> bool {
        self.args(id, value.get(), true)
    }

    /// The input's arguments, one whole JSON value, or `{}` when it gives
    /// none.
    pub fn tool_args_given(&mut self, id: &str, value: Option<&RawValue>) -> bool {
        match value {
            Some(v) => self.tool_args_value(id, v),
            None => self.tool_args_fields(id, &[]),
        }
    }

    /// Arguments made of `fields` (see [`MetaField`]), as one delta (`{}`
    /// for none).
    pub fn tool_args_fields(&mut self, id: &str, fields: &[MetaField]) -> bool {
        let mut buf = std::mem::take(&mut self.args_json);
        buf.clear();
        wire::object(&mut buf, fields);
        let json = std::str::from_utf8(&buf).expect("the writer writes UTF-8");
        // Written here: a whole JSON object.
        let done = self.args(id, json, true);
        self.args_json = buf;
        done
    }

    /// TOOL_CALL_ARGS with `delta`; `whole`: a whole JSON value, valid
    /// already.
    fn args(&mut self, id: &str, delta: &str, whole: bool) -> bool {
        let Some(seq) = self.open.find(Kind::Tool, id) else {
            return false;
        };
        let Some(open) = self.open.get_mut(seq) else {
            return false;
        };
        if let Some(c) = open.args.as_mut() {
            self.args_scratch.clone_from(c);
            if whole {
                self.args_scratch.feed_whole(delta);
            } else {
                self.args_scratch.feed(delta);
            }
            if self.args_scratch.is_broken() {
                return false;
            }
            std::mem::swap(c.as_mut(), &mut self.args_scratch);
        }
        self.write_in_lane(
            seq,
            &Event::ToolCallArgs {
                tool_call_id: id,
                delta,
            },
        );
        true
    }

    pub fn tool_end(&mut self, id: &str) -> bool {
        self.close_item(Kind::Tool, id)
    }

    /// TOOL_CALL_RESULT (a new tool message `<id>-result`), ending the call
    /// first if it is still open. `metadata` carries what the content cannot
    /// (an error, an exit code).
    pub fn tool_result<'m>(
        &mut self,
        tool_call_id: &str,
        content: Content,
        metadata: impl Into<Metadata<'m>>,
    ) {
        self.ensure_run();
        self.tool_end(tool_call_id);
        if self.page_calls.iter().any(|(id, _)| id == tool_call_id) {
            // The page ran it and holds its result.
            return;
        }
        self.scratch.clear();
        self.scratch.push_str(tool_call_id);
        self.scratch.push_str("-result");
        let message_id = std::mem::take(&mut self.scratch);
        self.write_with(
            &Event::ToolCallResult {
                message_id: &message_id,
                tool_call_id,
                content,
                role: "tool",
            },
            &[],
            metadata,
        );
        self.scratch = message_id;
    }

    // ---- reasoning -----------------------------------------------------

    /// Open a reasoning span and its message (both with id `id`).
    pub fn reasoning_start(&mut self, id: &str) {
        self.ensure_run();
        if self.is_open_kind(Kind::ReasoningMessage, id) {
            return;
        }
        if !self.is_open_kind(Kind::Reasoning, id) {
            self.write(&Event::ReasoningStart { message_id: id });
            self.open_item(Kind::Reasoning, id);
        }
        self.write(&Event::ReasoningMessageStart {
            message_id: id,
            role: "reasoning",
        });
        self.open_item(Kind::ReasoningMessage, id);
    }

    pub fn reasoning_content(&mut self, id: &str, delta: &str) {
        self.reasoning_content_text(id, Text::Str(delta));
    }

    /// Like [`reasoning_content`](Self::reasoning_content) for text that may
    /// be a JSON string literal from the input.
    pub fn reasoning_content_text(&mut self, id: &str, delta: Text) {
        let ev = Event::ReasoningMessageContent {
            message_id: id,
            delta,
        };
        match self.open.find(Kind::ReasoningMessage, id) {
            Some(seq) => self.write_in_lane(seq, &ev),
            None => {
                self.reasoning_start(id);
                self.write(&ev);
            }
        }
    }

    /// Close the reasoning message and its span.
    pub fn reasoning_end(&mut self, id: &str) {
        self.close_item(Kind::ReasoningMessage, id);
        self.close_item(Kind::Reasoning, id);
    }

    /// A whole reasoning message at once.
    pub fn reasoning_message(&mut self, id: &str, text: &str) {
        self.reasoning_start(id);
        if !text.is_empty() {
            self.reasoning_content(id, text);
        }
        self.reasoning_end(id);
    }

    pub fn reasoning_encrypted(&mut self, subtype: EncryptedSubtype, entity_id: &str, value: &str) {
        self.ensure_run();
        self.write(&Event::ReasoningEncryptedValue {
            subtype,
            entity_id,
            encrypted_value: value,
        });
    }

    // ---- steps and subagents --------------------------------------------

    pub fn step_start(&mut self, name: &str) {
        self.ensure_run();
        if self.is_open_kind(Kind::Step, name) {
            return;
        }
        self.write(&Event::StepStarted { step_name: name });
        self.open_item(Kind::Step, name);
    }

    pub fn step_end(&mut self, name: &str) {
        self.close_item(Kind::Step, name);
    }

    pub fn subagent_start(
        &mut self,
        id: &str,
        name: &str,
        description: Option<&str>,
        parent_tool_call_id: Option<&str>,
        parent_message_id: Option<&str>,
    ) {
        self.ensure_run();
        if self.is_open_kind(Kind::Subagent, id) {
            return;
        }
        match self.run_subagents.get_mut(id) {
            Some(Started(true)) => return,
            Some(started) => started.0 = true,
            None => {
                self.run_subagents.insert(Arc::from(id), Started(true));
            }
        }
        self.write(&Event::SubagentStarted {
            subagent_run_id: id,
            name,
            description,
            parent_tool_call_id,
            parent_message_id,
        });
        self.open_item(Kind::Subagent, id);
    }

    pub fn subagent_finish(&mut self, id: &str, result: Option<MetaValue>) {
        if self.end_subagent(id) {
            self.write(&Event::SubagentFinished {
                subagent_run_id: id,
                result,
            });
        }
    }

    /// SUBAGENT_ERROR: the subagent failed (the run goes on).
    pub fn subagent_fail(&mut self, id: &str, message: &str, code: Option<&str>) {
        if self.end_subagent(id) {
            self.write(&Event::SubagentError {
                subagent_run_id: id,
                message,
                code,
            });
        }
    }

    /// Close what subagent `id` has open and forget it; false if it is not
    /// running.
    fn end_subagent(&mut self, id: &str) -> bool {
        let Some(i) = self.open.find(Kind::Subagent, id) else {
            return false;
        };
        // Close what the subagent (and any subagent it started) still has
        // open, then the subagent itself. Other agents' items stay open.
        for j in self.open.owned_by_subagent(id, i) {
            if let Some(o) = self.open.remove(j) {
                self.close_open(o);
            }
        }
        if let Some(o) = self.open.remove(i) {
            self.open.recycle(o);
        }
        true
    }

    // ---- everything else -----------------------------------------------

    /// A RAW event around a record copied as it is. `json` must be one
    /// valid JSON value (a line that has parsed).
    pub fn raw_line(&mut self, json: &str, source: &str) {
        self.raw_pieces(&[json], source);
    }

    /// A RAW event around a record written as `pieces`, one after the
    /// other: a record that has parsed with members cut out, copied as it
    /// is without being put together first. Together they must be one valid
    /// JSON value.
    pub fn raw_pieces(&mut self, pieces: &[&str], source: &str) {
        self.write_or_hold(Body::RawLine {
            json: pieces,
            source,
        });
    }

    /// A RAW event: `event` is the provider's own record.
    pub fn raw(&mut self, event: Json, source: &str) {
        self.write_or_hold(&Event::Raw {
            event: MetaValue::Json(event),
            source,
        });
    }

    /// A RAW event around an object made of `fields`.
    pub fn raw_fields(&mut self, fields: &[MetaField], source: &str) {
        self.write_or_hold(&Event::Raw {
            event: MetaValue::Object(fields),
            source,
        });
    }

    pub fn custom(&mut self, name: &str, value: MetaValue) {
        self.write_or_hold(&Event::Custom { name, value });
    }

    /// Live output of a running tool call: CUSTOM `tool_output`.
    pub fn tool_output(&mut self, tool_call_id: &str, stream: &str, delta: Text) {
        self.write_or_hold(&Event::ToolOutput {
            tool_call_id,
            stream,
            delta,
        });
    }

    pub fn activity_snapshot(&mut self, message_id: &str, activity_type: &str, content: Json) {
        self.ensure_run();
        self.write(&Event::ActivitySnapshot {
            message_id,
            activity_type,
            content,
            replace: Some(true),
        });
    }

    /// The application's shared state is now `state` (a JSON object):
    /// STATE_SNAPSHOT, or when this run has sent a state already and a
    /// patch of it is shorter, that patch as STATE_DELTA (see [`patch`]).
    pub fn state_update(&mut self, state: Json) {
        self.ensure_run();
        let new: Option<serde_json::Value> = serde_json::from_str(state.get()).ok();
        let delta = match (&self.state_sent, &new) {
            (Some(old), Some(new)) => patch::diff(old, new, state.get().len()),
            _ => None,
        };
        match delta.and_then(|d| RawValue::from_string(d).ok()) {
            Some(delta) => self.write(&Event::StateDelta { delta: &delta }),
            None => self.write(&Event::StateSnapshot { snapshot: state }),
        }
        self.state_sent = new;
    }

    /// A plan (see [`plan`]) as message `message_id`, replacing the
    /// last snapshot with that id.
    pub fn plan_snapshot(&mut self, message_id: &str, plan: &plan::Plan) {
        self.ensure_run();
        self.write(&Event::PlanSnapshot { message_id, plan });
    }

    /// Write any event as it is (no tracking). For events the methods above do
    /// not cover; prefer those.
    pub fn event<'m>(&mut self, ev: &Event, metadata: impl Into<Metadata<'m>>) {
        self.ensure_run();
        self.write_with(ev, &[], metadata);
    }

    // ---- serialization ---------------------------------------------------

    fn write(&mut self, ev: &Event) {
        self.write_with(ev, &[], Metadata::None);
    }

    /// Write `ev` with `metadata` (after the entries of `extra`).
    fn write_with<'m>(
        &mut self,
        ev: &Event,
        extra: &[MetaField],
        metadata: impl Into<Metadata<'m>>,
    ) {
        let mut out = std::mem::take(&mut self.out);
        self.frame(ev, &mut out, extra, metadata.into());
        self.out = out;
        self.events += 1;
        self.counts[ev.index()] += 1;
        if ev.translates() {
            self.translated += 1;
        }
    }

    /// Serialize one event with its framing, adding the context fields
    /// (`timestamp`, `subagentRunId`) and `metadata` before the closing brace.
    fn frame<'e, 'a: 'e>(
        &self,
        body: impl Into<Body<'e, 'a>>,
        out: &mut Vec<u8>,
        extra: &[MetaField],
        metadata: Metadata,
    ) {
        if self.format == Format::Sse {
            out.extend_from_slice(b"data: ");
        }
        let (attributable, kept) = match body.into() {
            Body::Event(ev) => (
                ev.attributable(),
                wire::event_open_for(out, ev, self.version),
            ),
            Body::RawLine { json, source } => {
                out.extend_from_slice(b"{\"type\":\"RAW\",\"event\":");
                for piece in json {
                    out.extend_from_slice(piece.as_bytes());
                }
                out.extend_from_slice(b",\"source\":");
                wire::string(out, source);
                (true, wire::Kept::default())
            }
        };
        if self.ctx.timestamp.is_some() {
            out.extend_from_slice(self.ctx.stamp.get());
        }
        if let Some(sub) = &self.ctx.subagent {
            if attributable {
                out.extend_from_slice(b",\"subagentRunId\":");
                wire::string(out, sub);
            }
        }
        wire::metadata(out, &kept, extra, metadata);
        out.push(b'}');
        out.extend_from_slice(match self.format {
            Format::Ndjson => b"\n",
            Format::Sse => b"\n\n",
        });
    }
}

/// Whether a subagent named in this run has been started (AG-UI does not
/// let one start twice in a run, even after it finished).
#[derive(Clone)]
struct Started(bool);

/// The most recent [`STARTED_TOOLS`] ids, with constant-time lookup and no
/// allocation per id: each id is kept as a 128-bit fingerprint (two keyed
/// SipHash values), so two different ids are taken for one with a chance
/// of about 2^-116 among 4096.
#[derive(Clone)]
struct RecentSet {
    keys: [std::hash::RandomState; 2],
    set: HashSet<u128, BuildHasherDefault<Fingerprint>>,
    order: std::collections::VecDeque<u128>,
}

impl Default for RecentSet {
    fn default() -> Self {
        RecentSet {
            keys: [std::hash::RandomState::new(), std::hash::RandomState::new()],
            set: HashSet::default(),
            order: std::collections::VecDeque::new(),
        }
    }
}

impl RecentSet {
    fn fingerprint(&self, id: &str) -> u128 {
        let [a, b] = &self.keys;
        (u128::from(a.hash_one(id)) << 64) | u128::from(b.hash_one(id))
    }

    fn contains(&self, id: &str) -> bool {
        self.set.contains(&self.fingerprint(id))
    }

    /// Add `id`; false if it is there already.
    fn insert(&mut self, id: &str) -> bool {
        let f = self.fingerprint(id);
        if self.set.contains(&f) {
            return false;
        }
        if self.order.len() == STARTED_TOOLS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        self.set.insert(f);
        self.order.push_back(f);
        true
    }
}

/// Hashes a fingerprint that is a hash already: its low 64 bits.
#[derive(Default)]
struct Fingerprint(u64);

impl std::hash::Hasher for Fingerprint {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u128` keys are hashed with this; anything else still works.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, n: u128) {
        self.0 = n as u64;
    }
}

/// What [`Emitter::frame`] writes: an event, or a RAW event around a record
/// copied as it is.
enum Body<'e, 'a> {
    Event(&'e Event<'a>),
    /// The record in pieces, one after the other.
    RawLine {
        json: &'e [&'a str],
        source: &'a str,
    },
}

impl<'e, 'a> From<&'e Event<'a>> for Body<'e, 'a> {
    fn from(ev: &'e Event<'a>) -> Self {
        Body::Event(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_is_written_as_its_number() {
        for ts in [0, 5, -5, 1_764_000_000_123, i64::MIN, i64::MAX] {
            let stamp = Stamp::of(ts);
            assert_eq!(
                std::str::from_utf8(stamp.get()).unwrap(),
                format!(",\"timestamp\":{ts}")
            );
        }
    }

    fn lines(em: &Emitter) -> Vec<serde_json::Value> {
        std::str::from_utf8(em.output())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn types(em: &Emitter) -> Vec<String> {
        lines(em)
            .iter()
            .map(|v| v["type"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn recent_ids_are_kept_until_pushed_out() {
        let mut recent = RecentSet::default();
        assert!(recent.insert("call-0"));
        assert!(!recent.insert("call-0"), "a second start of one id");
        assert!(recent.contains("call-0") && !recent.contains("call-1"));
        for i in 1..STARTED_TOOLS {
            assert!(recent.insert(&format!("call-{i}")));
        }
        assert!(recent.contains("call-0"));
        assert!(recent.insert("one more"));
        assert!(!recent.contains("call-0"), "the oldest is pushed out");
        assert!(recent.contains("call-1") && recent.contains("one more"));
        assert_eq!(recent.set.len(), STARTED_TOOLS);
    }

    /// `--raw unknown`: a line's RAW is written only if the line gave no
    /// other event but those that close what is open, before or after it.
    #[test]
    fn raw_unknown_keeps_a_raw_only_when_its_line_was_not_translated() {
        let raw = RawValue::from_string("{\"r\":1}".into()).unwrap();
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.set_raw_mode(RawMode::Unknown);
        // Before any run: an untranslated line is held for the run.
        em.begin_line();
        em.raw(&raw, "x");
        em.end_line();
        // A line that starts the run and is echoed: dropped.
        em.begin_line();
        em.raw(&raw, "x");
        em.start_run(Some("t"), Some("r"));
        em.end_line();
        // A line that is echoed before its text: dropped.
        em.begin_line();
        em.raw(&raw, "x");
        em.text_content("m1", "hi");
        em.end_line();
        // A line that only closes the text (a retry notice): written.
        em.begin_line();
        em.text_end("m1");
        em.raw(&raw, "x");
        em.end_line();
        // A line that ends the run: dropped.
        em.begin_line();
        em.finish_run(None, None, &[]);
        em.raw(&raw, "x");
        em.end_line();
        em.end_of_input(true);
        assert_eq!(
            types(&em),
            [
                "RUN_STARTED",
                "RAW",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "RAW",
                "RUN_FINISHED"
            ]
        );
        assert_eq!(em.counts()[RAW_INDEX], 2);
    }

    #[test]
    fn a_run_s_later_states_go_as_patches_when_shorter_and_each_run_starts_whole() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let big = "x".repeat(100);
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.state_update(&raw(&format!(r#"{{"a":1,"big":"{big}"}}"#)));
        em.state_update(&raw(&format!(r#"{{"a":2,"big":"{big}"}}"#)));
        em.state_update(&raw(r#"{"b":1}"#));
        em.finish_run(None, None, &[]);
        em.state_update(&raw(&format!(r#"{{"a":3,"big":"{big}"}}"#)));
        em.end_of_input(true);
        let events = lines(&em);
        let states: Vec<(&str, String)> = events
            .iter()
            .filter(|e| e["type"].as_str().unwrap().starts_with("STATE_"))
            .map(|e| {
                let t = e["type"].as_str().unwrap();
                (t, e.get("delta").unwrap_or(&e["snapshot"]).to_string())
            })
            .collect();
        assert_eq!(
            states[..3],
            [
                ("STATE_SNAPSHOT", format!(r#"{{"a":1,"big":"{big}"}}"#)),
                (
                    "STATE_DELTA",
                    r#"[{"op":"replace","path":"/a","value":2}]"#.to_owned()
                ),
                ("STATE_SNAPSHOT", r#"{"b":1}"#.to_owned()),
            ]
        );
        assert_eq!(states[3].0, "STATE_SNAPSHOT", "a new run: {events:?}");
        assert_eq!(em.counts()[25], 1);
    }

    #[test]
    fn this_program_s_own_tool_is_named_by_its_name_and_keeps_its_result() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.set_page_tools("page-", vec!["pick".into()]);
        em.set_own_tool("ag_ui_update_state");
        assert!(em.is_served_tool("page-ag_ui_update_state"));
        assert!(em.is_served_tool("page-pick"));
        assert!(!em.is_page_tool("page-ag_ui_update_state"));
        assert!(!em.is_served_tool("ag_ui_update_state"));
        em.tool_start("c1", "page-ag_ui_update_state", None);
        em.tool_start("c2", "page-pick", None);
        em.tool_start("c3", "other", None);
        let names: Vec<String> = lines(&em)
            .iter()
            .filter(|e| e["type"] == "TOOL_CALL_START")
            .map(|e| e["toolCallName"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["ag_ui_update_state", "pick", "other"]);
        let page: Vec<&str> = em.page_calls().map(|(id, _)| id).collect();
        assert_eq!(page, ["c2"], "only the page's call is the page's");
    }

    #[test]
    fn an_own_call_shown_without_its_input_gets_the_one_it_came_with() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.set_page_tools("mcp_page_", Vec::new());
        em.set_own_tool("ag_ui_update_state");
        // No call open: nothing to give the input to.
        assert!(!em.own_call_input(None));
        em.tool_start("g1", "mcp_page_ag_ui_update_state", None);
        em.tool_start("x", "other", None);
        assert!(em.is_own_call("g1") && !em.is_own_call("x"));
        let args = RawValue::from_string(r#"{"state":{"a":1}}"#.into()).unwrap();
        assert!(em.own_call_input(Some(&args)));
        assert!(!em.is_open("g1") && em.is_open("x"));
        // Ended: a second input finds no call.
        assert!(!em.own_call_input(Some(&args)));
        let args: Vec<String> = lines(&em)
            .iter()
            .filter(|e| e["type"] == "TOOL_CALL_ARGS")
            .map(|e| e["delta"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(args, [r#"{"state":{"a":1}}"#]);
    }

    #[test]
    fn an_own_call_s_input_that_comes_before_the_call_waits_for_it() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.set_page_tools("page-", Vec::new());
        em.set_own_tool("ag_ui_update_state");
        let args = RawValue::from_string(r#"{"state":{"a":1}}"#.into()).unwrap();
        // The agent's request reached the server first: kept.
        assert!(!em.own_call_input(Some(&args)));
        em.tool_start("x", "other", None);
        assert!(em.early_own_input("x").is_none(), "not this program's tool");
        em.tool_start("c1", "page-ag_ui_update_state", None);
        let input = em.early_own_input("c1").expect("kept for the call");
        assert_eq!(input.unwrap().get(), args.get());
        assert!(em.early_own_input("c1").is_none(), "taken once");
    }

    #[test]
    fn events_outside_a_run_start_one() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.text_content("m1", "hi");
        em.end_of_input(true);
        assert_eq!(
            types(&em),
            [
                "RUN_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "RUN_ERROR"
            ]
        );
        assert_eq!(lines(&em)[4]["code"], "input_ended");
        assert_eq!(lines(&em)[0]["threadId"], "thread-1");
    }

    #[test]
    fn ids_the_input_does_not_give_come_from_its_first_record() {
        let ids = |first: &str, run_override: Option<&str>| {
            let mut em = Emitter::new(Format::Ndjson, None, run_override.map(str::to_owned));
            em.note_line(b"Loaded cached credentials.");
            em.note_line(first.as_bytes());
            em.note_line(b"{\"later\":1}");
            em.text_content("m1", "hi");
            em.finish_run(None, None, &[]);
            em.note_line(first.as_bytes());
            em.start_run(None, None);
            em.end_of_input(true);
            let starts: Vec<_> = lines(&em)
                .into_iter()
                .filter(|e| e["type"] == "RUN_STARTED")
                .map(|e| (e["threadId"].clone(), e["runId"].clone()))
                .collect();
            starts
        };
        let a = ids(r#"{"prompt":"one"}"#, None);
        assert_eq!(a, ids(r#"{"prompt":"one"}"#, None), "deterministic");
        let run = a[0].1.as_str().unwrap();
        assert_eq!(run, Digest::of(br#"{"prompt":"one"}"#).run_id(1).as_str());
        assert_eq!(a[0].0, format!("thread-{}", &run[4..]));
        // Another input, or the next run with the same first record: others.
        let b = ids(r#"{"prompt":"two"}"#, None);
        assert_ne!(a[0], b[0]);
        assert_ne!(a[0], a[1]);
        // `--run-id R` scopes all of them.
        let r = ids(r#"{"prompt":"one"}"#, Some("R"));
        assert_eq!(
            r[0],
            (serde_json::json!("thread-R"), serde_json::json!("R"))
        );
        assert_eq!(
            r[1],
            (serde_json::json!("thread-R-2"), serde_json::json!("R-2"))
        );
        // With no record at all, the first line.
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.note_line(b"some noise");
        em.note_line(b"more noise");
        em.end_of_input(true);
        assert_eq!(
            lines(&em)[0]["runId"],
            Digest::of(b"some noise").run_id(1).as_str()
        );
        // With no line at all, the input's name; a line still wins over it.
        let empty = |name: &str, line: Option<&[u8]>| {
            let mut em = Emitter::new(Format::Ndjson, None, None);
            em.name_input(name);
            if let Some(line) = line {
                em.note_line(line);
            }
            em.end_of_input(line.is_some());
            let start = &lines(&em)[0];
            (start["threadId"].clone(), start["runId"].clone())
        };
        let a = empty("a.jsonl", None);
        assert_eq!(a, empty("a.jsonl", None));
        assert_ne!(a, empty("b.jsonl", None));
        assert_ne!(a.1, "run-1");
        assert_eq!(
            empty("a.jsonl", Some(b"some noise")),
            empty("b.jsonl", Some(b"some noise"))
        );
    }

    #[test]
    fn terminal_waits_for_late_events_and_closes_everything() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.start_run(Some("t"), Some("r"));
        em.tool_start("c1", "Bash", None);
        em.reasoning_start("th");
        em.finish_run(None, None, &[]);
        em.raw(&RawValue::from_string("{\"late\":1}".into()).unwrap(), "x");
        em.end_of_input(true);
        assert_eq!(
            types(&em),
            [
                "RUN_STARTED",
                "TOOL_CALL_START",
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TOOL_CALL_END",
                "RAW",
                "RUN_FINISHED"
            ]
        );
    }

    #[test]
    fn one_terminal_per_run() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.start_run(None, None);
        em.fail_run("boom", code::API_ERROR, &[], None);
        em.finish_run(None, None, &[]);
        em.end_of_input(true);
        assert_eq!(types(&em), ["RUN_STARTED", "RUN_ERROR"]);
    }

    #[test]
    fn context_fields_and_sse_framing() {
        let mut em = Emitter::new(Format::Sse, Some("T".into()), Some("R".into()));
        em.set_timestamp(Some(5));
        em.start_run(Some("ignored"), None);
        em.set_subagent(Some("sub"));
        em.text_message("m", Role::User, "a\"b");
        let out = String::from_utf8(em.output().to_vec()).unwrap();
        assert_eq!(
            out,
            "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"T\",\"runId\":\"R\",\"timestamp\":5}\n\n\
             data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"user\",\"timestamp\":5,\"subagentRunId\":\"sub\"}\n\n\
             data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a\\\"b\",\"timestamp\":5,\"subagentRunId\":\"sub\"}\n\n\
             data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\",\"timestamp\":5,\"subagentRunId\":\"sub\"}\n\n"
        );
    }

    /// A streamed item goes on in the lane it was opened in: a CLI that
    /// names a subagent only from some line on (or a stream cut and joined)
    /// gives a call's first delta to the parent and the rest to the
    /// subagent; the check (and the official client) rejects a CONTENT or
    /// ARGS whose subagentRunId differs from its START's.
    #[test]
    fn an_item_goes_on_in_the_lane_it_was_opened_in() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.start_run(Some("t"), Some("r"));
        em.tool_start("call", "bash", None);
        em.text_start("text", Role::Assistant);
        em.reasoning_start("think");
        em.subagent_start("sub", "worker", None, Some("task"), None);
        em.set_subagent(Some("sub"));
        em.tool_args("call", "{}");
        em.text_content("text", "a");
        em.reasoning_content("think", "b");
        em.set_subagent(None);
        em.subagent_finish("sub", None);
        em.finish_run(None, None, &[]);
        em.end_of_input(true);
        for v in lines(&em) {
            if [
                "TOOL_CALL_ARGS",
                "TEXT_MESSAGE_CONTENT",
                "REASONING_MESSAGE_CONTENT",
            ]
            .contains(&v["type"].as_str().unwrap())
            {
                assert!(v.get("subagentRunId").is_none(), "{v}");
            }
        }
        crate::check::check_bytes(em.output()).unwrap();
    }

    #[test]
    fn each_agent_closes_only_its_own_items() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.start_run(Some("t"), Some("r"));
        em.subagent_start("sub", "worker", None, Some("call"), None);
        em.text_start("main-text", Role::Assistant);
        em.set_subagent(Some("sub"));
        em.text_start("sub-text", Role::Assistant);
        em.tool_start("sub-call", "Bash", None);
        // The subagent starts a call: only its own text ends.
        em.close_texts();
        em.set_subagent(None);
        em.subagent_finish("sub", None);
        em.text_content("main-text", "still open");
        em.finish_run(None, None, &[]);
        em.end_of_input(true);
        let got: Vec<String> = lines(&em)
            .iter()
            .map(|v| {
                format!(
                    "{} {} {}",
                    v["type"].as_str().unwrap(),
                    v["messageId"]
                        .as_str()
                        .or(v["toolCallId"].as_str())
                        .unwrap_or("-"),
                    v["subagentRunId"].as_str().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "RUN_STARTED - -",
                "SUBAGENT_STARTED - sub",
                "TEXT_MESSAGE_START main-text -",
                "TEXT_MESSAGE_START sub-text sub",
                "TOOL_CALL_START sub-call sub",
                "TEXT_MESSAGE_END sub-text sub",
                "TOOL_CALL_END sub-call sub",
                "SUBAGENT_FINISHED - sub",
                "TEXT_MESSAGE_CONTENT main-text -",
                "TEXT_MESSAGE_END main-text -",
                "RUN_FINISHED - -",
            ]
        );
    }

    #[test]
    fn an_input_without_a_run_still_gets_one() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.end_of_input(false);
        assert_eq!(types(&em), ["RUN_STARTED", "RUN_ERROR"]);
        assert_eq!(lines(&em)[1]["message"], "the input was empty");
        em.end_of_input(true);
        assert_eq!(
            types(&em),
            ["RUN_STARTED", "RUN_ERROR", "RUN_STARTED", "RUN_ERROR"]
        );
        assert_eq!(lines(&em)[3]["code"], "no_events");
    }

    #[test]
    fn the_version_reaches_the_writer() {
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.set_version(AguiVersion::V0_0);
        em.start_run(Some("t"), Some("r"));
        em.cancel_run();
        let end = &lines(&em)[1];
        assert_eq!(end["type"], "RUN_FINISHED");
        assert_eq!(end.get("outcome"), None);
        assert_eq!(end["metadata"]["outcome"]["type"], "cancelled");
    }
}
