//! `--approval ask` with Claude Code: its control protocol.
//!
//! Claude Code is started in its control-protocol mode (`--input-format
//! stream-json --permission-prompt-tool stdio`): the prompt goes in on its
//! stdin as a user message, and a tool call it would ask about comes out as
//! a `control_request` (subtype `can_use_tool`) that waits for a
//! `control_response`; a `control_cancel_request` withdraws it. The session
//! translates the CLI's stdout as it comes; its asks become interrupts and
//! the decisions come back as [`crate::converse::ask`] says.

use std::io::{self, BufRead, Write};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::agui::Emitter;
use crate::converse::ask::{
    self, translate_line, Ask, Asker, InputLine, Pending, Verdict, Waited, Waiting,
};
use crate::converse::mcp;
use crate::dialect::request::Attachment;
use crate::source::Translate;

/// What the session is given.
pub struct Options<'a> {
    pub prompt: &'a str,
    /// Files given with the prompt (images, PDFs).
    pub attachments: &'a [Attachment],
    /// How long pending asks wait for a decision.
    pub timeout: Duration,
    /// Write [`ask::MARKER`] whenever the run waits for an input line.
    pub marker: bool,
    /// The page's tools, served to the CLI ([`crate::converse::mcp`]), and
    /// how long their calls wait for the page.
    pub tools: Option<mcp::Server>,
    pub tool_timeout: Duration,
    /// Declare the page's server in an `initialize` request before the
    /// prompt (Qwen Code's SDK MCP servers), rather than on the command line.
    pub declare: bool,
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The CLI's `result`: the turn is over (its stdin is to be closed).
    Result,
    /// The CLI's output ended.
    Eof,
    /// A stop was asked for (a signal, `--timeout`).
    Stopped,
    /// No decision came: the pending asks were denied with this reason.
    Expired(String),
}

/// The parts of a CLI line the session acts on.
#[derive(Deserialize)]
struct CliLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default, borrow)]
    request: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(default)]
    subtype: Option<String>,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    server_name: Option<String>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct ControlResponse<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    response: ResponseBody<'a>,
}

#[derive(Serialize)]
struct ResponseBody<'a> {
    subtype: &'a str,
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    response: Option<Decision<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Decision<'a> {
    behavior: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_input: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    interrupt: bool,
}

#[derive(Serialize)]
struct UserMessage<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    message: UserContent<'a>,
}

#[derive(Serialize)]
struct UserContent<'a> {
    role: &'a str,
    content: Vec<Block<'a>>,
}

/// A content block of a user message.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Block<'a> {
    Text { text: &'a str },
    Image { source: Source },
    Document { source: Source },
}

/// The bytes of an image or a document, base64.
#[derive(Serialize)]
struct Source {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'static str,
    data: String,
}

/// The user message (a stream-json line, without its newline) that gives
/// Claude Code `prompt` and `attachments`: each attachment a content block
/// of its own (`image`, or `document` for a PDF), its bytes base64, before
/// the text, as Anthropic advises.
pub fn user_message(prompt: &str, attachments: &[Attachment]) -> io::Result<Vec<u8>> {
    let mut content = Vec::with_capacity(attachments.len() + 1);
    for a in attachments {
        let source = Source {
            kind: "base64",
            media_type: a.media_type,
            data: a.base64()?,
        };
        content.push(if a.is_image() {
            Block::Image { source }
        } else {
            Block::Document { source }
        });
    }
    content.push(Block::Text { text: prompt });
    let user = UserMessage {
        kind: "user",
        message: UserContent {
            role: "user",
            content,
        },
    };
    Ok(serde_json::to_vec(&user).expect("serializable"))
}

/// Why a CLI's own tool is denied when the run does not ask (Qwen Code
/// given the page's tools: its control layer asks what `-p` denies).
const NOT_ASKED: &str = "this run asks no approvals: qwen's tools that need one are denied (--approval auto-edit or yolo, or --allow-tool, lets them run)";

/// One session with Claude Code in control-protocol mode. An ask carries
/// the tool's input, as the CLI gave it.
pub struct Session<'a> {
    opts: Options<'a>,
    pending: Pending<Box<RawValue>>,
    /// The page's tool calls waiting for the page.
    calls: mcp::Calls,
    line: Vec<u8>,
    msg: Vec<u8>,
}

impl<'a> Session<'a> {
    pub fn new(opts: Options<'a>) -> Self {
        Session {
            opts,
            pending: Pending::default(),
            calls: mcp::Calls::default(),
            line: Vec::new(),
            msg: Vec::new(),
        }
    }

    /// Send the prompt to `cli_in`, then translate `cli_out` (a reader that
    /// gives up now and then with `WouldBlock`) until the CLI's `result`,
    /// asking `input` for the decisions. `stop` says whether a stop was
    /// asked for.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        cli_out: &mut dyn BufRead,
        cli_in: &mut dyn Write,
        input: &Receiver<InputLine>,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<End> {
        let user = user_message(self.opts.prompt, self.opts.attachments)?;
        if self.opts.declare && self.opts.tools.is_some() {
            self.send(cli_in, &mcp::declare_server())?;
        }
        self.send(cli_in, &user)?;
        let w = Waiting {
            input,
            timeout: self.opts.timeout,
            marker: self.opts.marker,
        };
        loop {
            if stop() {
                return Ok(End::Stopped);
            }
            match cli_out.read_until(b'\n', &mut self.line) {
                Ok(0) if self.line.is_empty() => return Ok(End::Eof),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let waited = if self.pending.due() {
                        ask::wait(self, &w, cli_out, cli_in, tr, em, out, stop)?
                    } else if self.calls.due() {
                        let w = Waiting {
                            input,
                            timeout: self.opts.tool_timeout,
                            marker: self.opts.marker,
                        };
                        mcp::wait(self, &w, cli_out, cli_in, tr, em, out, stop)?
                    } else {
                        continue;
                    };
                    match waited {
                        Waited::Resumed => {}
                        Waited::Over => return Ok(End::Result),
                        Waited::Eof => return Ok(End::Eof),
                        Waited::Stopped => return Ok(End::Stopped),
                        Waited::Expired(why) => return Ok(End::Expired(why)),
                    }
                    continue;
                }
                Err(e) => return Err(e),
            }
            let line = std::mem::take(&mut self.line);
            let result = self.take(line, cli_in, tr, em)?;
            em.drain_to(out)?;
            out.flush()?;
            if result {
                return Ok(End::Result);
            }
        }
    }

    /// Whether a resume cancelled a tool call: the CLI then ends its turn
    /// (and exits with a failure).
    pub fn user_cancelled(&self) -> bool {
        self.pending.user_cancelled()
    }

    /// A request of the CLI: a `can_use_tool` is kept for the interrupt;
    /// others (which this host never registers for) get an error, so that
    /// the CLI does not wait.
    fn request(
        &mut self,
        rec: &CliLine,
        cli_in: &mut dyn Write,
        em: &mut Emitter,
    ) -> io::Result<()> {
        let Some(id) = rec.request_id.as_deref() else {
            return Ok(());
        };
        let req = rec
            .request
            .and_then(|r| serde_json::from_str::<Request>(r.get()).ok());
        if let Some(r) = req.as_ref().filter(|r| self.page_s(r)) {
            return self.page_request(id, r, cli_in, em);
        }
        let Some(req) = req.filter(|r| r.subtype.as_deref() == Some("can_use_tool")) else {
            let msg = ControlResponse {
                kind: "control_response",
                response: ResponseBody {
                    subtype: "error",
                    request_id: id,
                    response: None,
                    error: Some("agui-translate does not answer this request"),
                },
            };
            return self.send(cli_in, &serde_json::to_vec(&msg).expect("serializable"));
        };
        if self.opts.declare {
            // Qwen Code on its control layer asks its host about its own
            // tools, where `-p` denies them itself; its runs that ask take
            // ACP, so this one does not ask: denied, as before.
            let msg = ControlResponse {
                kind: "control_response",
                response: ResponseBody {
                    subtype: "success",
                    request_id: id,
                    response: Some(Decision {
                        behavior: "deny",
                        updated_input: None,
                        message: Some(NOT_ASKED),
                        interrupt: false,
                    }),
                    error: None,
                },
            };
            return self.send(cli_in, &serde_json::to_vec(&msg).expect("serializable"));
        }
        let tool = req.tool_name.as_deref().unwrap_or("a tool");
        let input = req.input.map_or_else(
            || RawValue::from_string("{}".into()).expect("JSON"),
            ToOwned::to_owned,
        );
        let tool_call_id = req.tool_use_id.filter(|t| em.tool_started(t));
        self.pending.push(Ask {
            id: id.to_owned(),
            tool_call_id,
            reason: "claude:can_use_tool",
            message: ask_message(tool, &input),
            edits: true,
            metadata: rec.request.expect("parsed").to_owned(),
            withdrawn: false,
            cli: input,
        });
        Ok(())
    }

    /// Whether a request is the page's server's: a message to it, or the
    /// permission to run one of its tools.
    fn page_s(&self, r: &Request) -> bool {
        self.opts.tools.is_some()
            && match r.subtype.as_deref() {
                Some("mcp_message") => r.server_name.as_deref() == Some(mcp::SERVER),
                Some("can_use_tool") => r
                    .tool_name
                    .as_deref()
                    .is_some_and(|t| t.starts_with(mcp::PREFIX)),
                _ => false,
            }
    }

    /// A request of the page's server: a message is answered (a call waits
    /// for the page; a new state is streamed), a permission is given at
    /// once (the page, which runs the tool, is the one who decides;
    /// `--approval` does not apply).
    fn page_request(
        &mut self,
        id: &str,
        r: &Request,
        cli_in: &mut dyn Write,
        em: &mut Emitter,
    ) -> io::Result<()> {
        let server = self.opts.tools.as_mut().expect("checked");
        if r.subtype.as_deref() == Some("can_use_tool") {
            let input = r.input.map_or_else(
                || RawValue::from_string("{}".into()).expect("JSON"),
                ToOwned::to_owned,
            );
            let msg = ControlResponse {
                kind: "control_response",
                response: ResponseBody {
                    subtype: "success",
                    request_id: id,
                    response: Some(Decision {
                        behavior: "allow",
                        updated_input: Some(&input),
                        message: None,
                        interrupt: false,
                    }),
                    error: None,
                },
            };
            return self.send(cli_in, &serde_json::to_vec(&msg).expect("serializable"));
        }
        let empty = RawValue::from_string("{}".into()).expect("JSON");
        let reply = server.message(id, r.message.unwrap_or(&empty));
        if let Some(state) = server.take_state() {
            em.state_update(&state);
        }
        match reply {
            mcp::Reply::Now(reply) => {
                let msg = mcp::control_response(id, &reply);
                self.send(cli_in, &msg)
            }
            mcp::Reply::Call(call) => {
                self.calls.push(call);
                Ok(())
            }
        }
    }

    fn send(&mut self, cli_in: &mut dyn Write, msg: &[u8]) -> io::Result<()> {
        self.msg.clear();
        self.msg.extend_from_slice(msg);
        self.msg.push(b'\n');
        // A CLI that has stopped reading ends its output too: that ends the
        // session.
        let _ = cli_in.write_all(&self.msg).and_then(|()| cli_in.flush());
        Ok(())
    }
}

impl Asker for Session<'_> {
    type Cli = Box<RawValue>;

    fn pending(&mut self) -> &mut Pending<Box<RawValue>> {
        &mut self.pending
    }

    fn partial(&mut self) -> &mut Vec<u8> {
        &mut self.line
    }

    /// Act on one CLI line and translate it; whether it is the `result`.
    fn take(
        &mut self,
        line: Vec<u8>,
        cli_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
    ) -> io::Result<bool> {
        let text = line.trim_ascii_end().len();
        let mut result = false;
        // Only a control record or the result is looked at twice.
        let ours = memchr::memmem::find(&line[..text], b"control_").is_some()
            || memchr::memmem::find(&line[..text], b"\"result\"").is_some();
        let rec = ours
            .then(|| serde_json::from_slice::<CliLine>(&line[..text]).ok())
            .flatten();
        if let Some(rec) = rec {
            match rec.kind.as_deref() {
                Some("result") => result = true,
                Some("control_request") => self.request(&rec, cli_in, em)?,
                Some("control_cancel_request") => self.pending.withdraw(rec.request_id.as_deref()),
                _ => {}
            }
        }
        translate_line(line, &mut self.line, tr, em);
        Ok(result)
    }

    /// A withdrawal is acted on while the run waits.
    fn noticed(&mut self, line: &[u8]) {
        if memchr::memmem::find(line, b"control_cancel_request").is_none() {
            return;
        }
        if let Ok(rec) = serde_json::from_slice::<CliLine>(line) {
            if rec.kind.as_deref() == Some("control_cancel_request") {
                self.pending.withdraw(rec.request_id.as_deref());
            }
        }
    }

    fn answer(
        &mut self,
        cli_in: &mut dyn Write,
        ask: &Ask<Box<RawValue>>,
        verdict: Verdict,
    ) -> io::Result<()> {
        let decision = match &verdict {
            Verdict::Allow(edited) => Decision {
                behavior: "allow",
                updated_input: Some(edited.as_deref().unwrap_or(&ask.cli)),
                message: None,
                interrupt: false,
            },
            Verdict::Deny(why, interrupt) => Decision {
                behavior: "deny",
                updated_input: None,
                message: Some(why),
                interrupt: *interrupt,
            },
        };
        let msg = ControlResponse {
            kind: "control_response",
            response: ResponseBody {
                subtype: "success",
                request_id: &ask.id,
                response: Some(decision),
                error: None,
            },
        };
        self.send(cli_in, &serde_json::to_vec(&msg).expect("serializable"))
    }
}

impl mcp::Host for Session<'_> {
    fn calls(&mut self) -> &mut mcp::Calls {
        &mut self.calls
    }

    fn answer_call(
        &mut self,
        cli_in: &mut dyn Write,
        call: &mcp::Call,
        text: &str,
        is_error: bool,
    ) -> io::Result<()> {
        self.send(cli_in, &mcp::claude_answer(call, text, is_error))
    }
}

/// `Claude Code wants to run Bash: ls`: the tool, and its command, file or
/// pattern when it has one.
fn ask_message(tool: &str, input: &RawValue) -> String {
    #[derive(Deserialize)]
    struct Subject {
        #[serde(default)]
        command: Option<String>,
        #[serde(default)]
        file_path: Option<String>,
        #[serde(default)]
        pattern: Option<String>,
        #[serde(default)]
        url: Option<String>,
    }
    let subject = serde_json::from_str::<Subject>(input.get())
        .ok()
        .and_then(|s| s.command.or(s.file_path).or(s.pattern).or(s.url));
    match subject {
        Some(s) => format!("Claude Code wants to run {tool}: {s}"),
        None => format!("Claude Code wants to run {tool}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_tool_and_what_it_does() {
        let raw = |s: &str| RawValue::from_string(s.into()).unwrap();
        assert_eq!(
            ask_message("Bash", &raw(r#"{"command":"ls -l"}"#)),
            "Claude Code wants to run Bash: ls -l"
        );
        assert_eq!(
            ask_message("Write", &raw(r#"{"file_path":"a.txt","content":"x"}"#)),
            "Claude Code wants to run Write: a.txt"
        );
        assert_eq!(
            ask_message("Tool", &raw("{}")),
            "Claude Code wants to run Tool"
        );
    }
}
