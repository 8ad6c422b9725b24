//! `--approval ask`: a CLI's approval requests become AG-UI interrupts, and
//! the decisions come back on our standard input. This is what every CLI
//! that can ask shares; how each one asks and is answered is its session's
//! ([`crate::converse::control`] for Claude Code, [`crate::converse::appserver`] for the Codex
//! app-server).
//!
//! Asks that arrive together (within [`QUIET`] of each other) end the run
//! with `RUN_FINISHED` outcome `interrupt`, one interrupt per ask. Then the
//! session reads one line from our standard input: a resume, shaped like
//! AG-UI's `RunAgentInput` (`{"runId", "resume": [{"interruptId", "status",
//! "payload"}]}`). A resume that answers exactly the pending asks starts the
//! next run (named by its `runId`), the answers go to the CLI, and the
//! translation goes on; any other line is a run that ends in `RUN_ERROR`,
//! and nothing reaches the CLI. No decision within the approval timeout,
//! or the end of our input, denies what is pending.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agui::{code, Emitter, Interrupt, MetaValue, Outcome};
use crate::base::json::rfc3339_ms;
use crate::source::Translate;

/// Asks this close together are one interrupted run's.
pub const QUIET: Duration = Duration::from_millis(200);

/// The default of `--approval-timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What `serve` reads (and never forwards) when a run waits for its next
/// input line: an SSE comment, written only with `--input-marker`.
pub const MARKER: &[u8] = b": agui-translate waits for input\n\n";

/// One line of our standard input, or its end.
pub type InputLine = Option<String>;

/// Called when an input line comes: see [`wake_on_input`].
type Waker = Box<dyn Fn() + Send>;

static INPUT_WAKER: std::sync::Mutex<Option<Waker>> = std::sync::Mutex::new(None);

/// Have `waker` called each time an input line (or the input's end) comes,
/// after it is given to the receiver of [`input_lines`]; `None`: no more.
/// The reader of the CLI's output, which looks at the input between its
/// reads, then looks at once rather than when its read gives up.
pub fn wake_on_input(waker: Option<Waker>) {
    *INPUT_WAKER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = waker;
}

fn wake() {
    if let Some(w) = INPUT_WAKER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
    {
        w();
    }
}

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
                    wake();
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(None);
        wake();
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

/// How the decisions come.
pub struct Waiting<'a> {
    pub input: &'a Receiver<InputLine>,
    /// How long pending asks wait for a decision.
    pub timeout: Duration,
    /// Write [`MARKER`] whenever the run waits for an input line.
    pub marker: bool,
}

/// A request of the CLI, waiting for its answer.
pub struct Ask<T> {
    /// The interrupt's id.
    pub id: String,
    /// The tool call it is about, when the stream showed it.
    pub tool_call_id: Option<String>,
    /// The interrupt's reason when no tool call was shown.
    pub reason: &'static str,
    /// What the page shows (made safe to show by [`Pending::push`]).
    pub message: String,
    /// Whether the CLI runs edited arguments (`editedArgs`); one that
    /// cannot is never offered them, and a resume that sends them is
    /// refused rather than approved as asked.
    pub edits: bool,
    /// The whole request, for the interrupt's metadata.
    pub metadata: Box<RawValue>,
    /// The CLI withdrew it: nothing is sent.
    pub withdrawn: bool,
    /// What the CLI's session needs to answer it.
    pub cli: T,
}

/// A decision for one ask.
pub enum Verdict {
    /// Allowed, with the edited arguments if any.
    Allow(Option<Box<RawValue>>),
    /// Denied, with why; `true`: the user cancelled (the turn ends).
    Deny(String, bool),
}

/// The asks of a session, and what arrived while they waited.
pub struct Pending<T> {
    asks: Vec<Ask<T>>,
    /// When the last ask arrived, until the run is interrupted.
    last: Option<Instant>,
    /// CLI lines that arrived while the run waited: the next run's.
    later: Vec<Vec<u8>>,
    /// Whether a resume cancelled a tool call (and so the CLI's turn).
    cancelled: bool,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            asks: Vec::new(),
            last: None,
            later: Vec::new(),
            cancelled: false,
        }
    }
}

impl<T> Pending<T> {
    pub fn push(&mut self, mut ask: Ask<T>) {
        ask.message = shown(&ask.message);
        ask.metadata = for_page(&ask.metadata);
        self.asks.push(ask);
        self.last = Some(Instant::now());
    }

    /// Whether the asks are to interrupt the run now: the CLI has been quiet
    /// for [`QUIET`] since the last one.
    pub fn due(&mut self) -> bool {
        let due = self.last.is_some_and(|t| t.elapsed() >= QUIET);
        if due {
            self.last = None;
        }
        due
    }

    /// The CLI withdrew the ask `id`; withdrawn before the run was
    /// interrupted, it is never asked.
    pub fn withdraw(&mut self, id: Option<&str>) {
        if let Some(ask) = self.asks.iter_mut().find(|a| Some(a.id.as_str()) == id) {
            ask.withdrawn = true;
        }
        if self.last.is_some() {
            self.asks.retain(|a| !a.withdrawn);
            if self.asks.is_empty() {
                self.last = None;
            }
        }
    }

    /// Whether a resume cancelled a tool call: the CLI then ends its turn.
    pub fn user_cancelled(&self) -> bool {
        self.cancelled
    }

    /// End the run with the pending asks, which wait until `expires_at`.
    fn interrupt(&self, em: &mut Emitter, expires_at: &str) {
        let schema = RawValue::from_string(RESPONSE_SCHEMA.into()).expect("JSON");
        let as_asked = RawValue::from_string(RESPONSE_SCHEMA_AS_ASKED.into()).expect("JSON");
        let interrupts: Vec<Interrupt> = self
            .asks
            .iter()
            .map(|a| Interrupt {
                id: &a.id,
                reason: if a.tool_call_id.is_some() {
                    "tool_call"
                } else {
                    a.reason
                },
                tool_call_id: a.tool_call_id.as_deref(),
                message: Some(&a.message),
                response_schema: Some(MetaValue::Json(if a.edits { &schema } else { &as_asked })),
                expires_at: Some(expires_at),
                metadata: Some(MetaValue::Json(&a.metadata)),
            })
            .collect();
        em.finish_run(None, Some(Outcome::Interrupt(&interrupts)), &[]);
        em.end_run();
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
        let run_id = r.run_id.filter(|r| !r.is_empty()).map(Cow::into_owned);
        let fail = |why: String| Err((run_id.clone(), why));
        // A refusal never names a pending interrupt the line did not name:
        // the ids are what answers them.
        let pending = match self.asks.len() {
            1 => "1 interrupt".to_owned(),
            n => format!("{n} interrupts"),
        };
        let answers = match r.resume {
            Some(a) if !a.is_empty() => a,
            _ => {
                return fail(format!(
                    "the run waits for decisions on {pending}: the next run must resume them (new input is refused until then)"
                ))
            }
        };
        let mut verdicts: Vec<Option<Verdict>> = self.asks.iter().map(|_| None).collect();
        for a in &answers {
            let Some(i) = self.asks.iter().position(|p| p.id == a.interrupt_id) else {
                return fail(format!(
                    "interrupt {:?} is not pending (stale or unknown)",
                    a.interrupt_id
                ));
            };
            if verdicts[i].is_some() {
                return fail(format!("interrupt {:?} is resumed twice", a.interrupt_id));
            }
            verdicts[i] = Some(match verdict(a) {
                Ok(Verdict::Allow(Some(_))) if !self.asks[i].edits => {
                    return fail(format!(
                        "interrupt {:?}: this CLI runs the command only as it asked, so editedArgs cannot be applied: approve it as asked, or deny it",
                        a.interrupt_id
                    ))
                }
                Ok(v) => v,
                Err(why) => return fail(why),
            });
        }
        let missing = verdicts.iter().filter(|v| v.is_none()).count();
        if missing > 0 {
            return fail(format!(
                "the resume leaves {missing} of the {pending} pending unanswered: it must answer every pending one"
            ));
        }
        Ok((
            run_id,
            verdicts.into_iter().map(|v| v.expect("all")).collect(),
        ))
    }
}

/// What a CLI's session does for [`wait`].
pub trait Asker {
    /// What its asks carry.
    type Cli;
    fn pending(&mut self) -> &mut Pending<Self::Cli>;
    /// The part of a CLI line read so far.
    fn partial(&mut self) -> &mut Vec<u8>;
    /// Act on one CLI line and translate it; whether the session is over.
    fn take(
        &mut self,
        line: Vec<u8>,
        cli_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
    ) -> io::Result<bool>;
    /// A CLI line that arrived while the run waits (a withdrawal is acted
    /// on at once); it is taken when the next run starts.
    fn noticed(&mut self, _line: &[u8]) {}
    /// Send the CLI the decision on `ask`.
    fn answer(
        &mut self,
        cli_in: &mut dyn Write,
        ask: &Ask<Self::Cli>,
        verdict: Verdict,
    ) -> io::Result<()>;
}

/// Translate a line the CLI wrote while its session talks with it (a line
/// the translator rejects still goes out as RAW), then give its buffer back
/// to `keep` for the next read when that holds none.
pub fn translate_line(
    mut line: Vec<u8>,
    keep: &mut Vec<u8>,
    tr: &mut dyn Translate,
    em: &mut Emitter,
) {
    let text = line.trim_ascii_end().len();
    if text > 0 {
        em.begin_line();
        if tr.line(&mut line[..text], em).is_err() {
            crate::source::passthrough(em, tr.source(), 0, &line[..text]);
        }
        em.end_line();
    }
    line.clear();
    if keep.is_empty() {
        *keep = line;
    }
}

/// How a [`wait`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// The asks were answered and the next run goes on.
    Resumed,
    /// A line taken in the resumed run ended the session.
    Over,
    /// The CLI's output ended.
    Eof,
    /// A stop was asked for (a signal, `--timeout`).
    Stopped,
    /// No decision came: the pending asks were denied with this reason.
    Expired(String),
}

/// End the run with the pending asks as interrupts and wait for the input
/// line that resumes them.
#[allow(clippy::too_many_arguments)]
pub fn wait<A: Asker>(
    s: &mut A,
    w: &Waiting,
    cli_out: &mut dyn BufRead,
    cli_in: &mut dyn Write,
    tr: &mut dyn Translate,
    em: &mut Emitter,
    out: &mut dyn Write,
    stop: &dyn Fn() -> bool,
) -> io::Result<Waited> {
    let deadline = Instant::now() + w.timeout;
    let expires = SystemTime::now() + w.timeout;
    let ms = expires
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    s.pending()
        .interrupt(em, &rfc3339_ms(i64::try_from(ms).unwrap_or(i64::MAX)));
    waiting(w, em, out)?;
    let mut partial = std::mem::take(s.partial());
    let waited = loop {
        let line = match tick(
            deadline,
            stop,
            cli_out,
            &mut partial,
            &mut |line| {
                s.noticed(&line);
                s.pending().later.push(line);
            },
            w.input,
        )? {
            Tick::Stopped => break Waited::Stopped,
            Tick::Late => {
                let why = format!("no decision within {}", humanize(w.timeout));
                deny_all(s, cli_in, &why)?;
                break Waited::Expired(why);
            }
            Tick::Eof => break Waited::Eof,
            Tick::InputEnded => {
                let why = "the input ended with no decision";
                deny_all(s, cli_in, why)?;
                break Waited::Expired(why.to_owned());
            }
            Tick::Idle => continue,
            Tick::Input(line) => line,
        };
        let resumed = s.pending().resume(&line);
        start_resumed(
            em,
            match &resumed {
                Ok((r, _)) | Err((r, _)) => r.as_deref(),
            },
        );
        match resumed {
            Ok((_, verdicts)) => {
                let asks = std::mem::take(&mut s.pending().asks);
                for (ask, verdict) in asks.iter().zip(verdicts) {
                    s.pending().cancelled |= matches!(verdict, Verdict::Deny(_, true));
                    decided(em, ask, &verdict);
                    if !ask.withdrawn {
                        s.answer(cli_in, ask, verdict)?;
                    }
                }
                *s.partial() = partial;
                let later = std::mem::take(&mut s.pending().later);
                return go_on(later, &mut |l, em| s.take(l, cli_in, tr, em), em, out);
            }
            Err((_, why)) => refused(w, em, out, &why, code::INVALID_RESUME)?,
        }
    };
    *s.partial() = partial;
    Ok(waited)
}

/// What was decided on `ask`, in the resumed run before anything the CLI
/// does with it: a CUSTOM `approval_response` with the interrupt's id, the
/// tool call's, the status (`approved`, `denied`, `cancelled`) and, when
/// the arguments were edited, the arguments that run.
fn decided<T>(em: &mut Emitter, ask: &Ask<T>, verdict: &Verdict) {
    /// The event's value; the edited arguments are copied as they came.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    // In the order of its keys, as before.
    struct Decided<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        edited_args: Option<&'a RawValue>,
        interrupt_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<&'a str>,
        status: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<&'a str>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        withdrawn: bool,
    }
    let (status, edited_args, message) = match verdict {
        Verdict::Allow(args) => ("approved", args.as_deref(), None),
        Verdict::Deny(why, false) => ("denied", None, Some(why.as_str())),
        Verdict::Deny(why, true) => ("cancelled", None, Some(why.as_str())),
    };
    let value = serde_json::value::to_raw_value(&Decided {
        interrupt_id: &ask.id,
        tool_call_id: ask.tool_call_id.as_deref(),
        status,
        edited_args,
        message,
        withdrawn: ask.withdrawn,
    })
    .expect("serializable");
    em.custom("approval_response", MetaValue::Json(&value));
}

/// The resumed run goes on: the CLI's lines that came while it waited
/// (`later`) are taken in order by `take`, and the events written; whether
/// one of them ended the turn.
pub(crate) fn go_on(
    later: Vec<Vec<u8>>,
    take: &mut dyn FnMut(Vec<u8>, &mut Emitter) -> io::Result<bool>,
    em: &mut Emitter,
    out: &mut dyn Write,
) -> io::Result<Waited> {
    let mut over = false;
    for line in later {
        over |= take(line, em)?;
    }
    em.drain_to(out)?;
    out.flush()?;
    Ok(if over { Waited::Over } else { Waited::Resumed })
}

/// The resume line is refused (`why`, as `code`): the resumed run ends in
/// RUN_ERROR and the run waits again.
pub(crate) fn refused(
    w: &Waiting,
    em: &mut Emitter,
    out: &mut dyn Write,
    why: &str,
    code: &str,
) -> io::Result<()> {
    em.fail_run(why, code, &[], None);
    em.end_run();
    waiting(w, em, out)
}

/// The run has ended and the next input line is awaited: what is written
/// goes out now, with the marker if asked for.
pub(crate) fn waiting(w: &Waiting, em: &mut Emitter, out: &mut dyn Write) -> io::Result<()> {
    em.drain_to(out)?;
    if w.marker {
        out.write_all(MARKER)?;
    }
    out.flush()
}

/// What one look around gives while a run waits for its input line.
pub(crate) enum Tick {
    /// A stop was asked for.
    Stopped,
    /// The deadline has passed.
    Late,
    /// The CLI's output ended.
    Eof,
    /// The input ended with nothing more.
    InputEnded,
    /// Nothing yet.
    Idle,
    /// The input line came.
    Input(String),
}

/// One look around while a run waits: the stop and the deadline, a line
/// the CLI wrote meanwhile (handed to `later`: it is the next run's; a read
/// gives up after a moment of silence), then the input line if one came.
pub(crate) fn tick(
    deadline: Instant,
    stop: &dyn Fn() -> bool,
    cli_out: &mut dyn BufRead,
    partial: &mut Vec<u8>,
    later: &mut dyn FnMut(Vec<u8>),
    input: &Receiver<InputLine>,
) -> io::Result<Tick> {
    if stop() {
        return Ok(Tick::Stopped);
    }
    if Instant::now() >= deadline {
        return Ok(Tick::Late);
    }
    match cli_out.read_until(b'\n', partial) {
        Ok(0) if partial.is_empty() => return Ok(Tick::Eof),
        Ok(_) => later(std::mem::take(partial)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    Ok(match input.try_recv() {
        Ok(Some(line)) => Tick::Input(line),
        Ok(None) | Err(TryRecvError::Disconnected) => Tick::InputEnded,
        Err(TryRecvError::Empty) => Tick::Idle,
    })
}

/// The run that follows an answered wait starts, named by the input's
/// `runId` where it gave one.
pub(crate) fn start_resumed(em: &mut Emitter, run_id: Option<&str>) {
    if let Some(r) = run_id {
        em.name_next_run(r);
    }
    let thread = em.cli_thread().map(str::to_owned);
    em.start_run(thread.as_deref(), None);
}

/// Deny every pending ask (the turn ends).
pub fn deny_all<A: Asker>(s: &mut A, cli_in: &mut dyn Write, why: &str) -> io::Result<()> {
    for ask in std::mem::take(&mut s.pending().asks) {
        if !ask.withdrawn {
            s.answer(cli_in, &ask, Verdict::Deny(why.to_owned(), true))?;
        }
    }
    Ok(())
}

/// A resume line, borrowed from it: nothing of a payload is parsed but the
/// fields a decision reads, so that a large resume costs little more than
/// its line.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resume<'a> {
    #[serde(default, borrow)]
    run_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    resume: Option<Vec<Answer<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    #[serde(borrow)]
    interrupt_id: Cow<'a, str>,
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(default, borrow)]
    payload: Option<&'a RawValue>,
}

/// The fields of a payload a decision reads, each left unparsed until
/// read; any others are skipped.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Payload<'a> {
    #[serde(default, borrow)]
    approved: Option<&'a RawValue>,
    #[serde(default, borrow)]
    edited_args: Option<&'a RawValue>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
}

/// What the client may send back for a tool-call interrupt.
const RESPONSE_SCHEMA: &str = r#"{"type":"object","properties":{"approved":{"type":"boolean"},"editedArgs":{"type":"object"},"message":{"type":"string"}},"required":["approved"]}"#;

/// The same for a CLI that runs a command only as it asked: no edits.
const RESPONSE_SCHEMA_AS_ASKED: &str = r#"{"type":"object","properties":{"approved":{"type":"boolean"},"message":{"type":"string"}},"required":["approved"]}"#;

/// Fields of a CLI's request that describe the machine rather than the
/// call (its working directory, its settings files and their rules), left
/// out of an interrupt's metadata: a page decides from the tool's input
/// and the message.
const MACHINE_ONLY: [&str; 3] = ["cwd", "permission_suggestions", "blocked_path"];

/// A CLI's request as an interrupt's metadata, for a page that may be on
/// another machine: without [`MACHINE_ONLY`] fields, and with paths under
/// the request's `cwd` made relative to it (`./src/x`).
pub fn for_page(request: &RawValue) -> Box<RawValue> {
    use serde_json::Value;
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(request.get()) else {
        return request.to_owned();
    };
    let cwd = map.get("cwd").and_then(Value::as_str).map(str::to_owned);
    for key in MACHINE_ONLY {
        map.remove(key);
    }
    fn relative(v: &mut Value, cwd: &str) {
        match v {
            Value::String(s) => {
                if s == cwd {
                    *s = ".".to_owned();
                } else if let Some(rest) = s.strip_prefix(cwd).and_then(|r| r.strip_prefix('/')) {
                    *s = format!("./{rest}");
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|v| relative(v, cwd)),
            Value::Object(o) => o.values_mut().for_each(|v| relative(v, cwd)),
            _ => {}
        }
    }
    let mut value = Value::Object(map);
    if let Some(cwd) = cwd.filter(|c| c.starts_with('/') && c.len() > 1) {
        relative(&mut value, cwd.trim_end_matches('/'));
    }
    serde_json::value::to_raw_value(&value).unwrap_or_else(|_| request.to_owned())
}

/// The longest message shown, in characters: a longer one keeps its start
/// and its end (where a command's last step hides) around a count of what
/// was left out.
const MAX_SHOWN: usize = 800;

/// What is kept of a long message's end.
const SHOWN_TAIL: usize = 200;

/// A run of more spaces than this is shown as its count.
const MAX_SPACES: usize = 4;

/// `message` as a page may show it without hiding anything: control
/// characters (a newline, an escape) as escapes (`\n`, `\u{1b}`),
/// characters that reorder or hide text (bidirectional overrides and
/// isolates, zero-width characters) as escapes, a long run of spaces as
/// `[N spaces]`, and a long message cut in its middle, saying how much.
pub fn shown(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_SHOWN + 64));
    let mut spaces = 0;
    let flush = |out: &mut String, spaces: &mut usize| {
        if *spaces > MAX_SPACES {
            out.push_str(&format!(" [{spaces} spaces] "));
        } else {
            out.extend(std::iter::repeat_n(' ', *spaces));
        }
        *spaces = 0;
    };
    for c in message.chars() {
        if c == ' ' {
            spaces += 1;
            continue;
        }
        flush(&mut out, &mut spaces);
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || hides_text(c) => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    flush(&mut out, &mut spaces);
    let n = out.chars().count();
    if n <= MAX_SHOWN {
        return out;
    }
    let head: String = out.chars().take(MAX_SHOWN - SHOWN_TAIL).collect();
    let tail: String = out.chars().skip(n - SHOWN_TAIL).collect();
    let left = n - (MAX_SHOWN - SHOWN_TAIL) - SHOWN_TAIL;
    format!("{head} … [{left} characters] … {tail}")
}

/// Characters that change how the text around them is shown, or show as
/// nothing: bidirectional marks, embeddings, overrides and isolates,
/// zero-width spaces and joiners, the word joiner, the byte-order mark, and
/// the other invisible format characters.
fn hides_text(c: char) -> bool {
    matches!(c,
        '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180e}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
        | '\u{fff9}'..='\u{fffb}' | '\u{e0000}'..='\u{e007f}')
}

/// What a resume line comes to: the run id it names, and a decision per
/// pending ask (in order), or why it is refused.
type Resumed = Result<(Option<String>, Vec<Verdict>), (Option<String>, String)>;

/// The decision one resume entry makes: `resolved` with `approved: true`
/// allows (with `editedArgs`, an object, as the tool's input), `resolved`
/// otherwise denies, `cancelled` denies and ends the turn.
fn verdict(a: &Answer) -> Result<Verdict, String> {
    // A payload that is not an object has none of the fields.
    let payload: Payload = a
        .payload
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let message = payload
        .message
        .and_then(|m| serde_json::from_str::<Cow<str>>(m.get()).ok());
    let approved = payload.approved.is_some_and(|v| v.get() == "true");
    match &*a.status {
        "resolved" if approved => {
            let edited = match payload.edited_args {
                None => None,
                Some(v) if v.get() == "null" => None,
                Some(v) if v.get().starts_with('{') => Some(one_line(v)),
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
                .as_deref()
                .unwrap_or("The user denied this tool call.")
                .to_owned(),
            false,
        )),
        "cancelled" => Ok(Verdict::Deny(
            message
                .as_deref()
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

/// A JSON value on one line: a line break in JSON is whitespace between
/// tokens (strings hold theirs escaped), so it becomes a space.
pub fn one_line(v: &RawValue) -> Box<RawValue> {
    let text = v.get();
    if !text.contains(['\n', '\r']) {
        return v.to_owned();
    }
    RawValue::from_string(text.replace(['\n', '\r'], " ")).expect("still JSON")
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
    fn a_shown_message_hides_nothing_and_stays_short() {
        assert_eq!(shown("ls -l"), "ls -l");
        assert_eq!(shown("a\nb\tc\r"), "a\\nb\\tc\\r");
        assert_eq!(shown("x\u{1b}[2Jy"), "x\\u{1b}[2Jy");
        assert_eq!(
            shown("a\u{202e}b\u{2066}c\u{200b}d"),
            "a\\u{202e}b\\u{2066}c\\u{200b}d"
        );
        assert_eq!(shown("a    b"), "a    b");
        assert_eq!(shown("a     b"), "a [5 spaces] b");
        let long = format!("{}{}", "a".repeat(1000), "END");
        let s = shown(&long);
        assert!(s.starts_with(&"a".repeat(600)), "{s}");
        assert!(s.ends_with("aaEND"), "{s}");
        assert!(s.contains(" … [203 characters] … "), "{s}");
        assert!(s.chars().count() < MAX_SHOWN + 40);
    }

    #[test]
    fn metadata_for_a_page_names_no_place_on_the_machine() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let codex = raw(
            r#"{"itemId":"c1","command":"/bin/bash -lc 'cat /srv/w/a'","cwd":"/srv/w","commandActions":[{"type":"read","path":"/srv/w/src/a.rs"},{"path":"/srv/work"}],"grantRoot":"/srv/w"}"#,
        );
        let v: serde_json::Value = serde_json::from_str(for_page(&codex).get()).unwrap();
        assert_eq!(v.get("cwd"), None);
        assert_eq!(v["commandActions"][0]["path"], "./src/a.rs");
        assert_eq!(v["commandActions"][1]["path"], "/srv/work");
        assert_eq!(v["grantRoot"], ".");
        assert_eq!(v["itemId"], "c1");
        let claude = raw(
            r#"{"tool_name":"Bash","input":{"command":"ls"},"permission_suggestions":[{"type":"addDirectories","directories":["/home/u/p"]}],"blocked_path":"/home/u/p"}"#,
        );
        let v: serde_json::Value = serde_json::from_str(for_page(&claude).get()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"tool_name":"Bash","input":{"command":"ls"}})
        );
    }

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
}
