//! The keeper of waiting runs (`--approval ask`): a run that ends its
//! response in interrupts is kept, its CLI alive, until its thread's next
//! request resumes it with the decisions; a run that has ended is settled,
//! its session kept for the thread. A run whose ACP agent has ended its
//! turn is kept idle the same way (`--keep-idle`), for the thread's next
//! user message.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::agui::code;
use crate::serve::input::{id_ok, RunAgentInput, MAX_ID};
use crate::serve::launch::{answer_events, error_events, made_run, stream_run, terminate};
use crate::serve::listen::MAX_RUNS;
use crate::serve::Shared;

/// The session file of one run, removed when dropped.
pub(super) struct SessionFile(pub(super) PathBuf);

impl SessionFile {
    /// The session the run left, if any: its id, and whether the run
    /// spoke the Agent Client Protocol (a second line `acp`). The file is
    /// opened without following a link, and only its start is read.
    fn read(&self) -> Option<Session> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.0)
            .ok()?;
        let mut text = String::new();
        file.take((MAX_ID + ACP_LINE.len()) as u64 + 1)
            .read_to_string(&mut text)
            .ok()?;
        let (id, acp) = match text.strip_suffix(ACP_LINE) {
            Some(id) => (id, true),
            None => (text.as_str(), false),
        };
        id_ok(id).then(|| Session {
            id: id.to_owned(),
            acp,
        })
    }
}

/// The line a run's session file ends with when the run spoke the Agent
/// Client Protocol.
const ACP_LINE: &str = "\nacp";

/// A session a run left: its id, and whether it was made over the Agent
/// Client Protocol (where it is loaded back from, its history too).
pub(super) struct Session {
    pub(super) id: String,
    pub(super) acp: bool,
}

impl Drop for SessionFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension(crate::serve::launch::TOOLS_EXT));
        let _ = std::fs::remove_dir_all(self.0.with_extension(crate::serve::page::FILES_EXT));
    }
}

/// A run: its process, the pipes to it, and its session file; kept, its
/// process alive, while it waits for its thread's decisions (`--approval
/// ask`).
pub(super) struct Waiting {
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: ChildStdout,
    pub(super) file: SessionFile,
    pub(super) since: Instant,
    /// What the run has said so far, for its thread's history.
    pub(super) said: Box<crate::serve::history::Recorder>,
    /// A run that may keep its agent between turns (`--keep-idle`): how it
    /// was started (its arguments but those of one run), which a later
    /// turn's must match to go to it.
    pub(super) kept: Option<Vec<std::ffi::OsString>>,
    /// Whether it is kept idle, its turn over (else it waits for
    /// decisions).
    pub(super) idle: bool,
}

/// How a run's response ended.
#[derive(PartialEq, Eq)]
pub(super) enum Streamed {
    /// The run's output ended.
    Ended,
    /// The run waits for the thread's next request.
    Waiting,
    /// The turn has ended and the agent is kept for the thread's next
    /// user message.
    Idle,
}

/// The thread's next request to a run that waits for decisions: its
/// `runId` and `resume` go to the run as one line (anything else of the
/// request, such as the `role: "tool"` messages CopilotKit adds, is not
/// the run's concern), and the run's output is this response. A run that
/// has ended meanwhile (its approval timeout passed) is answered here.
pub(super) fn resume_run(
    conn: &mut TcpStream,
    shared: &Shared,
    input: &RunAgentInput,
    mut w: Waiting,
    slot: Slot,
    cors: &str,
) {
    let pid = w.child.id();
    let line = resume_line(input);
    let alive = matches!(w.child.try_wait(), Ok(None))
        && w.stdin.as_mut().is_some_and(|p| p.write_all(&line).is_ok());
    if !alive {
        let gone = Gone::of(w.child.wait().ok());
        remember_gone(shared, &input.thread_id, gone);
        settle(shared, &input.thread_id, w, Streamed::Ended, Some(slot));
        answer_gone(conn, shared, input, cors, gone);
        return;
    }
    let live = crate::serve::history::Live::start(shared, &input.thread_id, None);
    let Waiting {
        stdout,
        said,
        child,
        ..
    } = &mut w;
    // A run that took the line as it was ending (its timeout just passed)
    // writes nothing: the response says why it is gone.
    let mut if_gone = || {
        let gone = Gone::of(child.wait().ok());
        remember_gone(shared, &input.thread_id, gone);
        gone_events(shared, input, gone)
    };
    let streamed = stream_run(
        conn,
        (pid, &live.live),
        stdout,
        cors,
        true,
        said,
        &mut if_gone,
    );
    drop(live);
    settle(shared, &input.thread_id, w, streamed, Some(slot));
}

/// Why a thread's waiting run is no longer there, told to the thread's
/// next resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Gone {
    /// No decision came within `--approval-timeout`.
    Expired,
    /// Ended to make room for another run ([`MAX_RUNS`]).
    Evicted,
    /// It ended otherwise (its CLI failed, or it was stopped).
    Ended,
}

impl Gone {
    /// Why a run that has exited with `status` is gone.
    fn of(status: Option<std::process::ExitStatus>) -> Gone {
        match status.and_then(|s| s.code()) {
            Some(c) if c == i32::from(crate::process::spawn::EXPIRED) => Gone::Expired,
            _ => Gone::Ended,
        }
    }
}

/// Threads whose waiting run is gone, remembered for their next request,
/// at most; the oldest is forgotten first.
const MAX_GONE: usize = 1024;

/// Remembers why the waiting run of `thread` is gone.
fn remember_gone(shared: &Shared, thread: &str, gone: Gone) {
    let mut all = shared.gone.lock().expect("not poisoned");
    if all.len() >= MAX_GONE && !all.contains_key(thread) {
        let oldest = all
            .iter()
            .min_by_key(|(_, (_, t))| *t)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            all.remove(&k);
        }
    }
    all.insert(thread.to_owned(), (gone, Instant::now()));
}

/// Why the waiting run of `thread` is gone, if it is.
pub(super) fn gone(shared: &Shared, thread: &str) -> Option<Gone> {
    let all = shared.gone.lock().expect("not poisoned");
    all.get(thread).map(|(g, _)| *g)
}

/// The thread goes on: why its waiting run is gone is forgotten.
pub(super) fn forget_gone(shared: &Shared, thread: &str) {
    shared.gone.lock().expect("not poisoned").remove(thread);
}

/// The answer to a resume whose waiting run is gone: a resume that cancels
/// every interrupt it answers is a run that finishes (the client lets go of
/// them, and the thread goes on); any other is a RUN_ERROR saying why the
/// interrupts are no longer pending (and the thread's next resume is told
/// again).
pub(super) fn answer_gone(
    conn: &mut TcpStream,
    shared: &Shared,
    input: &RunAgentInput,
    cors: &str,
    gone: Gone,
) {
    let _ = answer_events(conn, cors, &gone_events(shared, input, gone));
}

/// The run that answers a request whose waiting run is `gone`, as
/// server-sent events: RUN_ERROR saying why, or RUN_FINISHED for a
/// request that cancels every decision.
fn gone_events(shared: &Shared, input: &RunAgentInput, gone: Gone) -> Vec<u8> {
    if cancels_all(input) {
        forget_gone(shared, &input.thread_id);
        return made_run(shared, input, |em| em.finish_run(None, None, &[]));
    }
    let (why, code) = match gone {
        Gone::Expired if input.resume.is_none() && crate::serve::page::answers_calls(input) => (
            "the calls of the page's tools on this thread expired: no answer came within the tool timeout (--tool-timeout), so the model was told so and the CLI stopped",
            code::INTERRUPT_EXPIRED,
        ),
        Gone::Expired => (
            "the interrupts of this thread expired: no decision came within the approval timeout (--approval-timeout), so the tool calls were denied and the turn ended; resume them with status \"cancelled\" to go on",
            code::INTERRUPT_EXPIRED,
        ),
        Gone::Evicted => (
            "the run that waited for these decisions was ended to make room for another (the server keeps at most 32 runs alive, waiting ones included, and ends the one waiting longest first): the tool calls were denied and the turn ended; resume them with status \"cancelled\" to go on",
            code::INTERRUPT_EVICTED,
        ),
        Gone::Ended => (
            "the run that waited for these decisions has ended: they are no longer pending; resume them with status \"cancelled\" to go on",
            code::INTERRUPT_EXPIRED,
        ),
    };
    error_events(shared, input, why, code)
}

/// Whether the request's `resume` has entries, each `cancelled`.
fn cancels_all(input: &RunAgentInput) -> bool {
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow)]
        status: std::borrow::Cow<'a, str>,
    }
    input
        .resume
        .and_then(|r| serde_json::from_str::<Vec<Entry>>(r.get()).ok())
        .is_some_and(|v| !v.is_empty() && v.iter().all(|e| e.status == "cancelled"))
}

/// A run slot: one CLI alive, running or waiting for decisions; at most
/// [`MAX_RUNS`]. Given back when dropped, unless the run is kept waiting
/// (its slot goes with it).
pub(super) struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a request on a thread gets.
pub(super) enum Claim<'a> {
    /// The thread's waiting run, and its slot.
    Resume(Slot<'a>, Waiting),
    /// The thread's idle run, for the request's new user message, and its
    /// slot.
    Next(Slot<'a>, Waiting),
    /// A slot for a new run.
    Start(Slot<'a>),
    /// No run: the request is answered here.
    Answer,
    /// Every slot is taken by a running run, or the server stops.
    Full,
}

/// What a request on `thread` gets: the thread's waiting run if it has one
/// (whose slot the request takes over; an idle one only when it `starts` a
/// run), else, when it `starts` a run, a slot for it. With every slot
/// taken and a run kept, the one idle longest is ended to make room, else
/// the run waiting longest (its thread's next resume is told so).
pub(super) fn claim<'a>(shared: &'a Shared, thread: &str, starts: bool) -> Claim<'a> {
    if shared.stopping.load(Ordering::SeqCst) {
        return Claim::Full;
    }
    let evicted = {
        let mut waiting = shared.waiting.lock().expect("not poisoned");
        match waiting.remove(thread) {
            Some(w) if !w.idle => return Claim::Resume(Slot(&shared.running), w),
            Some(w) if starts => return Claim::Next(Slot(&shared.running), w),
            // Nothing waits for a decision: the idle run stays.
            Some(w) => {
                waiting.insert(thread.to_owned(), w);
                return Claim::Answer;
            }
            None => {}
        }
        if !starts {
            return Claim::Answer;
        }
        if shared.running.load(Ordering::SeqCst) < MAX_RUNS {
            shared.running.fetch_add(1, Ordering::SeqCst);
            return Claim::Start(Slot(&shared.running));
        }
        let oldest = waiting
            .iter()
            .min_by_key(|(_, w)| (!w.idle, w.since))
            .map(|(t, _)| t.clone());
        let Some(t) = oldest else {
            return Claim::Full;
        };
        let w = waiting.remove(&t).expect("found");
        if !w.idle {
            remember_gone(shared, &t, Gone::Evicted);
        }
        (t, w)
    };
    // The evicted run's slot is the request's.
    let (t, mut w) = evicted;
    if w.idle {
        // Its thread's next turn loads the session in a new process.
        drop(w.stdin.take());
    } else {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: serve: every run slot ({MAX_RUNS}) is taken: the run of thread {t:?}, waiting longest for decisions, is ended to make room"
        );
    }
    terminate(w.child.id());
    settle(shared, &t, w, Streamed::Ended, None);
    Claim::Start(Slot(&shared.running))
}

/// The idle run `w` the thread's request did not take goes back, its slot
/// with it.
pub(super) fn put_back(shared: &Shared, thread: &str, w: Waiting, slot: Slot) {
    shared
        .waiting
        .lock()
        .expect("not poisoned")
        .insert(thread.to_owned(), w);
    std::mem::forget(slot);
}

/// Every moment [`reap`] looks for waiting runs that have ended.
const REAP_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Until the server stops: waiting runs that have ended by themselves
/// (their approval timeout passed) are waited for, their pipes closed and
/// their slots given back, and their threads' next resume told why. An
/// idle run kept past `--keep-idle` has its input closed, and ends (its
/// agent with it); one that has ended is settled without a word (its
/// thread's next turn loads the session in a new process).
pub(super) fn reap(shared: &Shared) {
    while !shared.stopping.load(Ordering::SeqCst) {
        std::thread::sleep(REAP_EVERY);
        let ended: Vec<(String, Waiting)> = {
            let mut waiting = shared.waiting.lock().expect("not poisoned");
            let mut done = Vec::new();
            for (t, w) in waiting.iter_mut() {
                if w.idle && w.since.elapsed() >= shared.keep_idle {
                    drop(w.stdin.take());
                }
                match w.child.try_wait() {
                    Ok(None) => {}
                    status => done.push((t.clone(), Gone::of(status.ok().flatten()), w.idle)),
                }
            }
            done.into_iter()
                .filter_map(|(t, gone, idle)| {
                    if !idle {
                        remember_gone(shared, &t, gone);
                    }
                    waiting.remove(&t).map(|w| (t, w))
                })
                .collect()
        };
        for (t, w) in ended {
            settle(shared, &t, w, Streamed::Ended, None);
            shared.running.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The line a waiting run reads: `{"runId": …, "resume": …}`, the
/// `resume` copied as the request's body holds it (no tree of it is made),
/// its line breaks (whitespace between tokens) made spaces, and a newline
/// at the end: written with one `write`.
fn resume_line(input: &RunAgentInput) -> Vec<u8> {
    let run_id = serde_json::to_string(&input.run_id).expect("a string or null");
    let resume = input.resume.map_or("null", |r| r.get());
    let mut line = Vec::with_capacity(resume.len() + run_id.len() + 24);
    line.extend_from_slice(b"{\"runId\":");
    line.extend_from_slice(run_id.as_bytes());
    line.extend_from_slice(b",\"resume\":");
    line.extend(
        resume
            .bytes()
            .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
    );
    line.extend(crate::serve::page::answer_fields(input));
    line.extend_from_slice(b"}\n");
    line
}

/// A run whose response has ended: kept if it waits for decisions, its
/// slot with it; else waited for, its session kept for the thread, what it
/// said added to the thread's history, and its slot (if it holds one)
/// given back.
pub(super) fn settle(
    shared: &Shared,
    thread: &str,
    mut w: Waiting,
    streamed: Streamed,
    slot: Option<Slot>,
) {
    let idle = streamed == Streamed::Idle && w.kept.is_some();
    if streamed == Streamed::Waiting || idle {
        if idle {
            // The turn is over: what it left is the thread's now.
            kept_turn(shared, thread, &mut w);
        }
        w.idle = idle;
        w.since = Instant::now();
        let mut waiting = shared.waiting.lock().expect("not poisoned");
        waiting.insert(thread.to_owned(), w);
        // The slot is the waiting run's now.
        std::mem::forget(slot);
        return;
    }
    drop(w.stdin.take());
    let pid = w.child.id();
    let _ = w.child.wait();
    shared.runs.lock().expect("not poisoned").remove(&pid);
    let session = w.file.read();
    let said = std::mem::take(&mut w.said);
    drop(w);
    drop(slot);
    keep_turn(shared, thread, session.as_ref(), *said);
}

/// What a turn leaves for its thread: the session it reported, and what it
/// said added to the thread's history.
fn keep_turn(
    shared: &Shared,
    thread: &str,
    session: Option<&Session>,
    said: crate::serve::history::Recorder,
) {
    let kept = shared
        .threads
        .lock()
        .expect("not poisoned")
        .ran(thread, session.map(|s| (s.id.as_str(), s.acp)));
    if let Err(e) = kept {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: serve: the session of thread {thread:?} is not kept: {e}"
        );
    }
    crate::serve::history::keep(shared, thread, said);
}

/// The turn of an idle run is over: what it left kept for the thread (what
/// it said once: the next turn records its own), its files removed.
fn kept_turn(shared: &Shared, thread: &str, w: &mut Waiting) {
    let session = w.file.read();
    keep_turn(
        shared,
        thread,
        session.as_ref(),
        *std::mem::take(&mut w.said),
    );
    let _ = std::fs::remove_dir_all(w.file.0.with_extension(crate::serve::page::FILES_EXT));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's session file: the id, and a second line `acp` when the run
    /// spoke the Agent Client Protocol; any other second line is not a
    /// session.
    #[test]
    fn a_session_file_says_whether_the_session_was_made_over_acp() {
        let dir = std::env::temp_dir().join(format!("agui-session-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let read = |text: &str| {
            let file = SessionFile(dir.join("1"));
            std::fs::write(&file.0, text).unwrap();
            file.read().map(|s| (s.id, s.acp))
        };
        assert_eq!(read("s1"), Some(("s1".into(), false)));
        assert_eq!(read("s1\nacp"), Some(("s1".into(), true)));
        assert_eq!(read("s1\nstream"), None);
        assert_eq!(read("\nacp"), None);
        assert_eq!(read(&"a".repeat(MAX_ID + 1)), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_resume_line_is_one_line_of_the_request_s_parts() {
        let body = "{\"threadId\":\"t\",\"runId\":\"r\\\"1\",\"resume\":[\n {\"interruptId\":\"a\",\r\n\"status\":\"resolved\",\"payload\":{\"message\":\"x\\ny\"}}]}";
        let input: RunAgentInput = serde_json::from_str(body).unwrap();
        let line = resume_line(&input);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert!(line.ends_with(b"}\n"));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["runId"], "r\"1");
        assert_eq!(v["resume"][0]["payload"]["message"], "x\ny");
        let none: RunAgentInput = serde_json::from_str(r#"{"threadId":"t"}"#).unwrap();
        assert_eq!(resume_line(&none), b"{\"runId\":null,\"resume\":null}\n");
    }
}
