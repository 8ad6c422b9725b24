//! The client side of `codex app-server`: the JSON-RPC messages this program
//! sends, and the loop that reads the server's stdout, translates it as it
//! arrives and answers the server's requests.
//!
//! One session is one prompt: `initialize`, the `initialized` notification,
//! `thread/start` (or `thread/resume`), then `turn/start` with the prompt. The
//! session ends with that turn's `turn/completed`; the caller then closes the
//! server's stdin. Approval requests are answered by the `--approval` policy;
//! what it does not allow is declined, and the stream says so (a CUSTOM
//! `approval_response` event). With `--approval ask` they become interrupts
//! instead, and the decisions come back as [`crate::converse::ask`] says. A stop request (SIGINT, SIGTERM, `--timeout`)
//! sends `turn/interrupt` once the turn is known. The page's tools
//! (`--page-tools`) are the new thread's `dynamicTools` (an experimental
//! field: the client says it takes the experimental API); each call comes
//! as an `item/tool/call` request that waits for the page, as
//! [`crate::converse::mcp`] says.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::agui::Emitter;
use crate::base::json;
use crate::converse::ask::{self, translate_line, Ask, Asker, Pending, Verdict, Waited, Waiting};
use crate::converse::mcp;
use crate::dialect::request::{Approval, Attachment};
use crate::source::Translate;

/// What one session asks of the server.
pub struct Options<'a> {
    pub prompt: &'a str,
    /// Images given with the prompt.
    pub attachments: &'a [Attachment],
    /// A thread to resume (`--resume`), else a new one.
    pub resume: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub model: Option<&'a str>,
    pub approval: Approval,
    /// With `--approval ask`: where the decisions come from.
    pub ask: Option<Waiting<'a>>,
    /// With `--page-tools`: the page's tools, and where the answers to
    /// their calls come from (its timeout is the tool timeout).
    pub page: Option<(mcp::Server, Waiting<'a>)>,
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The turn completed (in any status: the stream tells which).
    TurnCompleted,
    /// The server answered one of our requests with an error.
    Refused,
    /// The server's stdout ended first.
    Eof,
    /// A stop was asked for while the run waited for decisions.
    Stopped,
    /// No decision came: the pending requests were cancelled with this
    /// reason.
    Expired(String),
}

#[derive(Serialize)]
struct Request<'a, P: Serialize> {
    id: u64,
    method: &'a str,
    params: P,
}

#[derive(Serialize)]
struct Notification<'a> {
    method: &'a str,
}

#[derive(Serialize)]
struct Response<'a, R: Serialize> {
    id: &'a RawValue,
    result: R,
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    id: &'a RawValue,
    error: RpcError<'a>,
}

#[derive(Serialize)]
struct RpcError<'a> {
    code: i64,
    message: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams<'a> {
    client_info: ClientInfo<'a>,
    capabilities: Capabilities,
}

#[derive(Serialize)]
struct ClientInfo<'a> {
    name: &'a str,
    title: &'a str,
    version: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Capabilities {
    experimental_api: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThreadParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    thread_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_policy: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dynamic_tools: Option<Vec<DynamicTool<'a>>>,
}

/// One of the page's tools, as `thread/start` takes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DynamicTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a RawValue,
}

/// The parts of an `item/tool/call` request the client reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallLine {
    params: ToolCallParams,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallParams {
    #[serde(default)]
    call_id: Option<String>,
    tool: String,
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TurnParams<'a> {
    thread_id: &'a str,
    input: Vec<UserInput<'a>>,
}

/// An item of a turn's input: the prompt, or an image as a `data:` URL.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum UserInput<'a> {
    Text {
        text: &'a str,
        text_elements: [(); 0],
    },
    Image {
        url: String,
    },
}

/// The input of the turn: each attached image (as a `data:` URL, its bytes
/// base64), then the prompt.
fn turn_input<'a>(prompt: &'a str, attachments: &[Attachment]) -> io::Result<Vec<UserInput<'a>>> {
    let mut input = Vec::with_capacity(attachments.len() + 1);
    for a in attachments {
        input.push(UserInput::Image {
            url: format!("data:{};base64,{}", a.media_type, a.base64()?),
        });
    }
    input.push(UserInput::Text {
        text: prompt,
        text_elements: [],
    });
    Ok(input)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InterruptParams<'a> {
    thread_id: &'a str,
    turn_id: &'a str,
}

#[derive(Serialize)]
struct Decision<'a> {
    decision: &'a str,
}

/// The CUSTOM `approval_response` event: what was answered, and why.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApprovalResponse<'a> {
    request_id: &'a RawValue,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    item_id: Option<&'a str>,
    decision: &'a str,
    reason: &'a str,
}

/// What the client needs from a server line.
#[derive(Deserialize)]
struct ServerLine<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    result: Option<Ids<'a>>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<Ids<'a>>,
}

/// Thread, turn and item ids, wherever they are.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Ids<'a> {
    #[serde(borrow)]
    thread: Option<IdOnly<'a>>,
    #[serde(borrow)]
    turn: Option<IdOnly<'a>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    item_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct IdOnly<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    id: Option<Cow<'a, str>>,
}

/// Request ids of this client.
const INITIALIZE: u64 = 0;
const THREAD: u64 = 1;
const TURN: u64 = 2;
const INTERRUPT: u64 = 3;

/// One session with the server.
pub struct Session<'a> {
    opts: Options<'a>,
    thread: Option<String>,
    turn: Option<String>,
    interrupted: bool,
    /// The `approval_response` event for the request on this line, written
    /// after the request itself.
    answered: Option<Box<RawValue>>,
    /// With `--approval ask`: the approval requests waiting for decisions.
    pending: Pending<Asked>,
    /// With `--page-tools`: the calls waiting for the page.
    calls: mcp::Calls,
    /// How the session ended, when a line taken ended it.
    ended: Option<End>,
    line: Vec<u8>,
    msg: Vec<u8>,
}

/// An approval request of the server waiting for a decision: its JSON-RPC
/// id, and whether it is one of the older requests (whose decisions are
/// `approved`/`denied`/`abort`, not `accept`/`decline`/`cancel`).
pub struct Asked {
    id: Box<RawValue>,
    older: bool,
}

impl<'a> Session<'a> {
    pub fn new(opts: Options<'a>) -> Self {
        Session {
            opts,
            thread: None,
            turn: None,
            interrupted: false,
            answered: None,
            pending: Pending::default(),
            calls: mcp::Calls::default(),
            ended: None,
            line: Vec::new(),
            msg: Vec::new(),
        }
    }

    /// Run the session: send the opening requests to `server_in`, then
    /// translate `server_out` into `out` line by line, answering requests,
    /// until the turn completes. `stop` asks for `turn/interrupt`. The
    /// caller then closes the server's stdin, translates what the server
    /// still writes, and ends the input ([`Translate::finish`]).
    pub fn run(
        &mut self,
        server_out: &mut dyn BufRead,
        server_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> io::Result<End> {
        let init = InitializeParams {
            client_info: ClientInfo {
                name: "agui_translate",
                title: "agui-translate",
                version: env!("CARGO_PKG_VERSION"),
            },
            capabilities: Capabilities {
                experimental_api: self.opts.page.is_some(),
            },
        };
        self.send(server_in, &request(INITIALIZE, "initialize", init))?;
        loop {
            if stop.load(Ordering::Relaxed) {
                // Sent once the turn is known (a server that never gets
                // there is ended by the supervisor).
                self.interrupt(server_in)?;
            }
            // A reader may give up waiting with `WouldBlock` so that a stop
            // is seen while the server is silent; the part of a line read
            // so far stays in `self.line`.
            match server_out.read_until(b'\n', &mut self.line) {
                Ok(0) if self.line.is_empty() => return Ok(End::Eof),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.calls.due() {
                        let stopped = || stop.load(Ordering::Relaxed);
                        match self.wait_for_page(server_out, server_in, tr, em, out, &stopped)? {
                            Waited::Resumed => {}
                            Waited::Over => {
                                return Ok(self.ended.take().unwrap_or(End::TurnCompleted))
                            }
                            Waited::Eof => return Ok(End::Eof),
                            Waited::Stopped => return Ok(End::Stopped),
                            Waited::Expired(why) => return Ok(End::Expired(why)),
                        }
                    }
                    if let Some(w) = self.opts.ask.take() {
                        let waited = if self.pending.due() {
                            let stopped = || stop.load(Ordering::Relaxed);
                            Some(ask::wait(
                                self, &w, server_out, server_in, tr, em, out, &stopped,
                            )?)
                        } else {
                            None
                        };
                        self.opts.ask = Some(w);
                        match waited {
                            None | Some(Waited::Resumed) => {}
                            Some(Waited::Over) => {
                                return Ok(self.ended.take().unwrap_or(End::TurnCompleted))
                            }
                            Some(Waited::Eof) => return Ok(End::Eof),
                            Some(Waited::Stopped) => {
                                let why = "stopped while waiting for decisions";
                                ask::deny_all(self, server_in, why)?;
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
            let over = self.take(line, server_in, tr, em)?;
            em.drain_to(out)?;
            out.flush()?;
            if over {
                return Ok(self.ended.take().unwrap_or(End::TurnCompleted));
            }
        }
    }

    /// Send `turn/interrupt` for the running turn (once).
    pub fn interrupt(&mut self, server_in: &mut dyn Write) -> io::Result<()> {
        let (Some(thread), Some(turn), false) = (&self.thread, &self.turn, self.interrupted) else {
            return Ok(());
        };
        let params = InterruptParams {
            thread_id: thread,
            turn_id: turn,
        };
        let msg = request(INTERRUPT, "turn/interrupt", params);
        self.interrupted = true;
        self.send(server_in, &msg)
    }

    /// React to a server line: the next request, an answer to the server,
    /// or the end of the session.
    fn answer(
        &mut self,
        line: &[u8],
        server_in: &mut dyn Write,
        em: &mut Emitter,
    ) -> io::Result<Option<End>> {
        let Ok(msg) = serde_json::from_slice::<ServerLine>(line) else {
            return Ok(None);
        };
        let ids = msg.result.as_ref().or(msg.params.as_ref());
        let thread = ids
            .and_then(|i| i.thread.as_ref())
            .and_then(|t| t.id.as_deref());
        let turn = ids
            .and_then(|i| i.turn.as_ref())
            .and_then(|t| t.id.as_deref());
        match (msg.method.as_deref(), msg.id) {
            // A response to one of our requests.
            (None, Some(id)) => {
                let id = id.get().parse::<u64>();
                if msg.error.is_some() && id != Ok(INTERRUPT) {
                    return Ok(Some(End::Refused));
                }
                match id {
                    Ok(INITIALIZE) => {
                        let note = Notification {
                            method: "initialized",
                        };
                        let line = serde_json::to_vec(&note).expect("serializable");
                        self.send(server_in, &line)?;
                        let (method, thread_id) = match self.opts.resume {
                            Some(t) => ("thread/resume", Some(t)),
                            None => ("thread/start", None),
                        };
                        let (approval_policy, sandbox) = policy(self.opts.approval);
                        // A resumed thread keeps the tools it started with
                        // (thread/resume takes none).
                        let dynamic_tools = self
                            .opts
                            .page
                            .as_ref()
                            .filter(|_| thread_id.is_none())
                            .map(|(server, _)| dynamic_tools(server));
                        let params = ThreadParams {
                            thread_id,
                            cwd: self.opts.cwd,
                            model: self.opts.model,
                            approval_policy,
                            sandbox,
                            dynamic_tools,
                        };
                        self.send(server_in, &request(THREAD, method, params))?;
                    }
                    Ok(THREAD) => {
                        let Some(thread) = thread else {
                            return Ok(Some(End::Refused));
                        };
                        self.thread = Some(thread.to_owned());
                        let params = TurnParams {
                            thread_id: thread,
                            input: turn_input(self.opts.prompt, self.opts.attachments)?,
                        };
                        self.send(server_in, &request(TURN, "turn/start", params))?;
                    }
                    Ok(TURN) => {
                        if let Some(turn) = turn {
                            self.turn = Some(turn.to_owned());
                        }
                    }
                    _ => {}
                }
            }
            // A request from the server.
            (Some(method), Some(id)) => {
                let item = ids.and_then(|i| i.item_id.as_deref());
                if method == "item/tool/call" && self.page_call(line, id, server_in, em)? {
                    return Ok(None);
                }
                if self.opts.ask.is_some() && self.ask(line, method, id, item, em) {
                    return Ok(None);
                }
                self.answer_request(server_in, method, id, item)?;
            }
            (Some("turn/started"), None) if self.turn.is_none() => {
                self.turn = turn.map(str::to_owned);
            }
            (Some("turn/completed"), None) => {
                // Servers before 0.66 name no thread here.
                let ours = ids
                    .and_then(|i| i.thread_id.as_deref())
                    .is_none_or(|t| Some(t) == self.thread.as_deref());
                let this_turn = self.turn.is_none() || turn == self.turn.as_deref();
                if ours && this_turn {
                    return Ok(Some(End::TurnCompleted));
                }
            }
            _ => {}
        }
        Ok(None)
    }

    /// Keep a call of one of the page's tools for the page, or answer a
    /// call of the state's tool at once (streaming the new state); false
    /// when it is neither.
    fn page_call(
        &mut self,
        line: &[u8],
        id: &RawValue,
        server_in: &mut dyn Write,
        em: &mut Emitter,
    ) -> io::Result<bool> {
        let Some((server, _)) = &mut self.opts.page else {
            return Ok(false);
        };
        let Ok(call) = serde_json::from_slice::<ToolCallLine>(line) else {
            return Ok(false);
        };
        let key = serde_json::from_str::<String>(id.get()).unwrap_or_else(|_| id.get().to_owned());
        if call.params.tool == crate::converse::state::TOOL {
            let Some((text, is_error)) = server.update_state(call.params.arguments.as_deref())
            else {
                return Ok(false);
            };
            if let Some(state) = server.take_state() {
                em.state_update(&state);
            }
            let call = mcp::Call::new(key, id.to_owned(), call.params.tool, call.params.call_id);
            self.send(server_in, &mcp::codex_answer(&call, &text, is_error))?;
            return Ok(true);
        }
        if !server.names().contains(&call.params.tool) {
            return Ok(false);
        }
        let call = mcp::Call::new(key, id.to_owned(), call.params.tool, call.params.call_id);
        self.calls.push(call);
        Ok(true)
    }

    /// End the run with the page's calls pending, and wait for the answers.
    fn wait_for_page(
        &mut self,
        server_out: &mut dyn BufRead,
        server_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<Waited> {
        let (server, w) = self
            .opts
            .page
            .take()
            .expect("calls come only with the page's tools");
        let waited = mcp::wait(self, &w, server_out, server_in, tr, em, out, stop);
        self.opts.page = Some((server, w));
        waited
    }

    /// Keep an approval request for an interrupt (`--approval ask`); false
    /// for a request that is not one.
    fn ask(
        &mut self,
        line: &[u8],
        method: &str,
        id: &RawValue,
        item: Option<&str>,
        em: &Emitter,
    ) -> bool {
        let (older, what) = match method {
            "item/commandExecution/requestApproval" => (false, "run"),
            "item/fileChange/requestApproval" => (false, "change files"),
            "execCommandApproval" => (true, "run"),
            "applyPatchApproval" => (true, "change files"),
            _ => return false,
        };
        #[derive(Deserialize)]
        struct Line<'a> {
            #[serde(borrow)]
            params: Option<&'a RawValue>,
        }
        let params = serde_json::from_slice::<Line>(line)
            .ok()
            .and_then(|l| l.params)
            .map_or_else(
                || RawValue::from_string("{}".into()).expect("JSON"),
                ToOwned::to_owned,
            );
        // The older requests name their tool call `callId`.
        let call = item.map(str::to_owned).or_else(|| {
            serde_json::from_str::<serde_json::Value>(params.get())
                .ok()
                .and_then(|p| p.get("callId")?.as_str().map(str::to_owned))
        });
        let tool_call_id = call.filter(|c| em.tool_started(c));
        let key = serde_json::from_str::<String>(id.get()).unwrap_or_else(|_| id.get().to_owned());
        self.pending.push(Ask {
            id: key,
            tool_call_id,
            reason: "codex:approval",
            message: ask_message(what, &params),
            edits: false,
            metadata: params,
            withdrawn: false,
            cli: Asked {
                id: id.to_owned(),
                older,
            },
        });
        true
    }

    /// Answer a server request by the approval policy; requests this client
    /// cannot answer get a JSON-RPC error, so that the turn does not wait.
    fn answer_request(
        &mut self,
        server_in: &mut dyn Write,
        method: &str,
        id: &RawValue,
        item: Option<&str>,
    ) -> io::Result<()> {
        let approval = self.opts.approval;
        let (allowed, yes, no) = match method {
            "item/commandExecution/requestApproval" => {
                (approval == Approval::Yolo, "accept", "decline")
            }
            "item/fileChange/requestApproval" => {
                (approval != Approval::Default, "accept", "decline")
            }
            "execCommandApproval" => (approval == Approval::Yolo, "approved", "denied"),
            "applyPatchApproval" => (approval != Approval::Default, "approved", "denied"),
            _ => {
                let msg = serde_json::to_vec(&ErrorResponse {
                    id,
                    error: RpcError {
                        code: -32601,
                        message: "agui-translate does not answer this request",
                    },
                })
                .expect("serializable");
                return self.send(server_in, &msg);
            }
        };
        let decision = if allowed { yes } else { no };
        let msg = serde_json::to_vec(&Response {
            id,
            result: Decision { decision },
        })
        .expect("serializable");
        self.send(server_in, &msg)?;
        let reason = match (allowed, approval) {
            (true, _) => "allowed by --approval",
            (false, Approval::Default) => "--approval default allows no tool that asks",
            (false, _) => "--approval auto-edit allows file edits only",
        };
        let event = ApprovalResponse {
            request_id: id,
            method,
            item_id: item,
            decision,
            reason,
        };
        self.answered = Some(serde_json::value::to_raw_value(&event).expect("serializable"));
        Ok(())
    }

    fn send(&mut self, server_in: &mut dyn Write, msg: &[u8]) -> io::Result<()> {
        self.msg.clear();
        self.msg.extend_from_slice(msg);
        self.msg.push(b'\n');
        server_in.write_all(&self.msg)?;
        server_in.flush()
    }
}

impl mcp::Host for Session<'_> {
    fn calls(&mut self) -> &mut mcp::Calls {
        &mut self.calls
    }

    fn answer_call(
        &mut self,
        server_in: &mut dyn Write,
        call: &mcp::Call,
        text: &str,
        is_error: bool,
    ) -> io::Result<()> {
        self.send(server_in, &mcp::codex_answer(call, text, is_error))
    }
}

/// The page's tools as `thread/start` takes them.
fn dynamic_tools(server: &mcp::Server) -> Vec<DynamicTool<'_>> {
    let any: &RawValue = serde_json::from_str(r#"{"type":"object"}"#).expect("JSON");
    server
        .tools()
        .iter()
        .map(|t| DynamicTool {
            name: &t.name,
            description: &t.description,
            input_schema: t.parameters.as_deref().unwrap_or(any),
        })
        .collect()
}

impl Asker for Session<'_> {
    type Cli = Asked;

    fn pending(&mut self) -> &mut Pending<Asked> {
        &mut self.pending
    }

    fn partial(&mut self) -> &mut Vec<u8> {
        &mut self.line
    }

    /// Act on one server line and translate it; whether the session ends
    /// there.
    fn take(
        &mut self,
        line: Vec<u8>,
        server_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
    ) -> io::Result<bool> {
        let end = self.answer(&line, server_in, em)?;
        translate_line(line, &mut self.line, tr, em);
        if let Some(value) = self.answered.take() {
            em.custom("approval_response", crate::agui::MetaValue::Json(&value));
        }
        let over = end.is_some();
        self.ended = end;
        Ok(over)
    }

    /// Approved: `accept` (`approved`); denied: `decline` (`denied`);
    /// cancelled: `cancel` (`abort`), which ends the turn. Edited arguments
    /// have no place in the answer.
    fn answer(
        &mut self,
        server_in: &mut dyn Write,
        ask: &Ask<Asked>,
        verdict: Verdict,
    ) -> io::Result<()> {
        let decision = match (verdict, ask.cli.older) {
            (Verdict::Allow(_), false) => "accept",
            (Verdict::Allow(_), true) => "approved",
            (Verdict::Deny(_, false), false) => "decline",
            (Verdict::Deny(_, false), true) => "denied",
            (Verdict::Deny(_, true), false) => "cancel",
            (Verdict::Deny(_, true), true) => "abort",
        };
        let msg = serde_json::to_vec(&Response {
            id: &ask.cli.id,
            result: Decision { decision },
        })
        .expect("serializable");
        self.send(server_in, &msg)
    }
}

/// `Codex wants to run: ls`: what the request is about, with its command
/// or the files of its change when it names them.
fn ask_message(what: &str, params: &RawValue) -> String {
    #[derive(Deserialize)]
    struct Subject {
        #[serde(default)]
        command: Option<serde_json::Value>,
        #[serde(default)]
        reason: Option<String>,
        #[serde(default, rename = "fileChanges")]
        file_changes: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let Ok(s) = serde_json::from_str::<Subject>(params.get()) else {
        return format!("Codex wants to {what}");
    };
    let subject = match s.command {
        Some(serde_json::Value::String(c)) => Some(c),
        // The older request gives the argv.
        Some(serde_json::Value::Array(argv)) => Some(
            argv.iter()
                .filter_map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => s
            .file_changes
            .map(|f| f.keys().cloned().collect::<Vec<_>>().join(", "))
            .or(s.reason),
    };
    match subject {
        Some(s) if !s.is_empty() => format!("Codex wants to {what}: {s}"),
        _ => format!("Codex wants to {what}"),
    }
}

fn request<P: Serialize>(id: u64, method: &str, params: P) -> Vec<u8> {
    serde_json::to_vec(&Request { id, method, params }).expect("serializable")
}

/// The thread's approval policy and sandbox for `--approval`, as `codex
/// exec` gets them: the server's defaults; `--full-auto`; no approvals and no
/// sandbox.
fn policy(approval: Approval) -> (Option<&'static str>, Option<&'static str>) {
    match approval {
        Approval::Default => (None, None),
        Approval::AutoEdit => (Some("on-request"), Some("workspace-write")),
        Approval::Yolo => (Some("never"), Some("danger-full-access")),
        // Every command not known to be safe is asked about.
        Approval::Ask => (Some("untrusted"), None),
    }
}
