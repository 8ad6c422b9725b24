//! The listening loop: connections accepted, each a thread of its own, the
//! clients still sending their request and the run slots counted, and the
//! stop, which ends the runs and closes the connections.

use std::io::{self, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agui::code;
use crate::serve::http::{self, Refused};
use crate::serve::input::{self, Request};
use crate::serve::launch::{self, terminate};
use crate::serve::waiting::Claim;
use crate::serve::{access, history, waiting, Shared};

/// CLIs alive at once, running or waiting for decisions (`--approval
/// ask`); a request when all are running is answered 503, and one when
/// some wait ends the one waiting longest (see [`waiting::claim`]). Each
/// holds a CLI, and a running one a thread: a bound that keeps a burst of
/// requests from starting a CLI each.
pub(super) const MAX_RUNS: usize = 32;

/// Connections still sending their request, at most; one more closes the
/// one that has sent the least for the longest (see [`accept`]). They hold
/// no run slot, and each has [`REQUEST_TIMEOUT`].
const MAX_PENDING: usize = 256;

/// How long a client may take to send its whole request, head and body.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a stopped server waits for its runs' responses to finish, and
/// then for its connections to close, before it exits anyway.
const STOP_GRACE: Duration = Duration::from_secs(3);

const STOP_LIMIT: Duration = Duration::from_secs(4);

/// What `Retry-After` says when every run slot is taken.
const RETRY_AFTER_SECS: u32 = 5;

/// A flag set by SIGINT, SIGTERM or SIGHUP, from now on.
pub(super) fn stop_flag() -> io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in crate::base::interrupt::STOP_SIGNALS {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

/// Takes connections until `stop` is set, then stops every run and
/// connection ([`stop_all`]).
pub(super) fn serve(
    listener: TcpListener,
    stop: &AtomicBool,
    shared: &Arc<Shared>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    if shared.ask || !shared.keep_idle.is_zero() {
        let reaper = shared.clone();
        std::thread::Builder::new().spawn(move || waiting::reap(&reaper))?;
    }
    while !stop.load(Ordering::SeqCst) {
        // A connection is taken as it comes; `stop` is looked at every
        // 50 ms in between.
        if !arrived(&listener, Duration::from_millis(50)) {
            continue;
        }
        match listener.accept() {
            Ok((conn, _)) => accept(conn, shared),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                let _ = writeln!(io::stderr(), "agui-translate: serve: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    drop(listener);
    stop_all(shared);
    Ok(())
}

/// Whether a connection waits on `listener`, waiting for one at most
/// `wait`.
fn arrived(listener: &TcpListener, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one pollfd, owned here, for the length of the call.
    unsafe { libc::poll(&mut fd, 1, ms) > 0 }
}

/// Stopped: every run ends as cancelled (each `run` passes it on to its
/// CLI), and their responses are finished, for [`STOP_GRACE`]; requests
/// still arriving are cut off at once, and whatever is left after
/// [`STOP_LIMIT`] too.
fn stop_all(shared: &Shared) {
    let start = Instant::now();
    shared.stopping.store(true, Ordering::SeqCst);
    for pid in shared.runs.lock().expect("not poisoned").iter() {
        terminate(*pid);
    }
    let close_all = |how| {
        for conn in shared.open.lock().expect("not poisoned").values() {
            let _ = conn.shutdown(how);
        }
    };
    // A connection closed for reading still takes its response.
    close_all(Shutdown::Read);
    let open = || !shared.open.lock().expect("not poisoned").is_empty();
    while open() && start.elapsed() < STOP_GRACE {
        std::thread::sleep(Duration::from_millis(20));
    }
    close_all(Shutdown::Both);
    while open() && start.elapsed() < STOP_LIMIT {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A new connection: a thread of its own. When [`MAX_PENDING`]
/// connections are still sending their requests, the one that has sent
/// the least for the longest (no whole head, the oldest first) is closed
/// to make room: connections that send part of a request and wait cannot
/// keep others out.
pub(super) fn accept(conn: TcpStream, shared: &Arc<Shared>) {
    let _ = conn.set_nonblocking(false);
    let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    if let Ok(clone) = conn.try_clone() {
        shared.open.lock().expect("not poisoned").insert(id, clone);
    }
    {
        let mut pool = shared.pending.lock().expect("not poisoned");
        if pool.0.len() >= MAX_PENDING {
            let victim = pool
                .0
                .iter()
                .min_by_key(|(_, p)| (p.admitted, p.since))
                .map(|(v, _)| *v);
            if let Some(v) = victim {
                pool.0.remove(&v);
                if let Some(c) = shared.open.lock().expect("not poisoned").get(&v) {
                    let _ = c.shutdown(Shutdown::Both);
                }
            }
        }
        pool.0.insert(
            id,
            PendingConn {
                since: Instant::now(),
                admitted: false,
            },
        );
    }
    let worker = shared.clone();
    let spawned = std::thread::Builder::new().spawn(move || {
        let mut pending = Pending(Some((&worker.pending, id)));
        serve_one(conn, &worker, &mut pending);
        drop(pending);
        worker.open.lock().expect("not poisoned").remove(&id);
    });
    if spawned.is_err() {
        shared.pending.lock().expect("not poisoned").0.remove(&id);
        shared.open.lock().expect("not poisoned").remove(&id);
    }
}

/// The connections still sending their request, by id.
#[derive(Default)]
pub(super) struct PendingPool(std::collections::HashMap<u64, PendingConn>);

pub(super) struct PendingConn {
    since: Instant,
    /// Its head has come and is admitted: it sends its body.
    admitted: bool,
}

/// A connection counted as still sending its request, until it has.
struct Pending<'a>(Option<(&'a std::sync::Mutex<PendingPool>, u64)>);

impl Pending<'_> {
    fn admitted(&self) {
        if let Some((pool, id)) = self.0 {
            if let Some(p) = pool.lock().expect("not poisoned").0.get_mut(&id) {
                p.admitted = true;
            }
        }
    }

    fn done(&mut self) {
        if let Some((pool, id)) = self.0.take() {
            pool.lock().expect("not poisoned").0.remove(&id);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// An error answer (JSON `{"error": …}`) and the connection closed.
pub(super) fn refuse(
    conn: &mut TcpStream,
    cors: &str,
    Refused(status, why): Refused,
) -> io::Result<()> {
    refuse_with(conn, cors, status, why)
}

pub(super) fn refuse_with(
    conn: &mut TcpStream,
    cors: &str,
    status: u16,
    why: &str,
) -> io::Result<()> {
    let body = serde_json::json!({ "error": why }).to_string();
    let extra = match status {
        401 => "WWW-Authenticate: Bearer\r\n".to_owned(),
        503 => format!("Retry-After: {RETRY_AFTER_SECS}\r\n"),
        _ => String::new(),
    };
    let sent = http::respond(
        conn,
        status,
        &format!("{cors}{extra}"),
        "application/json",
        body.as_bytes(),
    );
    http::close(conn);
    sent
}

/// One connection: its request read and checked, then its run, holding a
/// run slot and its thread for as long as the run goes.
fn serve_one(mut conn: TcpStream, shared: &Shared, pending: &mut Pending) {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let mut head = match http::read_head(&mut conn, deadline) {
        Ok(Some(head)) => head,
        Ok(None) => return,
        Err(r) => {
            let _ = refuse(&mut conn, "", r);
            return;
        }
    };
    let Some(cors) = access::admit(&mut conn, &head, shared) else {
        return;
    };
    pending.admitted();
    let Some(body) = input::read_body(&mut conn, &mut head, &cors, deadline, shared) else {
        return;
    };
    pending.done();
    let Some(request) = input::Request::check(&mut conn, &cors, &body, shared) else {
        return;
    };
    let thread = &request.input.thread_id;
    if !shared
        .busy
        .lock()
        .expect("not poisoned")
        .insert(thread.clone())
    {
        // No new user message: the run going, rejoined. A new one: the
        // run no one reads any more ended for it, or 409.
        let last = head.header("last-event-id");
        let joined = history::rejoin(&mut conn, shared, &request, &cors, last);
        if joined || !history::take_over(shared, &request) {
            if !joined {
                let _ = refuse(
                    &mut conn,
                    &cors,
                    Refused(409, "this thread has a run going"),
                );
            }
            let _ = conn.shutdown(Shutdown::Both);
            return;
        }
    }
    let starts = request.prompt.is_some() && !request.resuming;
    let asks_for_thread = !request.resuming
        && !crate::serve::page::answers_calls(&request.input)
        && (request.prompt.is_none() || history::holds_last(shared, &request.input));
    if asks_for_thread {
        // No new user message: the thread's history, if it has one.
        let state = request.state_given.as_deref();
        let state = state.or(request.state_kept.as_deref());
        if !history::answer(&mut conn, shared, &request.input, state, &cors) {
            let _ = refuse(&mut conn, &cors, Refused(400, "no user message with text"));
        }
    } else {
        if let Some(state) = &request.state_given {
            // The page's state replaces the one kept for the thread.
            let threads = shared.threads.lock().expect("not poisoned");
            if let Err(e) = threads.keep_state(thread, state) {
                let _ = writeln!(
                    std::io::stderr(),
                    "agui-translate: serve: warning: the state of thread {thread:?} could not be kept: {e}"
                );
            }
        }
        match waiting::claim(shared, thread, starts) {
            Claim::Full => {
                let _ = refuse(&mut conn, &cors, Refused(503, "too many runs at once"));
            }
            claim => run_or_resume(&mut conn, shared, &request, claim, &cors),
        }
    }
    shared.busy.lock().expect("not poisoned").remove(thread);
    // The response ends only now, with what the run leaves kept and the
    // thread free: the client's next request on it resumes the session.
    let _ = conn.shutdown(Shutdown::Both);
}

/// The run of a request: the thread's waiting run resumed with the
/// request's decisions, or a new run of its prompt, or an answer made here
/// when the request resumes what no run waits for (saying why, when the
/// thread's waiting run is gone).
fn run_or_resume(
    conn: &mut TcpStream,
    shared: &Shared,
    request: &Request,
    claim: Claim,
    cors: &str,
) {
    let input = &request.input;
    let claim = match claim {
        // Answers to calls are no new turn: the idle run stays.
        Claim::Next(slot, w) if !request.resuming && crate::serve::page::answers_calls(input) => {
            waiting::put_back(shared, &input.thread_id, w, slot);
            Claim::Answer
        }
        claim => claim,
    };
    match (claim, &request.prompt) {
        (Claim::Resume(slot, w), _) => waiting::resume_run(conn, shared, input, w, slot, cors),
        (Claim::Next(slot, w), Some(prompt)) => {
            waiting::forget_gone(shared, &input.thread_id);
            launch::next_turn(conn, shared, request, prompt, (slot, w), cors);
        }
        (_, _) if !request.resuming && crate::serve::page::answers_calls(input) => {
            if let Some(gone) = waiting::gone(shared, &input.thread_id) {
                waiting::answer_gone(conn, shared, input, cors, gone);
                return;
            }
            let why = "no call of the page's tools waits on this thread: the answers are stale (the call's tool timeout passed, or the server restarted)";
            let _ = launch::answer_error(conn, shared, input, cors, why, code::INVALID_TOOL_RESULT);
        }
        (Claim::Start(slot), Some(prompt)) => {
            waiting::forget_gone(shared, &input.thread_id);
            launch::run_one(conn, shared, request, prompt, slot, cors);
        }
        _ => {
            if let Some(gone) = waiting::gone(shared, &input.thread_id) {
                waiting::answer_gone(conn, shared, input, cors, gone);
                return;
            }
            let why = "nothing on this thread waits for a decision: the resume is stale (or names interrupts this server never made)";
            let _ = launch::answer_error(conn, shared, input, cors, why, code::INVALID_RESUME);
        }
    }
}
