//! What a thread has said, kept for a page that comes back to it: the
//! messages of each run, compacted from its events (whole text messages of
//! the user and the assistant, tool calls with their results), kept in the
//! thread's file next to its session ([`super::threads`]), and sent back
//! as a `MESSAGES_SNAPSHOT` to a request that asks for the thread (one
//! with no new user message) in a run that starts no CLI. And the events
//! of each run going ([`Live`]), for readers that rejoin it: a run whose
//! own client has gone away goes on for them, for `--rejoin-grace` with
//! none.

use std::collections::HashMap;
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::serve::input::RunAgentInput;
use crate::serve::Shared;

/// The most a thread's history holds (bytes of its file): the oldest
/// messages go first.
pub(super) const MAX_HISTORY: usize = 1024 * 1024;

/// The most bytes of one run's events recorded: what a run says past them
/// is not in its thread's history (which keeps at most [`MAX_HISTORY`]).
const MAX_RUN_EVENTS: usize = 8 * MAX_HISTORY;

/// The messages of one run, gathered from its server-sent events as they
/// are streamed.
#[derive(Default)]
pub(super) struct Recorder {
    /// The start of an event not yet whole.
    pending: Vec<u8>,
    messages: Vec<Value>,
    /// Message or tool call id → where it is in `messages` (and, for a
    /// tool call, its index among the message's calls).
    open: HashMap<String, (usize, Option<usize>)>,
    /// Bytes of events taken so far.
    seen: usize,
    /// Stops recording: a run's events past [`MAX_RUN_EVENTS`] bytes are
    /// not kept (its history ends there).
    full: bool,
    /// Events to send after the run's first (its RUN_STARTED), once.
    after_start: Vec<u8>,
    /// The user's message the run answers (its id and content as kept:
    /// [`kept_user`]), if any.
    user: Option<(String, Value)>,
    /// Events seen so far.
    events: usize,
    /// What the run used, published in the page's state.
    info: Option<crate::serve::page::RunInfo>,
}

impl Recorder {
    /// A recorder of the run of `input`, which answers its last user
    /// message (its id, or a new one; its words as the page sent them,
    /// without the page's context).
    pub(super) fn for_request(input: &RunAgentInput) -> Self {
        let id = input
            .last_user_id()
            .filter(|id| super::input::id_ok(id))
            .map_or_else(
                || format!("user-{}", crate::base::uuid::v7()),
                str::to_owned,
            );
        Recorder {
            user: Some((id, kept_user(input))),
            ..Recorder::default()
        }
    }

    /// Sends `events` after the run's first event.
    pub(super) fn after_start(&mut self, events: Vec<u8>) {
        self.after_start = events;
    }

    /// Publishes what the run used in the page's state (`info`): its
    /// snapshot goes after the run's first event (after those of
    /// [`Recorder::after_start`]), the model's state is merged with it, and
    /// it is sent again, with the run's usage, as a STATE_DELTA before each
    /// RUN_FINISHED.
    pub(super) fn run_info(&mut self, info: crate::serve::page::RunInfo) {
        self.after_start.extend_from_slice(&info.snapshot());
        self.info = Some(info);
    }

    /// Takes the next bytes of the run's stream and gives back the whole
    /// events among them, to send: with those of
    /// [`Recorder::after_start`] after the first, and the run's
    /// information ([`Recorder::run_info`]) in the state.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.seen += bytes.len();
        let before = self.pending.len();
        let mut pending = std::mem::take(&mut self.pending);
        pending.extend_from_slice(bytes);
        let mut out = Vec::with_capacity(pending.len());
        // Only the new bytes (and the one before them) can hold an event's end.
        let mut from = before.saturating_sub(1);
        let mut done = 0;
        while let Some(end) = memchr::memmem::find(&pending[from..], b"\n\n").map(|e| from + e) {
            self.event(&pending[done..end + 2], &mut out);
            done = end + 2;
            from = done;
        }
        pending.drain(..done);
        self.pending = pending;
        if self.seen > MAX_RUN_EVENTS {
            self.full = true;
        }
        out
    }

    /// One whole event of the run (`block`), recorded and added to `out`
    /// as it is to be sent.
    fn event(&mut self, block: &[u8], out: &mut Vec<u8>) {
        // The writer puts the type first.
        let is = |ty: &[u8]| block.starts_with(b"data: {\"type\":") && block[14..].starts_with(ty);
        match &mut self.info {
            Some(info) if is(b"\"STATE_SNAPSHOT\"") => {
                out.extend_from_slice(&info.model_state(block))
            }
            Some(info) if is(b"\"RUN_FINISHED\"") => {
                out.extend_from_slice(&info.finished(block));
                out.extend_from_slice(block);
            }
            _ => out.extend_from_slice(block),
        }
        self.events += 1;
        if self.events == 1 {
            out.append(&mut self.after_start);
        }
        if self.full {
            return;
        }
        for line in block.split(|&b| b == b'\n') {
            if let Some(data) = line.strip_prefix(b"data: ") {
                if let Ok(event) = serde_json::from_slice::<Value>(data) {
                    self.apply(&event);
                }
            }
        }
    }

    fn apply(&mut self, e: &Value) {
        let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
        match e["type"].as_str().unwrap_or_default() {
            "TEXT_MESSAGE_START" => {
                let role = e["role"].as_str().unwrap_or("assistant");
                self.open
                    .insert(s("messageId"), (self.messages.len(), None));
                self.messages
                    .push(json!({"id": s("messageId"), "role": role, "content": ""}));
            }
            "TEXT_MESSAGE_CONTENT" => {
                if let Some(&(i, None)) = self.open.get(&s("messageId")) {
                    append(&mut self.messages[i]["content"], &s("delta"));
                }
            }
            "TOOL_CALL_START" => {
                let parent = s("parentMessageId");
                let i = match self.open.get(&parent) {
                    Some(&(i, None)) if !parent.is_empty() => i,
                    _ => {
                        let id = if parent.is_empty() {
                            s("toolCallId")
                        } else {
                            parent
                        };
                        self.messages.push(json!({"id": id, "role": "assistant"}));
                        self.open.insert(id, (self.messages.len() - 1, None));
                        self.messages.len() - 1
                    }
                };
                let calls = &mut self.messages[i]["toolCalls"];
                if !calls.is_array() {
                    *calls = json!([]);
                }
                let calls = calls.as_array_mut().expect("an array");
                calls.push(json!({"id": s("toolCallId"), "type": "function",
                    "function": {"name": s("toolCallName"), "arguments": ""}}));
                self.open
                    .insert(s("toolCallId"), (i, Some(calls.len() - 1)));
            }
            "TOOL_CALL_ARGS" => {
                if let Some(&(i, Some(c))) = self.open.get(&s("toolCallId")) {
                    let args = &mut self.messages[i]["toolCalls"][c]["function"]["arguments"];
                    append(args, &s("delta"));
                }
            }
            "TOOL_CALL_RESULT" => {
                // A string for every client: content parts as their JSON.
                let content = match &e["content"] {
                    Value::String(t) => t.clone(),
                    other => other.to_string(),
                };
                self.messages
                    .push(json!({"id": s("messageId"), "role": "tool",
                    "toolCallId": s("toolCallId"), "content": content}));
            }
            _ => {}
        }
    }
}

/// What the history keeps of the request's last user message: its words
/// as the page sent them (without the page's context), or, when it holds
/// files, its parts with a stand-in for each file
/// ([`crate::serve::page::kept_content`]).
fn kept_user(input: &RunAgentInput) -> Value {
    crate::serve::page::kept_content(input.last_user_content())
        .unwrap_or_else(|| Value::String(input.last_user_text().unwrap_or_default()))
}

/// Adds `delta` to the text in `field`, in place.
fn append(field: &mut Value, delta: &str) {
    match field {
        Value::String(text) => text.push_str(delta),
        other => *other = Value::String(delta.to_owned()),
    }
}

/// The history kept in `file`, if any.
pub(super) fn load(file: &Path) -> Option<Vec<Value>> {
    let text = crate::base::files::read_regular(file, MAX_HISTORY as u64).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Adds what a run said (`run`, which ended) to the history of `thread`,
/// when the thread is kept (it has a session), and keeps what the run used
/// as the thread's last run information.
pub(super) fn keep(shared: &Shared, thread: &str, run: Recorder) {
    let (file, info_file) = {
        let threads = shared.threads.lock().expect("not poisoned");
        if threads.session(thread).is_none() {
            return;
        }
        (threads.history_file(thread), threads.info_file(thread))
    };
    if let Some(info) = &run.info {
        if let Err(e) = crate::base::files::write_atomic(&info_file, &info.kept()) {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!(
                    "agui-translate: serve: warning: {}: what the thread's last run used is not kept: {e}\n",
                    info_file.display()
                ),
            );
        }
    }
    save(&file, run);
}

/// Adds a run's messages to the history in `file`: the user's message it
/// answers, then what it said; the oldest messages go when the whole is
/// over [`MAX_HISTORY`].
pub(super) fn save(file: &Path, run: Recorder) {
    let mut all = load(file).unwrap_or_default();
    if let Some((id, content)) = run.user {
        all.push(json!({"id": id, "role": "user", "content": content}));
    }
    // The user's message is the request's (the CLI's echo of it is left
    // out); an empty assistant message is none.
    all.extend(run.messages.into_iter().filter(|m| {
        m["role"] != "user"
            && (m["role"] != "assistant" || m["content"] != "" || m.get("toolCalls").is_some())
    }));
    for m in &mut all {
        if m["content"] == "" && m["role"] == "assistant" {
            m.as_object_mut().expect("an object").remove("content");
        }
    }
    write(file, all);
}

/// Writes the messages `all` to `file`, the oldest dropped while the
/// whole is over [`MAX_HISTORY`]; what is written.
fn write(file: &Path, mut all: Vec<Value>) -> Vec<Value> {
    let mut bytes = serde_json::to_vec(&all).expect("JSON");
    while bytes.len() > MAX_HISTORY && !all.is_empty() {
        let drop = (all.len() / 8).max(1);
        all.drain(..drop);
        bytes = serde_json::to_vec(&all).expect("JSON");
    }
    if let Err(e) = crate::base::files::write_atomic(file, &bytes) {
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "agui-translate: serve: warning: {}: the thread's history is not kept: {e}\n",
                file.display()
            ),
        );
    }
    all
}

/// The code of the RUN_ERROR that answers a request for a thread whose
/// history cannot be given back.
const UNAVAILABLE: &str = "history_unavailable";

/// The messages of a thread: those kept, or, for a thread whose history
/// was not kept (one from before it was, one whose file was lost, one
/// another server ran) but whose session is known, those of the CLI's own
/// transcript of the session, kept from then on (`true` with them).
/// `Ok(None)`: the thread is not known. `Err`: it cannot be rebuilt,
/// saying why (to the page; the server's log has it too).
pub(super) fn of_thread(
    shared: &Shared,
    thread: &str,
) -> Result<Option<(Vec<Value>, bool)>, String> {
    let (file, session, made_over_acp) = {
        let threads = shared.threads.lock().expect("not poisoned");
        let session = threads.session(thread).map(str::to_owned);
        let acp = threads.session_over_acp(thread);
        (threads.history_file(thread), session, acp)
    };
    if let Some(kept) = load(&file) {
        return Ok(Some((kept, false)));
    }
    let Some(session) = session else {
        return Ok(None);
    };
    let cwd = own_option(&shared.run_options, "--cwd")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let cli_path = own_option(&shared.run_options, "--cli").map(Path::new);
    let acp = over_acp(shared, made_over_acp);
    match crate::process::transcript::read(shared.cli, &session, &cwd, cli_path, acp) {
        Ok(events) => Ok(Some((write(&file, messages_of(&events)), true))),
        Err(cannot) => {
            let detail = cannot
                .detail
                .map_or_else(String::new, |d| format!(" ({d})"));
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!(
                    "agui-translate: serve: warning: thread {thread:?} has no history kept, and \
                     it cannot be rebuilt: {}{detail}\n",
                    cannot.why
                ),
            );
            Err(cannot.why)
        }
    }
}

/// The arguments after `--` of the runs, when the session was made over
/// the Agent Client Protocol: always for `serve acp`; for a CLI that speaks
/// it too, when its run said so (`--transport auto` takes it when it can),
/// or when the run options ask (`--transport acp`, or `--approval ask`
/// without `--transport stream`).
fn over_acp(shared: &Shared, made_over_acp: bool) -> Option<&[String]> {
    let options = &shared.run_options;
    let extra = options
        .iter()
        .position(|o| o == "--")
        .map_or(&options[..0], |i| &options[i + 1..]);
    let transport = own_option(options, "--transport");
    let acp = shared.cli.name() == "acp"
        || made_over_acp
        || transport == Some("acp")
        || (own_option(options, "--approval") == Some("ask") && transport != Some("stream"));
    (acp && shared.cli.acp().is_some()).then_some(extra)
}

/// The value of the run option `name` (`--name VALUE` or `--name=VALUE`)
/// among the run's own options (before a `--`).
fn own_option<'a>(run_options: &'a [String], name: &str) -> Option<&'a str> {
    let own: Vec<&'a String> = run_options.iter().take_while(|o| *o != "--").collect();
    own.iter().enumerate().find_map(|(i, o)| {
        match o.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
            Some(v) => Some(v),
            None if o.as_str() == name => own.get(i + 1).map(|v| v.as_str()),
            None => None,
        }
    })
}

/// The messages of a CLI's transcript translated (`events`, NDJSON): the
/// user's (as the page wrote them, without its context), the assistant's
/// and the tools', as a kept history holds them.
fn messages_of(events: &[u8]) -> Vec<Value> {
    let mut r = Recorder::default();
    for line in events.split(|&b| b == b'\n') {
        if let Ok(e) = serde_json::from_slice::<Value>(line) {
            r.apply(&e);
        }
    }
    let mut all = r.messages;
    for m in &mut all {
        if m["role"] == "user" {
            let text = m["content"].as_str().unwrap_or_default();
            let words = crate::serve::page::without_context(without_cli_context(text));
            m["content"] = words.into();
        }
    }
    all.retain(|m| m["role"] == "tool" || m["content"] != "" || m.get("toolCalls").is_some());
    for m in &mut all {
        // A tool message keeps its content, empty or not: AG-UI's schema
        // requires it there.
        if m["role"] == "assistant" && m["content"] == "" {
            m.as_object_mut().expect("an object").remove("content");
        }
    }
    all
}

/// A user message of a transcript without what the CLI put there of its
/// own, nothing the person wrote: Gemini CLI's replay of a session starts
/// the first user message with the `<session_context>` it gave the model
/// (the date, the directory, its files), and sends a user message of
/// stand-ins for its calls' output (`[Function Response: NAME]`, one or
/// several) after each call's turn: that message is left empty.
fn without_cli_context(text: &str) -> &str {
    if only_function_responses(text) {
        return "";
    }
    text.strip_prefix("<session_context>")
        .and_then(|rest| rest.split_once("</session_context>"))
        .map_or(text, |(_, words)| words.trim_start())
}

/// Whether `text` is only Gemini CLI's stand-ins for its calls' output,
/// `[Function Response: NAME]`, with whitespace around them.
fn only_function_responses(text: &str) -> bool {
    let mut rest = text.trim();
    while let Some(after) = rest.strip_prefix("[Function Response: ") {
        let Some((name, more)) = after.split_once(']') else {
            return false;
        };
        if name.is_empty() || name.contains(['[', '\n']) {
            return false;
        }
        rest = more.trim_start();
        if rest.is_empty() {
            return true;
        }
    }
    false
}

/// The events that give a page that lacks its thread's earlier messages
/// (a reloaded page) those messages, before its new one: none when the
/// thread has no history or the request holds its last user message. Two
/// snapshots: the 1.0 client keeps in place the messages it holds and
/// drops those a snapshot leaves out, so the first (the history) puts the
/// earlier messages first, and the second adds the new message after them.
///
/// With `rebuild` (a new turn), a thread whose history was not kept gets
/// it from the CLI's transcript ([`of_thread`]); its messages have the
/// CLI's ids, not the page's, so a page that sends earlier user messages
/// is taken to hold them. One that cannot be rebuilt gets none (the
/// server's log says why).
pub(super) fn for_reloaded(
    shared: &Shared,
    input: &RunAgentInput,
    new: Option<&RawValue>,
    rebuild: bool,
) -> Vec<u8> {
    let thread = if rebuild {
        of_thread(shared, &input.thread_id).ok().flatten()
    } else {
        let file = shared
            .threads
            .lock()
            .expect("not poisoned")
            .history_file(&input.thread_id);
        load(&file).map(|m| (m, false))
    };
    let Some((mut messages, rebuilt)) = thread.filter(|(m, _)| !m.is_empty()) else {
        return Vec::new();
    };
    let last_user = messages.iter().rev().find(|m| m["role"] == "user");
    let holds = if rebuilt {
        input.user_messages() > 1
    } else {
        last_user.is_some_and(|m| input.has_user_message(m["id"].as_str().unwrap_or_default()))
    };
    if holds {
        return Vec::new();
    }
    let mut out = format!(
        "data: {}\n\n",
        json!({"type": "MESSAGES_SNAPSHOT", "messages": messages})
    );
    if let (Some(id), Some(content)) = (input.last_user_id(), new) {
        let content: Value = serde_json::from_str(content.get()).unwrap_or_default();
        messages.push(json!({"id": id, "role": "user", "content": content}));
        let second = json!({"type": "MESSAGES_SNAPSHOT", "messages": messages});
        out.push_str(&format!("data: {second}\n\n"));
    }
    out.into_bytes()
}

/// Whether the request's last user message is one the thread's history
/// already holds, the same id with the same content (a page that sends only
/// what the server has: it asks for the thread, it does not ask again).
pub(super) fn holds_last(shared: &Shared, input: &RunAgentInput) -> bool {
    let Some(id) = input.last_user_id() else {
        return false;
    };
    let content = kept_user(input);
    let file = shared
        .threads
        .lock()
        .expect("not poisoned")
        .history_file(&input.thread_id);
    load(&file).is_some_and(|messages| {
        messages
            .iter()
            .any(|m| m["role"] == "user" && m["id"].as_str() == Some(id) && m["content"] == content)
    })
}

/// The most bytes of a thread's last run information read back.
const MAX_INFO: u64 = 64 * 1024;

/// Answers a request that asks for its thread with no new user message:
/// RUN_STARTED, the thread's MESSAGES_SNAPSHOT, its STATE_SNAPSHOT (the
/// page's `state`, or the thread's kept one, with what its last run used,
/// as each run publishes it) and RUN_FINISHED, starting no CLI; `false`
/// when the thread is not known (nothing was written). A thread whose
/// history was not kept gets it from the CLI's transcript, and one whose
/// history cannot be rebuilt so gets RUN_STARTED and a RUN_ERROR saying
/// why (`history_unavailable`).
pub(super) fn answer(
    conn: &mut TcpStream,
    shared: &Shared,
    input: &RunAgentInput,
    state: Option<&str>,
    cors: &str,
) -> bool {
    let info_file = {
        let threads = shared.threads.lock().expect("not poisoned");
        threads.info_file(&input.thread_id)
    };
    let messages = match of_thread(shared, &input.thread_id) {
        Ok(Some((messages, _))) => messages,
        Ok(None) => return false,
        Err(why) => {
            let why = format!("this thread's history is not kept here, and {why}");
            let out = crate::serve::launch::error_events(shared, input, &why, UNAVAILABLE);
            let _ = crate::serve::launch::answer_events(conn, cors, &out);
            return true;
        }
    };
    let run = crate::serve::launch::made_run(shared, input, |em| em.finish_run(None, None, &[]));
    // The snapshots go after the run's first event, its RUN_STARTED.
    let at = memchr::memmem::find(&run, b"\n\n").map_or(0, |e| e + 2);
    let snapshot = json!({"type": "MESSAGES_SNAPSHOT", "messages": messages});
    let mut out = run[..at].to_vec();
    out.extend_from_slice(format!("data: {snapshot}\n\n").as_bytes());
    let info = crate::base::files::read_regular(&info_file, MAX_INFO).ok();
    if let Some(state) = crate::serve::page::thread_state(state, info.as_deref()) {
        out.extend_from_slice(&state);
    }
    out.extend_from_slice(&run[at..]);
    let _ = crate::serve::launch::answer_events(conn, cors, &out);
    true
}

/// The most bytes of a run's events kept for readers that rejoin it;
/// past it they are dropped and a rejoiner gets the thread's history and
/// the run's open messages instead ([`Live::join`]).
pub(super) const MAX_REPLAY: usize = 8 * 1024 * 1024;

/// The events of a run going, for readers that rejoin it: each event with
/// its `id:` (`<runId>:<n>`), kept up to [`MAX_REPLAY`] bytes, and dropped
/// when the run ends. A run whose own client has gone away goes on while
/// it has readers, and for `grace` (`--rejoin-grace`) without one
/// ([`Live::owner_gone`]).
pub(super) struct Live {
    state: std::sync::Mutex<LiveState>,
    moved: std::sync::Condvar,
    /// The last user message the run answers.
    user_id: Option<String>,
    /// How long the run goes on with no one reading it, once its own
    /// client has gone away.
    grace: Duration,
}

#[derive(Default)]
struct LiveState {
    /// The run's id in the events' ids.
    key: String,
    /// The start of an event not yet whole.
    pending: Vec<u8>,
    /// Whole events with their ids, from byte `base` of the run's stream.
    buf: Vec<u8>,
    base: usize,
    /// Where each event kept begins (from the run's start), the first
    /// being event `first`.
    starts: std::collections::VecDeque<usize>,
    first: u64,
    /// Events so far.
    count: u64,
    /// The run's first event (RUN_STARTED), with its id.
    started: Vec<u8>,
    /// Messages, tool calls and steps started and not yet ended: their
    /// start events, by kind and id, in order.
    open: Vec<(String, Vec<u8>)>,
    ended: bool,
    /// Readers that rejoined the run and still read it.
    readers: usize,
    /// The run's own client has gone away.
    owner_gone: bool,
    /// The run has been told to end (SIGTERM) for want of a reader.
    stopped: bool,
    /// The run's process, once its own client has gone away.
    pid: Option<u32>,
}

impl Live {
    /// The live events of the run of `thread`, kept for rejoiners until
    /// the returned guard is dropped.
    pub(super) fn start<'a>(
        shared: &'a Shared,
        thread: &str,
        user_id: Option<&str>,
    ) -> LiveRun<'a> {
        let live = Arc::new(Live {
            state: std::sync::Mutex::default(),
            moved: std::sync::Condvar::new(),
            user_id: user_id.map(str::to_owned),
            grace: shared.rejoin_grace,
        });
        shared
            .live
            .lock()
            .expect("not poisoned")
            .insert(thread.to_owned(), live.clone());
        LiveRun {
            shared,
            thread: thread.to_owned(),
            live,
        }
    }

    /// Takes the next bytes of the run's stream and gives back its whole
    /// events, each with its `id:`, for the run's own client.
    pub(super) fn frame(&self, bytes: &[u8]) -> Vec<u8> {
        let mut s = self.state.lock().expect("not poisoned");
        let before = s.pending.len();
        s.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut from = before.saturating_sub(1);
        let mut done = 0;
        while let Some(end) = memchr::memmem::find(&s.pending[from..], b"\n\n").map(|e| from + e) {
            let event = s.pending[done..end + 2].to_vec();
            done = end + 2;
            from = done;
            if s.count == 0 {
                s.key = run_id_of(&event).unwrap_or_else(|| "run".to_owned());
            }
            s.count += 1;
            let mut framed = format!("id: {}:{}\n", s.key, s.count).into_bytes();
            framed.extend_from_slice(&event);
            if s.count == 1 {
                s.started = framed.clone();
            }
            track_open(&mut s.open, &framed);
            let at = s.base + s.buf.len();
            s.starts.push_back(at);
            s.buf.extend_from_slice(&framed);
            out.extend_from_slice(&framed);
        }
        s.pending.drain(..done);
        if s.buf.len() > MAX_REPLAY {
            // Past the bound: what was said is dropped, what comes is kept.
            s.base += s.buf.len();
            s.buf = Vec::new();
            s.first = s.count;
            s.starts.clear();
        }
        drop(s);
        self.moved.notify_all();
        out
    }

    /// The run's stream has ended: its readers finish, and the run is no
    /// longer ended for want of one.
    fn end(&self) {
        self.state.lock().expect("not poisoned").ended = true;
        self.moved.notify_all();
    }

    /// The run's own client has gone away (its connection closed, or it
    /// stopped reading): the run `pid` is not ended at once but goes on
    /// while readers that rejoin it read it, and ends as SIGTERM ends it
    /// once it has had none for the grace; with no grace, at once, as
    /// before. Once per run; nothing once the run's stream has ended (its
    /// process may have been waited for).
    pub(super) fn owner_gone(self: &Arc<Self>, pid: u32) {
        {
            let mut s = self.state.lock().expect("not poisoned");
            if s.owner_gone || s.ended {
                return;
            }
            s.owner_gone = true;
            s.pid = Some(pid);
            if self.grace.is_zero() {
                s.stopped = true;
                crate::serve::launch::terminate(pid);
                return;
            }
        }
        let live = self.clone();
        if std::thread::Builder::new()
            .spawn(move || live.end_unread(pid))
            .is_err()
        {
            self.stop(pid);
        }
    }

    /// Until the run's stream ends: ends the run `pid` once it has had no
    /// reader for the grace (a reader that comes starts it again when it
    /// goes).
    fn end_unread(&self, pid: u32) {
        let mut s = self.state.lock().expect("not poisoned");
        let mut since = Instant::now();
        while !s.ended && !s.stopped {
            if s.readers > 0 {
                s = self.moved.wait(s).expect("not poisoned");
                since = Instant::now();
                continue;
            }
            let left = self.grace.saturating_sub(since.elapsed());
            if left.is_zero() {
                drop(s);
                self.stop(pid);
                return;
            }
            s = self.moved.wait_timeout(s, left).expect("not poisoned").0;
        }
    }

    /// Ends the run `pid` as SIGTERM does, unless its stream has ended.
    fn stop(&self, pid: u32) {
        let mut s = self.state.lock().expect("not poisoned");
        if !s.ended && !s.stopped {
            s.stopped = true;
            crate::serve::launch::terminate(pid);
        }
        drop(s);
        self.moved.notify_all();
    }

    /// Ends the run at once if no one reads it (its own client has gone
    /// away and no reader has rejoined it); `true` then, or when it has
    /// already been ended so.
    fn abandon(&self) -> bool {
        let pid = {
            let s = self.state.lock().expect("not poisoned");
            match s.pid {
                Some(pid) if s.readers == 0 && !s.ended => pid,
                _ => return s.stopped,
            }
        };
        self.stop(pid);
        true
    }

    /// Whether someone takes the end of the run's response: its own
    /// client, or, when it has gone away, a reader that rejoined (waited
    /// for until one comes or the run is ended for want of one). A run
    /// that waits for its thread's decisions is kept only then.
    pub(super) fn has_reader(&self) -> bool {
        let mut s = self.state.lock().expect("not poisoned");
        if !s.owner_gone {
            return true;
        }
        while s.readers == 0 && !s.stopped {
            s = self.moved.wait(s).expect("not poisoned");
        }
        !s.stopped
    }

    /// A reader that rejoins: the run's events after `last` (a
    /// `Last-Event-ID`), or all of them, or, when they are no longer all
    /// kept, RUN_STARTED, the thread's history and the messages open now,
    /// then the run's events as they come, until it ends or the reader
    /// stops reading.
    fn join(
        self: &Arc<Self>,
        conn: &mut TcpStream,
        cors: &str,
        last: Option<&str>,
        history: &[u8],
    ) {
        let reading = Reading::new(self, conn);
        let (mut at, head) = {
            let s = self.state.lock().expect("not poisoned");
            let after = last
                .and_then(|l| l.rsplit_once(':'))
                .filter(|(key, _)| *key == s.key)
                .and_then(|(_, n)| n.parse::<u64>().ok())
                .filter(|n| *n >= s.first && *n <= s.count);
            match after {
                Some(n) if n == s.count => (s.base + s.buf.len(), Vec::new()),
                Some(n) => (s.starts[(n - s.first) as usize], Vec::new()),
                None if s.first == 0 => (s.base, Vec::new()),
                None => {
                    let mut head = s.started.clone();
                    head.extend_from_slice(history);
                    for (_, start) in &s.open {
                        head.extend_from_slice(start);
                    }
                    (s.base + s.buf.len(), head)
                }
            }
        };
        let stall = crate::serve::launch::STALL_TIMEOUT;
        if crate::serve::launch::answer_events(conn, cors, &head).is_err() {
            return;
        }
        loop {
            let piece = {
                let mut s = self.state.lock().expect("not poisoned");
                while at == s.base + s.buf.len() && !s.ended {
                    if reading.hung.load(Ordering::SeqCst) {
                        return;
                    }
                    s = self.moved.wait(s).expect("not poisoned");
                }
                if at < s.base {
                    // Behind what is kept: dropped.
                    return;
                }
                let from = at - s.base;
                let upto = s.buf.len().min(from + 64 * 1024);
                if from == upto {
                    return;
                }
                s.buf[from..upto].to_vec()
            };
            if crate::serve::launch::write_within(conn, &piece, stall).is_err() {
                return;
            }
            at += piece.len();
        }
    }
}

/// A reader of a run, counted while it reads ([`Live::owner_gone`]); one
/// that goes away is seen at once, even while the run is quiet.
struct Reading {
    live: Arc<Live>,
    /// The reader's connection has closed.
    hung: Arc<AtomicBool>,
}

impl Reading {
    fn new(live: &Arc<Live>, conn: &TcpStream) -> Reading {
        live.state.lock().expect("not poisoned").readers += 1;
        live.moved.notify_all();
        let hung = Arc::new(AtomicBool::new(false));
        // The watcher ends when the connection is shut down (see
        // `serve_one`), after the reader has.
        if let Ok(mut peer) = conn.try_clone() {
            let (live, hung) = (live.clone(), hung.clone());
            let _ = std::thread::Builder::new().spawn(move || {
                let _ = peer.set_read_timeout(None);
                let mut buf = [0u8; 512];
                while matches!(std::io::Read::read(&mut peer, &mut buf), Ok(n) if n > 0) {}
                // Under the lock, so that a reader about to wait sees it.
                let s = live.state.lock().expect("not poisoned");
                hung.store(true, Ordering::SeqCst);
                drop(s);
                live.moved.notify_all();
            });
        }
        Reading {
            live: live.clone(),
            hung,
        }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.live.state.lock().expect("not poisoned").readers -= 1;
        self.live.moved.notify_all();
    }
}

/// The `runId` of a RUN_STARTED event, if it is one.
fn run_id_of(event: &[u8]) -> Option<String> {
    let data = event.strip_prefix(b"data: ")?;
    let v: Value = serde_json::from_slice(data.trim_ascii_end()).ok()?;
    (v["type"] == "RUN_STARTED").then(|| v["runId"].as_str().map(str::to_owned))?
}

/// Keeps in `open` the start events not yet ended (the last line of
/// `framed` is the event).
fn track_open(open: &mut Vec<(String, Vec<u8>)>, framed: &[u8]) {
    let head = &framed[..framed.len().min(160)];
    let kind = |suffix: &[u8]| memchr::memmem::find(head, suffix).is_some();
    let starts = kind(b"_START\"") || kind(b"\"STEP_STARTED\"");
    let ends = kind(b"_END\"") || kind(b"\"STEP_FINISHED\"");
    if !starts && !ends {
        return;
    }
    let Some(line) = framed
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"data: "))
    else {
        return;
    };
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    let ty = v["type"].as_str().unwrap_or_default();
    let base = ty
        .trim_end_matches("_STARTED")
        .trim_end_matches("_START")
        .trim_end_matches("_FINISHED")
        .trim_end_matches("_END");
    let id = ["messageId", "toolCallId", "stepName"]
        .iter()
        .find_map(|k| v[*k].as_str())
        .unwrap_or_default();
    let key = format!("{base}\n{id}");
    if starts {
        let mut start = framed.to_vec();
        // Re-sent without its id: the reader's place is the live one.
        if let Some(nl) = memchr::memchr(b'\n', &start) {
            start.drain(..=nl);
        }
        open.push((key, start));
    } else if let Some(i) = open.iter().rposition(|(k, _)| *k == key) {
        open.remove(i);
    }
}

/// A run's live events, kept for rejoiners while it streams.
pub(super) struct LiveRun<'a> {
    shared: &'a Shared,
    thread: String,
    pub(super) live: Arc<Live>,
}

impl Drop for LiveRun<'_> {
    fn drop(&mut self) {
        self.live.end();
        let mut all = self.shared.live.lock().expect("not poisoned");
        if all
            .get(&self.thread)
            .is_some_and(|l| Arc::ptr_eq(l, &self.live))
        {
            all.remove(&self.thread);
        }
    }
}

/// The events of the run of `thread` going, if one is.
fn live_run(shared: &Shared, thread: &str) -> Option<Arc<Live>> {
    shared
        .live
        .lock()
        .expect("not poisoned")
        .get(thread)
        .cloned()
}

/// A request on a thread whose run is going: a reader of that run when it
/// has no new user message (none, or the one the run answers), is not a
/// resume and answers no page-tool call; `false` (nothing written) when it
/// is not one, or the run is not streaming (it has just ended).
pub(super) fn rejoin(
    conn: &mut TcpStream,
    shared: &Shared,
    request: &crate::serve::input::Request,
    cors: &str,
    last: Option<&str>,
) -> bool {
    let input = &request.input;
    if request.resuming || crate::serve::page::answers_calls(input) {
        return false;
    }
    let Some(live) = live_run(shared, &input.thread_id) else {
        return false;
    };
    if request.prompt.is_some() && input.last_user_id() != live.user_id.as_deref() {
        return false;
    }
    let file = shared
        .threads
        .lock()
        .expect("not poisoned")
        .history_file(&input.thread_id);
    let messages = load(&file).unwrap_or_default();
    let history = format!(
        "data: {}\n\n",
        json!({"type": "MESSAGES_SNAPSHOT", "messages": messages})
    );
    live.join(conn, cors, last, history.as_bytes());
    true
}

/// How long a request with a new message waits for the thread's run
/// that no one reads to end ([`take_over`]): the run's CLI gets SIGKILL
/// 5 s after SIGTERM.
const TAKE_OVER_WAIT: Duration = Duration::from_secs(10);

/// A request with a new user message on a thread whose run no one reads
/// (its client went away, no reader rejoined it, its grace not yet out):
/// the page has moved on, so the run is ended at once, and once it has
/// ended the thread is the request's (`true`: it holds the thread's
/// place in `busy`). `false` for any other request, or when the run has
/// not ended within [`TAKE_OVER_WAIT`].
pub(super) fn take_over(shared: &Shared, request: &crate::serve::input::Request) -> bool {
    let input = &request.input;
    if request.prompt.is_none()
        || request.resuming
        || crate::serve::page::answers_calls(input)
        || holds_last(shared, input)
    {
        return false;
    }
    if !live_run(shared, &input.thread_id).is_some_and(|l| l.abandon()) {
        return false;
    }
    let start = Instant::now();
    while start.elapsed() < TAKE_OVER_WAIT {
        if shared
            .busy
            .lock()
            .expect("not poisoned")
            .insert(input.thread_id.clone())
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_s_events_become_whole_messages() {
        let mut r = Recorder::default();
        let events = [
            json!({"type":"RUN_STARTED","threadId":"t","runId":"r"}),
            json!({"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hel"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"lo"}),
            json!({"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"Bash","parentMessageId":"m1"}),
            json!({"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"a\":"}),
            json!({"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"1}"}),
            json!({"type":"TOOL_CALL_RESULT","messageId":"r1","toolCallId":"c1","content":[{"type":"text","text":"ok"}]}),
        ];
        let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        // Fed in pieces that cut events in two.
        for piece in text.as_bytes().chunks(7) {
            r.feed(piece);
        }
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[0]["content"], "Hello");
        assert_eq!(
            r.messages[0]["toolCalls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(r.messages[1]["role"], "tool");
        assert_eq!(r.messages[1]["content"], r#"[{"text":"ok","type":"text"}]"#);
    }

    /// The messages rebuilt from a CLI's real transcript (recorded).
    fn rebuilt(cli: &str, transcript: &str) -> Vec<Value> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/transcripts")
            .join(transcript);
        let cli = crate::dialect::Dialect::named(cli).unwrap();
        let events = crate::process::transcript::translate(cli, std::fs::read(path).unwrap());
        messages_of(&events.unwrap())
    }

    /// A real agent's `session/load` (recorded: the second invocation of
    /// the `resume` scenario, which loads the first's session), replayed by
    /// the test agent to the reader of the ACP transcript: the thread's
    /// first turn comes back, whether the agent replays it before its
    /// answer (Copilot CLI, OpenCode, Qwen Code) or after it (Gemini CLI,
    /// which also starts it with its own context).
    #[test]
    fn a_thread_is_loaded_back_from_real_agents_replays() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = std::env::temp_dir().join(format!("agui-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let acp = crate::dialect::Dialect::named("acp").unwrap();
        for agent in [
            "gemini-0.61.0",
            "copilot-1.0.102",
            "opencode-1.18.33",
            "qwen-0.24.4",
        ] {
            let recording = root.join("testdata/acp").join(agent).join("resume-2.jsonl");
            let script = replaying(&dir, agent, &recording);
            let session = "a44ffed2-7906-4df9-a7b3-01d5635d2a45";
            let events =
                crate::process::transcript::read(acp, session, &dir, Some(&script), Some(&[]))
                    .unwrap_or_else(|e| panic!("{agent}: {}", e.why));
            assert_eq!(
                said(&messages_of(&events)),
                [
                    "user: Remember the word 'teal'.",
                    "assistant: I will remember teal."
                ],
                "{agent}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A program in `dir` named `name` that plays an ACP agent answering
    /// as `recording` (a real agent's lines, both ways) says.
    fn replaying(dir: &Path, name: &str, recording: &Path) -> std::path::PathBuf {
        let script = dir.join(name);
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nFAKE_ACP=1 ACP_REPLAY='{}' exec '{}' \"$@\"\n",
                recording.display(),
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fake/cli")
                    .display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        script
    }

    /// The messages a thread gets back from `agent`'s real replay of
    /// `session` (`testdata/transcripts/AGENT/load.transcript`), as
    /// [`said`] gives them.
    fn loaded(agent: &str, session: &str) -> Vec<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = std::env::temp_dir().join(format!("agui-load-{agent}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let recording = root
            .join("testdata/transcripts")
            .join(agent)
            .join("load.transcript");
        let script = replaying(&dir, agent, &recording);
        let acp = crate::dialect::Dialect::named("acp").unwrap();
        let events = crate::process::transcript::read(acp, session, &dir, Some(&script), Some(&[]))
            .unwrap_or_else(|e| panic!("{agent}: {}", e.why));
        let _ = std::fs::remove_dir_all(&dir);
        said(&messages_of(&events))
    }

    /// OpenCode 1.18.33's real replay of two turns, each with a call
    /// (`testdata/transcripts/opencode-1.18.33/load.transcript`, loaded by
    /// a new process after `conversation.transcript`): each call comes back
    /// named as in the run that made it, by its kind (`bash`, `read`), not
    /// by the kind ACP gives every command (`execute`). The translator
    /// names OpenCode's calls so once it has seen the agent's `initialize`
    /// answer, which the reader of a load passes on to it.
    #[test]
    fn opencode_s_replayed_calls_are_named_as_in_its_runs() {
        let calls: Vec<String> = loaded("opencode-1.18.33", "ses_ddbd0c4edffejcvvAegVtCjxMg")
            .into_iter()
            .filter(|m| m.starts_with("assistant -> "))
            .map(|m| m[..m.find('(').unwrap()].to_owned())
            .collect();
        assert_eq!(calls, ["assistant -> bash", "assistant -> read"]);
    }

    /// Copilot CLI 1.0.102's and Qwen Code 0.24.4's real replays of the
    /// same two turns (`testdata/transcripts/copilot-1.0.102/`,
    /// `qwen-0.24.4/`): each turn's words, its call (named by the agent's
    /// kind of tool) and the call's output, in order; the second call's
    /// output is the word.
    #[test]
    fn copilot_cli_s_and_qwen_code_s_replays_give_both_turns_back() {
        for (agent, session, shell, read) in [
            (
                "copilot-1.0.102",
                "bce32fb0-9b30-4823-bd52-653ba6aa96f1",
                "execute",
                "read",
            ),
            (
                "qwen-0.24.4",
                "470622bb-0002-4120-ad92-dda3e3276a23",
                "run_shell_command",
                "read_file",
            ),
        ] {
            let all = loaded(agent, session);
            // Each message's first words: the calls' arguments and output
            // are each agent's own.
            let shown: Vec<&str> = all
                .iter()
                .map(|m| m.split(['(', '\n']).next().unwrap())
                .collect();
            assert_eq!(
                shown,
                [
                    "user: Remember the word 'teal': write it to word.txt.".to_owned(),
                    "assistant: Writing it down.".to_owned(),
                    format!("assistant -> {shell}"),
                    shown[3].to_owned(),
                    "assistant: I wrote teal to word.txt.".to_owned(),
                    "user: Which word did I ask you to remember? Read word.txt.".to_owned(),
                    "assistant: Reading it back.".to_owned(),
                    format!("assistant -> {read}"),
                    shown[8].to_owned(),
                    "assistant: The word was teal.".to_owned(),
                ],
                "{agent}: {all:#?}"
            );
            assert!(
                shown[3].starts_with("tool: ") && shown[8].starts_with("tool: "),
                "{agent}"
            );
            assert!(all[8].contains("teal"), "{agent}: {}", all[8]);
        }
    }

    /// Gemini CLI 0.61.0's real replay of two turns, each with calls
    /// (`testdata/transcripts/gemini-0.61.0/load.transcript`, loaded by a
    /// new process after `conversation.transcript`): it answers the load
    /// first and replays after, starts with its context, and sends a user
    /// message of stand-ins for the calls' output after each turn's calls.
    /// The thread gets the person's two messages and nothing else as the
    /// user's.
    #[test]
    fn gemini_cli_s_replayed_stand_ins_are_not_the_user_s() {
        let all = loaded("gemini-0.61.0", "9d424170-91ab-499f-b27e-6af78fdcf65a");
        let users: Vec<&String> = all.iter().filter(|m| m.starts_with("user")).collect();
        assert_eq!(
            users,
            [
                "user: Remember the word 'teal': write it to word.txt.",
                "user: Which word did I ask you to remember? Read word.txt.",
            ],
            "{all:#?}"
        );
        assert!(
            all.iter().any(|m| m == "assistant: The word was teal."),
            "{all:#?}"
        );
    }

    #[test]
    fn only_stand_ins_for_output_are_left_out() {
        for stand_ins in [
            "[Function Response: read_file]",
            "[Function Response: a][Function Response: b]\n",
            " [Function Response: a]\n[Function Response: b] ",
        ] {
            assert_eq!(without_cli_context(stand_ins), "", "{stand_ins}");
        }
        for words in [
            "Hi",
            "[Function Response: a] and then?",
            "[Function Response: a",
            "[Function Response: ]",
            "[Function Response: a\nb]",
            "",
        ] {
            assert_eq!(without_cli_context(words), words, "{words}");
        }
    }

    /// A tool call whose result is empty keeps its result's `content` (the
    /// schema of a tool message requires it); an assistant message of tool
    /// calls alone has none.
    #[test]
    fn an_empty_tool_result_keeps_its_content() {
        let events = concat!(
            r#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"t"}"#,
            "\n",
            r#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#,
            "\n",
            r#"{"type":"TOOL_CALL_RESULT","messageId":"m2","toolCallId":"c1","content":""}"#,
            "\n",
        );
        let all = messages_of(events.as_bytes());
        let tool = all
            .iter()
            .find(|m| m["role"] == "tool")
            .expect("a tool message");
        assert_eq!(tool["content"], "");
        let call = all
            .iter()
            .find(|m| m["role"] == "assistant")
            .expect("its call");
        assert!(call.get("content").is_none(), "{call}");
    }

    /// Each message as `role: text`, its tool calls `role -> name(args)`.
    fn said(messages: &[Value]) -> Vec<String> {
        let mut out = Vec::new();
        for m in messages {
            let role = m["role"].as_str().unwrap();
            if let Some(text) = m["content"].as_str() {
                out.push(format!("{role}: {text}"));
            }
            for c in m["toolCalls"].as_array().into_iter().flatten() {
                let f = &c["function"];
                out.push(format!(
                    "{role} -> {}({})",
                    f["name"].as_str().unwrap(),
                    f["arguments"].as_str().unwrap()
                ));
            }
        }
        out
    }

    #[test]
    fn a_thread_is_rebuilt_from_claude_code_s_session_file() {
        let two_turns = rebuilt("claude", "claude-2.1.332/resume.transcript");
        assert_eq!(
            said(&two_turns),
            [
                "user: Remember the word 'teal'.",
                "assistant: I will remember teal.",
                "user: Which word did I ask you to remember?",
                "assistant: The word was teal.",
            ]
        );
        let shell = rebuilt("claude", "claude-2.1.332/shell.transcript");
        assert_eq!(
            said(&shell),
            [
                "user: Run echo in the shell.",
                "assistant: I will run a command.",
                r#"assistant -> Bash({"command":"echo hello from the shell","description":"Run echo"})"#,
                "tool: hello from the shell",
                "assistant: The command printed: hello from the shell.",
            ]
        );
        let call = &shell[1]["toolCalls"][0]["id"];
        assert_eq!(shell[2]["toolCallId"], *call, "{shell:?}");
    }

    #[test]
    fn a_thread_is_rebuilt_from_copilot_cli_s_session_events() {
        let two_turns = rebuilt("copilot", "copilot-1.0.102/resume.transcript");
        assert_eq!(
            said(&two_turns),
            [
                "user: Remember the word 'teal'.",
                "assistant: I will remember teal.",
                "user: Which word did I ask you to remember?",
                "assistant: The word was teal.",
            ]
        );
    }

    #[test]
    fn the_page_s_context_is_not_the_user_s_words() {
        let events = [
            json!({"type":"TEXT_MESSAGE_START","messageId":"u","role":"user"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"u","delta":"<context from the application>\nPage: a\n</context from the application>\n\nHi"}),
            json!({"type":"TEXT_MESSAGE_END","messageId":"u"}),
        ];
        let text: String = events.iter().map(|e| format!("{e}\n")).collect();
        assert_eq!(said(&messages_of(text.as_bytes())), ["user: Hi"]);
    }

    #[test]
    fn a_message_s_files_are_kept_as_stand_ins_between_its_words() {
        let kept = |content: &str| {
            let raw = RawValue::from_string(content.to_owned()).unwrap();
            crate::serve::page::kept_content(Some(&raw))
        };
        assert_eq!(kept(r#""Hi""#), None);
        assert_eq!(kept(r#"[{"type":"text","text":"Hi"}]"#), None);
        let parts = kept(
            r#"[{"type":"text","text":"a"},{"type":"text"},{"type":"text","text":"b"},
                {"type":"document","source":{"type":"data","value":"JVBERg==","mimeType":"application/pdf"}},
                {"type":"image","source":{"type":"url","value":"https://example.com/a.png"}},
                {"type":"text","text":"c"}]"#,
        )
        .unwrap();
        assert_eq!(
            parts,
            json!([
                {"type": "text", "text": "a\nb"},
                {"type": "text", "text": "[document (application/pdf, 4 bytes): not kept in the thread's history]"},
                {"type": "text", "text": "[image: not kept in the thread's history]"},
                {"type": "text", "text": "c"},
            ])
        );
    }

    #[test]
    fn the_history_is_bounded_oldest_first() {
        let dir = std::env::temp_dir().join(format!("agui-history-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("h.json");
        let _ = std::fs::remove_file(&file);
        let big = "x".repeat(MAX_HISTORY / 4);
        for i in 0..6 {
            let run = Recorder {
                user: Some((format!("u{i}"), big.clone().into())),
                ..Recorder::default()
            };
            save(&file, run);
        }
        let kept = load(&file).unwrap();
        assert!(std::fs::metadata(&file).unwrap().len() <= MAX_HISTORY as u64);
        assert_eq!(kept.last().unwrap()["id"], "u5");
        assert!(kept.len() < 6);
    }
}
