//! The Agent Client Protocol (ACP): a transcript of one connection between
//! a client and an agent (`gemini --acp`, `opencode acp`, …).
//!
//! JSON-RPC 2.0, one message a line, both directions interleaved in the
//! order they happened (the client's requests and answers as well as the
//! agent's), with no wrapper:
//! ```text
//! {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"bc97…","prompt":[{"type":"text","text":"Say hello."}]}}
//! {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bc97…","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Héllo wörld "}}}}
//! {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bc97…","update":{"sessionUpdate":"tool_call","toolCallId":"read_file_1","status":"in_progress","title":"notes.txt","content":[],"kind":"read"}}}
//! {"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"bc97…","options":[{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},…],"toolCall":{"toolCallId":"run_shell_command_1","status":"pending","title":"echo hi","kind":"execute"}}}
//! {"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"proceed_once"}}}
//! {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":1000,"output_tokens":65}}}}}
//! ```
//! A `session/prompt` request starts a run (its thread the session) and its
//! answer ends it: `stopReason` in the result (`cancelled`: the run is
//! cancelled), a JSON-RPC error a RUN_ERROR. `session/update`s are the
//! run's content: message and thought chunks stream as deltas, tool calls
//! start, take their `rawInput` as arguments and end with their result when
//! their status is `completed` or `failed`, a `plan` is the plan view. A
//! permission request is a CUSTOM `approval_request` (its tool call started
//! first, when it is the first sight of it) and the client's answer an
//! `approval_response`. Setup (`initialize`, `session/new`), slash commands,
//! modes and anything unknown go out as RAW.
//!
//! Both sides number their requests from 0, so an answer's id may match a
//! request of each side: the latest one still unanswered is taken, except
//! that an answer with a `stopReason` belongs to the prompt.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{input_text, parse_record, raw_record, Held, Line, LineError, Translate};
use crate::agui::plan::{self, Shape};
use crate::agui::{
    code, tools, Content, Digest, Emitter, MetaField, MetaValue, Outcome, Role, Usage,
};
use crate::base::json::{self, text_of};

const SOURCE: &str = "acp";

/// A plan entry: `{content, priority, status}`.
const PLAN: Shape = Shape {
    text: "content",
    status: "status",
};

/// How many requests may wait for their answers at once; past this the
/// oldest is forgotten (a transcript whose answers never come).
const PENDING_LIMIT: usize = 64;

/// One JSON-RPC message.
#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The params of the methods translated: `session/prompt`,
/// `session/update`, `session/request_permission`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Params<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    prompt: Option<&'a RawValue>,
    #[serde(borrow)]
    update: Option<Update<'a>>,
    #[serde(borrow)]
    tool_call: Option<&'a RawValue>,
    #[serde(borrow)]
    options: Option<&'a RawValue>,
}

/// A session update, or a permission request's tool call (the fields of a
/// `tool_call` update).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Update<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    session_update: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    title: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    raw_input: Option<&'a RawValue>,
    #[serde(borrow)]
    raw_output: Option<&'a RawValue>,
    #[serde(borrow)]
    entries: Option<&'a RawValue>,
    #[serde(borrow)]
    used: Option<&'a RawValue>,
    #[serde(borrow)]
    size: Option<&'a RawValue>,
    #[serde(borrow)]
    cost: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
}

/// Qwen Code's `_meta` of the empty message chunk that closes each model
/// response: `{usage: {inputTokens, …}, durationMs}`.
#[derive(Deserialize)]
struct ChunkMeta {
    usage: Option<AcpUsage>,
}

/// A content block: `{type: "text", text}`, an image, a resource, …
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

/// An entry of a tool call's `content`: `{type: "content", content:
/// Block}`, `{type: "diff", …}` or `{type: "terminal", …}`.
#[derive(Deserialize)]
struct ToolContent<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Block<'a>>,
}

/// The answer to `session/prompt`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PromptResult<'a> {
    #[serde(borrow)]
    stop_reason: Option<&'a RawValue>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
}

/// The prompt's usage (ACP's `usage`).
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct AcpUsage {
    total_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    thought_tokens: Option<u64>,
    cached_read_tokens: Option<u64>,
    cached_write_tokens: Option<u64>,
}

/// Gemini CLI's `_meta.quota`: the turn's tokens, and per model.
#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow)]
    quota: Option<Quota<'a>>,
}

#[derive(Deserialize, Default)]
struct Quota<'a> {
    token_count: Option<TokenCount>,
    #[serde(borrow, default)]
    model_usage: Vec<ModelUsage<'a>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct TokenCount {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ModelUsage<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    model: Option<Cow<'a, str>>,
    token_count: Option<TokenCount>,
}

/// A JSON-RPC error.
#[derive(Deserialize)]
struct RpcError<'a> {
    code: Option<i64>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<RpcErrorData<'a>>,
}

/// The `data` of an error: OpenCode's `{service, errorName}`, Qwen Code's
/// `{details}` (an API error's status and text: "500 The server had …").
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RpcErrorData<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    error_name: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    details: Option<Cow<'a, str>>,
}

/// An API error passed on as the message's text (Gemini CLI's):
/// `{"error":{"code":500,"message":"…","status":"INTERNAL"}}`.
#[derive(Deserialize)]
struct ApiError<'a> {
    #[serde(borrow)]
    error: ApiErrorBody<'a>,
}

#[derive(Deserialize)]
struct ApiErrorBody<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
}

/// A permission answer: `{outcome: {outcome: "selected", optionId}}` or
/// `{outcome: {outcome: "cancelled"}}`.
#[derive(Deserialize)]
struct PermissionResult<'a> {
    #[serde(borrow)]
    outcome: Option<PermissionOutcome<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionOutcome<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    outcome: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    option_id: Option<Cow<'a, str>>,
}

/// A permission option: `{optionId, name, kind}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionOption<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    option_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
}

/// What a request is, for its answer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Asked {
    Prompt,
    Permission,
    NewSession,
    Initialize,
    Other,
}

/// A request waiting for its answer.
#[derive(Clone)]
struct Pending {
    /// Its id, as JSON.
    id: String,
    asked: Asked,
    /// A permission request's tool call and options (JSON).
    tool_call_id: String,
    options: String,
}

#[derive(Default, Clone)]
pub struct Acp {
    /// The session of the last run (or of `session/new`'s answer).
    session: Held,
    pending: Vec<Pending>,
    /// The open message (and whether it is the user's), and the open
    /// reasoning.
    text: Held,
    user_text: bool,
    reasoning: Held,
    /// The last assistant message: the parent of the tool calls after it.
    parent: Held,
    /// Ids made up for messages without one: how many so far.
    made: u64,
    id: String,
    /// The last `usage_update`: `used` and `size` of the context window,
    /// and `cost` (JSON).
    context: Option<(Option<u64>, Option<u64>)>,
    cost: String,
    /// Whether the open run is a loaded session's history (started by an
    /// update outside a prompt): the next prompt finishes it.
    history: bool,
    /// The last `session/load` request's digest, until a history starts:
    /// the history's run id is derived from it (the session loaded and its
    /// directory), not from the connection's first lines, alike in every
    /// connection.
    loaded: Option<Digest>,
    /// The model responses' usage of the turn so far, from the chunks'
    /// `_meta` (Qwen Code's), for a prompt answer without `usage`.
    responses: Option<AcpUsage>,
    /// Whether the agent is OpenCode (its `initialize` answer's
    /// `agentInfo.name`): its first `tool_call` of a call is titled by the
    /// tool's name.
    opencode: bool,
    /// A tool result's text, when it is made of several parts.
    joined: String,
    scratch: Option<Vec<u8>>,
}

impl Translate for Acp {
    fn line(&mut self, line: &mut [u8], em: &mut Emitter) -> Result<(), LineError> {
        let mut scratch = self.scratch.take();
        let mut msg = Message::default();
        let result = match parse_record(line, &mut scratch, &mut msg) {
            Ok(line) => self.message(&msg, line, em),
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

impl Acp {
    fn message(
        &mut self,
        msg: &Message,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        em.set_timestamp(None);
        let empty = Params::default();
        let params = msg.params.as_ref().unwrap_or(&empty);
        match (msg.method.as_deref(), msg.id) {
            (Some(method), Some(id)) => self.request(method, id, params, line, em),
            (Some(method), None) => self.notification(method, params, line, em),
            (None, Some(id)) if msg.result.is_some() || msg.error.is_some() => {
                self.response(id, msg.result, msg.error, line, em);
                Ok(())
            }
            _ => Err(LineError::Shape(
                "neither a request, a notification nor a response".into(),
            )),
        }
    }

    /// A request of either side.
    fn request(
        &mut self,
        method: &str,
        id: &RawValue,
        params: &Params,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let asked = match method {
            "session/prompt" => Asked::Prompt,
            "session/request_permission" => Asked::Permission,
            "session/new" => Asked::NewSession,
            "initialize" => Asked::Initialize,
            _ => Asked::Other,
        };
        if self.pending.len() >= PENDING_LIMIT {
            self.pending.remove(0);
        }
        self.pending.push(Pending {
            id: id.get().to_owned(),
            asked,
            tool_call_id: String::new(),
            options: String::new(),
        });
        if method == "session/load" {
            self.loaded = Some(Digest::of(&line));
        }
        match asked {
            Asked::Prompt => self.prompt(params, line, em),
            Asked::Permission => self.permission(id, params, line, em)?,
            Asked::NewSession | Asked::Initialize | Asked::Other => raw(em, line),
        }
        Ok(())
    }

    /// `session/prompt`: a run starts, with the prompt as the user's message.
    fn prompt(&mut self, params: &Params, line: Line<'_>, em: &mut Emitter) {
        if let Some(s) = params.session_id.as_deref() {
            self.session.set(s);
        }
        if std::mem::take(&mut self.history) && em.in_run() {
            // The history `session/load` streamed back ends where the next
            // prompt begins (Gemini CLI streams part of it after its answer).
            self.end_text(em);
            self.end_reasoning(em);
            em.finish_run(None, None, &[]);
        }
        // The prompt's record names the run: the session and the prompt
        // (the transcript's first lines are alike in every connection).
        let run = Digest::of(&line).run_id(1);
        em.start_run(self.session.get(), Some(run.as_str()));
        self.text.clear();
        self.reasoning.clear();
        self.parent.clear();
        self.context = None;
        self.cost.clear();
        self.responses = None;
        let blocks: Vec<Block> = params
            .prompt
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let mut text = String::new();
        let mut other = false;
        for b in &blocks {
            match (b.kind.as_deref(), b.text) {
                (Some("text"), Some(t)) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&text_of(t));
                }
                _ => other = true,
            }
        }
        if em.user_messages() && !text.is_empty() {
            self.id.clear();
            self.id.push_str(em.run_id());
            self.id.push_str("-user");
            em.text_message(&self.id, Role::User, &text);
        }
        if other || !em.user_messages() || text.is_empty() {
            // Images and resources (and the prompt, with
            // `--no-user-messages`) stay in RAW.
            raw(em, line);
        }
    }

    fn notification(
        &mut self,
        method: &str,
        params: &Params,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        match (method, &params.update) {
            ("session/update", Some(u)) => self.update(u, params, line, em),
            ("session/cancel", _) => {
                raw(em, line);
                Ok(())
            }
            (m, _) => {
                em.unknown(format!("notification {m:?}"));
                raw(em, line);
                Ok(())
            }
        }
    }

    /// A `session/update`.
    fn update(
        &mut self,
        u: &Update,
        params: &Params,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let kind = u.session_update.as_deref().unwrap_or("");
        let translated = matches!(
            kind,
            "agent_message_chunk"
                | "user_message_chunk"
                | "agent_thought_chunk"
                | "tool_call"
                | "tool_call_update"
                | "plan"
        );
        if translated && !em.in_run() {
            // Outside a prompt (a loaded session's history): a run of its own.
            if let Some(s) = params.session_id.as_deref() {
                self.session.set(s);
            }
            // Numbered as the run it is on this output: two connections
            // that load the same session (their `session/load` lines alike)
            // do not share a history's run id.
            let n = em.run_number() + 1;
            let run = self.loaded.take().map(|d| d.run_id(n));
            em.start_run(self.session.get(), run.as_ref().map(|r| r.as_str()));
            self.history = true;
        }
        match kind {
            "agent_message_chunk" | "user_message_chunk" => {
                let user = kind == "user_message_chunk";
                if !self.chunk(u, user, em) {
                    raw(em, line);
                }
            }
            "agent_thought_chunk" => {
                if !self.thought(u, em) {
                    raw(em, line);
                }
            }
            "tool_call" | "tool_call_update" => {
                if !self.tool(u, em)? {
                    raw(em, line);
                }
            }
            "plan" => {
                let id = plan::id(em, None);
                plan::snapshot(em, &id, u.entries, PLAN, &[]);
            }
            "usage_update" => {
                self.context = Some((json::u64_of(u.used), json::u64_of(u.size)));
                self.cost.clear();
                if let Some(c) = u.cost {
                    self.cost.push_str(c.get());
                }
                raw(em, line);
            }
            "available_commands_update"
            | "current_mode_update"
            | "config_option_update"
            | "session_info_update" => raw(em, line),
            other => {
                em.unknown(format!("session update {other:?}"));
                raw(em, line);
            }
        }
        Ok(())
    }

    /// A message chunk; false if it is not text (it goes out as RAW).
    fn chunk(&mut self, u: &Update, user: bool, em: &mut Emitter) -> bool {
        let Some(block) = u
            .content
            .and_then(|c| serde_json::from_str::<Block>(c.get()).ok())
        else {
            return false;
        };
        let (Some("text"), Some(text)) = (block.kind.as_deref(), block.text) else {
            return false;
        };
        if user && !em.user_messages() {
            return false;
        }
        if !user && text.get() == "\"\"" {
            // Empty: no message of its own (Qwen Code's carries the model
            // response's usage in `_meta`, kept for the run's end).
            self.add_usage(u.meta);
            return false;
        }
        self.end_reasoning(em);
        let given = self.message_id(em, u);
        let same = self.text.is_set()
            && self.user_text == user
            && given.as_deref().is_none_or(|m| self.text.get() == Some(m));
        if !same {
            self.end_text(em);
            self.made_id(em, given.as_deref(), if user { "user" } else { "msg" });
            em.text_start(&self.id, if user { Role::User } else { Role::Assistant });
            self.text.set(&self.id);
            self.user_text = user;
            if !user {
                self.parent.set(&self.id);
            }
        }
        let mut decoded = None;
        let delta = input_text(text, &mut decoded);
        if !delta.is_empty() {
            em.text_content_text(self.text.get().unwrap_or_default(), delta);
        }
        true
    }

    /// A thought chunk; false if it is not text.
    fn thought(&mut self, u: &Update, em: &mut Emitter) -> bool {
        let Some(block) = u
            .content
            .and_then(|c| serde_json::from_str::<Block>(c.get()).ok())
        else {
            return false;
        };
        let (Some("text"), Some(text)) = (block.kind.as_deref(), block.text) else {
            return false;
        };
        self.end_text(em);
        if !self.reasoning.is_set() {
            let given = self.message_id(em, u);
            self.made_id(em, given.as_deref(), "reasoning");
            em.reasoning_start(&self.id);
            self.reasoning.set(&self.id);
        }
        let mut decoded = None;
        let delta = input_text(text, &mut decoded);
        if !delta.is_empty() {
            em.reasoning_content_text(self.reasoning.get().unwrap_or_default(), delta);
        }
        true
    }

    /// Adds a chunk's `_meta.usage` to the turn's.
    fn add_usage(&mut self, meta: Option<&RawValue>) {
        let Some(u) = meta
            .and_then(|m| serde_json::from_str::<ChunkMeta>(m.get()).ok())
            .and_then(|m| m.usage)
        else {
            return;
        };
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        let t = self.responses.unwrap_or_default();
        self.responses = Some(AcpUsage {
            total_tokens: add(t.total_tokens, u.total_tokens),
            input_tokens: add(t.input_tokens, u.input_tokens),
            output_tokens: add(t.output_tokens, u.output_tokens),
            thought_tokens: add(t.thought_tokens, u.thought_tokens),
            cached_read_tokens: add(t.cached_read_tokens, u.cached_read_tokens),
            cached_write_tokens: add(t.cached_write_tokens, u.cached_write_tokens),
        });
    }

    /// A chunk's `messageId`; in a loaded session's history, prefixed with
    /// the history's run: the history repeats the ids of the messages a
    /// front end already holds from the runs that made them (OpenCode's).
    fn message_id<'u>(&self, em: &Emitter, u: &'u Update) -> Option<Cow<'u, str>> {
        let m = u.message_id.as_deref()?;
        Some(if self.history {
            Cow::Owned(format!("{}-{m}", em.run_id()))
        } else {
            Cow::Borrowed(m)
        })
    }

    /// The input's message id, or one made up (`RUN-WHAT-N`), into `id`.
    fn made_id(&mut self, em: &Emitter, given: Option<&str>, what: &str) {
        use std::fmt::Write as _;
        self.id.clear();
        match given {
            Some(m) => self.id.push_str(m),
            None => {
                self.made += 1;
                let _ = write!(self.id, "{}-{what}-{}", em.run_id(), self.made);
            }
        }
    }

    fn end_text(&mut self, em: &mut Emitter) {
        if let Some(id) = self.text.take() {
            em.text_end(id);
        }
    }

    fn end_reasoning(&mut self, em: &mut Emitter) {
        if let Some(id) = self.reasoning.take() {
            em.reasoning_end(id);
        }
    }

    /// A tool call is first seen: it starts, named by the tool's own name
    /// where the agent tells it ([`Self::tool_name`]), else by its kind (a
    /// title like `Set 2 todo(s)` is no name); a call of kind `other` whose
    /// title is the name of a tool the tables know is named by its title.
    fn start_tool(&mut self, id: &str, u: &Update, em: &mut Emitter) {
        self.end_text(em);
        self.end_reasoning(em);
        if em.tool_started(id) {
            return;
        }
        let kind = u.kind.as_deref().unwrap_or("other");
        // The page's tools by the page's own name first (CopilotKit finds
        // the handler by it), then the tool's own name where the agent tells
        // it.
        let own = self.tool_name(id, u);
        let page = page_tool(kind, u.title.as_deref(), own.as_deref(), em);
        let own = own.filter(|_| page.is_none());
        let name = match (page.as_deref(), own.as_deref(), u.title.as_deref()) {
            (Some(p), _, _) => p,
            (None, Some(n), _) => n,
            // OpenCode's `todowrite` (without its `initialize`): a tool the
            // tables know, of kind other.
            (None, None, Some(t)) if kind == "other" && tools::canonical(t).name != t => t,
            _ => kind,
        };
        let meta = [
            ("title", u.title.as_deref().map(MetaValue::Str)),
            ("kind", u.kind.as_deref().map(MetaValue::Str)),
        ];
        em.tool_start_with(id, name, self.parent.get(), &meta);
    }

    /// The tool's own name, the one the agent's JSON mode gives it, where
    /// its ACP call tells it: Qwen Code's `_meta.toolName`; Gemini CLI's call
    /// id, `NAME__NAME_<ms>_<n>`; OpenCode's first `tool_call`, pending and
    /// titled by the tool's name (`write`, `todowrite`, `page_pick`) except
    /// that a command's title is the command once it is known (its tools of
    /// kind `execute` are `bash` and `shell`).
    fn tool_name<'u>(&self, id: &'u str, u: &'u Update) -> Option<Cow<'u, str>> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct ToolMeta<'a> {
            #[serde(borrow, default, deserialize_with = "json::opt_str")]
            tool_name: Option<Cow<'a, str>>,
        }
        let meta = u
            .meta
            .and_then(|m| serde_json::from_str::<ToolMeta>(m.get()).ok())
            .and_then(|m| m.tool_name)
            .filter(|n| is_tool_name(n));
        if meta.is_some() {
            return meta;
        }
        if let Some(n) = gemini_call_name(id) {
            return Some(Cow::Borrowed(n));
        }
        let first = u.session_update.as_deref() == Some("tool_call")
            && u.status.as_deref() == Some("pending");
        if !self.opencode || !first {
            return None;
        }
        match (u.kind.as_deref(), u.title.as_deref()) {
            (Some("execute"), Some("shell")) => Some(Cow::Borrowed("shell")),
            (Some("execute"), _) => Some(Cow::Borrowed("bash")),
            (_, Some(t)) if is_tool_name(t) => Some(Cow::Borrowed(t)),
            _ => None,
        }
    }

    /// Whether `u` first shows a call of Qwen Code's `tool_call` bridge
    /// (pending, with no input yet), which does not say which tool it calls
    /// until its permission request or its next update (`_meta.toolName`,
    /// such as the page's `mcp__page__pick`): it starts then, named by it.
    fn bridge_unnamed(&self, id: &str, u: &Update) -> bool {
        u.status.as_deref() == Some("pending")
            && u.raw_input.is_none_or(|r| r.get().trim() == "{}")
            && self.tool_name(id, u).as_deref() == Some("tool_call")
    }

    /// Its arguments (`rawInput`, or none) and its end, if it is still open.
    fn end_tool(id: &str, raw_input: Option<&RawValue>, em: &mut Emitter) {
        if em.is_open(id) {
            em.tool_args_given(id, raw_input);
            em.tool_end(id);
        }
    }

    /// `tool_call` or `tool_call_update`; false if it made no event (an
    /// update of a call already under way that does not end it, such as
    /// Copilot CLI's output so far: it goes out as RAW).
    fn tool(&mut self, u: &Update, em: &mut Emitter) -> Result<bool, LineError> {
        let Some(id) = u.tool_call_id.as_deref() else {
            return Err(LineError::Shape("a tool call without toolCallId".into()));
        };
        if !em.tool_started(id) && self.bridge_unnamed(id, u) {
            // Named once it says which tool it calls: not started yet.
            return Ok(false);
        }
        let mut made = !em.tool_started(id);
        self.start_tool(id, u, em);
        if let Some(input) = em.early_own_input(id) {
            Self::end_tool(id, input.as_deref(), em);
            made = true;
        }
        // A pending call's `rawInput` may be partial (OpenCode's holds the
        // working folder only): the arguments are those it runs with.
        let status = u.status.as_deref();
        if status.is_some_and(|s| s != "pending") && em.is_open(id) {
            Self::end_tool(id, u.raw_input, em);
            made = true;
        }
        if matches!(status, Some("completed" | "failed")) {
            self.tool_result(id, u, em);
            made = true;
        }
        Ok(made)
    }

    /// A tool call's result: the text of its content, else its
    /// `rawOutput`; a failed call's is an error.
    fn tool_result(&mut self, id: &str, u: &Update, em: &mut Emitter) {
        let failed = u.status.as_deref() == Some("failed");
        let parts: Vec<ToolContent> = u
            .content
            .and_then(|c| serde_json::from_str(c.get()).ok())
            .unwrap_or_default();
        let texts: Vec<&RawValue> = parts
            .iter()
            .filter_map(|p| match (&p.kind.as_deref(), &p.content) {
                (
                    Some("content"),
                    Some(Block {
                        kind,
                        text: Some(t),
                    }),
                ) if kind.as_deref() == Some("text") => Some(*t),
                _ => None,
            })
            .collect();
        // Diffs, terminals and blocks that are not text are kept beside.
        let other = texts.len() < parts.len();
        let decoded;
        let content = match (texts.as_slice(), u.raw_output) {
            ([t], _) if json::literal(t).is_some() => Content::Parts(t),
            ([], Some(out)) if json::literal(out).is_some() => Content::Parts(out),
            ([], Some(out)) => {
                decoded = out.get().to_owned();
                Content::Text(&decoded)
            }
            (ts, _) => {
                self.joined.clear();
                for t in ts {
                    if !self.joined.is_empty() {
                        self.joined.push('\n');
                    }
                    self.joined.push_str(&text_of(t));
                }
                Content::Text(&self.joined)
            }
        };
        let meta = [
            ("isError", failed.then_some(MetaValue::Bool(true))),
            ("title", u.title.as_deref().map(MetaValue::Str)),
            ("rawOutput", u.raw_output.map(MetaValue::Json)),
            ("content", u.content.filter(|_| other).map(MetaValue::Json)),
        ];
        em.tool_result(id, content, &meta);
    }

    /// `session/request_permission`: the tool call it asks about (started
    /// here if this is the first sight of it), then CUSTOM
    /// `approval_request`.
    fn permission(
        &mut self,
        id: &RawValue,
        params: &Params,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let call: Option<Update> = params
            .tool_call
            .and_then(|t| serde_json::from_str(t.get()).ok());
        let call_id = call.as_ref().and_then(|c| c.tool_call_id.as_deref());
        if !em.in_run() {
            em.start_run(params.session_id.as_deref().or(self.session.get()), None);
        }
        let mut page = false;
        if let (Some(c), Some(tid)) = (&call, call_id) {
            self.start_tool(tid, c, em);
            if let Some(input) = em.early_own_input(tid) {
                Self::end_tool(tid, input.as_deref(), em);
            }
            // A call of the page's tools (or the state's) is the page's to
            // decide, not the user's (the run grants it): no
            // approval_request. Without its input (Gemini CLI's), it is
            // ended with the input it reaches the page's server with.
            page = em.page_calls().any(|(p, _)| p == tid) || em.is_own_call(tid);
            if c.raw_input.is_some() || !page {
                Self::end_tool(tid, c.raw_input, em);
            }
        }
        if let Some(p) = self.pending.last_mut() {
            p.tool_call_id.push_str(call_id.unwrap_or_default());
            p.options.push_str(params.options.map_or("[]", |o| o.get()));
        }
        let fields = [
            ("requestId", Some(MetaValue::Json(id))),
            ("toolCallId", call_id.map(MetaValue::Str)),
            ("toolCall", params.tool_call.map(MetaValue::Json)),
            ("options", params.options.map(MetaValue::Json)),
        ];
        if em.in_run() && !page {
            em.custom("approval_request", MetaValue::Object(&fields));
        } else {
            raw(em, line);
        }
        Ok(())
    }

    /// The request an answer with id `id` belongs to: the latest unanswered
    /// one with that id (an answer with a `stopReason` belongs to a
    /// prompt).
    fn answered(&mut self, id: &RawValue, result: Option<&RawValue>) -> Option<Pending> {
        let stop = result.is_some_and(|r| {
            serde_json::from_str::<PromptResult>(r.get()).is_ok_and(|p| p.stop_reason.is_some())
        });
        let i = self
            .pending
            .iter()
            .rposition(|p| p.id == id.get() && (!stop || p.asked == Asked::Prompt))
            .or_else(|| self.pending.iter().rposition(|p| p.id == id.get()))?;
        Some(self.pending.remove(i))
    }

    fn response(
        &mut self,
        id: &RawValue,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
        line: Line<'_>,
        em: &mut Emitter,
    ) {
        let Some(asked) = self.answered(id, result) else {
            em.unknown("an answer to no request");
            raw(em, line);
            return;
        };
        match asked.asked {
            Asked::Prompt => self.prompt_answer(result, error, em),
            Asked::Permission => self.permission_answer(id, &asked, result, error, line, em),
            Asked::NewSession => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct NewSession<'a> {
                    #[serde(borrow, default, deserialize_with = "json::opt_str")]
                    session_id: Option<Cow<'a, str>>,
                }
                if let Some(s) = result
                    .and_then(|r| serde_json::from_str::<NewSession>(r.get()).ok())
                    .and_then(|n| n.session_id)
                {
                    self.session.set(&s);
                }
                raw(em, line);
            }
            Asked::Initialize => {
                self.opencode = agent_name(result).as_deref() == Some("OpenCode");
                raw(em, line);
            }
            Asked::Other => raw(em, line),
        }
    }

    /// The client's answer to a permission request: CUSTOM
    /// `approval_response` with the option chosen and its kind.
    fn permission_answer(
        &mut self,
        id: &RawValue,
        asked: &Pending,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
        line: Line<'_>,
        em: &mut Emitter,
    ) {
        let outcome = result
            .and_then(|r| serde_json::from_str::<PermissionResult>(r.get()).ok())
            .and_then(|r| r.outcome);
        let outcome_word = outcome.as_ref().and_then(|o| o.outcome.as_deref());
        let option = outcome.as_ref().and_then(|o| o.option_id.as_deref());
        let options: Vec<PermissionOption> =
            serde_json::from_str(&asked.options).unwrap_or_default();
        let kind = option.and_then(|chosen| {
            options
                .iter()
                .find(|o| o.option_id.as_deref() == Some(chosen))
                .and_then(|o| o.kind.as_deref())
        });
        let approved = kind.map(|k| k.starts_with("allow"));
        let fields: [MetaField; 7] = [
            ("requestId", Some(MetaValue::Json(id))),
            (
                "toolCallId",
                Some(asked.tool_call_id.as_str())
                    .filter(|t| !t.is_empty())
                    .map(MetaValue::Str),
            ),
            ("outcome", outcome_word.map(MetaValue::Str)),
            ("optionId", option.map(MetaValue::Str)),
            ("kind", kind.map(MetaValue::Str)),
            ("approved", approved.map(MetaValue::Bool)),
            ("error", error.map(MetaValue::Json)),
        ];
        if em.in_run() {
            em.custom("approval_response", MetaValue::Object(&fields));
        } else {
            raw(em, line);
        }
    }

    /// The answer to `session/prompt`: the run ends.
    fn prompt_answer(
        &mut self,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
        em: &mut Emitter,
    ) {
        self.end_text(em);
        self.end_reasoning(em);
        if let Some(e) = error {
            let (message, code) = failure(e);
            em.fail_run(&message, code, &[], &[("error", Some(MetaValue::Json(e)))]);
            return;
        }
        let r: PromptResult = result
            .and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or_default();
        let usage = usage(&r, self.responses.take());
        let stop = r.stop_reason.map(text_of);
        let outcome = (stop.as_deref() == Some("cancelled")).then_some(Outcome::Cancelled);
        let cost: Option<&RawValue> = serde_json::from_str(&self.cost).ok();
        let context = self.context.map(|(used, size)| {
            [
                (
                    "used",
                    used.map(|n| MetaValue::Int(i64::try_from(n).unwrap_or(i64::MAX))),
                ),
                (
                    "size",
                    size.map(|n| MetaValue::Int(i64::try_from(n).unwrap_or(i64::MAX))),
                ),
                ("cost", cost.map(MetaValue::Json)),
            ]
        });
        let fields = [
            ("sessionId", self.session.get().map(MetaValue::Str)),
            ("stopReason", r.stop_reason.map(MetaValue::Json)),
            ("usage", r.usage.map(MetaValue::Json)),
            ("_meta", r.meta.map(MetaValue::Json)),
            ("context", context.as_ref().map(|c| MetaValue::Object(c))),
        ];
        em.finish_run(Some(MetaValue::Object(&fields)), outcome, &usage);
    }
}

/// A prompt's JSON-RPC error: its message (an API error's own message when
/// the text is one, as Gemini CLI passes them on; the `data.details` of a
/// bare "Internal error", as Qwen Code's) and the AG-UI code: a code that is
/// an HTTP status (Gemini CLI), an `APIError` (OpenCode's `data.errorName`)
/// or details that begin with one (Qwen Code's) is the model API's.
fn failure(e: &RawValue) -> (String, &'static str) {
    let err = serde_json::from_str::<RpcError>(e.get()).ok();
    let details = err
        .as_ref()
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d.details.as_deref())
        .filter(|d| !d.is_empty());
    // "500 The server had an error …": the HTTP status it begins with.
    let status = details
        .and_then(|d| d.split_once(' '))
        .and_then(|(n, _)| n.parse::<i64>().ok())
        .filter(|n| (400..=599).contains(n));
    let rpc_code = status.or(err.as_ref().and_then(|e| e.code));
    let text = err
        .as_ref()
        .and_then(|e| e.message.as_deref())
        .unwrap_or("");
    let text = match details {
        Some(d) if text.is_empty() || text == "Internal error" => d,
        _ => text,
    };
    let api = serde_json::from_str::<ApiError>(text)
        .ok()
        .and_then(|a| a.error.message.map(Cow::into_owned));
    let message = match (api, rpc_code) {
        (Some(m), _) if !m.is_empty() => m,
        (_, _) if !text.is_empty() => text.to_owned(),
        (_, Some(c)) => format!("the agent answered the prompt with error {c}"),
        (_, None) => "the agent answered the prompt with an error".to_owned(),
    };
    let name = err
        .as_ref()
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d.error_name.as_deref());
    let code = match (rpc_code, name) {
        (Some(401 | 403), _) | (_, Some("ProviderAuthError")) => code::AUTH_ERROR,
        (Some(400..=599), _) | (_, Some("APIError")) => code::API_ERROR,
        _ => code::CLI_ERROR,
    };
    (message, code)
}

/// The prompt's usage: ACP's `usage`, else Gemini CLI's `_meta.quota`
/// (per model where it says), else the sum of the model responses' usage
/// the chunks carried (`responses`, Qwen Code's).
fn usage<'a>(r: &PromptResult<'a>, responses: Option<AcpUsage>) -> Vec<Usage<'a>> {
    let given = r
        .usage
        .and_then(|u| serde_json::from_str::<AcpUsage>(u.get()).ok());
    let quota = r
        .meta
        .and_then(|m| serde_json::from_str::<Meta>(m.get()).ok())
        .and_then(|m| m.quota);
    if let Some(u) = given.or(responses.filter(|_| quota.is_none())) {
        // Cached tokens are parts of the input total. OpenCode's
        // `inputTokens` leaves them out (its total adds them); Copilot CLI's
        // and Qwen Code's hold them (input and output make the total).
        let holds_cached = matches!(
            (u.input_tokens, u.output_tokens, u.total_tokens),
            (Some(i), Some(o), Some(t)) if i.saturating_add(o) == t
        );
        let input = u.input_tokens.map(|i| {
            if holds_cached {
                i
            } else {
                i + u.cached_read_tokens.unwrap_or(0) + u.cached_write_tokens.unwrap_or(0)
            }
        });
        return vec![Usage {
            input_tokens: input,
            output_tokens: u.output_tokens,
            total_tokens: u.total_tokens,
            reasoning_tokens: u.thought_tokens,
            cached_input_tokens: u.cached_read_tokens,
            cache_write_input_tokens: u.cached_write_tokens,
            ..Usage::default()
        }];
    }
    let Some(quota) = quota else {
        return Vec::new();
    };
    let entry = |model: Option<Cow<'a, str>>, t: TokenCount| Usage {
        model,
        input_tokens: t.input_tokens,
        output_tokens: t.output_tokens,
        total_tokens: t.input_tokens.zip(t.output_tokens).map(|(i, o)| i + o),
        ..Usage::default()
    };
    let mut per_model: Vec<Usage> = quota
        .model_usage
        .into_iter()
        .filter_map(|m| Some(entry(m.model, m.token_count?)))
        .collect();
    if per_model.is_empty() {
        return quota
            .token_count
            .map(|t| entry(None, t))
            .into_iter()
            .collect();
    }
    Usage::by_model(&mut per_model);
    per_model
}

/// Keep a record that parsed as RAW, copied as it is.
/// Whether `name` may be a tool's name: 1 to 64 letters, digits, `_`, `-`
/// (not a title such as `notes.txt` or `2 todos`).
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The tool's name in a Gemini CLI call id, `NAME__NAME_<ms>_<n>`
/// (`run_shell_command__run_shell_command_1795833764525_0`), the id its
/// stream-json mode gives the same call.
fn gemini_call_name(id: &str) -> Option<&str> {
    fn number(s: &str) -> Option<&str> {
        let (rest, digits) = s.rsplit_once('_')?;
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
    }
    let doubled = number(number(id)?)?;
    let half = doubled.len().checked_sub(2)? / 2;
    let (name, rest) = (doubled.get(..half)?, doubled.get(half..)?);
    (doubled.len() % 2 == 0 && rest.strip_prefix("__") == Some(name) && is_tool_name(name))
        .then_some(name)
}

/// The `agentInfo.name` of an `initialize` answer.
fn agent_name(result: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Init<'a> {
        #[serde(borrow)]
        agent_info: Option<Info<'a>>,
    }
    #[derive(Deserialize)]
    struct Info<'a> {
        #[serde(borrow, default, deserialize_with = "json::opt_str")]
        name: Option<Cow<'a, str>>,
    }
    let init: Init = serde_json::from_str(result?.get()).ok()?;
    init.agent_info?.name.map(Cow::into_owned)
}

fn raw(em: &mut Emitter, line: Line<'_>) {
    raw_record(em, line, SOURCE);
}

/// The name the CLI gives a call, when it is one of the tools the page's
/// route serves ([`Emitter::is_served_tool`]: the page's, and the
/// state's): the tool's `own` name (Qwen Code's `_meta.toolName`,
/// `mcp__page__pick`), or its title (Copilot CLI's `page-pick`, OpenCode's
/// `page_pick`), of whatever kind the agent guessed (Copilot CLI calls
/// `page-ag_ui_update_state` an `edit`), or for Gemini CLI's title of an
/// MCP server's tool of kind `other`, `pick (page MCP Server)`, the name
/// its model calls it by, `mcp_page_pick`. An agent of `run acp`, whose
/// names are not known (the page's tools known by their own names), is
/// read the same ways: a name with one of those prefixes, or a title in
/// that form, names the page's tool.
fn page_tool(kind: &str, title: Option<&str>, own: Option<&str>, em: &Emitter) -> Option<String> {
    if !em.has_page_tools() {
        return None;
    }
    for name in [own, title].into_iter().flatten() {
        let bare = ["mcp__page__", "mcp_page_", "page-", "page_"]
            .iter()
            .find_map(|p| name.strip_prefix(p));
        if let Some(n) = [Some(name), bare]
            .into_iter()
            .flatten()
            .find(|n| em.is_served_tool(n))
        {
            return Some(n.to_owned());
        }
    }
    if kind != "other" {
        return None;
    }
    let (tool, server) = title?.strip_suffix(" MCP Server)")?.split_once(" (")?;
    let name = format!("mcp_{server}_{tool}");
    if em.is_served_tool(&name) {
        return Some(name);
    }
    (server == "page" && em.is_served_tool(tool)).then(|| tool.to_owned())
}

#[cfg(test)]
mod tests {
    fn translate(lines: &[&str]) -> Vec<serde_json::Value> {
        let input = lines.join("\n");
        let out = crate::run::translate_bytes(
            crate::dialect::FromCli::named("acp").unwrap(),
            input.as_bytes(),
        );
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn update(u: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"S","update":{u}}}}}"#
        )
    }

    const PROMPT: &str = r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"hi"}]}}"#;

    fn of_type<'v>(out: &'v [serde_json::Value], t: &str) -> Vec<&'v serde_json::Value> {
        out.iter().filter(|e| e["type"] == t).collect()
    }

    /// Both sides number their requests from 0: the client's answer to the
    /// agent's permission request 2 is not taken for the prompt's answer
    /// (the prompt is id 2 too), and the prompt's answer ends the run.
    #[test]
    fn answers_go_to_the_request_of_their_side() {
        let ask = r#"{"jsonrpc":"2.0","id":2,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":"t1","title":"ls","kind":"execute","rawInput":{"command":"ls"}},"options":[{"optionId":"yes","kind":"allow_once","name":"Allow"},{"optionId":"no","kind":"reject_once","name":"Reject"}]}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"selected","optionId":"no"}}}"#;
        let done = r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#;
        let out = translate(&[PROMPT, ask, answer, done]);
        let custom = of_type(&out, "CUSTOM");
        assert_eq!(custom[0]["name"], "approval_request");
        assert_eq!(custom[0]["value"]["toolCallId"], "t1");
        assert_eq!(custom[1]["name"], "approval_response");
        assert_eq!(custom[1]["value"]["kind"], "reject_once");
        assert_eq!(custom[1]["value"]["approved"], false);
        let start = of_type(&out, "TOOL_CALL_START");
        assert_eq!(start[0]["toolCallName"], "execute");
        assert_eq!(
            of_type(&out, "TOOL_CALL_ARGS")[0]["delta"],
            r#"{"command":"ls"}"#
        );
        let end = out.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED");
        assert_eq!(end["threadId"], "S");
        assert_eq!(end["result"]["stopReason"], "end_turn");
    }

    /// Qwen Code's `tool_call` bridge shows its call pending with no input
    /// before it says which tool it calls: the call starts once its
    /// permission request names it (`_meta.toolName`), not as `tool_call`;
    /// a bridge call refused before it names any tool is still shown.
    #[test]
    fn a_bridge_call_starts_once_it_names_its_tool() {
        let bridge = |id: &str| {
            update(&format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"{id}","status":"pending","title":"ToolCall","kind":"other","rawInput":{{}},"_meta":{{"toolName":"tool_call"}}}}"#
            ))
        };
        let ask = r#"{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":"b1","status":"pending","title":"{\"branches\":[\"main\"]}","kind":"read","rawInput":{"branches":["main"]},"_meta":{"toolName":"mcp__page__pick"}},"options":[{"optionId":"proceed_once","kind":"allow_once","name":"Allow"}]}}"#;
        let refused = update(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"b2","status":"failed","content":[{"type":"content","content":{"type":"text","text":"not registered"}}],"_meta":{"toolName":"tool_call"}}"#,
        );
        let out = translate(&[PROMPT, &bridge("b1"), ask, &bridge("b2"), &refused]);
        let starts: Vec<(&str, &str)> = of_type(&out, "TOOL_CALL_START")
            .iter()
            .map(|s| {
                (
                    s["toolCallId"].as_str().unwrap(),
                    s["toolCallName"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(starts, [("b1", "mcp__page__pick"), ("b2", "tool_call")]);
        assert_eq!(
            of_type(&out, "TOOL_CALL_ARGS")[0]["delta"],
            r#"{"branches":["main"]}"#
        );
    }

    /// The page's tools are told by the names the agents give them; with
    /// no prefix known (an agent of `run acp`), by any of those spellings.
    #[test]
    fn the_page_s_tools_are_told_by_each_agent_s_spelling() {
        use crate::agui::{Emitter, Format};
        let mut known = Emitter::new(Format::Ndjson, None, None);
        known.set_page_tools("page-", vec!["pick".into()]);
        let mut any = Emitter::new(Format::Ndjson, None, None);
        any.set_page_tools("", vec!["pick".into()]);
        let tool = |em: &Emitter, kind: &str, title: &str, own: Option<&str>| {
            super::page_tool(kind, Some(title), own, em)
        };
        assert_eq!(
            tool(&known, "other", "page-pick", None).as_deref(),
            Some("page-pick")
        );
        assert_eq!(tool(&known, "other", "page_pick", None), None);
        // Copilot CLI calls the state's tool an `edit`: the title decides.
        assert_eq!(
            tool(&known, "edit", "page-pick", None).as_deref(),
            Some("page-pick")
        );
        for (kind, title, own) in [
            ("other", "page-pick", None),
            ("other", "page_pick", None),
            ("other", "mcp_page_pick", None),
            ("other", "pick (page MCP Server)", None),
            ("read", "{}", Some("mcp__page__pick")),
            ("other", "pick", None),
        ] {
            assert_eq!(
                tool(&any, kind, title, own).as_deref(),
                Some("pick"),
                "{title}"
            );
        }
        assert_eq!(tool(&any, "other", "pick (other MCP Server)", None), None);
        assert_eq!(tool(&any, "other", "page-show", None), None);
    }

    /// A call is named by the tool's own name where the agent tells it:
    /// OpenCode's first title (known by its `initialize` answer; its command
    /// titled by the command is `bash`), Qwen Code's `_meta.toolName`, Gemini
    /// CLI's call id; else by its kind.
    #[test]
    fn calls_are_named_by_the_tool_the_agent_names() {
        let init =
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
        let opencode = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"OpenCode","version":"1.18.33"}}}"#;
        let call = |id: &str, title: &str, kind: &str, extra: &str| {
            update(&format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"{id}","title":"{title}","kind":"{kind}","status":"pending"{extra}}}"#
            ))
        };
        let names = |lines: &[&str]| -> Vec<String> {
            of_type(&translate(lines), "TOOL_CALL_START")
                .iter()
                .map(|s| s["toolCallName"].as_str().unwrap().to_owned())
                .collect()
        };
        let (a, b, c, d) = (
            call("a", "write", "edit", ""),
            call("b", "echo hi", "execute", ""),
            call("c", "page_pick", "other", ""),
            call("d", "notes.txt", "read", ""),
        );
        assert_eq!(
            names(&[init, opencode, PROMPT, &a, &b, &c, &d]),
            ["write", "bash", "page_pick", "read"]
        );
        // Without OpenCode's `initialize` answer, titles are no names.
        assert_eq!(names(&[PROMPT, &a, &b, &c]), ["edit", "execute", "other"]);
        let qwen = call(
            "q",
            "Shell",
            "execute",
            r#","_meta":{"toolName":"run_shell_command"}"#,
        );
        let gemini = call(
            "read_file__read_file_1795853890091_0",
            "notes.txt",
            "read",
            "",
        );
        let odd = call("x__y_1_0", "ls", "execute", "");
        assert_eq!(
            names(&[PROMPT, &qwen, &gemini, &odd]),
            ["run_shell_command", "read_file", "execute"]
        );
    }

    /// A pending call's partial `rawInput` is not its arguments: those come
    /// with the call under way; a failed call's result is an error.
    #[test]
    fn tool_calls_take_the_input_they_run_with() {
        let out = translate(&[
            PROMPT,
            &update(
                r#"{"sessionUpdate":"tool_call","toolCallId":"c","title":"bash","kind":"execute","status":"pending","rawInput":{"cwd":"/w"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"in_progress","rawInput":{"command":"false","cwd":"/w"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed","content":[{"type":"content","content":{"type":"text","text":"boom"}}],"rawOutput":{"exit":1}}"#,
            ),
        ]);
        let args = of_type(&out, "TOOL_CALL_ARGS");
        assert_eq!(args.len(), 1);
        assert_eq!(args[0]["delta"], r#"{"command":"false","cwd":"/w"}"#);
        let result = of_type(&out, "TOOL_CALL_RESULT");
        assert_eq!(result[0]["content"], "boom");
        assert_eq!(result[0]["metadata"]["isError"], true);
        assert_eq!(result[0]["metadata"]["rawOutput"]["exit"], 1);
        // The prompt was never answered.
        assert_eq!(out.last().unwrap()["code"], "input_ended");
    }

    /// Chunks stream as deltas; a thought between them closes the message;
    /// a plan is the plan view; a cancelled prompt cancels the run, with
    /// ACP's usage.
    #[test]
    fn chunks_thoughts_plans_and_a_cancel() {
        let out = translate(&[
            PROMPT,
            &update(
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"b"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"c"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"plan","entries":[{"content":"look","priority":"high","status":"in_progress"}]}"#,
            ),
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled","usage":{"inputTokens":10,"outputTokens":2,"totalTokens":17,"cachedReadTokens":5}}}"#,
        ]);
        let starts = of_type(&out, "TEXT_MESSAGE_START");
        // The user's prompt, then two assistant messages.
        assert_eq!(starts.len(), 3);
        assert_eq!(of_type(&out, "TEXT_MESSAGE_CONTENT").len(), 4);
        assert_eq!(of_type(&out, "REASONING_MESSAGE_CONTENT")[0]["delta"], "hm");
        let plan = of_type(&out, "ACTIVITY_SNAPSHOT");
        assert_eq!(plan[0]["content"]["items"][0]["text"], "look");
        assert_eq!(plan[0]["content"]["items"][0]["status"], "in_progress");
        let end = out.last().unwrap();
        assert_eq!(end["outcome"]["type"], "cancelled");
        assert_eq!(end["usage"][0]["inputTokens"], 15);
        assert_eq!(end["usage"][0]["cachedInputTokens"], 5);
    }

    /// A JSON-RPC error answering the prompt fails the run, naming it.
    #[test]
    fn an_error_answer_fails_the_run() {
        let last = |err: &str| {
            let answer = format!(r#"{{"jsonrpc":"2.0","id":2,"error":{err}}}"#);
            let e = translate(&[PROMPT, &answer]).pop().unwrap();
            format!("{} {} {}", e["type"], e["code"], e["message"])
        };
        assert_eq!(
            last(
                r#"{"code":500,"message":"{\"error\":{\"code\":500,\"message\":\"Internal error encountered.\"}}"}"#
            ),
            r#""RUN_ERROR" "api_error" "Internal error encountered.""#
        );
        assert_eq!(
            last(
                r#"{"code":-32603,"message":"Internal error: x","data":{"errorName":"APIError"}}"#
            ),
            r#""RUN_ERROR" "api_error" "Internal error: x""#
        );
        assert_eq!(
            last(r#"{"code":-32602,"message":"Invalid params"}"#),
            r#""RUN_ERROR" "cli_error" "Invalid params""#
        );
    }

    /// Qwen Code closes each model response with an empty chunk whose
    /// `_meta.usage` is that response's: no empty message, and the run's
    /// usage is their sum when the prompt's answer has none. Its input
    /// holds the cached tokens (input and output make the total), so they
    /// are not added again; OpenCode's leaves them out.
    #[test]
    fn usage_comes_from_the_chunks_when_the_answer_has_none() {
        let usage = r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":1200,"outputTokens":45,"totalTokens":1245,"cachedReadTokens":1024},"durationMs":5}}"#;
        let out = translate(&[
            PROMPT,
            &update(usage),
            &update(
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ok"}}"#,
            ),
            &update(usage),
            r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
        ]);
        assert_eq!(of_type(&out, "TEXT_MESSAGE_START").len(), 2, "{out:?}");
        assert_eq!(of_type(&out, "RAW").len(), 2);
        let u = &out.last().unwrap()["usage"][0];
        assert_eq!(u["inputTokens"], 2400);
        assert_eq!(u["outputTokens"], 90);
        assert_eq!(u["totalTokens"], 2490);
        assert_eq!(u["cachedInputTokens"], 2048);
        let opencode = translate(&[
            PROMPT,
            r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","usage":{"inputTokens":176,"outputTokens":45,"totalTokens":1245,"cachedReadTokens":1024}}}"#,
        ]);
        assert_eq!(opencode.last().unwrap()["usage"][0]["inputTokens"], 1200);
    }

    /// An update of a call under way that neither ends it nor gives its
    /// result (Copilot CLI's output so far) is kept as RAW, not dropped.
    #[test]
    fn an_update_that_makes_no_event_is_kept() {
        let out = translate(&[
            PROMPT,
            &update(
                r#"{"sessionUpdate":"tool_call","toolCallId":"c","title":"Run","kind":"execute","status":"in_progress","rawInput":{"command":"sleep 9"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"started\n"}}]}"#,
            ),
        ]);
        let raw = of_type(&out, "RAW");
        assert_eq!(raw.len(), 1, "{out:?}");
        assert_eq!(
            raw[0]["event"]["params"]["update"]["content"][0]["content"]["text"],
            "started\n"
        );
    }

    /// Qwen Code's failed prompt: "Internal error" with the API's status
    /// and text in `data.details`.
    #[test]
    fn an_internal_error_says_its_details() {
        let out = translate(&[
            PROMPT,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"details":"500 The server had an error."}}}"#,
        ]);
        let end = out.last().unwrap();
        assert_eq!(end["type"], "RUN_ERROR");
        assert_eq!(end["message"], "500 The server had an error.");
        assert_eq!(end["code"], "api_error");
    }

    /// The history `session/load` streams back is a run of its own, which
    /// the next prompt finishes (it does not fail it).
    #[test]
    fn a_loaded_history_ends_where_the_prompt_begins() {
        let out = translate(&[
            &update(
                r#"{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"remember teal"}}"#,
            ),
            &update(
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ok"}}"#,
            ),
            PROMPT,
            r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
        ]);
        let ends: Vec<_> = out
            .iter()
            .filter(|e| matches!(e["type"].as_str(), Some("RUN_FINISHED" | "RUN_ERROR")))
            .collect();
        assert_eq!(ends.len(), 2, "{out:?}");
        assert!(ends.iter().all(|e| e["type"] == "RUN_FINISHED"), "{out:?}");
    }

    /// A loaded history's run id is derived from the `session/load` that
    /// asked for it: histories of different sessions (whose connections
    /// begin alike) do not share a run id, nor the message ids made from it.
    #[test]
    fn each_loaded_history_has_a_run_id_of_its_own() {
        let history = |session: &str| {
            let init =
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
            let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#;
            let load = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"session/load","params":{{"sessionId":"{session}","cwd":"/w","mcpServers":[]}}}}"#
            );
            let chunk = format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"earlier"}}}}}}}}"#
            );
            let out = translate(&[init, answer, &load, &chunk]);
            let started = of_type(&out, "RUN_STARTED")[0]["runId"].clone();
            let message = of_type(&out, "TEXT_MESSAGE_START")[0]["messageId"].clone();
            (started, message)
        };
        let (one, two) = (history("S1"), history("S2"));
        assert_ne!(one.0, two.0);
        assert_ne!(one.1, two.1);
        // Derived: the same transcript gives the same ids.
        assert_eq!(one, history("S1"));
    }

    /// Two connections that load the same session, one after the other in
    /// one transcript, give their histories run ids of their own (their
    /// `session/load` lines are alike), the same each time.
    #[test]
    fn two_loads_of_one_session_have_histories_of_their_own() {
        let init =
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#;
        let load = r#"{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"S","cwd":"/w","mcpServers":[]}}"#;
        let loaded = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let chunk = update(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"earlier"}}"#,
        );
        let done = r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#;
        let connection: [&str; 7] = [init, answer, load, loaded, &chunk, PROMPT, done];
        let twice = || {
            let lines: Vec<&str> = connection
                .iter()
                .chain(connection.iter())
                .copied()
                .collect();
            let out = translate(&lines);
            of_type(&out, "RUN_STARTED")
                .iter()
                .map(|e| e["runId"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        let runs = twice();
        assert_eq!(runs.len(), 4, "{runs:?}");
        // The two histories (the first and third runs) differ.
        assert_ne!(runs[0], runs[2]);
        assert_eq!(runs, twice());
    }

    /// A loaded history's messages keep their ids only behind the history's
    /// run: a front end holds the messages of those ids from the runs that
    /// made them (OpenCode repeats them), and a copy must not add to them.
    #[test]
    fn a_loaded_history_does_not_reuse_message_ids() {
        let chunk = |text: &str| {
            update(&format!(
                r#"{{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{{"type":"text","text":"{text}"}}}}"#
            ))
        };
        let out = translate(&[
            &chunk("remember "),
            &chunk("teal"),
            PROMPT,
            r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
        ]);
        let starts = of_type(&out, "TEXT_MESSAGE_START");
        // The history's one message, then the prompt's.
        assert_eq!(starts.len(), 2, "{out:?}");
        let id = starts[0]["messageId"].as_str().unwrap();
        assert_ne!(id, "m1");
        assert!(id.ends_with("-m1"), "{id}");
        assert_eq!(of_type(&out, "TEXT_MESSAGE_CONTENT").len(), 3);
    }
}
