//! The keeper of waiting runs (`--approval ask`): a run that ends its
//! response in interrupts is kept, its CLI alive, until its thread's next
//! request resumes it with the decisions; a run that has ended is settled,
//! its session kept for the thread.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout};
use std::time::Instant;

use crate::agui::code;
use crate::serve::input::{id_ok, RunAgentInput, MAX_ID};
use crate::serve::launch::{answer_error, stream_run, terminate};
use crate::serve::listen::MAX_RUNS;
use crate::serve::Shared;

/// With `--approval ask`: runs kept waiting for their thread's decisions,
/// at most; one more ends the longest waiting.
pub(super) const MAX_WAITING: usize = MAX_RUNS;

/// The session file of one run, removed when dropped.
pub(super) struct SessionFile(pub(super) PathBuf);

impl SessionFile {
    /// The session id the run left, if any. The file is opened without
    /// following a link, and only its start is read.
    fn read(&self) -> Option<String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.0)
            .ok()?;
        let mut session = String::new();
        file.take(MAX_ID as u64 + 1)
            .read_to_string(&mut session)
            .ok()?;
        id_ok(&session).then_some(session)
    }
}

impl Drop for SessionFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension(crate::serve::launch::TOOLS_EXT));
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
}

/// How a run's response ended.
#[derive(PartialEq, Eq)]
pub(super) enum Streamed {
    /// The run's output ended.
    Ended,
    /// The run waits for the thread's next request.
    Waiting,
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
    cors: &str,
) {
    let pid = w.child.id();
    let line = resume_line(input);
    let alive = matches!(w.child.try_wait(), Ok(None))
        && w.stdin.as_mut().is_some_and(|p| p.write_all(&line).is_ok());
    if !alive {
        let why = match w.child.wait().ok().and_then(|s| s.code()) {
            Some(c)
                if c == i32::from(crate::process::spawn::EXPIRED)
                    && crate::serve::page::answers_calls(input) =>
            {
                "the calls of the page's tools on this thread expired: no answer came within the tool timeout, so the model was told so and the CLI stopped"
            }
            Some(c) if c == i32::from(crate::process::spawn::EXPIRED) => {
                "the interrupts of this thread expired: no decision came within the approval timeout, so the tool calls were denied and the turn ended"
            }
            _ => "the run that waited for these decisions has ended: they are no longer pending",
        };
        let _ = answer_error(conn, shared, input, cors, why, code::INTERRUPT_EXPIRED);
        settle(shared, &input.thread_id, w, Streamed::Ended);
        return;
    }
    let streamed = stream_run(conn, pid, &mut w.stdout, cors, true);
    settle(shared, &input.thread_id, w, streamed);
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

/// A run whose response has ended: kept if it waits for decisions (the
/// longest waiting one ended if too many wait), else waited for, its
/// session kept for the thread.
pub(super) fn settle(shared: &Shared, thread: &str, mut w: Waiting, streamed: Streamed) {
    if streamed == Streamed::Waiting {
        let evicted = {
            let mut waiting = shared.waiting.lock().expect("not poisoned");
            let oldest = (waiting.len() >= MAX_WAITING)
                .then(|| {
                    waiting
                        .iter()
                        .min_by_key(|(_, w)| w.since)
                        .map(|(t, _)| t.clone())
                })
                .flatten();
            let evicted = oldest.and_then(|t| waiting.remove(&t).map(|w| (t, w)));
            w.since = Instant::now();
            waiting.insert(thread.to_owned(), w);
            evicted
        };
        if let Some((t, w)) = evicted {
            terminate(w.child.id());
            settle(shared, &t, w, Streamed::Ended);
        }
        return;
    }
    drop(w.stdin.take());
    let pid = w.child.id();
    let _ = w.child.wait();
    shared.runs.lock().expect("not poisoned").remove(&pid);
    let session = w.file.read();
    let kept = shared
        .threads
        .lock()
        .expect("not poisoned")
        .ran(thread, session.as_deref());
    if let Err(e) = kept {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: serve: the session of thread {thread:?} is not kept: {e}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
