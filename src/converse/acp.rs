//! The client side of the Agent Client Protocol (ACP): the JSON-RPC
//! messages this program sends an agent (`gemini --acp`, `opencode acp`, any
//! agent `run acp -- COMMAND` names), and the loop that reads the agent's
//! stdout, translates it as it arrives and answers the agent's requests.
//!
//! One session is one prompt: `initialize` (no `fs` and no `terminal`
//! capability: the agent reads, writes and runs commands itself),
//! `session/new` in the run's directory (or `session/load` of the session
//! to resume), then `session/prompt`; the prompt's answer ends the session,
//! and the caller closes the agent's stdin, unless it keeps the agent for
//! the thread's next turn ([`Session::idle`], [`Session::next_turn`]: a new
//! `session/prompt` on the same session). Every message of both
//! directions goes through the `acp` translator in the order it went over
//! the wire, so the events are those `--from acp` makes of the transcript.
//!
//! `session/request_permission` is answered by the `--approval` policy, the
//! option chosen by its `kind` (`allow_once`, `reject_once`; ids differ
//! from agent to agent); with `--approval ask` it becomes an interrupt and
//! the decision comes back as [`crate::converse::ask`] says: approve → the
//! `allow_once` option, deny → `reject_once`, cancel → `session/cancel` and
//! the `cancelled` outcome. ACP cannot change a tool call's input, so an
//! edited approval is refused. A request with no option of the kind chosen
//! is cancelled, and the run ends in an error that says so. A stop request
//! (SIGINT, SIGTERM, `--timeout`) sends `session/cancel`. An agent that
//! leaves `initialize`, `session/new` or `session/load` unanswered for
//! `--start-timeout` ends the session in an error that names the request.
//!
//! With the page's tools, `session/new` (and `session/load`) names the
//! page's MCP server over HTTP ([`crate::converse::mcphttp`]), for an agent
//! whose `initialize` answer says `mcpCapabilities.http`; a permission
//! request for a call of them is granted whatever the policy (the page
//! decides), and the calls end the run pending ([`mcp::wait`]). So is one
//! for a call of the state's tool ([`crate::converse::state`]), served by
//! the same server and answered there at once: the state it changed is
//! streamed before the agent's next line is translated.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::agui::Emitter;
use crate::base::json;
use crate::converse::ask::{self, translate_line, Ask, Asker, Pending, Verdict, Waited, Waiting};
use crate::converse::{mcp, mcphttp};
use crate::dialect::request::{Approval, Attachment};
use crate::source::Translate;

/// What one session asks of the agent.
pub struct Options<'a> {
    pub prompt: &'a str,
    /// Images given with the prompt (image prompt blocks: the agent must
    /// say it takes them, `promptCapabilities.image`).
    pub attachments: &'a [Attachment],
    /// The session's directory (absolute, as ACP asks).
    pub cwd: &'a str,
    /// A session to load (`--resume`), else a new one.
    pub resume: Option<&'a str>,
    pub approval: Approval,
    /// With `--approval ask`: where the decisions come from.
    pub ask: Option<Waiting<'a>>,
    /// How messages name the agent (`Gemini CLI`, `the ACP agent x`).
    pub agent: &'a str,
    /// How long the agent has to answer `initialize`, then `session/new`
    /// (or `session/load`, quiet that long while its history comes), before
    /// the session fails (`--start-timeout`).
    pub start_timeout: Duration,
    /// A model chosen in the session before the prompt, for an agent that
    /// takes its model so (OpenCode): `session/set_config_option`, its
    /// option `model`.
    pub model: Option<&'a str>,
    /// A reasoning effort chosen in the session after the model (its
    /// levels are the model's), for an agent that takes it so (OpenCode):
    /// the `configOptions` entry of category `thought_level` (OpenCode's
    /// `effort`), one of the values it offers.
    pub effort: Option<&'a str>,
    /// With the page's tools: the route of their calls (an MCP server over
    /// HTTP, given in `session/new`) and where the answers come from.
    pub page: Option<(mcphttp::Route, Waiting<'a>)>,
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The prompt was answered (the stream says how).
    TurnEnded,
    /// The agent refused a request of this client: why.
    Failed(String),
    /// The agent's stdout ended first; whether it had answered `initialize`.
    Eof(bool),
    /// A stop was asked for before the session was open, or while the run
    /// waited for decisions.
    Stopped,
    /// No decision came: the pending requests were cancelled with this
    /// reason.
    Expired(String),
}

/// Request ids of this client.
const INITIALIZE: u64 = 0;
const SESSION: u64 = 1;
const PROMPT: u64 = 2;
/// The session's choices (the model, the effort), sent before the prompt,
/// from this id on; the prompt then takes the next (the requests are
/// numbered in the order they are sent).
const CONFIG: u64 = 2;

/// How long a loaded session's agent stays quiet before its replay is
/// taken to be over (and a run's prompt goes): some replay part of the
/// history after answering `session/load` (Gemini CLI all of it).
pub const SETTLE: Duration = Duration::from_millis(300);

#[derive(Serialize)]
struct Request<'a, P: Serialize> {
    jsonrpc: &'a str,
    id: u64,
    method: &'a str,
    params: P,
}

#[derive(Serialize)]
struct Notification<'a, P: Serialize> {
    jsonrpc: &'a str,
    method: &'a str,
    params: P,
}

#[derive(Serialize)]
struct Response<'a, R: Serialize> {
    jsonrpc: &'a str,
    id: &'a RawValue,
    result: R,
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'a str,
    id: &'a RawValue,
    error: RpcError<'a>,
}

#[derive(Serialize, Deserialize)]
struct RpcError<'a> {
    #[serde(default)]
    code: i64,
    #[serde(borrow, default)]
    message: Cow<'a, str>,
}

/// This client's `initialize`: protocol version 1, no file system and no
/// terminal offered (the agent uses its own), named `agui-translate`.
fn client_init() -> InitializeParams<'static> {
    InitializeParams {
        protocol_version: 1,
        client_capabilities: ClientCapabilities {
            fs: FsCapabilities {
                read_text_file: false,
                write_text_file: false,
            },
            terminal: false,
        },
        client_info: ClientInfo {
            name: "agui-translate",
            title: "agui-translate",
            version: env!("CARGO_PKG_VERSION"),
        },
    }
}

/// The `initialize` request with id `id`, as a line: for an agent started
/// only to be asked something (a session loaded back).
pub fn initialize_line(id: u64) -> String {
    let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": client_init()});
    format!("{request}\n")
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams<'a> {
    protocol_version: u64,
    client_capabilities: ClientCapabilities,
    client_info: ClientInfo<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClientCapabilities {
    fs: FsCapabilities,
    terminal: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FsCapabilities {
    read_text_file: bool,
    write_text_file: bool,
}

#[derive(Serialize)]
struct ClientInfo<'a> {
    name: &'a str,
    title: &'a str,
    version: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    cwd: &'a str,
    mcp_servers: Vec<McpServer<'a>>,
}

/// An MCP server the agent is to reach over HTTP: the page's.
#[derive(Serialize)]
struct McpServer<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    name: &'a str,
    url: &'a str,
    headers: [(); 0],
}

/// What an agent's `initialize` answer says it can do (what it does not
/// say, it cannot).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Caps {
    #[serde(default)]
    load_session: Option<bool>,
    #[serde(default)]
    prompt_capabilities: Option<PromptCaps>,
    #[serde(default)]
    mcp_capabilities: Option<McpCaps>,
}

#[derive(Deserialize, Default)]
struct McpCaps {
    #[serde(default)]
    http: Option<bool>,
}

#[derive(Deserialize, Default)]
struct PromptCaps {
    #[serde(default)]
    image: Option<bool>,
    #[serde(default)]
    audio: Option<bool>,
}

impl Caps {
    fn loads(&self) -> bool {
        self.load_session == Some(true)
    }

    fn images(&self) -> bool {
        self.prompt_capabilities.as_ref().and_then(|p| p.image) == Some(true)
    }

    fn audio(&self) -> bool {
        self.prompt_capabilities.as_ref().and_then(|p| p.audio) == Some(true)
    }

    fn mcp_over_http(&self) -> bool {
        self.mcp_capabilities.as_ref().and_then(|m| m.http) == Some(true)
    }
}

/// The capabilities in an `initialize` answer's `result`.
fn capabilities(result: Option<&RawValue>) -> Caps {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Init {
        #[serde(default)]
        agent_capabilities: Option<Caps>,
    }
    result
        .and_then(|r| serde_json::from_str::<Init>(r.get()).ok())
        .and_then(|i| i.agent_capabilities)
        .unwrap_or_default()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PromptParams<'a> {
    session_id: &'a str,
    prompt: Vec<Block<'a>>,
}

/// A block of the prompt.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        #[serde(rename = "mimeType")]
        mime_type: &'a str,
        data: String,
    },
    Audio {
        #[serde(rename = "mimeType")]
        mime_type: &'a str,
        data: String,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CancelParams<'a> {
    session_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigParams<'a> {
    session_id: &'a str,
    config_id: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct PermissionResult<'a> {
    outcome: PermissionOutcome<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PermissionOutcome<'a> {
    outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    option_id: Option<&'a str>,
}

/// What the client needs from an agent line.
#[derive(Deserialize)]
struct AgentLine<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// The parts of `session/request_permission` the client reads.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PermissionParams {
    #[serde(default)]
    tool_call: Option<ToolCall>,
    #[serde(default)]
    options: Vec<PermissionOption>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ToolCall {
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    kind: Option<String>,
}

/// One option of a permission request.
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    #[serde(default)]
    option_id: String,
    #[serde(default)]
    kind: String,
}

/// A permission request of the agent waiting for a decision: its JSON-RPC
/// id, its options and what it is about.
pub struct Asked {
    id: Box<RawValue>,
    options: Vec<PermissionOption>,
    what: String,
}

/// Where the session is.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Stage {
    /// `initialize` sent.
    Initializing,
    /// `session/new` sent.
    Opening,
    /// `session/load` sent: the history it replays is not this run's.
    Loading,
    /// `session/set_config_option` sent for the choice of this index
    /// ([`Session::choices`]); whether the session was loaded.
    Choosing(bool, usize),
    /// Loaded; the prompt goes once the agent has been quiet since then.
    Settling(Instant),
    /// `session/prompt` sent.
    Prompting,
}

/// One session with an agent.
pub struct Session<'a> {
    opts: Options<'a>,
    stage: Stage,
    session: Option<String>,
    /// Whether `session/cancel` was sent.
    cancelled: bool,
    /// With `--approval ask`: the permission requests waiting for decisions.
    pending: Pending<Asked>,
    /// How the session ended, when a line taken ended it.
    ended: Option<End>,
    /// Why the run fails although the turn ended (a permission request
    /// that offered no option of the kind chosen).
    failure: Option<String>,
    /// Lines sent that the translator has yet to see (it sees them before
    /// the agent's next line).
    sent: Vec<Vec<u8>>,
    line: Vec<u8>,
    msg: Vec<u8>,
    /// When the request the session waits on to open was sent (or, while
    /// a loaded session's history comes, its last line).
    asked_at: Instant,
    /// The id of the turn's `session/prompt` (each turn of a kept agent
    /// has its own).
    prompt_id: u64,
    /// A later turn's prompt (see [`Session::idle`]).
    next: Option<String>,
    /// The agent's lines that came while it was idle: the next turn's.
    later: Vec<Vec<u8>>,
    /// The session's configuration options, as the agent's last answer
    /// that gave them says.
    offers: Vec<Offer>,
}

impl<'a> Session<'a> {
    pub fn new(opts: Options<'a>) -> Self {
        // The first prompt's request id: the next after the session's
        // choices, if the run makes some.
        let choices = u64::from(opts.model.is_some()) + u64::from(opts.effort.is_some());
        let prompt_id = PROMPT + choices;
        Session {
            opts,
            stage: Stage::Initializing,
            session: None,
            cancelled: false,
            pending: Pending::default(),
            ended: None,
            failure: None,
            sent: Vec::new(),
            line: Vec::new(),
            msg: Vec::new(),
            asked_at: Instant::now(),
            prompt_id,
            next: None,
            later: Vec::new(),
            offers: Vec::new(),
        }
    }

    /// Why the run fails although the agent ended its turn, if it does.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Whether a resume cancelled a tool call.
    pub fn user_cancelled(&self) -> bool {
        self.pending.user_cancelled()
    }

    /// Run the session: send `initialize` to `agent_in`, then translate
    /// `agent_out` into `out` line by line, answering requests, until the
    /// prompt is answered. `stop` asks for `session/cancel`. The caller
    /// then closes the agent's stdin and translates what it still writes.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        agent_out: &mut dyn BufRead,
        agent_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<End> {
        self.request(agent_in, INITIALIZE, "initialize", client_init())?;
        self.converse_all(agent_out, agent_in, tr, em, out, stop)
    }

    /// [`Session::converse`], then what it sent translated and the events
    /// written out.
    #[allow(clippy::too_many_arguments)]
    fn converse_all(
        &mut self,
        agent_out: &mut dyn BufRead,
        agent_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<End> {
        let end = self.converse(agent_out, agent_in, tr, em, out, stop);
        self.flush_sent(tr, em);
        em.drain_to(out)?;
        out.flush()?;
        end
    }

    #[allow(clippy::too_many_arguments)]
    fn converse(
        &mut self,
        agent_out: &mut dyn BufRead,
        agent_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<End> {
        loop {
            if stop() && !self.cancelled {
                if self.session.is_none() || self.stage != Stage::Prompting {
                    return Ok(End::Stopped);
                }
                // The agent ends the turn, `cancelled`.
                ask::deny_all(self, agent_in, "stopped")?;
                self.cancel(agent_in)?;
            }
            if let Some(why) = self.unanswered() {
                return Ok(End::Failed(why));
            }
            match agent_out.read_until(b'\n', &mut self.line) {
                Ok(0) if self.line.is_empty() => {
                    return Ok(End::Eof(self.stage != Stage::Initializing))
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Stage::Settling(since) = self.stage {
                        if since.elapsed() >= SETTLE {
                            self.prompt(agent_in)?;
                        }
                    }
                    if let Some(end) = self.for_page(agent_out, agent_in, tr, em, out, stop)? {
                        return Ok(end);
                    }
                    if let Some(w) = self.opts.ask.take() {
                        let waited = if self.pending.due() {
                            Some(ask::wait(self, &w, agent_out, agent_in, tr, em, out, stop)?)
                        } else {
                            None
                        };
                        self.opts.ask = Some(w);
                        match waited {
                            None | Some(Waited::Resumed) => {}
                            Some(Waited::Over) => {
                                return Ok(self.ended.take().unwrap_or(End::TurnEnded))
                            }
                            Some(Waited::Eof) => return Ok(End::Eof(true)),
                            Some(Waited::Stopped) => {
                                ask::deny_all(
                                    self,
                                    agent_in,
                                    "stopped while waiting for decisions",
                                )?;
                                return Ok(End::Stopped);
                            }
                            Some(Waited::Expired(why)) => return Ok(End::Expired(why)),
                        }
                    }
                    continue;
                }
                Err(e) => return Err(e),
            }
            let line = std::mem::take(&mut self.line);
            let over = self.take(line, agent_in, tr, em)?;
            em.drain_to(out)?;
            out.flush()?;
            if over {
                return Ok(self.ended.take().unwrap_or(End::TurnEnded));
            }
        }
    }

    /// Why the session fails if the agent has left the request that opens
    /// it (`initialize`, `session/new`, `session/load`) unanswered longer
    /// than `--start-timeout` allows.
    fn unanswered(&self) -> Option<String> {
        let what = match self.stage {
            Stage::Initializing => "initialize",
            Stage::Opening => "session/new",
            Stage::Loading => "session/load",
            Stage::Choosing(..) => "session/set_config_option",
            Stage::Settling(_) | Stage::Prompting => return None,
        };
        let bound = self.opts.start_timeout;
        if self.asked_at.elapsed() < bound {
            return None;
        }
        let (agent, within) = (self.opts.agent, ask::humanize(bound));
        let why = if self.stage == Stage::Initializing {
            "it does not speak the Agent Client Protocol (ACP) on stdio, or it has not started"
        } else {
            "the session did not open"
        };
        Some(format!(
            "{agent} did not answer {what} within {within} (--start-timeout): {why}"
        ))
    }

    /// React to an agent line: the next request, an answer to the agent,
    /// or the end of the session.
    fn react(
        &mut self,
        msg: &AgentLine,
        agent_in: &mut dyn Write,
        em: &Emitter,
    ) -> io::Result<Option<End>> {
        match (msg.method.as_deref(), msg.id) {
            // An answer to one of our requests (the agent answers no other).
            (None, Some(id)) => {
                let id = id.get().parse::<u64>();
                if let Some(e) = msg.error {
                    let what = match (id, self.stage) {
                        (Ok(INITIALIZE), _) => "initialize",
                        (Ok(SESSION), Stage::Loading) => "session/load",
                        (Ok(SESSION), _) => "session/new",
                        // The translator makes the prompt's error a RUN_ERROR.
                        (Ok(id), Stage::Choosing(_, k)) if id == CONFIG + k as u64 => {
                            return Ok(Some(self.choice_refused(k, e)))
                        }
                        (Ok(id), _) if id == self.prompt_id => return Ok(Some(End::TurnEnded)),
                        _ => return Ok(None),
                    };
                    let (agent, err) = (self.opts.agent, rpc_error(e));
                    return Ok(Some(End::Failed(format!("{agent} refused {what}: {err}"))));
                }
                match (id, self.stage) {
                    (Ok(INITIALIZE), Stage::Initializing) => self.open(msg.result, agent_in),
                    (Ok(SESSION), Stage::Opening) => {
                        let session = msg.result.and_then(session_id);
                        let Some(session) = session else {
                            let agent = self.opts.agent;
                            return Ok(Some(End::Failed(format!(
                                "{agent} answered session/new with no sessionId"
                            ))));
                        };
                        self.session = Some(session);
                        self.opened(msg.result, false, agent_in)
                    }
                    (Ok(SESSION), Stage::Loading) => self.opened(msg.result, true, agent_in),
                    (Ok(id), Stage::Choosing(loaded, k)) if id == CONFIG + k as u64 => {
                        self.choose(k + 1, msg.result, loaded, agent_in)
                    }
                    (Ok(id), Stage::Prompting) if id == self.prompt_id => Ok(Some(End::TurnEnded)),
                    _ => Ok(None),
                }
            }
            (Some("session/request_permission"), Some(id)) => {
                self.permission(id, msg.params, agent_in, em)?;
                Ok(None)
            }
            // Nothing else was advertised (no file system, no terminal).
            (Some(_), Some(id)) => {
                let refusal = ErrorResponse {
                    jsonrpc: "2.0",
                    id,
                    error: RpcError {
                        code: -32601,
                        message: "agui-translate does not answer this request".into(),
                    },
                };
                self.send(agent_in, &to_vec(&refusal), true).map(|()| None)
            }
            _ => {
                if let Stage::Settling(_) = self.stage {
                    // The history still comes.
                    self.stage = Stage::Settling(Instant::now());
                }
                Ok(None)
            }
        }
    }

    /// `initialize` was answered: open the session (new, or loaded when the
    /// agent can load one).
    fn open(
        &mut self,
        result: Option<&RawValue>,
        agent_in: &mut dyn Write,
    ) -> io::Result<Option<End>> {
        let caps = capabilities(result);
        if let Some(why) = self.cannot_take_images(&caps) {
            return Ok(Some(End::Failed(why)));
        }
        if let Some(why) = self.cannot_reach_page(&caps) {
            return Ok(Some(End::Failed(why)));
        }
        let Some(resume) = self.opts.resume else {
            self.stage = Stage::Opening;
            let url = self.page_url();
            let params = SessionParams {
                session_id: None,
                cwd: self.opts.cwd,
                mcp_servers: page_servers(url.as_deref()),
            };
            return self
                .request(agent_in, SESSION, "session/new", params)
                .map(|()| None);
        };
        if !caps.loads() {
            let agent = self.opts.agent;
            return Ok(Some(End::Failed(format!(
                "{agent} cannot load session {resume} (its initialize answer has no loadSession capability): the thread cannot go on"
            ))));
        }
        self.session = Some(resume.to_owned());
        self.load(agent_in).map(|()| None)
    }

    /// The session is open (`loaded`: by `session/load`, whose answer is
    /// `result`): the run's choices are made ([`Session::choose`]), then
    /// the prompt goes.
    fn opened(
        &mut self,
        result: Option<&RawValue>,
        loaded: bool,
        agent_in: &mut dyn Write,
    ) -> io::Result<Option<End>> {
        self.choose(0, result, loaded, agent_in)
    }

    /// The choices the run makes in the session, in order: the model,
    /// then the effort (whose levels are the model's). Each is the kind
    /// of option (its `configOptions` id, or its category) and the value.
    fn choices(&self) -> Vec<(Kind, &'a str)> {
        [
            (Kind::Model, self.opts.model),
            (Kind::Effort, self.opts.effort),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect()
    }

    /// Makes the choice of index `k` (`result`: the answer to the request
    /// before, whose `configOptions`, if it gives them, are now the
    /// session's): `session/set_config_option` if the agent offers the
    /// option (and, for the effort, the value among its options), else the
    /// session fails saying why; past the last choice, the prompt goes.
    fn choose(
        &mut self,
        k: usize,
        result: Option<&RawValue>,
        loaded: bool,
        agent_in: &mut dyn Write,
    ) -> io::Result<Option<End>> {
        if let Some(offers) = offers(result) {
            self.offers = offers;
        }
        let Some(&(kind, value)) = self.choices().get(k) else {
            return self.go(loaded, agent_in).map(|()| None);
        };
        let agent = self.opts.agent;
        let what = kind.name();
        let Some(offer) = self.offers.iter().find(|o| kind.is(o)) else {
            let answer = match (k, loaded) {
                (0, false) => "session/new",
                (0, true) => "session/load",
                _ => "session/set_config_option",
            };
            return Ok(Some(End::Failed(format!(
                "{agent} offers no choice of {what} (its {answer} answer has no configOptions entry {}): the {what} {value} cannot be chosen over the Agent Client Protocol",
                kind.entry()
            ))));
        };
        if kind == Kind::Effort
            && !offer.values.is_empty()
            && !offer.values.iter().any(|v| v == value)
        {
            return Ok(Some(End::Failed(format!(
                "{agent} offers the efforts {} for its model, not {value}: the effort cannot be chosen",
                offer.values.join(", ")
            ))));
        }
        self.stage = Stage::Choosing(loaded, k);
        let (session, id) = (self.session.clone().unwrap_or_default(), offer.id.clone());
        let params = ConfigParams {
            session_id: &session,
            config_id: &id,
            value,
        };
        self.request(
            agent_in,
            CONFIG + k as u64,
            "session/set_config_option",
            params,
        )
        .map(|()| None)
    }

    /// The prompt goes: now, or for a loaded session once its history has
    /// come.
    fn go(&mut self, loaded: bool, agent_in: &mut dyn Write) -> io::Result<()> {
        if loaded {
            self.stage = Stage::Settling(Instant::now());
            Ok(())
        } else {
            self.prompt(agent_in)
        }
    }

    /// The agent refused the choice of index `k` (its error `e`).
    fn choice_refused(&self, k: usize, e: &RawValue) -> End {
        let (kind, value) = self.choices().get(k).copied().unwrap_or((Kind::Model, ""));
        End::Failed(format!(
            "{} refused the {} {value} (session/set_config_option): {}",
            self.opts.agent,
            kind.name(),
            rpc_error(e)
        ))
    }

    /// Send `session/load`.
    fn load(&mut self, agent_in: &mut dyn Write) -> io::Result<()> {
        self.stage = Stage::Loading;
        let session = self.session.clone().unwrap_or_default();
        let url = self.page_url();
        let params = SessionParams {
            session_id: Some(&session),
            cwd: self.opts.cwd,
            mcp_servers: page_servers(url.as_deref()),
        };
        self.request(agent_in, SESSION, "session/load", params)
    }

    /// Why the agent cannot take the session's images or audio, if it has
    /// some and cannot: its `initialize` answer does not say
    /// `promptCapabilities.image` (or `.audio`).
    fn cannot_take_images(&self, caps: &Caps) -> Option<String> {
        let has = |audio: bool| self.opts.attachments.iter().any(|a| a.is_audio() == audio);
        let (what, capability) = if has(false) && !caps.images() {
            ("images", "image")
        } else if has(true) && !caps.audio() {
            ("audio", "audio")
        } else {
            return None;
        };
        Some(format!(
            "{} takes no {what} (its initialize answer has no promptCapabilities.{capability}): the attached files were not sent",
            self.opts.agent
        ))
    }

    /// Send the prompt: the images, then the text.
    fn prompt(&mut self, agent_in: &mut dyn Write) -> io::Result<()> {
        self.stage = Stage::Prompting;
        let session = self.session.clone().unwrap_or_default();
        let mut prompt = Vec::with_capacity(self.opts.attachments.len() + 1);
        // A later turn's prompt has no files (see `Session::idle`).
        let attachments = if self.next.is_some() {
            &[]
        } else {
            self.opts.attachments
        };
        for a in attachments {
            let (mime_type, data) = (a.media_type, a.base64()?);
            prompt.push(if a.is_audio() {
                Block::Audio { mime_type, data }
            } else {
                Block::Image { mime_type, data }
            });
        }
        let next = self.next.take();
        prompt.push(Block::Text {
            text: next.as_deref().unwrap_or(self.opts.prompt),
        });
        let params = PromptParams {
            session_id: &session,
            prompt,
        };
        let id = self.prompt_id;
        self.request(agent_in, id, "session/prompt", params)
    }

    /// `session/cancel`, once.
    fn cancel(&mut self, agent_in: &mut dyn Write) -> io::Result<()> {
        let Some(session) = self.session.clone().filter(|_| !self.cancelled) else {
            return Ok(());
        };
        self.cancelled = true;
        let note = Notification {
            jsonrpc: "2.0",
            method: "session/cancel",
            params: CancelParams {
                session_id: &session,
            },
        };
        self.send(agent_in, &to_vec(&note), true)
    }

    /// A permission request: asked (`--approval ask`), or answered by the
    /// policy.
    fn permission(
        &mut self,
        id: &RawValue,
        params: Option<&RawValue>,
        agent_in: &mut dyn Write,
        em: &Emitter,
    ) -> io::Result<()> {
        let params = params.map_or_else(
            || RawValue::from_string("{}".into()).expect("JSON"),
            ToOwned::to_owned,
        );
        let p: PermissionParams = serde_json::from_str(params.get()).unwrap_or_default();
        let call = p.tool_call.unwrap_or_default();
        let verb = match call.kind.as_deref() {
            Some("execute") => "to run",
            Some("edit") => "to edit",
            Some("delete") => "to delete",
            Some("move") => "to move",
            Some("read") => "to read",
            Some("search") => "to search",
            Some("fetch") => "to fetch",
            _ => "for",
        };
        let what = match call.title.as_deref().filter(|t| !t.is_empty()) {
            Some(t) => format!("{verb}: {t}"),
            None => format!("{verb} a tool call"),
        };
        let asked = Asked {
            id: id.to_owned(),
            options: p.options,
            what,
        };
        let page = call.tool_call_id.as_deref();
        if page.is_some_and(|c| em.page_calls().any(|(p, _)| p == c) || em.is_own_call(c)) {
            return self.grant_page_call(agent_in, &asked);
        }
        if self.opts.ask.is_some() {
            let key =
                serde_json::from_str::<String>(id.get()).unwrap_or_else(|_| id.get().to_owned());
            let tool_call_id = call.tool_call_id.filter(|c| em.tool_started(c));
            self.pending.push(Ask {
                id: key,
                tool_call_id,
                reason: "acp:request_permission",
                message: format!("{} asks permission {}", self.opts.agent, asked.what),
                edits: false,
                metadata: params,
                withdrawn: false,
                cli: asked,
            });
            return Ok(());
        }
        let allowed = match self.opts.approval {
            Approval::Yolo => true,
            Approval::AutoEdit => call.kind.as_deref() == Some("edit"),
            Approval::Default | Approval::Ask => false,
        };
        let verdict = if allowed {
            Verdict::Allow(None)
        } else {
            Verdict::Deny(String::new(), false)
        };
        self.reply(agent_in, &asked, &verdict, true)
    }

    /// Answer a permission request: the option of the kind the verdict
    /// asks for, or (a cancel, or no such option) `cancelled`.
    fn reply(
        &mut self,
        agent_in: &mut dyn Write,
        asked: &Asked,
        verdict: &Verdict,
        shown: bool,
    ) -> io::Result<()> {
        let kinds: &[&str] = match verdict {
            Verdict::Allow(_) => &["allow_once"],
            Verdict::Deny(_, false) => &["reject_once", "reject_always"],
            Verdict::Deny(_, true) => &[],
        };
        let chosen = kinds
            .iter()
            .find_map(|k| asked.options.iter().find(|o| o.kind == *k));
        if chosen.is_none() && !kinds.is_empty() {
            let offered: Vec<String> = asked
                .options
                .iter()
                .map(|o| format!("{} ({})", o.option_id, o.kind))
                .collect();
            self.failure.get_or_insert_with(|| {
                format!(
                    "{} asked permission {} with no {} option (it offered {}): the request was cancelled",
                    self.opts.agent,
                    asked.what,
                    kinds[0],
                    if offered.is_empty() { "none".to_owned() } else { offered.join(", ") }
                )
            });
        }
        if chosen.is_none() {
            // As ACP asks of a client that cancels: the turn first.
            self.cancel(agent_in)?;
        }
        let result = PermissionResult {
            outcome: PermissionOutcome {
                outcome: if chosen.is_some() {
                    "selected"
                } else {
                    "cancelled"
                },
                option_id: chosen.map(|o| o.option_id.as_str()),
            },
        };
        let answer = Response {
            jsonrpc: "2.0",
            id: &asked.id,
            result,
        };
        self.send(agent_in, &to_vec(&answer), shown)
    }

    fn request<P: Serialize>(
        &mut self,
        agent_in: &mut dyn Write,
        id: u64,
        method: &str,
        params: P,
    ) -> io::Result<()> {
        let msg = Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        self.asked_at = Instant::now();
        self.send(agent_in, &to_vec(&msg), true)
    }

    /// Send a line; `shown`: the translator sees it too.
    fn send(&mut self, agent_in: &mut dyn Write, msg: &[u8], shown: bool) -> io::Result<()> {
        self.msg.clear();
        self.msg.extend_from_slice(msg);
        self.msg.push(b'\n');
        if shown {
            self.sent.push(msg.to_vec());
        }
        agent_in.write_all(&self.msg)?;
        agent_in.flush()
    }

    /// The translator sees the lines sent since the agent's last line.
    fn flush_sent(&mut self, tr: &mut dyn Translate, em: &mut Emitter) {
        let mut keep = Vec::new();
        for line in std::mem::take(&mut self.sent) {
            translate_line(line, &mut keep, tr, em);
        }
    }
}

/// What a kept agent process writes when its turn has ended and it waits
/// for the thread's next prompt: `serve` takes it as the end of the
/// response, and keeps the process (see [`Session::idle`]).
pub const IDLE_MARKER: &[u8] = b": agui-translate keeps the agent for the next turn\n\n";

/// The next turn of a kept agent: the input line `{"runId", "prompt"}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NextTurn {
    #[serde(default)]
    pub run_id: Option<String>,
    pub prompt: String,
}

/// A long time: how long an idle agent waits when nothing ends it sooner
/// (its input's end, a stop).
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Session<'_> {
    /// The turn has ended and the agent is kept: the turn's terminal event
    /// goes out with [`IDLE_MARKER`], then the next input line is awaited
    /// (the agent's lines meanwhile are kept for the next turn). `None`
    /// when the agent will have no next turn: the input ended, a stop came,
    /// the agent's output ended, or the line is not a [`NextTurn`].
    pub fn idle(
        &mut self,
        agent_out: &mut dyn BufRead,
        input: &std::sync::mpsc::Receiver<ask::InputLine>,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<Option<NextTurn>> {
        em.end_run();
        em.drain_to(out)?;
        out.write_all(IDLE_MARKER)?;
        out.flush()?;
        let deadline = Instant::now() + FOREVER;
        let mut partial = std::mem::take(&mut self.line);
        let later = &mut self.later;
        loop {
            let tick = ask::tick(
                deadline,
                stop,
                agent_out,
                &mut partial,
                &mut |l| later.push(l),
                input,
            )?;
            match tick {
                ask::Tick::Idle | ask::Tick::Late => {}
                ask::Tick::Input(line) => {
                    self.line = partial;
                    return Ok(serde_json::from_str::<NextTurn>(&line).ok());
                }
                ask::Tick::Stopped | ask::Tick::Eof | ask::Tick::InputEnded => return Ok(None),
            }
        }
    }

    /// The next turn of a kept agent: `session/prompt` on the same
    /// session, named by the line's `runId` (else a fresh id), then the
    /// turn as the first one went, until its prompt is answered.
    #[allow(clippy::too_many_arguments)]
    pub fn next_turn(
        &mut self,
        turn: NextTurn,
        agent_out: &mut dyn BufRead,
        agent_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<End> {
        let run = turn.run_id.unwrap_or_else(crate::base::uuid::v7);
        em.name_next_run(&run);
        self.cancelled = false;
        self.pending = Pending::default();
        self.ended = None;
        self.failure = None;
        self.prompt_id += 1;
        self.next = Some(turn.prompt);
        self.prompt(agent_in)?;
        // The run starts now, not at the agent's first word.
        self.flush_sent(tr, em);
        em.drain_to(out)?;
        out.flush()?;
        for line in std::mem::take(&mut self.later) {
            if self.take(line, agent_in, tr, em)? {
                em.drain_to(out)?;
                out.flush()?;
                return Ok(self.ended.take().unwrap_or(End::TurnEnded));
            }
        }
        self.converse_all(agent_out, agent_in, tr, em, out, stop)
    }
}

impl Asker for Session<'_> {
    type Cli = Asked;

    fn pending(&mut self) -> &mut Pending<Asked> {
        &mut self.pending
    }

    fn partial(&mut self) -> &mut Vec<u8> {
        &mut self.line
    }

    /// Translate one agent line (after the lines sent before it) and act on
    /// it; whether the session ends there. A loaded session's history is
    /// not translated: it is earlier runs'.
    fn take(
        &mut self,
        line: Vec<u8>,
        agent_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
    ) -> io::Result<bool> {
        self.flush_sent(tr, em);
        let text = line.trim_ascii_end().len();
        let msg = serde_json::from_slice::<AgentLine>(&line[..text]).ok();
        let history = matches!(
            self.stage,
            Stage::Loading | Stage::Choosing(true, _) | Stage::Settling(_)
        ) && msg.as_ref().is_some_and(|m| m.id.is_none());
        if history {
            if self.stage == Stage::Loading {
                // The history comes: the agent is not silent.
                self.asked_at = Instant::now();
            }
            self.react(msg.as_ref().expect("parsed"), agent_in, em)?;
            return Ok(false);
        }
        if let Some((route, _)) = &self.opts.page {
            // What the state's calls changed comes before what the agent
            // says after them.
            route.show_state(em);
        }
        translate_line(line.clone(), &mut self.line, tr, em);
        let Some(msg) = msg else {
            return Ok(false);
        };
        let end = self.react(&msg, agent_in, em)?;
        let over = end.is_some();
        self.ended = end;
        Ok(over)
    }

    /// Approved: the `allow_once` option; denied: `reject_once`; cancelled:
    /// `session/cancel` and the `cancelled` outcome. The decision is in the
    /// resumed run already (`approval_response`): the answer is not
    /// translated again.
    fn answer(
        &mut self,
        agent_in: &mut dyn Write,
        ask: &Ask<Asked>,
        verdict: Verdict,
    ) -> io::Result<()> {
        self.reply(agent_in, &ask.cli, &verdict, false)
    }
}

/// A choice the session makes before the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Model,
    Effort,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Model => "model",
            Kind::Effort => "effort",
        }
    }

    /// How a message names the entry that offers it.
    fn entry(self) -> &'static str {
        match self {
            Kind::Model => "\"model\"",
            Kind::Effort => "of category \"thought_level\"",
        }
    }

    /// Whether `o` is the option for it: the model's has the id `model`;
    /// the effort's is of category `thought_level` (OpenCode names it
    /// `effort`).
    fn is(self, o: &Offer) -> bool {
        match self {
            Kind::Model => o.id == "model",
            Kind::Effort => o.category.as_deref() == Some("thought_level"),
        }
    }
}

/// One of a session's configuration options: its id, category, and the
/// values it offers (those of its groups too).
#[derive(Debug)]
struct Offer {
    id: String,
    category: Option<String>,
    values: Vec<String>,
}

/// The `configOptions` of an answer (`session/new`, `session/load`,
/// `session/set_config_option`), if it gives them.
fn offers(result: Option<&RawValue>) -> Option<Vec<Offer>> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer {
        config_options: Option<Vec<serde_json::Value>>,
    }
    let all = serde_json::from_str::<Answer>(result?.get())
        .ok()?
        .config_options?;
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let offers = all.iter().filter_map(|o| {
        let mut values = Vec::new();
        for v in o["options"].as_array().into_iter().flatten() {
            match v["options"].as_array() {
                // A group of values.
                Some(group) => values.extend(group.iter().filter_map(|g| text(&g["value"]))),
                None => values.extend(text(&v["value"])),
            }
        }
        Some(Offer {
            id: text(&o["id"])?,
            category: text(&o["category"]),
            values,
        })
    });
    Some(offers.collect())
}

/// Tools from the page over ACP: the page's MCP server, given in
/// `session/new` (and `session/load`) for the agent to reach over HTTP; its
/// calls, taken by [`mcphttp::Route`], end the run pending as the other
/// routes' do ([`mcp::wait`]).
impl Session<'_> {
    /// The URL of the page's server, when the session has the page's tools.
    fn page_url(&self) -> Option<String> {
        self.opts.page.as_ref().map(|(r, _)| r.url().to_owned())
    }

    /// Why the agent cannot take the page's tools, if the session has some
    /// and it cannot: its `initialize` answer does not say
    /// `mcpCapabilities.http`.
    fn cannot_reach_page(&self, caps: &Caps) -> Option<String> {
        self.opts.page.as_ref()?;
        (!caps.mcp_over_http()).then(|| {
            format!(
                "{} cannot reach the page's tools (its initialize answer has no mcpCapabilities.http): the run was not started",
                self.opts.agent
            )
        })
    }

    /// A permission request for a call of the page's tools: granted whatever
    /// `--approval` says, since the page that runs the call is the one who
    /// decides; the `allow_once` option, else `allow_always`.
    fn grant_page_call(&mut self, agent_in: &mut dyn Write, asked: &Asked) -> io::Result<()> {
        let chosen = ["allow_once", "allow_always"]
            .iter()
            .find_map(|k| asked.options.iter().find(|o| o.kind == *k));
        let Some(option) = chosen else {
            // No option allows it: cancelled, and the run fails saying so.
            return self.reply(agent_in, asked, &Verdict::Allow(None), false);
        };
        let answer = Response {
            jsonrpc: "2.0",
            id: &asked.id,
            result: PermissionResult {
                outcome: PermissionOutcome {
                    outcome: "selected",
                    option_id: Some(&option.option_id),
                },
            },
        };
        // Not the user's decision: no approval_response.
        self.send(agent_in, &to_vec(&answer), false)
    }

    /// The calls of the page's tools that arrived are taken; once they are
    /// due, the run ends with them pending and waits for the page's answers.
    /// How the session ends, if it ends there.
    #[allow(clippy::too_many_arguments)]
    fn for_page(
        &mut self,
        agent_out: &mut dyn BufRead,
        agent_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<Option<End>> {
        let Some((route, w)) = self.opts.page.as_mut() else {
            return Ok(None);
        };
        if route.show_state(em) {
            em.drain_to(out)?;
            out.flush()?;
        }
        route.collect();
        if route.calls().shown_not_come(em) || !route.calls().due() {
            return Ok(None);
        }
        let w = Waiting {
            input: w.input,
            timeout: w.timeout,
            marker: w.marker,
        };
        Ok(
            match mcp::wait(self, &w, agent_out, agent_in, tr, em, out, stop)? {
                Waited::Resumed => None,
                Waited::Over => Some(self.ended.take().unwrap_or(End::TurnEnded)),
                Waited::Eof => Some(End::Eof(true)),
                Waited::Stopped => Some(End::Stopped),
                Waited::Expired(why) => Some(End::Expired(why)),
            },
        )
    }
}

/// The `mcpServers` of `session/new`: the page's, at `url`, if any.
fn page_servers(url: Option<&str>) -> Vec<McpServer<'_>> {
    url.map(|url| McpServer {
        kind: "http",
        name: crate::dialect::request::PAGE_SERVER,
        url,
        headers: [],
    })
    .into_iter()
    .collect()
}

impl mcp::Host for Session<'_> {
    fn calls(&mut self) -> &mut mcp::Calls {
        let (route, _) = self
            .opts
            .page
            .as_mut()
            .expect("calls come only with the page's tools");
        route.calls()
    }

    fn answer_call(
        &mut self,
        _agent_in: &mut dyn Write,
        call: &mcp::Call,
        text: &str,
        is_error: bool,
    ) -> io::Result<()> {
        if let Some((route, _)) = self.opts.page.as_mut() {
            route.answer(call, text, is_error);
        }
        Ok(())
    }
}

/// The `sessionId` of `session/new`'s answer.
fn session_id(result: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct NewSession {
        session_id: Option<String>,
    }
    serde_json::from_str::<NewSession>(result.get())
        .ok()
        .and_then(|n| n.session_id)
        .filter(|s| !s.is_empty())
}

/// A JSON-RPC error as a sentence: its message, the `details` of its
/// `data` if any (Gemini CLI's say what went wrong), and its code.
fn rpc_error(e: &RawValue) -> String {
    #[derive(Deserialize)]
    struct Data {
        #[serde(default)]
        details: Option<String>,
    }
    #[derive(Deserialize)]
    struct Error<'a> {
        #[serde(borrow)]
        data: Option<&'a RawValue>,
    }
    let details = serde_json::from_str::<Error>(e.get())
        .ok()
        .and_then(|e| e.data)
        .and_then(|d| serde_json::from_str::<Data>(d.get()).ok())
        .and_then(|d| d.details);
    match (serde_json::from_str::<RpcError>(e.get()), details) {
        (Ok(err), Some(d)) => format!(
            "{}: {} (error {})",
            ask::shown(&err.message),
            ask::shown(&d),
            err.code
        ),
        (Ok(err), None) => format!("{} (error {})", ask::shown(&err.message), err.code),
        (Err(_), _) => ask::shown(e.get()),
    }
}

fn to_vec<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("serializable")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_their_details() {
        let raw = |s: &str| RawValue::from_string(s.into()).unwrap();
        assert_eq!(
            rpc_error(&raw(
                r#"{"code":-32603,"message":"Internal error","data":{"details":"No previous sessions found for this project."}}"#
            )),
            "Internal error: No previous sessions found for this project. (error -32603)"
        );
        assert_eq!(
            rpc_error(&raw(r#"{"code":-32000,"message":"no\nsessions"}"#)),
            "no\\nsessions (error -32000)"
        );
    }
}
