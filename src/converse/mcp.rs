//! Tools from the page: a front end's own tools (AG-UI `RunAgentInput.tools`)
//! offered to the CLI, each call handed to the page and its answer handed
//! back.
//!
//! Claude Code takes them from an MCP server its host answers over the
//! control protocol ([`crate::converse::control`]): `--mcp-config` names a
//! server of `"type": "sdk"` ([`SERVER`]), and the CLI sends each JSON-RPC
//! message of it (`initialize`, `tools/list`, `tools/call`, notifications)
//! as a `control_request` `mcp_message`, answered by a `control_response`
//! carrying `mcp_response`. Every message but `tools/call` is answered at
//! once. A call is shown as the CLI streams it (TOOL_CALL_START named by
//! the page's tool, see [`Emitter::set_page_prefix`]) and waits: calls that
//! arrive together (within [`QUIET`] of each other) end the run with
//! `RUN_FINISHED` success and their ids as `pendingToolCallIds`. Then the
//! session reads one line from our standard input, shaped like the part
//! of a `RunAgentInput` that answers (`{"runId", "toolResults":
//! [{"toolCallId", "content"}], "lastRole"}`, which `serve` makes of the
//! `role: "tool"` messages after the last user message). A line that
//! answers every pending call starts the next run and each answer becomes
//! the call's result inside the CLI; any other line is a run that ends in
//! `RUN_ERROR`, and nothing reaches the CLI. No answer within the tool
//! timeout answers each call with an error the model can read, and the
//! run ends as an approval that expired does.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::agui::{code, Emitter, Outcome};
use crate::converse::ask::{self, waiting, Asker, Tick, Waited, Waiting, QUIET};
use crate::converse::state::{self, State};
use crate::source::Translate;

/// The MCP server's name (as the CLI knows it).
pub const SERVER: &str = crate::dialect::request::PAGE_SERVER;

/// How the CLI names the server's tools: this, then the page's name.
pub const PREFIX: &str = "mcp__page__";

/// The most tools a page may give.
pub const MAX_TOOLS: usize = 128;
/// The longest tool name (bytes of `[A-Za-z0-9_-]`).
pub const MAX_NAME: usize = 64;
/// The longest description of a tool (bytes).
pub const MAX_DESCRIPTION: usize = 8 * 1024;
/// The largest `parameters` schema of a tool (bytes of JSON).
pub const MAX_SCHEMA: usize = 64 * 1024;
/// The largest answer to one call (bytes of text).
pub const MAX_ANSWER: usize = 1024 * 1024;

/// How long the run waits for the request of a call the stream has shown,
/// after the last call came ([`Calls::shown_not_come`]).
pub const SHOWN_WAIT: Duration = Duration::from_secs(5);

/// The default of `--tool-timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// One of the page's tools, as AG-UI declares it.
#[derive(Debug, Deserialize, Serialize)]
pub struct PageTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Box<RawValue>>,
}

/// The page's tools in `json` (an AG-UI `tools` array), checked: at most
/// [`MAX_TOOLS`], each named by 1 to [`MAX_NAME`] of `A-Z a-z 0-9 _ -`,
/// none twice, none named as one of the CLI's `own` tools (nor `mcp__…`),
/// a description of at most [`MAX_DESCRIPTION`] bytes, and `parameters`,
/// if any, a JSON object of at most [`MAX_SCHEMA`] bytes. `Err` says which
/// field and why.
pub fn check_tools(json: &str, own: &[(&str, &str)]) -> Result<Vec<PageTool>, String> {
    let tools: Vec<PageTool> = serde_json::from_str(json)
        .map_err(|e| format!("tools: not an array of {{name, description, parameters}}: {e}"))?;
    if tools.len() > MAX_TOOLS {
        return Err(format!(
            "tools: {} tools, more than the {MAX_TOOLS} a page may give",
            tools.len()
        ));
    }
    for (i, t) in tools.iter().enumerate() {
        let field = |f: &str| format!("tools[{i}].{f}");
        if !name_ok(&t.name) {
            return Err(format!(
                "{} {:?}: a tool name is 1 to {MAX_NAME} of A-Z a-z 0-9 _ -",
                field("name"),
                crate::converse::ask::shown(&t.name)
            ));
        }
        if t.name == state::TOOL {
            return Err(format!(
                "{} {:?}: the name of the tool through which the model changes the state; name the page's tool otherwise",
                field("name"),
                t.name
            ));
        }
        if t.name.starts_with("mcp__") || own.iter().any(|(n, _)| n.eq_ignore_ascii_case(&t.name)) {
            return Err(format!(
                "{} {:?}: the CLI has a tool of that name; name the page's tool otherwise",
                field("name"),
                t.name
            ));
        }
        if tools[..i].iter().any(|o| o.name == t.name) {
            return Err(format!("{} {:?}: given twice", field("name"), t.name));
        }
        if t.description.len() > MAX_DESCRIPTION {
            return Err(format!(
                "{}: {} bytes, more than {MAX_DESCRIPTION}",
                field("description"),
                t.description.len()
            ));
        }
        if let Some(p) = &t.parameters {
            let text = p.get();
            if text.len() > MAX_SCHEMA {
                return Err(format!(
                    "{}: {} bytes, more than {MAX_SCHEMA}",
                    field("parameters"),
                    text.len()
                ));
            }
            if !text.trim_start().starts_with('{') {
                return Err(format!("{}: not a JSON Schema object", field("parameters")));
            }
        }
    }
    Ok(tools)
}

/// A tool name a page may give: 1 to [`MAX_NAME`] of `A-Z a-z 0-9 _ -`.
pub fn name_ok(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The server: the page's tools, and what it answers.
pub struct Server {
    /// The `tools/list` result, made once.
    list: Box<RawValue>,
    names: Vec<String>,
    tools: Vec<PageTool>,
    /// The thread's state, when the model may change it ([`state`]).
    state: Option<State>,
}

/// What a JSON-RPC message to the server comes to.
pub enum Reply {
    /// Its answer, sent at once (for a notification, an empty result).
    Now(Box<RawValue>),
    /// A call of one of the page's tools: it waits for the page.
    Call(Call),
}

impl Call {
    /// A call that came as a JSON-RPC request of its own (`rpc_id`, named
    /// `request_id` in messages), of the page's tool `name`.
    pub fn new(
        request_id: String,
        rpc_id: Box<RawValue>,
        name: String,
        tool_call_id: Option<String>,
    ) -> Self {
        Call {
            request_id,
            rpc_id,
            name,
            tool_call_id,
            arguments: None,
        }
    }
}

/// A call of a page's tool, waiting for its answer.
pub struct Call {
    /// The `control_request` it came in.
    pub request_id: String,
    /// The JSON-RPC id it is answered with.
    rpc_id: Box<RawValue>,
    /// The page's name of the tool.
    pub name: String,
    /// The tool call's id, as the stream shows it (when the CLI gave it).
    pub tool_call_id: Option<String>,
    /// Its arguments, as the CLI gave them.
    arguments: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Rpc<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, rename = "_meta")]
    meta: Option<CallMeta>,
}

#[derive(Deserialize)]
struct CallMeta {
    /// Claude Code names the tool call a `tools/call` runs.
    #[serde(default, rename = "claudecode/toolUseId")]
    tool_use_id: Option<String>,
}

#[derive(Deserialize)]
struct InitParams<'a> {
    #[serde(default, rename = "protocolVersion", borrow)]
    protocol_version: Option<Cow<'a, str>>,
}

/// The MCP release answered when the client names none.
const MCP_VERSION: &str = "2025-06-18";

impl Server {
    pub fn new(tools: Vec<PageTool>) -> Self {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Listed<'a> {
            name: &'a str,
            description: &'a str,
            input_schema: &'a RawValue,
            annotations: Annotations,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Annotations {
            /// Claude Code runs calls of such tools together, so that the
            /// page can answer a turn's calls at once.
            read_only_hint: bool,
        }
        let any = RawValue::from_string(r#"{"type":"object"}"#.into()).expect("JSON");
        let listed: Vec<Listed> = tools
            .iter()
            .map(|t| Listed {
                name: &t.name,
                description: &t.description,
                input_schema: t.parameters.as_deref().unwrap_or(&any),
                annotations: Annotations {
                    read_only_hint: true,
                },
            })
            .collect();
        let list = serde_json::value::to_raw_value(&serde_json::json!({ "tools": listed }))
            .expect("serializable");
        Server {
            list,
            names: tools.iter().map(|t| t.name.clone()).collect(),
            tools,
            state: None,
        }
    }

    /// The server with [`state::TOOL`] offered besides the page's tools,
    /// answered here with `state` (never a call for the page).
    pub fn with_state(self, state: State) -> Self {
        let Server {
            names, mut tools, ..
        } = self;
        tools.push(state::tool());
        let mut server = Server::new(tools);
        server.names = names;
        server.state = Some(state);
        server
    }

    /// A call of [`state::TOOL`] with `arguments`, answered at once: its
    /// result's text and whether it is an error; `None` when the state is
    /// not offered.
    pub fn update_state(&mut self, arguments: Option<&RawValue>) -> Option<(String, bool)> {
        Some(self.state.as_mut()?.update(arguments))
    }

    /// The state a call has changed since this was last asked, to be
    /// streamed (`STATE_SNAPSHOT`).
    pub fn take_state(&mut self) -> Option<Box<RawValue>> {
        self.state.as_mut()?.take_unsent()
    }

    /// The arguments of the calls of [`state::TOOL`] since this was last
    /// asked, oldest first.
    pub fn take_state_inputs(&mut self) -> Vec<Option<Box<RawValue>>> {
        self.state
            .as_mut()
            .map(State::take_inputs)
            .unwrap_or_default()
    }

    /// The tools offered: the page's, and [`state::TOOL`] when the state
    /// is.
    pub fn tools(&self) -> &[PageTool] {
        &self.tools
    }

    /// The names of the page's tools.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The reply to one JSON-RPC `message`, which came in the
    /// `control_request` `request_id`.
    pub fn message(&mut self, request_id: &str, message: &RawValue) -> Reply {
        let Ok(rpc) = serde_json::from_str::<Rpc>(message.get()) else {
            return Reply::Now(error(None, -32700, "not a JSON-RPC message"));
        };
        let Some(id) = rpc.id.filter(|i| i.get() != "null") else {
            // A notification: acknowledged.
            return Reply::Now(raw(r#"{"jsonrpc":"2.0","result":{}}"#));
        };
        let params = rpc.params.map_or("{}", RawValue::get);
        match rpc.method.as_deref() {
            Some("initialize") => {
                let asked = serde_json::from_str::<InitParams>(params)
                    .ok()
                    .and_then(|p| p.protocol_version.map(Cow::into_owned));
                let version = asked.unwrap_or_else(|| MCP_VERSION.to_owned());
                let result = serde_json::json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": SERVER, "version": env!("CARGO_PKG_VERSION")},
                });
                ok(id, &result)
            }
            Some("tools/list") => ok(id, &self.list),
            Some("ping") => ok(id, &serde_json::json!({})),
            Some("tools/call") => match serde_json::from_str::<CallParams>(params) {
                Ok(p) if p.name == state::TOOL && self.state.is_some() => {
                    let (text, is_error) = self.update_state(p.arguments).expect("offered");
                    ok(id, &tool_result(&text, is_error))
                }
                Ok(p) if self.names.iter().any(|n| *n == p.name) => Reply::Call(Call {
                    request_id: request_id.to_owned(),
                    rpc_id: id.to_owned(),
                    name: p.name.into_owned(),
                    tool_call_id: p.meta.and_then(|m| m.tool_use_id),
                    arguments: p.arguments.map(ToOwned::to_owned),
                }),
                Ok(p) => Reply::Now(error(
                    Some(id),
                    -32602,
                    &format!("the page has no tool {:?}", p.name),
                )),
                Err(e) => Reply::Now(error(Some(id), -32602, &format!("tools/call: {e}"))),
            },
            Some(m) => Reply::Now(error(Some(id), -32601, &format!("method {m:?} not found"))),
            None => Reply::Now(error(Some(id), -32600, "a request without a method")),
        }
    }
}

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).expect("JSON")
}

fn ok(id: &RawValue, result: &impl Serialize) -> Reply {
    #[derive(Serialize)]
    struct Ok<'a, T> {
        jsonrpc: &'a str,
        id: &'a RawValue,
        result: T,
    }
    Reply::Now(
        serde_json::value::to_raw_value(&Ok {
            jsonrpc: "2.0",
            id,
            result,
        })
        .expect("serializable"),
    )
}

fn error(id: Option<&RawValue>, code: i64, message: &str) -> Box<RawValue> {
    let id = id.map_or_else(|| raw("null"), ToOwned::to_owned);
    serde_json::value::to_raw_value(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    }))
    .expect("serializable")
}

/// The `tools/call` result of `call`: the page's answer as text, an error
/// when `is_error`.
pub fn call_result(call: &Call, text: &str, is_error: bool) -> Box<RawValue> {
    serde_json::value::to_raw_value(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": &call.rpc_id,
        "result": tool_result(text, is_error),
    }))
    .expect("serializable")
}

/// A `tools/call` result of `text`, an error when `is_error`.
fn tool_result(text: &str, is_error: bool) -> serde_json::Value {
    serde_json::json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// Claude Code's answer to `call`: the `control_response` that carries
/// the `tools/call` result.
pub fn claude_answer(call: &Call, text: &str, is_error: bool) -> Vec<u8> {
    control_response(&call.request_id, &call_result(call, text, is_error))
}

/// The Codex app-server's answer to `call` (an `item/tool/call` request):
/// `{contentItems, success}`.
pub fn codex_answer(call: &Call, text: &str, is_error: bool) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "id": &call.rpc_id,
        "result": {"contentItems": [{"type": "inputText", "text": text}], "success": !is_error},
    }))
    .expect("serializable")
}

/// The host's `initialize` request that declares the page's server as an
/// SDK MCP server (Qwen Code's control layer: `sdkMcpServers`, answered by
/// `mcp_message` requests as Claude Code's are).
pub fn declare_server() -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "type": "control_request",
        "request_id": "page-server",
        "request": {"subtype": "initialize", "sdkMcpServers": {SERVER: {"name": SERVER}}},
    }))
    .expect("serializable")
}

/// The `control_response` that carries `mcp_response` for `request_id`.
pub fn control_response(request_id: &str, mcp_response: &RawValue) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": request_id,
            "response": {"mcp_response": mcp_response},
        },
    }))
    .expect("serializable")
}

/// The calls of a session waiting for the page, and what arrived while
/// they waited.
#[derive(Default)]
pub struct Calls {
    pending: Vec<Call>,
    /// Ids of calls answered already (a follow-up carries them again).
    answered: Vec<String>,
    /// When the last call arrived, until the run ends.
    last: Option<Instant>,
    /// CLI lines that arrived while the run waited: the next run's.
    later: Vec<Vec<u8>>,
}

impl Calls {
    /// A call arrived (its id, when the CLI gave none, is named when the
    /// run ends: [`Calls::name_calls`]).
    pub fn push(&mut self, call: Call) {
        self.pending.push(call);
        self.last = Some(Instant::now());
    }

    /// Each pending call the stream has not shown gets its id: the oldest
    /// started call of its tool not yet taken, else one of its own, shown
    /// now ([`Emitter::announce_page_call`]).
    fn name_calls(&mut self, em: &mut Emitter) {
        for i in 0..self.pending.len() {
            if self.pending[i].tool_call_id.is_some() {
                continue;
            }
            let name = self.pending[i].name.clone();
            let started = em
                .page_calls()
                .find(|(id, n)| {
                    *n == name
                        && !self.answered.iter().any(|a| a == id)
                        && !self
                            .pending
                            .iter()
                            .any(|p| p.tool_call_id.as_deref() == Some(id))
                })
                .map(|(id, _)| id.to_owned());
            if let Some(id) = started.as_deref().filter(|id| em.is_open(id)) {
                // Shown without its input yet (an ACP agent's pending call):
                // the input is the one the call came with.
                em.tool_args_given(id, self.pending[i].arguments.as_deref());
                em.tool_end(id);
            }
            let id = started.unwrap_or_else(|| {
                let id = format!("page-{}", crate::base::uuid::v7());
                em.announce_page_call(&id, &name, self.pending[i].arguments.as_deref());
                id
            });
            self.pending[i].tool_call_id = Some(id);
        }
        // Pending in the order the page was shown the calls, whatever
        // order their requests came in (an HTTP route takes them at once).
        let shown: Vec<&str> = em.page_calls().map(|(id, _)| id).collect();
        self.pending.sort_by_key(|c| {
            shown
                .iter()
                .position(|id| c.tool_call_id.as_deref() == Some(id))
                .unwrap_or(usize::MAX)
        });
    }

    /// Whether the stream has shown a call of the page's tools whose request
    /// has not come yet (OpenCode over ACP shows a turn's calls before it
    /// sends them, not all at once), for at most [`SHOWN_WAIT`] after the
    /// last call came: the run waits for it rather than end without it.
    pub fn shown_not_come(&self, em: &Emitter) -> bool {
        if self.last.is_none_or(|t| t.elapsed() >= SHOWN_WAIT) {
            return false;
        }
        let shown = em
            .page_calls()
            .filter(|(id, _)| !self.answered.iter().any(|a| a == id))
            .count();
        shown > self.pending.len()
    }

    /// Whether the calls are to end the run now: the CLI has been quiet for
    /// [`QUIET`] since the last one.
    pub fn due(&mut self) -> bool {
        let due = self.last.is_some_and(|t| t.elapsed() >= QUIET);
        if due {
            self.last = None;
        }
        due
    }

    /// The answers of a line, one per pending call in order, or why it is
    /// refused (with the run id it names, if any). `cli_s` tells a call of
    /// the CLI's own tools, whose result the CLI gave (the history carries
    /// it as a `role: "tool"` message too).
    fn answers(&self, line: &str, cli_s: &dyn Fn(&str) -> bool) -> Answered {
        let a: Answer = serde_json::from_str(line).map_err(|e| {
            (
                None,
                format!("not an answer (a JSON object with runId and toolResults): {e}"),
            )
        })?;
        let run_id = a.run_id.filter(|r| !r.is_empty()).map(Cow::into_owned);
        let fail = |why: String| Err((run_id.clone(), why));
        let pending = match self.pending.len() {
            1 => "1 tool call".to_owned(),
            n => format!("{n} tool calls"),
        };
        if a.last_role.as_deref() == Some("user") {
            return fail(format!(
                "the run waits for the page's answers to {pending}: a new user message is refused until the page answers (role \"tool\" messages)"
            ));
        }
        let mut texts: Vec<Option<String>> = self.pending.iter().map(|_| None).collect();
        for r in a.tool_results.unwrap_or_default() {
            let i = self
                .pending
                .iter()
                .position(|p| p.tool_call_id.as_deref() == Some(&*r.tool_call_id));
            let Some(i) = i else {
                if self.answered.iter().any(|a| *a == r.tool_call_id) || cli_s(&r.tool_call_id) {
                    continue; // answered before: the history carries it again
                }
                return fail(format!(
                    "tool call {:?} is not pending (stale or unknown)",
                    ask::shown(&r.tool_call_id)
                ));
            };
            if texts[i].is_some() {
                return fail(format!("tool call {:?} is answered twice", r.tool_call_id));
            }
            let text = r.content.map_or_else(String::new, |c| c.0);
            if text.len() > MAX_ANSWER {
                return fail(format!(
                    "the answer to tool call {:?} is {} bytes, more than {MAX_ANSWER}",
                    r.tool_call_id,
                    text.len()
                ));
            }
            texts[i] = Some(text);
        }
        let missing = texts.iter().filter(|t| t.is_none()).count();
        if missing > 0 {
            return fail(format!(
                "the answers leave {missing} of the {pending} pending unanswered: the page must answer every pending call (role \"tool\" messages)"
            ));
        }
        Ok((run_id, texts.into_iter().map(|t| t.expect("all")).collect()))
    }
}

/// The answers of a line (with the run id it names), or why it is refused
/// (with the run id, if any).
type Answered = Result<(Option<String>, Vec<String>), (Option<String>, String)>;

/// A line that answers the pending calls.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    #[serde(default, borrow)]
    run_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_results: Option<Vec<ToolResult<'a>>>,
    #[serde(default, borrow)]
    last_role: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult<'a> {
    #[serde(borrow)]
    tool_call_id: Cow<'a, str>,
    #[serde(default)]
    content: Option<Text>,
}

/// A message's content as text: a string, or the text parts of an array
/// of parts, one per line.
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Content<'a> {
            Str(String),
            Parts(#[serde(borrow)] Vec<Part<'a>>),
        }
        #[derive(Deserialize)]
        struct Part<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<Cow<'a, str>>,
            #[serde(default, borrow)]
            text: Option<Cow<'a, str>>,
        }
        Ok(Text(match Content::deserialize(d)? {
            Content::Str(s) => s,
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| p.kind.as_deref() == Some("text"))
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
        }))
    }
}

/// What a CLI's session does for [`wait`], besides what it does for
/// approvals.
pub trait Host: Asker {
    fn calls(&mut self) -> &mut Calls;
    /// Answer `call` with `text` (an error the model reads when
    /// `is_error`).
    fn answer_call(
        &mut self,
        cli_in: &mut dyn Write,
        call: &Call,
        text: &str,
        is_error: bool,
    ) -> io::Result<()>;
}

/// End the run with the pending calls for the page to run, and wait for
/// the input line that answers them. `w.timeout` is the tool timeout.
#[allow(clippy::too_many_arguments)]
pub fn wait<H: Host>(
    s: &mut H,
    w: &Waiting,
    cli_out: &mut dyn BufRead,
    cli_in: &mut dyn Write,
    tr: &mut dyn Translate,
    em: &mut Emitter,
    out: &mut dyn Write,
    stop: &dyn Fn() -> bool,
) -> io::Result<Waited> {
    let deadline = Instant::now() + w.timeout;
    s.calls().name_calls(em);
    {
        let ids: Vec<&str> = s
            .calls()
            .pending
            .iter()
            .filter_map(|c| c.tool_call_id.as_deref())
            .collect();
        em.finish_run(None, Some(Outcome::Pending(&ids)), &[]);
        em.end_run();
    }
    waiting(w, em, out)?;
    let mut partial = std::mem::take(s.partial());
    let waited = loop {
        let line = match ask::tick(
            deadline,
            stop,
            cli_out,
            &mut partial,
            &mut |line| {
                s.noticed(&line);
                s.calls().later.push(line);
            },
            w.input,
        )? {
            Tick::Stopped => break Waited::Stopped,
            Tick::Late => {
                let why = format!(
                    "the page did not answer this tool call within {}",
                    ask::humanize(w.timeout)
                );
                fail_all(s, cli_in, &why)?;
                break Waited::Expired(why);
            }
            Tick::Eof => break Waited::Eof,
            Tick::InputEnded => {
                let why = "the input ended with no answer from the page";
                fail_all(s, cli_in, why)?;
                break Waited::Expired(why.to_owned());
            }
            Tick::Idle => continue,
            Tick::Input(line) => line,
        };
        let cli_s = |id: &str| em.tool_started(id) && !em.page_calls().any(|(p, _)| p == id);
        let answered = s.calls().answers(&line, &cli_s);
        ask::start_resumed(
            em,
            match &answered {
                Ok((r, _)) | Err((r, _)) => r.as_deref(),
            },
        );
        match answered {
            Ok((_, texts)) => {
                let calls = std::mem::take(&mut s.calls().pending);
                for (call, text) in calls.iter().zip(texts) {
                    s.answer_call(cli_in, call, &text, false)?;
                }
                let ids = calls.into_iter().filter_map(|c| c.tool_call_id);
                s.calls().answered.extend(ids);
                *s.partial() = partial;
                let later = std::mem::take(&mut s.calls().later);
                return ask::go_on(later, &mut |l, em| s.take(l, cli_in, tr, em), em, out);
            }
            Err((_, why)) => ask::refused(w, em, out, &why, code::INVALID_TOOL_RESULT)?,
        }
    };
    *s.partial() = partial;
    Ok(waited)
}

/// Answer every pending call with an error the model reads (the turn goes
/// on without the page).
fn fail_all<H: Host>(s: &mut H, cli_in: &mut dyn Write, why: &str) -> io::Result<()> {
    for call in std::mem::take(&mut s.calls().pending) {
        s.answer_call(cli_in, &call, why, true)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &[(&str, &str)] = &[("Bash", "shell"), ("Read", "file_read")];

    #[test]
    fn tools_are_checked_field_by_field() {
        let ok = check_tools(
            r#"[{"name":"pick_hunks","description":"Pick","parameters":{"type":"object"}},{"name":"ask-branch"}]"#,
            OWN,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].description, "");
        let why = |json: &str| check_tools(json, OWN).unwrap_err();
        assert!(why(r#"[{"name":"a b"}]"#).starts_with("tools[0].name"));
        assert!(why(r#"[{"name":""}]"#).contains("1 to 64"));
        assert!(why(&format!(r#"[{{"name":"{}"}}]"#, "a".repeat(65))).contains("1 to 64"));
        assert!(why(r#"[{"name":"x"},{"name":"bash"}]"#)
            .starts_with("tools[1].name \"bash\": the CLI has"));
        assert!(why(r#"[{"name":"mcp__x__y"}]"#).contains("the CLI has"));
        assert!(why(r#"[{"name":"x"},{"name":"x"}]"#).contains("given twice"));
        assert!(why(r#"[{"name":"x","parameters":[]}]"#).contains("tools[0].parameters"));
        let big = format!(
            r#"[{{"name":"x","parameters":{{"d":"{}"}}}}]"#,
            "a".repeat(MAX_SCHEMA)
        );
        assert!(why(&big).contains("more than 65536"));
        let many = format!(
            "[{}]",
            (0..=MAX_TOOLS)
                .map(|i| format!(r#"{{"name":"t{i}"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(why(&many).contains("129 tools"));
        assert!(why(r#"{"name":"x"}"#).starts_with("tools: not an array"));
    }

    #[test]
    fn the_server_answers_at_once_all_but_calls() {
        let tools = check_tools(r#"[{"name":"pick","description":"d"}]"#, OWN).unwrap();
        let mut server = Server::new(tools);
        let mut reply = |m: &str| server.message("r1", &RawValue::from_string(m.into()).unwrap());
        let mut now = |m: &str| match reply(m) {
            Reply::Now(v) => serde_json::from_str::<serde_json::Value>(v.get()).unwrap(),
            Reply::Call(_) => panic!("a call"),
        };
        let init = now(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(init["id"], 0);
        assert_eq!(
            now(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)["result"],
            serde_json::json!({})
        );
        let list = now(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(list["result"]["tools"][0]["name"], "pick");
        assert_eq!(list["result"]["tools"][0]["inputSchema"]["type"], "object");
        assert_eq!(
            list["result"]["tools"][0]["annotations"]["readOnlyHint"],
            true
        );
        assert_eq!(
            now(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}"#)
                ["error"]["code"],
            -32602
        );
        assert_eq!(
            now(r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#)["error"]["code"],
            -32601
        );
        match reply(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"pick","arguments":{},"_meta":{"claudecode/toolUseId":"toolu_1"}}}"#,
        ) {
            Reply::Call(c) => {
                assert_eq!((c.request_id.as_str(), c.name.as_str()), ("r1", "pick"));
                assert_eq!(c.tool_call_id.as_deref(), Some("toolu_1"));
                let r: serde_json::Value =
                    serde_json::from_str(call_result(&c, "ok", false).get()).unwrap();
                assert_eq!(r["id"], 4);
                assert_eq!(r["result"]["content"][0]["text"], "ok");
            }
            Reply::Now(_) => panic!("answered at once"),
        }
    }

    #[test]
    fn the_state_tool_is_answered_here_and_never_waits() {
        let dir = std::env::temp_dir().join(format!("agui-mcp-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.state.json");
        let tools = check_tools(r#"[{"name":"pick"}]"#, OWN).unwrap();
        let mut server = Server::new(tools).with_state(State::new(&file));
        assert_eq!(server.names(), ["pick"], "not a page's tool");
        let mut now =
            |m: &str| match server.message("r1", &RawValue::from_string(m.into()).unwrap()) {
                Reply::Now(v) => serde_json::from_str::<serde_json::Value>(v.get()).unwrap(),
                Reply::Call(_) => panic!("a call for the page"),
            };
        let list = now(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(list["result"]["tools"][1]["name"], state::TOOL);
        let done = now(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ag_ui_update_state","arguments":{"state":{"branch":"dev"}}}}"#,
        );
        assert_eq!(done["id"], 2);
        assert_eq!(done["result"]["isError"], false);
        let refused = now(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ag_ui_update_state","arguments":{"state":[]}}}"#,
        );
        assert_eq!(refused["result"]["isError"], true);
        assert!(refused["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("a JSON object"));
        assert_eq!(server.take_state().unwrap().get(), r#"{"branch":"dev"}"#);
        assert!(server.take_state().is_none());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            r#"{"branch":"dev"}"#
        );
        // Without the state offered, the name is no tool of the server's.
        let mut plain = Server::new(Vec::new());
        let msg = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ag_ui_update_state","arguments":{"state":{}}}}"#;
        match plain.message("r", &RawValue::from_string(msg.into()).unwrap()) {
            Reply::Now(v) => assert!(v.get().contains("-32602")),
            Reply::Call(_) => panic!("a call"),
        }
        assert!(check_tools(r#"[{"name":"ag_ui_update_state"}]"#, OWN)
            .unwrap_err()
            .contains("changes the state"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn pending_calls_keep_the_order_they_were_shown_in() {
        use crate::agui::{Emitter, Format};
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.set_page_tools("page-", vec!["pick".into(), "show".into()]);
        em.announce_page_call("c1", "pick", None);
        em.announce_page_call("c2", "show", None);
        // The requests came the other way round.
        let mut calls = Calls::default();
        for name in ["show", "pick"] {
            calls.push(Call::new(
                format!("req-{name}"),
                raw("1"),
                name.into(),
                None,
            ));
        }
        calls.name_calls(&mut em);
        let ids: Vec<_> = calls
            .pending
            .iter()
            .map(|c| c.tool_call_id.as_deref().unwrap())
            .collect();
        assert_eq!(ids, ["c1", "c2"]);
    }

    #[test]
    fn the_run_waits_for_the_request_of_a_call_the_stream_has_shown() {
        use crate::agui::{Emitter, Format};
        let mut em = Emitter::new(Format::Ndjson, None, None);
        em.set_page_tools("page_", vec!["pick".into(), "show".into()]);
        let mut calls = Calls::default();
        // Nothing came yet: nothing to wait for.
        em.tool_start("c1", "page_pick", None);
        assert!(!calls.shown_not_come(&em));
        em.tool_start("c2", "page_show", None);
        calls.push(Call::new("req-1".into(), raw("1"), "pick".into(), None));
        assert!(
            calls.shown_not_come(&em),
            "c2 is shown, its request not come"
        );
        calls.push(Call::new("req-2".into(), raw("2"), "show".into(), None));
        assert!(!calls.shown_not_come(&em));
        // A call of the CLI's own tools is no page's call.
        em.tool_start("c3", "bash", None);
        assert!(!calls.shown_not_come(&em));
        // Not past the bound.
        calls.last = Some(Instant::now() - SHOWN_WAIT);
        calls.pending.pop();
        assert!(!calls.shown_not_come(&em));
    }

    #[test]
    fn answers_must_answer_exactly_the_pending_calls() {
        let call = |id: &str| Call {
            request_id: format!("req-{id}"),
            rpc_id: raw("1"),
            name: "pick".into(),
            tool_call_id: Some(id.into()),
            arguments: None,
        };
        let calls = Calls {
            pending: vec![call("a"), call("b")],
            answered: vec!["old".into()],
            ..Calls::default()
        };
        // A call of the CLI's own tools ("own") carries the CLI's result.
        let own = |id: &str| id == "own";
        let (run, texts) = calls
            .answers(r#"{"runId":"r2","lastRole":"tool","toolResults":[{"toolCallId":"own","content":"found"},{"toolCallId":"old","content":"x"},{"toolCallId":"b","content":[{"type":"text","text":"B"}]},{"toolCallId":"a","content":"A"}]}"#, &own)
            .unwrap();
        assert_eq!(run.as_deref(), Some("r2"));
        assert_eq!(texts, ["A", "B"]);
        let why = |l: &str| calls.answers(l, &own).unwrap_err().1;
        assert!(why(r#"{"toolResults":[{"toolCallId":"a","content":"A"}]}"#)
            .contains("leave 1 of the 2 tool calls"));
        assert!(
            why(r#"{"toolResults":[{"toolCallId":"zz","content":"A"}]}"#)
                .contains("\"zz\" is not pending")
        );
        assert!(why(r#"{"lastRole":"user","toolResults":[]}"#)
            .contains("a new user message is refused"));
        assert!(
            why(r#"{"toolResults":[{"toolCallId":"a"},{"toolCallId":"a"}]}"#)
                .contains("answered twice")
        );
        assert!(why("resume").starts_with("not an answer"));
    }
}
