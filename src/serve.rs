//! `agui-translate serve`: an AG-UI endpoint over HTTP.
//!
//! Each `POST` carries an AG-UI `RunAgentInput`; its last user message is the
//! prompt of one `agui-translate run` (this program, started again), whose
//! server-sent events are copied to the response as they come. The run gets
//! the request's `threadId` and `runId`, and a thread's later requests resume
//! the CLI's session (the session id the run reports). A client that goes
//! away ends its run as SIGTERM does. A connection is a thread: the server
//! is blocking, and the runs are processes of their own.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

/// Connections served at once; more are answered 503 at once. Each holds a
/// thread and, while its run lasts, a CLI: a bound that keeps a burst of
/// requests from starting a CLI each.
const MAX_CONNECTIONS: usize = 32;
/// Request line and headers, at most.
const MAX_HEAD: usize = 64 * 1024;
/// A request body, at most (a long conversation of messages fits).
const MAX_BODY: usize = 16 * 1024 * 1024;
/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Threads whose CLI session is remembered; the oldest is forgotten first.
const MAX_SESSIONS: usize = 10_000;

/// What the connections share.
struct Shared {
    cli: crate::dialect::Dialect,
    token: Option<String>,
    /// Options for every run (after `--` on the command line).
    run_options: Vec<String>,
    sessions: Mutex<Sessions>,
    /// Threads with a run going: a second request waits for none, it is
    /// refused (409), so that two runs never resume one session at once.
    busy: Mutex<HashSet<String>>,
    /// The runs going, by process id: ended when the server stops.
    runs: Mutex<HashSet<u32>>,
    connections: AtomicUsize,
    next_file: AtomicUsize,
}

/// AG-UI thread id → the CLI's session id, bounded.
#[derive(Default)]
struct Sessions {
    by_thread: HashMap<String, String>,
    order: VecDeque<String>,
}

impl Sessions {
    fn get(&self, thread: &str) -> Option<&str> {
        self.by_thread.get(thread).map(String::as_str)
    }

    fn insert(&mut self, thread: &str, session: String) {
        if self.by_thread.insert(thread.to_owned(), session).is_none() {
            self.order.push_back(thread.to_owned());
            if self.order.len() > MAX_SESSIONS {
                if let Some(old) = self.order.pop_front() {
                    self.by_thread.remove(&old);
                }
            }
        }
    }
}

/// What `serve` is asked to do.
#[derive(Debug)]
pub struct Config {
    /// The CLI that answers.
    pub cli: crate::dialect::Dialect,
    /// Where to listen (`ADDR:PORT`).
    pub listen: String,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// Options given to every run.
    pub run_options: Vec<String>,
}

/// `agui-translate serve`. `check_run` checks the arguments of a run as the
/// command line takes them.
pub fn main(
    a: Config,
    check_run: impl Fn(Vec<std::ffi::OsString>) -> Result<(), clap::Error>,
) -> anyhow::Result<ExitCode> {
    let addr: SocketAddr = match a.listen.parse() {
        Ok(addr) => addr,
        Err(_) => return usage(&format!("--listen {:?}: not ADDR:PORT", a.listen)),
    };
    if !addr.ip().is_loopback() && a.token.is_none() {
        return usage(&format!(
            "--listen {addr} is not a loopback address: give --token, since the CLI runs tools on this machine"
        ));
    }
    if a.token.as_deref().is_some_and(str::is_empty) {
        return usage("--token is empty");
    }
    // The run options are checked once, here, as every run will get them.
    let probe = run_argv(
        a.cli,
        &a.run_options,
        "thread",
        "run",
        Some("session"),
        "file",
    );
    if let Err(e) = check_run(
        std::iter::once("agui-translate".into())
            .chain(probe)
            .collect(),
    ) {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: serve: the options after `--` are run's, and serve sets \
             --format, --thread-id, --run-id and --resume itself:"
        );
        e.exit();
    }
    let listener = TcpListener::bind(addr).with_context(|| format!("--listen {addr}"))?;
    let local = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in crate::interrupt::STOP_SIGNALS {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let shared = Arc::new(Shared {
        cli: a.cli,
        token: a.token,
        run_options: a.run_options,
        sessions: Mutex::default(),
        busy: Mutex::default(),
        runs: Mutex::default(),
        connections: AtomicUsize::new(0),
        next_file: AtomicUsize::new(0),
    });
    let _ = writeln!(
        io::stderr(),
        "agui-translate: serving {} on http://{local}/",
        a.cli.name()
    );
    listener.set_nonblocking(true)?;
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((conn, _)) => {
                let _ = conn.set_nonblocking(false);
                if shared.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    shared.connections.fetch_sub(1, Ordering::SeqCst);
                    let mut conn = conn;
                    let _ = respond_error(&mut conn, 503, "too many runs at once");
                    continue;
                }
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve_one(conn, &shared);
                    shared.connections.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = writeln!(io::stderr(), "agui-translate: serve: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    // Stopped: every run ends as cancelled (each `run` passes it on to its
    // CLI), and their responses are finished before the server exits.
    for pid in shared.runs.lock().expect("not poisoned").iter() {
        terminate(*pid);
    }
    while shared.connections.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(ExitCode::SUCCESS)
}

fn usage(msg: &str) -> anyhow::Result<ExitCode> {
    let _ = writeln!(io::stderr(), "agui-translate: serve: {msg}");
    Ok(ExitCode::from(2))
}

/// The arguments of the `agui-translate run` behind one request (the prompt
/// comes on its stdin).
fn run_argv(
    cli: crate::dialect::Dialect,
    options: &[String],
    thread: &str,
    run: &str,
    resume: Option<&str>,
    session_file: &str,
) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = vec![
        "run".into(),
        cli.name().into(),
        "-".into(),
        "--format".into(),
        "sse".into(),
        "--thread-id".into(),
        thread.into(),
        "--run-id".into(),
        run.into(),
        "--session-file".into(),
        session_file.into(),
    ];
    if let Some(s) = resume {
        v.extend(["--resume".into(), s.into()]);
    }
    v.extend(options.iter().map(Into::into));
    v
}

/// The parts of an AG-UI `RunAgentInput` a run needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunAgentInput {
    thread_id: String,
    run_id: String,
    #[serde(default)]
    messages: Vec<Message>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    #[serde(default)]
    content: Option<serde_json::Value>,
}

/// The text of the last user message: a string, or the text parts of an
/// array of parts (AG-UI `InputContent`), one per line.
fn prompt_of(input: &RunAgentInput) -> Option<String> {
    let last = input.messages.iter().rev().find(|m| m.role == "user")?;
    let text = match last.content.as_ref()? {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    Some(text).filter(|t| !t.trim().is_empty())
}

struct Request {
    method: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request was not read: the status to answer with.
struct Refused(u16, &'static str);

fn read_request(conn: &mut BufReader<TcpStream>) -> Result<Option<Request>, Refused> {
    let mut head = Vec::new();
    let mut lines = Vec::new();
    loop {
        let start = head.len();
        let n = conn
            .by_ref()
            .take((MAX_HEAD - start) as u64 + 1)
            .read_until(b'\n', &mut head)
            .map_err(|_| Refused(408, "the request did not arrive in time"))?;
        if n == 0 {
            if start == 0 {
                return Ok(None);
            }
            return Err(Refused(400, "the request ended inside its headers"));
        }
        if head.len() > MAX_HEAD {
            return Err(Refused(431, "the request's headers are too long"));
        }
        let line = std::str::from_utf8(&head[start..])
            .map_err(|_| Refused(400, "the request's headers are not UTF-8"))?
            .trim_end_matches(['\r', '\n'])
            .to_owned();
        if line.is_empty() {
            break;
        }
        lines.push(line);
    }
    let mut lines = lines.into_iter();
    let request_line = lines.next().ok_or(Refused(400, "no request line"))?;
    let method = request_line
        .split(' ')
        .next()
        .filter(|m| !m.is_empty())
        .ok_or(Refused(400, "no method"))?
        .to_owned();
    let headers = lines
        .map(|l| match l.split_once(':') {
            Some((n, v)) => Ok((n.trim().to_owned(), v.trim().to_owned())),
            None => Err(Refused(400, "a header without ':'")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut req = Request {
        method,
        headers,
        body: Vec::new(),
    };
    if req.header("transfer-encoding").is_some() {
        return Err(Refused(411, "send the body with Content-Length"));
    }
    let len = match req.header("content-length") {
        None => 0,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| Refused(400, "Content-Length is not a number"))?,
    };
    if len > MAX_BODY {
        return Err(Refused(413, "the request body is too large"));
    }
    req.body.resize(len, 0);
    conn.read_exact(&mut req.body)
        .map_err(|_| Refused(400, "the request body ended early"))?;
    Ok(Some(req))
}

const CORS: &str = "Access-Control-Allow-Origin: *\r\n\
Access-Control-Allow-Methods: POST, OPTIONS\r\n\
Access-Control-Allow-Headers: Content-Type, Authorization, Accept\r\n";

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    }
}

/// A short JSON error, and the connection closed.
fn respond_error(conn: &mut TcpStream, status: u16, message: &str) -> io::Result<()> {
    let body = serde_json::json!({ "error": message }).to_string();
    let auth = if status == 401 {
        "WWW-Authenticate: Bearer\r\n"
    } else {
        ""
    };
    write!(
        conn,
        "HTTP/1.1 {status} {}\r\n{CORS}{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        reason(status),
        body.len()
    )?;
    conn.flush()
}

/// Compares in time independent of where the strings differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn serve_one(conn: TcpStream, shared: &Shared) -> io::Result<()> {
    conn.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut conn = conn;
    let req = match read_request(&mut reader) {
        Ok(Some(req)) => req,
        Ok(None) => return Ok(()),
        Err(Refused(status, why)) => return respond_error(&mut conn, status, why),
    };
    if req.method == "OPTIONS" {
        // A browser's preflight.
        write!(
            conn,
            "HTTP/1.1 204 No Content\r\n{CORS}Access-Control-Max-Age: 600\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return conn.flush();
    }
    if req.method != "POST" {
        return respond_error(&mut conn, 405, "POST an AG-UI RunAgentInput");
    }
    if let Some(token) = &shared.token {
        let given = req
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same_secret(given.as_bytes(), token.as_bytes()) {
            return respond_error(&mut conn, 401, "a wrong or missing bearer token");
        }
    }
    let input: RunAgentInput = match serde_json::from_slice(&req.body) {
        Ok(i) => i,
        Err(e) => {
            let msg = format!("not an AG-UI RunAgentInput: {e}");
            return respond_error(&mut conn, 400, &msg);
        }
    };
    let Some(prompt) = prompt_of(&input) else {
        return respond_error(&mut conn, 400, "no user message with text");
    };
    if !shared
        .busy
        .lock()
        .expect("not poisoned")
        .insert(input.thread_id.clone())
    {
        return respond_error(&mut conn, 409, "this thread has a run going");
    }
    let ran = run_one(&mut conn, shared, &input, &prompt);
    shared
        .busy
        .lock()
        .expect("not poisoned")
        .remove(&input.thread_id);
    ran
}

/// The session file of one run, removed when dropped.
struct SessionFile(PathBuf);

impl Drop for SessionFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn run_one(
    conn: &mut TcpStream,
    shared: &Shared,
    input: &RunAgentInput,
    prompt: &str,
) -> io::Result<()> {
    let n = shared.next_file.fetch_add(1, Ordering::SeqCst);
    let file = SessionFile(
        std::env::temp_dir().join(format!("agui-translate-serve-{}-{n}", std::process::id())),
    );
    let resume = shared
        .sessions
        .lock()
        .expect("not poisoned")
        .get(&input.thread_id)
        .map(str::to_owned);
    let argv = run_argv(
        shared.cli,
        &shared.run_options,
        &input.thread_id,
        &input.run_id,
        resume.as_deref(),
        &file.0.to_string_lossy(),
    );
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(&argv)
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
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot start the run: {e}");
            return respond_error(conn, 500, &msg);
        }
    };
    let pid = child.id();
    shared.runs.lock().expect("not poisoned").insert(pid);
    let streamed = stream_run(conn, &mut child, prompt);
    let _ = child.wait();
    shared.runs.lock().expect("not poisoned").remove(&pid);
    if let Ok(session) = std::fs::read_to_string(&file.0) {
        if !session.is_empty() {
            shared
                .sessions
                .lock()
                .expect("not poisoned")
                .insert(&input.thread_id, session);
        }
    }
    streamed
}

/// Sends the prompt, then copies the run's events to the client as they
/// come. A client that goes away (seen by a read that ends, even while the
/// run is quiet, or by a write that fails) ends the run as SIGTERM does.
fn stream_run(conn: &mut TcpStream, child: &mut Child, prompt: &str) -> io::Result<()> {
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        // A run that has already failed does not read it: its output says why.
        let _ = stdin.write_all(prompt.as_bytes());
    }
    let mut out = child.stdout.take().expect("piped");
    conn.write_all(
        format!(
            "HTTP/1.1 200 OK\r\n{CORS}Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )?;
    conn.flush()?;
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let mut peer = conn.try_clone()?;
        peer.set_read_timeout(None)?;
        let done = done.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            loop {
                match peer.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            if !done.load(Ordering::SeqCst) {
                terminate(pid);
            }
        })
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut gone = false;
    loop {
        let n = match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if !gone
            && conn
                .write_all(&buf[..n])
                .and_then(|()| conn.flush())
                .is_err()
        {
            // The rest of the run is read and dropped, so that it can end.
            gone = true;
            terminate(pid);
        }
    }
    done.store(true, Ordering::SeqCst);
    let _ = conn.shutdown(Shutdown::Both);
    let _ = watcher.join();
    Ok(())
}

/// SIGTERM to one run (`agui-translate run` ends its CLI and the run).
fn terminate(pid: u32) {
    // SAFETY: kill(2) with a process id this server started and has not
    // yet waited for, so it cannot name another process.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: &str) -> RunAgentInput {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_prompt_is_the_last_user_message() {
        let i = input(
            r#"{"threadId":"t","runId":"r","messages":[
                {"id":"1","role":"user","content":"first"},
                {"id":"2","role":"assistant","content":"answer"},
                {"id":"3","role":"user","content":[{"type":"text","text":"a"},{"type":"binary","mimeType":"image/png"},{"type":"text","text":"b"}]},
                {"id":"4","role":"tool","content":"x","toolCallId":"c"}]}"#,
        );
        assert_eq!(prompt_of(&i).as_deref(), Some("a\nb"));
        let none =
            input(r#"{"threadId":"t","runId":"r","messages":[{"role":"user","content":"  "}]}"#);
        assert_eq!(prompt_of(&none), None);
    }

    #[test]
    fn sessions_are_bounded_oldest_first() {
        let mut s = Sessions::default();
        for i in 0..=MAX_SESSIONS {
            s.insert(&format!("t{i}"), format!("s{i}"));
        }
        assert_eq!(s.get("t0"), None);
        assert_eq!(s.get("t1"), Some("s1"));
        assert_eq!(s.by_thread.len(), MAX_SESSIONS);
        s.insert("t1", "again".into());
        assert_eq!(s.get("t1"), Some("again"));
        assert_eq!(s.order.len(), MAX_SESSIONS);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
    }
}
