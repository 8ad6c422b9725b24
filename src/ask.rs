//! `--approval ask` with Claude Code: its permission requests become AG-UI
//! interrupts, and the decisions come back on our standard input.
//!
//! Claude Code is started in its control-protocol mode (`--input-format
//! stream-json --permission-prompt-tool stdio`): the prompt goes in on its
//! stdin as a user message, and a tool call it would ask about comes out as
//! a `control_request` (subtype `can_use_tool`) that waits for a
//! `control_response`. The session translates the CLI's stdout as it
//! comes; asks that arrive together (within [`QUIET`] of each other) end the
//! run with `RUN_FINISHED` outcome `interrupt`, one interrupt per ask. Then
//! it reads one line from our standard input: a resume, shaped like
//! AG-UI's `RunAgentInput` (`{"runId", "resume": [{"interruptId", "status",
//! "payload"}]}`). A resume that answers exactly the pending asks starts the
//! next run (named by its `runId`), the answers go to the CLI, and the
//! translation goes on; any other line is a run that ends in `RUN_ERROR`,
//! and nothing reaches the CLI. No decision within the approval timeout,
//! or the end of our input, denies what is pending.

use std::io::{self, BufRead, Write};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::agui::{code, Emitter, Interrupt, MetaValue, Outcome};
use crate::source::Translate;

/// Asks this close together are one interrupted run's.
pub const QUIET: Duration = Duration::from_millis(200);

/// The default of `--approval-timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What `serve` reads (and never forwards) when a run waits for its next
/// input line: an SSE comment, written only with `--input-marker`.
pub const MARKER: &[u8] = b": agui-translate waits for input\n\n";

/// What the session is given.
pub struct Options<'a> {
    pub prompt: &'a str,
    /// How long pending asks wait for a decision.
    pub timeout: Duration,
    /// Write [`MARKER`] whenever the run waits for an input line.
    pub marker: bool,
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

/// One line of our standard input, or its end.
pub type InputLine = Option<String>;

/// Our standard input, line by line, on a thread of its own (the session
/// waits for a line and for the CLI at once). The first line may have been
/// read already (the prompt).
pub fn input_lines() -> Receiver<InputLine> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in io::stdin().lock().lines() {
            match line {
                Ok(l) if l.trim().is_empty() => {}
                Ok(l) => {
                    if tx.send(Some(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(None);
    });
    rx
}

/// The prompt as the first line of standard input gives it: a JSON string
/// (so that it can hold newlines), or the line as it is.
pub fn prompt_line(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.starts_with('"') {
        if let Ok(s) = serde_json::from_str::<String>(line) {
            return s;
        }
    }
    line.to_owned()
}

/// A `can_use_tool` request of the CLI, waiting for its answer.
struct Ask {
    request_id: String,
    /// The tool call it is about, when the stream showed it.
    tool_call_id: Option<String>,
    message: String,
    /// The tool's input, as the CLI gave it.
    input: Box<RawValue>,
    /// The whole request, for the interrupt's metadata.
    request: Box<RawValue>,
    /// The CLI withdrew it (`control_cancel_request`): nothing is sent.
    withdrawn: bool,
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
}

/// A resume line.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resume {
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    resume: Option<Vec<Answer>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    interrupt_id: String,
    status: String,
    #[serde(default)]
    payload: Option<serde_json::Value>,
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
    content: [TextPart<'a>; 1],
}

#[derive(Serialize)]
struct TextPart<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    text: &'a str,
}

/// What the client may send back for a tool-call interrupt.
const RESPONSE_SCHEMA: &str = r#"{"type":"object","properties":{"approved":{"type":"boolean"},"editedArgs":{"type":"object"},"message":{"type":"string"}},"required":["approved"]}"#;

/// What a resume line comes to: the run id it names, and a decision per
/// pending ask (in order), or why it is refused.
type Resumed = Result<(Option<String>, Vec<Verdict>), (Option<String>, String)>;

/// A decision for one ask.
enum Verdict {
    Allow(Option<Box<RawValue>>),
    Deny(String, bool),
}

/// One session with Claude Code in control-protocol mode.
pub struct Session<'a> {
    opts: Options<'a>,
    pending: Vec<Ask>,
    /// When the last ask arrived.
    last_ask: Option<Instant>,
    /// CLI lines that arrived while the run waited: the next run's.
    later: Vec<Vec<u8>>,
    /// Whether a resume cancelled a tool call (and so the CLI's turn).
    cancelled: bool,
    line: Vec<u8>,
    msg: Vec<u8>,
}

impl<'a> Session<'a> {
    pub fn new(opts: Options<'a>) -> Self {
        Session {
            opts,
            pending: Vec::new(),
            last_ask: None,
            later: Vec::new(),
            cancelled: false,
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
        let user = UserMessage {
            kind: "user",
            message: UserContent {
                role: "user",
                content: [TextPart {
                    kind: "text",
                    text: self.opts.prompt,
                }],
            },
        };
        self.send(cli_in, &serde_json::to_vec(&user).expect("serializable"))?;
        loop {
            if stop() {
                return Ok(End::Stopped);
            }
            match cli_out.read_until(b'\n', &mut self.line) {
                Ok(0) if self.line.is_empty() => return Ok(End::Eof),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.last_ask.is_some_and(|t| t.elapsed() >= QUIET) {
                        self.last_ask = None;
                        if let Some(end) = self.wait(cli_out, cli_in, input, tr, em, out, stop)? {
                            return Ok(end);
                        }
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

    /// Act on one CLI line and translate it; whether it is the `result`.
    fn take(
        &mut self,
        mut line: Vec<u8>,
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
                Some("control_cancel_request") => self.withdraw(rec.request_id.as_deref()),
                _ => {}
            }
        }
        if text > 0 {
            // A line the translator rejects still goes out as RAW.
            em.begin_line();
            if tr.line(&mut line[..text], em).is_err() {
                crate::source::passthrough(em, tr.source(), 0, &line[..text]);
            }
            em.end_line();
        }
        line.clear();
        self.line = line;
        Ok(result)
    }

    /// A request of the CLI: a `can_use_tool` is kept for the interrupt;
    /// others (which this host never registers for) get an error, so that
    /// the CLI does not wait.
    fn request(&mut self, rec: &CliLine, cli_in: &mut dyn Write, em: &Emitter) -> io::Result<()> {
        let Some(id) = rec.request_id.as_deref() else {
            return Ok(());
        };
        let req = rec
            .request
            .and_then(|r| serde_json::from_str::<Request>(r.get()).ok());
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
        let tool = req.tool_name.as_deref().unwrap_or("a tool");
        let input = req.input.map_or_else(
            || RawValue::from_string("{}".into()).expect("JSON"),
            ToOwned::to_owned,
        );
        let tool_call_id = req.tool_use_id.filter(|t| em.tool_started(t));
        self.pending.push(Ask {
            request_id: id.to_owned(),
            tool_call_id,
            message: ask_message(tool, &input),
            input,
            request: rec.request.expect("parsed").to_owned(),
            withdrawn: false,
        });
        self.last_ask = Some(Instant::now());
        Ok(())
    }

    fn withdraw(&mut self, id: Option<&str>) {
        if let Some(ask) = self
            .pending
            .iter_mut()
            .find(|a| Some(a.request_id.as_str()) == id)
        {
            ask.withdrawn = true;
        }
        // Withdrawn before the run was interrupted: never asked.
        if self.last_ask.is_some() {
            self.pending.retain(|a| !a.withdrawn);
            if self.pending.is_empty() {
                self.last_ask = None;
            }
        }
    }

    /// End the run with the pending asks as interrupts and wait for the
    /// input line that resumes them. `None`: resumed, the session goes on.
    #[allow(clippy::too_many_arguments)]
    fn wait(
        &mut self,
        cli_out: &mut dyn BufRead,
        cli_in: &mut dyn Write,
        input: &Receiver<InputLine>,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<Option<End>> {
        self.interrupt(em);
        self.waiting(em, out)?;
        let deadline = Instant::now() + self.opts.timeout;
        loop {
            if stop() {
                return Ok(Some(End::Stopped));
            }
            if Instant::now() >= deadline {
                let why = format!("no decision within {}", humanize(self.opts.timeout));
                self.deny_all(cli_in, &why)?;
                return Ok(Some(End::Expired(why)));
            }
            // The CLI's lines meanwhile are the next run's; a withdrawal is
            // acted on now. A read gives up after a moment of silence.
            match cli_out.read_until(b'\n', &mut self.line) {
                Ok(0) if self.line.is_empty() => return Ok(Some(End::Eof)),
                Ok(_) => {
                    let line = std::mem::take(&mut self.line);
                    if let Ok(rec) = serde_json::from_slice::<CliLine>(&line) {
                        if rec.kind.as_deref() == Some("control_cancel_request") {
                            self.withdraw(rec.request_id.as_deref());
                        }
                    }
                    self.later.push(line);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            let line = match input.try_recv() {
                Ok(Some(line)) => line,
                Ok(None) | Err(TryRecvError::Disconnected) => {
                    let why = "the input ended with no decision";
                    self.deny_all(cli_in, why)?;
                    return Ok(Some(End::Expired(why.to_owned())));
                }
                Err(TryRecvError::Empty) => continue,
            };
            match self.resume(&line) {
                Ok((run_id, verdicts)) => {
                    if let Some(r) = &run_id {
                        em.name_next_run(r);
                    }
                    let thread = em.cli_thread().map(str::to_owned);
                    em.start_run(thread.as_deref(), None);
                    let asks = std::mem::take(&mut self.pending);
                    for (ask, verdict) in asks.iter().zip(verdicts) {
                        self.cancelled |= matches!(verdict, Verdict::Deny(_, true));
                        if !ask.withdrawn {
                            self.answer(cli_in, ask, verdict)?;
                        }
                    }
                    let mut result = false;
                    for line in std::mem::take(&mut self.later) {
                        result |= self.take(line, cli_in, tr, em)?;
                    }
                    em.drain_to(out)?;
                    out.flush()?;
                    if result {
                        return Ok(Some(End::Result));
                    }
                    return Ok(None);
                }
                Err((run_id, why)) => {
                    if let Some(r) = &run_id {
                        em.name_next_run(r);
                    }
                    let thread = em.cli_thread().map(str::to_owned);
                    em.start_run(thread.as_deref(), None);
                    em.fail_run(&why, code::INVALID_RESUME, &[], None);
                    em.end_run();
                    self.waiting(em, out)?;
                }
            }
        }
    }

    /// Whether a resume cancelled a tool call: the CLI then ends its turn
    /// (and exits with a failure).
    pub fn user_cancelled(&self) -> bool {
        self.cancelled
    }

    /// End the run with the pending asks.
    fn interrupt(&mut self, em: &mut Emitter) {
        let schema = RawValue::from_string(RESPONSE_SCHEMA.into()).expect("JSON");
        let interrupts: Vec<Interrupt> = self
            .pending
            .iter()
            .map(|a| Interrupt {
                id: &a.request_id,
                reason: if a.tool_call_id.is_some() {
                    "tool_call"
                } else {
                    "claude:can_use_tool"
                },
                tool_call_id: a.tool_call_id.as_deref(),
                message: Some(&a.message),
                response_schema: Some(MetaValue::Json(&schema)),
                metadata: Some(MetaValue::Json(&a.request)),
            })
            .collect();
        em.finish_run(None, Some(Outcome::Interrupt(&interrupts)), &[]);
        em.end_run();
    }

    /// The run has ended and the next input line is awaited: what is
    /// written goes out now, with the marker if asked for.
    fn waiting(&mut self, em: &mut Emitter, out: &mut dyn Write) -> io::Result<()> {
        em.drain_to(out)?;
        if self.opts.marker {
            out.write_all(MARKER)?;
        }
        out.flush()
    }

    /// The decisions of a resume line, one per pending ask in order, or why
    /// it is refused (with the run id it names, if any).
    fn resume(&self, line: &str) -> Resumed {
        let r: Resume = serde_json::from_str(line).map_err(|e| {
            (
                None,
                format!("not a resume (a JSON object with runId and resume): {e}"),
            )
        })?;
        let run_id = r.run_id.filter(|r| !r.is_empty());
        let fail = |why: String| Err((run_id.clone(), why));
        let ids = || {
            self.pending
                .iter()
                .map(|a| a.request_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let answers = match r.resume {
            Some(a) if !a.is_empty() => a,
            _ => {
                return fail(format!(
                    "the run waits for decisions on interrupts {}: the next run must resume them (new input is refused until then)",
                    ids()
                ))
            }
        };
        let mut verdicts: Vec<Option<Verdict>> = self.pending.iter().map(|_| None).collect();
        for a in &answers {
            let Some(i) = self
                .pending
                .iter()
                .position(|p| p.request_id == a.interrupt_id)
            else {
                return fail(format!(
                    "interrupt {:?} is not pending (stale or unknown); pending: {}",
                    a.interrupt_id,
                    ids()
                ));
            };
            if verdicts[i].is_some() {
                return fail(format!("interrupt {:?} is resumed twice", a.interrupt_id));
            }
            verdicts[i] = Some(match verdict(a) {
                Ok(v) => v,
                Err(why) => return fail(why),
            });
        }
        let missing: Vec<&str> = self
            .pending
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| v.is_none())
            .map(|(p, _)| p.request_id.as_str())
            .collect();
        if !missing.is_empty() {
            return fail(format!(
                "the resume leaves interrupts {} unanswered: it must answer every pending one",
                missing.join(", ")
            ));
        }
        Ok((
            run_id,
            verdicts.into_iter().map(|v| v.expect("all")).collect(),
        ))
    }

    /// Deny every pending ask (the turn ends).
    fn deny_all(&mut self, cli_in: &mut dyn Write, why: &str) -> io::Result<()> {
        for ask in std::mem::take(&mut self.pending) {
            if !ask.withdrawn {
                self.answer(cli_in, &ask, Verdict::Deny(why.to_owned(), true))?;
            }
        }
        Ok(())
    }

    fn answer(&mut self, cli_in: &mut dyn Write, ask: &Ask, verdict: Verdict) -> io::Result<()> {
        let decision = match &verdict {
            Verdict::Allow(edited) => Decision {
                behavior: "allow",
                updated_input: Some(edited.as_deref().unwrap_or(&ask.input)),
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
                request_id: &ask.request_id,
                response: Some(decision),
                error: None,
            },
        };
        self.send(cli_in, &serde_json::to_vec(&msg).expect("serializable"))
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

/// The decision one resume entry makes: `resolved` with `approved: true`
/// allows (with `editedArgs`, an object, as the tool's input), `resolved`
/// otherwise denies, `cancelled` denies and ends the turn.
fn verdict(a: &Answer) -> Result<Verdict, String> {
    let payload = a.payload.as_ref();
    let field = |k: &str| payload.and_then(|p| p.get(k));
    let message = field("message").and_then(|m| m.as_str());
    match a.status.as_str() {
        "resolved" if field("approved").and_then(|v| v.as_bool()) == Some(true) => {
            let edited = match field("editedArgs") {
                None | Some(serde_json::Value::Null) => None,
                Some(v @ serde_json::Value::Object(_)) => {
                    Some(serde_json::value::to_raw_value(v).expect("serializable"))
                }
                Some(_) => {
                    return Err(format!(
                        "interrupt {:?}: editedArgs must be an object (the tool's arguments)",
                        a.interrupt_id
                    ))
                }
            };
            Ok(Verdict::Allow(edited))
        }
        "resolved" => Ok(Verdict::Deny(
            message
                .unwrap_or("The user denied this tool call.")
                .to_owned(),
            false,
        )),
        "cancelled" => Ok(Verdict::Deny(
            message
                .unwrap_or("The user cancelled this tool call.")
                .to_owned(),
            true,
        )),
        other => Err(format!(
            "interrupt {:?}: status {other:?} is neither \"resolved\" nor \"cancelled\"",
            a.interrupt_id
        )),
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

/// A duration as `--approval-timeout` takes it: `10m`, `90s`, `250ms`.
pub fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_line_may_be_a_json_string() {
        assert_eq!(prompt_line("\"two\\nlines\"\n"), "two\nlines");
        assert_eq!(prompt_line("plain text\n"), "plain text");
        assert_eq!(prompt_line("\"quoted\" word"), "\"quoted\" word");
    }

    #[test]
    fn durations_read_as_they_are_given() {
        assert_eq!(humanize(Duration::from_secs(600)), "10m");
        assert_eq!(humanize(Duration::from_secs(90)), "90s");
        assert_eq!(humanize(Duration::from_millis(250)), "250ms");
    }

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
