//! A request's run: `agui-translate run` started by the spawner thread
//! with the arguments serve gives it, the prompt written to it, and its
//! events streamed to the client, whose going away ends it (after the
//! rejoin grace, when no reader has come back for it).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agui::{AguiVersion, RawMode};
use crate::serve::history::Live;
use crate::serve::input::{Request, RunAgentInput};
use crate::serve::listen::refuse_with;
use crate::serve::waiting::{settle, SessionFile, Slot, Streamed, Waiting};
use crate::serve::{Shared, TOKEN_VAR};

/// How long a client may leave its stream unread (the socket's buffers
/// full) before its run ends as on a disconnect.
pub(super) const STALL_TIMEOUT: Duration = Duration::from_secs(15);

/// The thread that starts the runs. A run's parent-death signal comes when
/// the thread that started it ends, not the server: a run that outlives
/// its request (one that waits for decisions) is started by this thread,
/// which lives as long as the server.
pub(super) struct Spawner {
    tx: Mutex<std::sync::mpsc::Sender<(Command, std::sync::mpsc::Sender<io::Result<Child>>)>>,
    /// This program, opened at start: runs are started from it through
    /// `/proc/self/fd`, so an upgrade that replaces the file on disk (a new
    /// file renamed over it) leaves the running server able to start its
    /// runs, with the code it started with.
    exe: std::fs::File,
    /// Its path, the runs' `argv[0]`.
    exe_path: std::path::PathBuf,
}

impl Spawner {
    pub(super) fn new() -> io::Result<Spawner> {
        let exe_path = std::env::current_exe()?;
        let exe = std::fs::File::open(&exe_path)?;
        let (tx, rx) =
            std::sync::mpsc::channel::<(Command, std::sync::mpsc::Sender<io::Result<Child>>)>();
        std::thread::Builder::new().spawn(move || {
            for (mut cmd, back) in rx {
                let _ = back.send(cmd.spawn());
            }
        })?;
        Ok(Spawner {
            tx: Mutex::new(tx),
            exe,
            exe_path,
        })
    }

    /// A command that runs this program as it was at start.
    fn this_program(&self) -> Command {
        use std::os::fd::AsRawFd;
        // The child has the descriptor too (until its exec, which opens
        // the path first).
        let mut cmd = Command::new(format!("/proc/self/fd/{}", self.exe.as_raw_fd()));
        cmd.arg0(&self.exe_path);
        cmd
    }

    pub(super) fn spawn(&self, cmd: Command) -> io::Result<Child> {
        let (tx, rx) = std::sync::mpsc::channel();
        let gone = || io::Error::other("the thread that starts runs has ended");
        self.tx
            .lock()
            .expect("not poisoned")
            .send((cmd, tx))
            .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }
}

/// The arguments of the `agui-translate run` behind one request (the prompt
/// comes on its stdin); `kept` are those of [`kept_args`]. Values are joined to their options with `=`, so
/// that an id beginning with `-` is not taken for an option.
pub(super) fn run_argv(
    cli: crate::dialect::Dialect,
    options: &[String],
    thread: &str,
    run: Option<&str>,
    resume: Option<&str>,
    session_file: &Path,
    kept: Vec<std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut file = std::ffi::OsString::from("--session-file=");
    file.push(session_file);
    let mut v: Vec<std::ffi::OsString> = vec![
        "run".into(),
        cli.name().into(),
        "-".into(),
        "--format=sse".into(),
        format!("--thread-id={thread}").into(),
        file,
    ];
    // Without one, the run makes a fresh id of its own.
    if let Some(r) = run {
        v.push(format!("--run-id={r}").into());
    }
    if let Some(s) = resume {
        v.push(format!("--resume={s}").into());
    }
    v.extend(kept);
    v.extend(options.iter().map(Into::into));
    v
}

/// The run options for what serve keeps of a thread and its client: the
/// file of the thread's plan, the AG-UI release to write and the RAW events
/// to send (each none when the run options say).
pub(super) fn kept_args(
    plan_file: &std::path::Path,
    version: Option<AguiVersion>,
    raw: Option<RawMode>,
) -> Vec<std::ffi::OsString> {
    // The values as the command line spells them.
    fn name(v: impl clap::ValueEnum) -> std::ffi::OsString {
        v.to_possible_value()
            .map_or_else(Default::default, |p| p.get_name().into())
    }
    let mut v: Vec<std::ffi::OsString> = vec!["--plan-file".into(), plan_file.into()];
    if let Some(version) = version {
        v.extend(["--agui-version".into(), name(version)]);
    }
    if let Some(raw) = raw {
        v.extend(["--raw".into(), name(raw)]);
    }
    v
}

/// The extension of the file of a run's page tools, beside its session
/// file (and removed with it).
pub(super) const TOOLS_EXT: &str = "tools";

/// A new run of `prompt` (the request's, after the page's context) on the
/// request's thread, resuming the thread's session if it has one, offered
/// the page's tools and given its choices, streamed to the client and then
/// settled; what it says is kept in the thread's history.
pub(super) fn run_one(
    conn: &mut TcpStream,
    shared: &Shared,
    request: &Request,
    prompt: &str,
    slot: Slot,
    cors: &str,
) {
    let input = &request.input;
    let tools = request.tools.as_deref();
    let n = shared.next_file.fetch_add(1, Ordering::SeqCst);
    let file = SessionFile(shared.session_dir.join(n.to_string()));
    // A run with the page's tools (or the state's) talks with its CLI as
    // one that asks does: its calls wait for the thread's next request. So
    // does one that may keep its agent for the thread's next turn.
    let keeps = keeps(shared, request);
    let talks = shared.ask || tools.is_some() || request.state_tool || keeps;
    let cmd = tools_file(&file.0, tools).and_then(|t| {
        run_command(
            shared,
            request,
            &file.0,
            t.as_deref(),
            crate::serve::page::attach_args(&file.0, &request.attachments)?,
            (talks, keeps),
        )
    });
    let kept = match &cmd {
        Ok(c) if keeps => Some(keep_key(c)),
        _ => None,
    };
    let started = cmd.and_then(|cmd| shared.spawner.spawn(cmd));
    let mut child = match started {
        Ok(c) => c,
        Err(e) => {
            let _ = refuse_with(conn, cors, 500, &format!("cannot start the run: {e}"));
            return;
        }
    };
    let pid = child.id();
    shared.runs.lock().expect("not poisoned").insert(pid);
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped");
    if let Some(pipe) = &mut stdin {
        // A run that has already failed does not read it: its output says why.
        let _ = if talks {
            // One line, the prompt as a JSON string: the decisions follow.
            let line = serde_json::to_string(prompt).expect("a string");
            writeln!(pipe, "{line}")
        } else {
            pipe.write_all(prompt.as_bytes())
        };
    }
    if !talks {
        stdin = None;
    }
    let w = Waiting {
        child,
        stdin,
        stdout,
        file,
        since: Instant::now(),
        said: Box::default(),
        kept,
        idle: false,
    };
    // A run that fails before its first event (one that refuses its
    // arguments) still ends its client's run.
    let why = "the run ended without writing an event (its error is on the server's stderr)";
    let failed = error_events(shared, input, why, crate::agui::code::CLI_ERROR);
    stream_turn(
        conn,
        shared,
        request,
        w,
        (slot, talks),
        cors,
        (&failed, Vec::new()),
    );
}

/// The turn of `request` on the run `w` (new, or kept from the thread's
/// last turn), streamed to the client and then settled; what it says is
/// kept in the thread's history. `talks`: the run marks its waits;
/// `failed`: what the client gets if the run writes nothing; `first`: what
/// the run has written already.
fn stream_turn(
    conn: &mut TcpStream,
    shared: &Shared,
    request: &Request,
    mut w: Waiting,
    (slot, talks): (Slot, bool),
    cors: &str,
    (failed, first): (&[u8], Vec<u8>),
) {
    let input = &request.input;
    let mut said = crate::serve::history::Recorder::for_request(input);
    let mut after_start = crate::serve::history::for_reloaded(
        shared,
        input,
        input.last_user_content(),
        !request.resuming,
    );
    let page_state = request.state_given.as_deref();
    let info = crate::serve::page::RunInfo::new(
        input,
        page_state.or(request.state_kept.as_deref()),
        &request.choices,
        &shared.run_options,
    );
    if let (None, Some(state)) = (&info, &request.state_kept) {
        // A page that gives no state is told the thread's.
        after_start.extend_from_slice(
            format!("data: {{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{state}}}\n\n").as_bytes(),
        );
    }
    said.after_start(after_start);
    if let Some(info) = info {
        // The page's state (or the thread's, when the page gives none)
        // with what the run used.
        said.run_info(info);
    }
    w.said = Box::new(said);
    let pid = w.child.id();
    let Waiting { stdout, said, .. } = &mut w;
    let mut tee = |bytes: &[u8]| said.feed(bytes);
    let live = crate::serve::history::Live::start(shared, &input.thread_id, input.last_user_id());
    let mut out = io::Cursor::new(first).chain(stdout);
    let streamed = stream_run_or(
        conn,
        (pid, &live.live),
        &mut out,
        cors,
        talks,
        &mut || failed.to_vec(),
        &mut tee,
    );
    drop(live);
    settle(shared, &input.thread_id, w, streamed, Some(slot));
}

/// Whether the run of `request` may keep its agent between the thread's
/// turns (`--keep-idle`): a CLI that may speak ACP, and nothing of the
/// request's that a later turn could not send the same way (the page's
/// tools, the state's tool, files); a run with `--timeout` among the run
/// options is not kept either (its limit counts from its start).
fn keeps(shared: &Shared, request: &Request) -> bool {
    let own = shared.run_options.iter().take_while(|o| *o != "--");
    !shared.keep_idle.is_zero()
        && shared.cli.acp().is_some()
        && request.tools.is_none()
        && !request.state_tool
        && request.attachments.is_empty()
        && !own
            .into_iter()
            .any(|o| o == "--timeout" || o.starts_with("--timeout="))
}

/// How a run was started, but for what is one run's own (its id, the
/// session it resumes, its session file): a later turn goes to a kept run
/// only if its own run would be started the same way.
fn keep_key(cmd: &Command) -> Vec<std::ffi::OsString> {
    const ONE_RUN: [&[u8]; 3] = [b"--run-id=", b"--resume=", b"--session-file="];
    cmd.get_args()
        .filter(|a| !ONE_RUN.iter().any(|p| a.as_encoded_bytes().starts_with(p)))
        .map(ToOwned::to_owned)
        .collect()
}

/// The thread's next turn, with its new user message: to the thread's
/// kept agent `w` when this request's own run would have been started as
/// that one was and the run is still there (the line `{"runId",
/// "prompt"}` is taken and answered); else (the agent went away meanwhile,
/// or the request differs) the kept run is ended and the turn is a new run,
/// which loads the session.
pub(super) fn next_turn(
    conn: &mut TcpStream,
    shared: &Shared,
    request: &Request,
    prompt: &str,
    (slot, mut w): (Slot, Waiting),
    cors: &str,
) {
    let input = &request.input;
    let same = keeps(shared, request)
        && run_command(shared, request, &w.file.0, None, Vec::new(), (true, true))
            .is_ok_and(|c| Some(keep_key(&c)) == w.kept);
    let mut first = vec![0u8; 64 * 1024];
    let taken = same
        && matches!(w.child.try_wait(), Ok(None))
        && w.stdin
            .as_mut()
            .is_some_and(|p| p.write_all(&next_line(input, prompt)).is_ok())
        && loop {
            match w.stdout.read(&mut first) {
                Ok(n) => {
                    first.truncate(n);
                    break n > 0;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
    if !taken {
        drop(w.stdin.take());
        terminate(w.child.id());
        settle(shared, &input.thread_id, w, Streamed::Ended, None);
        return run_one(conn, shared, request, prompt, slot, cors);
    }
    w.idle = false;
    stream_turn(conn, shared, request, w, (slot, true), cors, (&[], first));
}

/// The line a kept run reads for its next turn: `{"runId": …, "prompt":
/// …}` and a newline (JSON strings hold no line break).
fn next_line(input: &RunAgentInput, prompt: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "runId": input.run_id,
        "prompt": prompt,
    }))
    .expect("JSON");
    line.push(b'\n');
    line
}

/// The file of the page's `tools` beside `session_file` (in the server's
/// private directory), if there are tools.
fn tools_file(session_file: &Path, tools: Option<&str>) -> io::Result<Option<std::path::PathBuf>> {
    let Some(tools) = tools else {
        return Ok(None);
    };
    let file = session_file.with_extension(TOOLS_EXT);
    std::fs::write(&file, tools)?;
    Ok(Some(file))
}

/// The command of the run of `request`: this program's `run`, with the
/// page's choices, the thread's session to resume and `session_file` for
/// the session it reports, the page's tools in `tools` (a file), the
/// thread's state file when the model may change the state, its files
/// (`attach`: the arguments that give them), its pipes,
/// no token, and the server's death as its end; `talks`: it reads its
/// prompt and the thread's next requests as lines, and marks each wait;
/// `keeps`: it keeps its agent for the thread's next turn.
fn run_command(
    shared: &Shared,
    request: &Request,
    session_file: &Path,
    tools: Option<&Path>,
    attach: Vec<std::ffi::OsString>,
    (talks, keeps): (bool, bool),
) -> io::Result<Command> {
    let input = &request.input;
    let (resume, plan_file, state_file) = {
        let threads = shared.threads.lock().expect("not poisoned");
        let resume = threads.session(&input.thread_id).map(str::to_owned);
        let state = request
            .state_tool
            .then(|| threads.state_file(&input.thread_id));
        (resume, threads.plan_file(&input.thread_id), state)
    };
    let mut argv = run_argv(
        shared.cli,
        &shared.run_options,
        &input.thread_id,
        input.run_id.as_deref(),
        resume.as_deref(),
        session_file,
        kept_args(&plan_file, shared.version.of(Some(input)), shared.raw),
    );
    request.choices.add_to(&mut argv, &shared.run_options);
    if talks {
        // After `run CLI -`, before the run options (which may end in `--`).
        argv.insert(3, "--input-marker".into());
    }
    if keeps {
        argv.insert(3, "--keep-turns".into());
    }
    // After `run CLI -`, before the run options.
    argv.splice(3..3, attach);
    if let Some(t) = tools {
        let mut arg = std::ffi::OsString::from("--page-tools=");
        arg.push(t);
        argv.insert(3, arg);
    }
    if let Some(s) = state_file {
        let mut arg = std::ffi::OsString::from("--state-file=");
        arg.push(s);
        argv.insert(3, arg);
    }
    let mut cmd = shared.spawner.this_program();
    cmd.args(&argv)
        // The token is the server's alone: not its runs', nor their CLIs'.
        .env_remove(TOKEN_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec the closure makes only
    // async-signal-safe calls (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            // A server that dies, even by SIGKILL, cancels its runs.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// A response that is one run ending in RUN_ERROR, made here (no CLI is
/// started).
pub(super) fn answer_error(
    conn: &mut TcpStream,
    shared: &Shared,
    input: &RunAgentInput,
    cors: &str,
    why: &str,
    code: &str,
) -> io::Result<()> {
    write_within(conn, sse_head(cors).as_bytes(), STALL_TIMEOUT)?;
    write_within(conn, &error_events(shared, input, why, code), STALL_TIMEOUT)
}

/// A response of `events` made here (no CLI is started).
pub(super) fn answer_events(conn: &mut TcpStream, cors: &str, events: &[u8]) -> io::Result<()> {
    write_within(conn, sse_head(cors).as_bytes(), STALL_TIMEOUT)?;
    write_within(conn, events, STALL_TIMEOUT)
}

/// One run of `input` ending in RUN_ERROR, as server-sent events.
pub(super) fn error_events(
    shared: &Shared,
    input: &RunAgentInput,
    why: &str,
    code: &str,
) -> Vec<u8> {
    made_run(shared, input, |em| em.fail_run(why, code, &[], None))
}

/// One run of `input`, as server-sent events: RUN_STARTED, then what
/// `end` writes.
pub(super) fn made_run(
    shared: &Shared,
    input: &RunAgentInput,
    end: impl FnOnce(&mut crate::agui::Emitter),
) -> Vec<u8> {
    let mut em = crate::agui::Emitter::new(
        crate::agui::Format::Sse,
        Some(input.thread_id.clone()),
        input.run_id.clone(),
    );
    if let Some(v) = shared.version.of(Some(input)) {
        em.set_version(v);
    }
    em.start_run(None, None);
    end(&mut em);
    em.end_of_input(true);
    em.output().to_vec()
}

/// The head of an SSE response.
fn sse_head(cors: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\n{cors}Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\nConnection: close\r\n\r\n"
    )
}

/// Copies the run's events to the client as they come. A client that goes
/// away (seen by a read that ends, even while the run is quiet, or by a
/// write that fails) or that leaves its stream unread for
/// [`STALL_TIMEOUT`] ends the run as SIGTERM does, once the rejoin grace
/// has passed with no reader of it ([`Live::owner_gone`]). With `marker`, the
/// run's [`MARKER`](crate::converse::ask::MARKER) ends the response (it is not
/// sent): the run waits for the thread's next request; so does
/// [`IDLE_MARKER`](crate::converse::acp::IDLE_MARKER), its turn over.
pub(super) fn stream_run(
    conn: &mut TcpStream,
    run: (u32, &Arc<Live>),
    out: &mut ChildStdout,
    cors: &str,
    marker: bool,
    said: &mut crate::serve::history::Recorder,
    if_empty: &mut dyn FnMut() -> Vec<u8>,
) -> Streamed {
    stream_run_or(conn, run, out, cors, marker, if_empty, &mut |b| {
        said.feed(b)
    })
}

/// What sees each piece of a run's stream before it is sent, and gives
/// back what to send: its whole events, some changed, some added.
type Tee<'a> = dyn FnMut(&[u8]) -> Vec<u8> + 'a;

/// [`stream_run`], sending what `if_empty` gives when the run writes
/// nothing at all,
/// each piece through `tee`, then through `live` (which gives each event
/// its `id:` and keeps it for readers that rejoin the run).
fn stream_run_or(
    conn: &mut TcpStream,
    (pid, live): (u32, &Arc<Live>),
    out: &mut dyn Read,
    cors: &str,
    marker: bool,
    if_empty: &mut dyn FnMut() -> Vec<u8>,
    tee: &mut Tee<'_>,
) -> Streamed {
    let mut empty = true;
    let mut gone = write_within(conn, sse_head(cors).as_bytes(), STALL_TIMEOUT).is_err();
    if gone {
        live.owner_gone(pid);
    }
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch_for_hangup(conn, (pid, live), &done);
    let mut send = |bytes: &[u8]| {
        let framed = live.frame(&tee(bytes));
        if !gone && !framed.is_empty() && write_within(conn, &framed, STALL_TIMEOUT).is_err() {
            // The rest of the run is read and not sent here, so that it
            // can end (and its readers that rejoined it still get it).
            gone = true;
            live.owner_gone(pid);
        }
    };
    let mut buf = vec![0u8; 64 * 1024];
    // The end of the output that may be the start of the marker.
    let mut held: Vec<u8> = Vec::new();
    let mut streamed = Streamed::Ended;
    loop {
        let n = match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        empty = false;
        if !marker {
            send(&buf[..n]);
            continue;
        }
        held.extend_from_slice(&buf[..n]);
        let (m, idle) = (
            crate::converse::ask::MARKER,
            crate::converse::acp::IDLE_MARKER,
        );
        let ended = if held.ends_with(m) {
            Some((m, Streamed::Waiting))
        } else if held.ends_with(idle) {
            Some((idle, Streamed::Idle))
        } else {
            None
        };
        if let Some((m, how)) = ended {
            send(&held[..held.len() - m.len()]);
            held.clear();
            streamed = how;
            break;
        }
        let upto = held.len() - marker_start(&held, m).max(marker_start(&held, idle));
        send(&held[..upto]);
        held.drain(..upto);
    }
    send(&held);
    if empty {
        send(&if_empty());
    }
    // The watcher ends when the connection is shut down, after the run's
    // session is kept (see `serve_one`).
    done.store(true, Ordering::SeqCst);
    drop(watcher);
    if streamed == Streamed::Waiting && !live.has_reader() {
        // No one took the response: the run is not kept waiting.
        terminate(pid);
        return Streamed::Ended;
    }
    streamed
}

/// A thread that reads the client's side of `conn` until it ends: a
/// client that goes away before `done` is seen at once, even while the
/// run `pid` is quiet ([`Live::owner_gone`]).
fn watch_for_hangup(
    conn: &TcpStream,
    (pid, live): (u32, &Arc<Live>),
    done: &Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    let mut peer = conn.try_clone().ok()?;
    let _ = peer.set_read_timeout(None);
    let done = done.clone();
    let live = live.clone();
    Some(std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        loop {
            match peer.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        if !done.load(Ordering::SeqCst) {
            live.owner_gone(pid);
        }
    }))
}

/// How many bytes at the end of `held` may be the start of `marker` (and
/// are held back until the next read tells).
fn marker_start(held: &[u8], marker: &[u8]) -> usize {
    (1..marker.len().min(held.len() + 1))
        .rev()
        .find(|&k| held.ends_with(&marker[..k]))
        .unwrap_or(0)
}

/// Writes all of `bytes` within `limit`, or fails: a reader that takes
/// that long to take one piece of the stream has stopped reading (a write
/// timeout alone would not see it, as the socket's buffers grow a little
/// now and then).
pub(super) fn write_within(
    conn: &mut TcpStream,
    mut bytes: &[u8],
    limit: Duration,
) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    while !bytes.is_empty() {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(io::ErrorKind::TimedOut)?;
        conn.set_write_timeout(Some(left))?;
        match conn.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// SIGTERM to one run (`agui-translate run` ends its CLI and the run).
pub(super) fn terminate(pid: u32) {
    // SAFETY: kill(2) with a process id this server started and has not
    // yet waited for, so it cannot name another process.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_may_begin_the_marker_is_held_back() {
        assert_eq!(marker_start(b"data: x\n\nMA", b"MARK"), 2);
        assert_eq!(marker_start(b"data: MAMA", b"MARK"), 2);
        assert_eq!(marker_start(b"data: x\n\n", b"MARK"), 0);
        assert_eq!(marker_start(b"M", b"MARK"), 1);
        assert_eq!(marker_start(b"", b"MARK"), 0);
    }

    /// The two markers begin alike: what may begin either is held back.
    #[test]
    fn both_markers_are_held_back_until_told_apart() {
        let (wait, idle) = (
            crate::converse::ask::MARKER,
            crate::converse::acp::IDLE_MARKER,
        );
        let common = wait.iter().zip(idle).take_while(|(a, b)| a == b).count();
        assert!(common > 1);
        let mut held = b"data: x\n\n".to_vec();
        held.extend_from_slice(&idle[..common + 1]);
        assert_eq!(marker_start(&held, wait), 0);
        assert_eq!(marker_start(&held, idle), common + 1);
    }

    #[test]
    fn kept_options_are_spelt_as_the_command_line_does() {
        let v = kept_args(
            std::path::Path::new("p"),
            Some(AguiVersion::V0_0),
            Some(RawMode::Unknown),
        );
        assert_eq!(
            v,
            [
                "--plan-file",
                "p",
                "--agui-version",
                "0.0",
                "--raw",
                "unknown"
            ]
        );
        assert_eq!(kept_args(std::path::Path::new("p"), None, None).len(), 2);
    }
}
