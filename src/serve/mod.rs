//! `agui-translate serve`: an AG-UI endpoint over HTTP.
//!
//! Each `POST` carries an AG-UI `RunAgentInput`; its last user message is the
//! prompt of one `agui-translate run` (this program, started again), whose
//! server-sent events are copied to the response as they come. The run gets
//! the request's `threadId` and `runId`, and a thread's later requests resume
//! the CLI's session (the session id the run reports). A client that goes
//! away ends its run as SIGTERM does. A connection is a thread: the server
//! is blocking, and the runs are processes of their own.

pub mod http;
pub mod threads;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agui::{code, AguiVersion, RawMode};
use crate::serve::http::Refused;
use crate::serve::threads::Threads;

/// Runs going at once; more requests are answered 503. Each holds a thread
/// and a CLI: a bound that keeps a burst of requests from starting a CLI
/// each.
const MAX_RUNS: usize = 32;
/// Connections still sending their request, at most; more are answered 503
/// at once. They hold no run slot, and each has [`REQUEST_TIMEOUT`].
const MAX_PENDING: usize = 256;
/// A request body, at most (a long conversation of messages fits).
const MAX_BODY: usize = 16 * 1024 * 1024;
/// How long a client may take to send its whole request, head and body.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may leave its stream unread (the socket's buffers
/// full) before its run ends as on a disconnect.
const STALL_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a stopped server waits for its runs' responses to finish, and
/// then for its connections to close, before it exits anyway.
const STOP_GRACE: Duration = Duration::from_secs(3);
const STOP_LIMIT: Duration = Duration::from_secs(4);
/// What `Retry-After` says when every run slot is taken.
const RETRY_AFTER_SECS: u32 = 5;
/// A thread or run id, at most (bytes).
const MAX_ID: usize = 1024;
/// Threads whose CLI session is kept; the oldest is forgotten first.
const MAX_THREADS: usize = 10_000;
/// With `--approval ask`: runs kept waiting for their thread's decisions,
/// at most; one more ends the longest waiting.
const MAX_WAITING: usize = MAX_RUNS;
/// The environment variable that gives the token.
pub const TOKEN_VAR: &str = "AGUI_SERVE_TOKEN";

/// What the connections share.
struct Shared {
    cli: crate::dialect::Dialect,
    token: Option<Vec<u8>>,
    access: Access,
    /// Options for every run (after `--` on the command line).
    run_options: Vec<String>,
    /// Where runs leave their session ids: a directory of this server's
    /// own, which no other user can write in.
    session_dir: PathBuf,
    /// The AG-UI release of the runs.
    version: Version,
    /// Which RAW events the runs write; none when the run options say.
    raw: Option<RawMode>,
    /// The CLI's session of each thread, kept in the state directory.
    threads: Mutex<Threads>,
    /// Threads with a run going: a second request waits for none, it is
    /// refused (409), so that two runs never resume one session at once.
    busy: Mutex<HashSet<String>>,
    /// `-- --approval ask`: a run that ends in interrupts is kept, its CLI
    /// alive, for the thread's next request.
    ask: bool,
    /// The runs waiting for decisions, by thread (at most [`MAX_WAITING`]).
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Starts the runs.
    spawner: Spawner,
    /// The runs going, by process id: ended when the server stops.
    runs: Mutex<HashSet<u32>>,
    /// Run slots taken.
    running: AtomicUsize,
    /// Connections still sending their request.
    pending: AtomicUsize,
    /// Every open connection, to be closed when the server stops.
    open: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
    next_file: AtomicUsize,
    stopping: AtomicBool,
}

/// Who may call: the names a request may be addressed to (`Host`), and the
/// web pages (`Origin`) that may call from a browser.
struct Access {
    /// Host names, in lower case, without a port.
    hosts: Vec<String>,
    /// Listening on every address: any address literal names this server.
    any_address: bool,
    origins: Vec<String>,
}

impl Access {
    fn new(local: SocketAddr, hosts: &[String], origins: &[String]) -> Self {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].map(String::from).into();
        names.push(match local.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        });
        names.extend(hosts.iter().map(|h| h.to_ascii_lowercase()));
        Access {
            hosts: names,
            any_address: local.ip().is_unspecified(),
            origins: origins.iter().map(|o| o.to_ascii_lowercase()).collect(),
        }
    }

    /// Whether a `Host` header names this server. A name that is not its
    /// own is how a DNS-rebinding page reaches it.
    fn host(&self, host: &str) -> bool {
        let Some(name) = host_name(host) else {
            return false;
        };
        let name = name.to_ascii_lowercase();
        self.hosts.contains(&name)
            || (self.any_address
                && (name.parse::<std::net::Ipv4Addr>().is_ok()
                    || name
                        .strip_prefix('[')
                        .and_then(|n| n.strip_suffix(']'))
                        .is_some_and(|n| n.parse::<std::net::Ipv6Addr>().is_ok())))
    }

    /// Whether a page from `origin` may call: one given with
    /// `--allow-origin`, or the server's own (the `Host` it was sent to).
    fn origin(&self, origin: &str, host: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        self.origins.contains(&origin)
            || origin
                .strip_prefix("http://")
                .is_some_and(|o| o == host.to_ascii_lowercase())
    }
}

/// The name in a `Host` value (`name`, `name:port`, `[v6]:port`), or
/// `None` if it is not one.
fn host_name(host: &str) -> Option<&str> {
    let (name, port) = if host.starts_with('[') {
        let end = host.find(']')? + 1;
        (&host[..end], &host[end..])
    } else {
        match host.split_once(':') {
            Some((n, p)) => (n, &host[n.len()..][..p.len() + 1]),
            None => (host, ""),
        }
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let name_ok = match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(ip) => ip.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
        }
    };
    (name_ok && port_ok).then_some(name)
}

/// An `--allow-origin` value: `scheme://host[:port]`, as a browser writes
/// an origin (no path, not even `/`).
fn origin_ok(o: &str) -> bool {
    let rest = o
        .strip_prefix("http://")
        .or_else(|| o.strip_prefix("https://"));
    rest.and_then(host_name).is_some()
}

/// What `serve` is asked to do.
#[derive(Debug)]
pub struct Config {
    /// The CLI that answers.
    pub cli: crate::dialect::Dialect,
    /// Where to listen (`ADDR:PORT`).
    pub listen: String,
    /// The bearer token every request must carry, if any (`--token`).
    pub token: Option<String>,
    /// A file whose first line is the token (`--token-file`).
    pub token_file: Option<PathBuf>,
    /// Origins whose web pages may call.
    pub allow_origin: Vec<String>,
    /// Host names besides the server's own.
    pub allow_host: Vec<String>,
    /// Options given to every run.
    pub run_options: Vec<String>,
    /// The AG-UI release every run writes for; none: each request's client's.
    pub agui_version: Option<AguiVersion>,
    /// Where each thread's session is kept; none: the default.
    pub state_dir: Option<PathBuf>,
    /// Which RAW events a client gets.
    pub raw: RawMode,
}

/// The token from `--token`, `--token-file` or the environment, if any.
fn token_of(a: &Config) -> Result<Option<String>, String> {
    let token = if let Some(t) = &a.token {
        t.clone()
    } else if let Some(file) = &a.token_file {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("--token-file {}: {e}", file.display()))?;
        text.lines().next().unwrap_or("").trim().to_owned()
    } else if let Some(t) = std::env::var_os(TOKEN_VAR) {
        t.into_string()
            .map_err(|_| format!("{TOKEN_VAR} is not UTF-8"))?
    } else {
        return Ok(None);
    };
    if token.is_empty() {
        return Err("the token is empty".into());
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("the token has a space or a character that is not ASCII".into());
    }
    Ok(Some(token))
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
    let token = match token_of(&a) {
        Ok(t) => t,
        Err(e) => return usage(&e),
    };
    if !addr.ip().is_loopback() && token.is_none() {
        return usage(&format!(
            "--listen {addr} is not a loopback address: give a token (--token-file, \
             {TOKEN_VAR} or --token), since the CLI runs tools on this machine"
        ));
    }
    if let Some(o) = a.allow_origin.iter().find(|o| !origin_ok(o)) {
        return usage(&format!(
            "--allow-origin {o:?}: not an origin (scheme://host[:port], no path)"
        ));
    }
    if let Some(h) = a
        .allow_host
        .iter()
        .find(|h| host_name(h) != Some(h.as_str()))
    {
        return usage(&format!("--allow-host {h:?}: not a host name (no port)"));
    }
    // The run options are checked once, here, as every run will get them.
    // `--agui-version` among the run options forces the release as serve's
    // own does.
    let in_options = a
        .run_options
        .iter()
        .any(|o| o == "--agui-version" || o.starts_with("--agui-version="));
    let version = match a.agui_version {
        _ if in_options => Version::InRunOptions,
        Some(v) => Version::Forced(v),
        None => Version::PerRequest,
    };
    let ask = asks(&a.run_options);
    if ask {
        if let Some(e) = crate::process::spawn::ask_refused(a.cli) {
            return usage(&format!("{e:#}"));
        }
    }
    let raw = Some(a.raw).filter(|_| {
        !a.run_options
            .iter()
            .any(|o| o == "--raw" || o.starts_with("--raw="))
    });
    let probe = run_argv(
        a.cli,
        &a.run_options,
        "thread",
        Some("run"),
        Some("session"),
        Path::new("file"),
        kept_args(std::path::Path::new("plan"), version.of(None), raw),
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
    let Some(state) = a.state_dir.or_else(crate::serve::threads::default_dir) else {
        return usage("give --state-dir: neither XDG_STATE_HOME nor HOME is set");
    };
    let threads = Threads::open(&state.join(a.cli.name()), MAX_THREADS)?;
    let listener = TcpListener::bind(addr).with_context(|| format!("--listen {addr}"))?;
    let local = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in crate::base::interrupt::STOP_SIGNALS {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let session_dir = PrivateDir::new()?;
    let shared = Arc::new(Shared {
        cli: a.cli,
        token: token.map(String::into_bytes),
        access: Access::new(local, &a.allow_host, &a.allow_origin),
        run_options: a.run_options,
        session_dir: session_dir.0.clone(),
        version,
        raw,
        threads: Mutex::new(threads),
        busy: Mutex::default(),
        ask,
        waiting: Mutex::default(),
        spawner: Spawner::new()?,
        runs: Mutex::default(),
        running: AtomicUsize::new(0),
        pending: AtomicUsize::new(0),
        open: Mutex::default(),
        next_conn: AtomicU64::new(0),
        next_file: AtomicUsize::new(0),
        stopping: AtomicBool::new(false),
    });
    let _ = writeln!(
        io::stderr(),
        "agui-translate: serving {} on http://{local}/",
        a.cli.name()
    );
    listener.set_nonblocking(true)?;
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((conn, _)) => accept(conn, &shared),
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
    drop(listener);
    stop_all(&shared);
    Ok(ExitCode::SUCCESS)
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

/// A new connection: a thread of its own, unless too many are still
/// sending their requests.
fn accept(mut conn: TcpStream, shared: &Arc<Shared>) {
    let _ = conn.set_nonblocking(false);
    if shared.pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING {
        shared.pending.fetch_sub(1, Ordering::SeqCst);
        // Answered here, without waiting for the request: the loop that
        // accepts connections must not wait on any one of them.
        let body = br#"{"error":"too many requests at once"}"#;
        let retry = format!("Retry-After: {RETRY_AFTER_SECS}\r\n");
        let _ = conn.set_nonblocking(true);
        let _ = http::respond(&mut conn, 503, &retry, "application/json", body);
        let _ = conn.shutdown(Shutdown::Write);
        return;
    }
    let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    if let Ok(clone) = conn.try_clone() {
        shared.open.lock().expect("not poisoned").insert(id, clone);
    }
    let worker = shared.clone();
    let spawned = std::thread::Builder::new().spawn(move || {
        let mut pending = Pending(Some(&worker.pending));
        serve_one(conn, &worker, &mut pending);
        drop(pending);
        worker.open.lock().expect("not poisoned").remove(&id);
    });
    if spawned.is_err() {
        shared.pending.fetch_sub(1, Ordering::SeqCst);
        shared.open.lock().expect("not poisoned").remove(&id);
    }
}

/// The thread that starts the runs. A run's parent-death signal comes when
/// the thread that started it ends, not the server: a run that outlives
/// its request (one that waits for decisions) is started by this thread,
/// which lives as long as the server.
struct Spawner(
    Mutex<std::sync::mpsc::Sender<(Command, std::sync::mpsc::Sender<io::Result<Child>>)>>,
);

impl Spawner {
    fn new() -> io::Result<Spawner> {
        let (tx, rx) =
            std::sync::mpsc::channel::<(Command, std::sync::mpsc::Sender<io::Result<Child>>)>();
        std::thread::Builder::new().spawn(move || {
            for (mut cmd, back) in rx {
                let _ = back.send(cmd.spawn());
            }
        })?;
        Ok(Spawner(Mutex::new(tx)))
    }

    fn spawn(&self, cmd: Command) -> io::Result<Child> {
        let (tx, rx) = std::sync::mpsc::channel();
        let gone = || io::Error::other("the thread that starts runs has ended");
        self.0
            .lock()
            .expect("not poisoned")
            .send((cmd, tx))
            .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }
}

/// A connection counted as still sending its request, until it has.
struct Pending<'a>(Option<&'a AtomicUsize>);

impl Pending<'_> {
    fn done(&mut self) {
        if let Some(n) = self.0.take() {
            n.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// A run slot, given back when dropped.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A directory only this user can enter (mode 0700, a name no one can
/// guess), removed with what is in it when dropped.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new() -> anyhow::Result<Self> {
        use std::os::unix::ffi::OsStringExt;
        let template = std::env::temp_dir().join("agui-translate-serve-XXXXXX");
        let mut bytes = std::ffi::CString::new(template.into_os_string().into_vec())
            .context("the temporary directory's path")?
            .into_bytes_with_nul();
        // SAFETY: a writable, NUL-terminated template that mkdtemp fills in.
        let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(io::Error::last_os_error()).context("creating a private directory");
        }
        bytes.pop();
        Ok(PrivateDir(std::ffi::OsString::from_vec(bytes).into()))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn usage(msg: &str) -> anyhow::Result<ExitCode> {
    let _ = writeln!(io::stderr(), "agui-translate: serve: {msg}");
    Ok(ExitCode::from(2))
}

/// Whether the run options ask the person at the other end
/// (`--approval ask`).
fn asks(options: &[String]) -> bool {
    options
        .iter()
        .zip(options.iter().skip(1).map(Some).chain([None]))
        .any(|(o, next)| {
            o == "--approval=ask" || (o == "--approval" && next.is_some_and(|n| n == "ask"))
        })
}

/// The arguments of the `agui-translate run` behind one request (the prompt
/// comes on its stdin); `kept` are those of [`kept_args`]. Values are joined to their options with `=`, so
/// that an id beginning with `-` is not taken for an option.
fn run_argv(
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
fn kept_args(
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

/// The parts of an AG-UI `RunAgentInput` a run needs, borrowed from the
/// request body: nothing of a message is kept but the last user message's
/// content, unparsed, so that a request costs little more than its body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunAgentInput<'a> {
    thread_id: String,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default, borrow)]
    messages: LastUserContent<'a>,
    /// Sent by 1.0 clients (`"1.0.0"`); 0.0 clients send none.
    #[serde(default)]
    protocol_version: Option<String>,
    /// The decisions on the interrupts the thread's last run ended with.
    #[serde(default, borrow)]
    resume: Option<&'a RawValue>,
}

/// Which AG-UI release a run writes for.
#[derive(Clone, Copy)]
enum Version {
    /// The one the request's client reads ([`client_version`]).
    PerRequest,
    /// `serve --agui-version`.
    Forced(AguiVersion),
    /// The run options say (`-- --agui-version`).
    InRunOptions,
}

impl Version {
    /// The release for `--agui-version` of the run of `input`; none when the
    /// run options give it.
    fn of(self, input: Option<&RunAgentInput>) -> Option<AguiVersion> {
        match self {
            Version::PerRequest => Some(input.map_or(AguiVersion::V1_0, client_version)),
            Version::Forced(v) => Some(v),
            Version::InRunOptions => None,
        }
    }
}

/// The AG-UI release a request's client reads: 1.0 for a `protocolVersion`
/// of 1 or later, the 0.0 shapes without one (or with a 0.x).
fn client_version(input: &RunAgentInput) -> AguiVersion {
    let major = input
        .protocol_version
        .as_deref()
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.trim().parse::<u64>().ok());
    match major {
        Some(m) if m >= 1 => AguiVersion::V1_0,
        _ => AguiVersion::V0_0,
    }
}

/// The content of the last message with role `user`.
#[derive(Default)]
struct LastUserContent<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for LastUserContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Messages<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Messages<'a> {
            type Value = LastUserContent<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut last = None;
                while let Some(m) = seq.next_element::<Message<'de>>()? {
                    if m.role == "user" {
                        last = m.content;
                    }
                }
                Ok(LastUserContent(last))
            }
        }
        d.deserialize_seq(Messages(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

/// A part of a message's content (AG-UI `InputContent`).
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// The text of a content: a string, or the text parts of an array of parts,
/// one per line.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Content;
        impl<'de> Visitor<'de> for Content {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of parts")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Text, E> {
                Ok(Text(s.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
                let mut text = String::new();
                let mut first = true;
                while let Some(p) = seq.next_element::<Part<'de>>()? {
                    if let (Some("text"), Some(t)) = (p.kind.as_deref(), p.text) {
                        if !std::mem::take(&mut first) {
                            text.push('\n');
                        }
                        text.push_str(&t);
                    }
                }
                Ok(Text(text))
            }
        }
        d.deserialize_any(Content)
    }
}

/// The prompt: the text of the last user message, if it has any.
fn prompt_of(input: &RunAgentInput) -> Option<String> {
    let Text(text) = serde_json::from_str(input.messages.0?.get()).ok()?;
    Some(text).filter(|t| !t.trim().is_empty())
}

/// An id the runs and their CLIs can take: not empty, at most [`MAX_ID`]
/// bytes, no control characters.
fn id_ok(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID && !id.chars().any(char::is_control)
}

/// An error answer (JSON `{"error": …}`) and the connection closed.
fn refuse(conn: &mut TcpStream, cors: &str, Refused(status, why): Refused) -> io::Result<()> {
    refuse_with(conn, cors, status, why)
}

fn refuse_with(conn: &mut TcpStream, cors: &str, status: u16, why: &str) -> io::Result<()> {
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

/// Compares a secret in time that depends only on the length of `given`
/// (what the client sent), neither on where the two differ nor on the
/// length of `secret`.
fn same_secret(given: &[u8], secret: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let mut diff = u8::from(given.len() != secret.len());
    for (i, b) in given.iter().enumerate() {
        diff |= b ^ secret[i % secret.len()];
    }
    std::hint::black_box(diff) == 0
}

/// The credentials of an `Authorization: Bearer …` value (the scheme's name
/// in any case).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim_start_matches(' '))
}

/// Header names as a preflight lists them (`Access-Control-Request-Headers`).
fn header_list_ok(list: &str) -> bool {
    list.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~, ".contains(&b))
}

/// The CORS headers of every answer to a page from `origin`.
fn cors_for(origin: &str) -> String {
    format!("Access-Control-Allow-Origin: {origin}\r\nVary: Origin\r\n")
}

/// Whether a `Content-Type` is JSON (`application/json`, parameters allowed).
fn is_json(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

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
    let host = head.header("host").unwrap_or("").to_owned();
    if host.is_empty() {
        let _ = refuse(&mut conn, "", Refused(400, "no Host header"));
        return;
    }
    if !shared.access.host(&host) {
        let why = "not a name of this server (see serve --allow-host)";
        let _ = refuse(&mut conn, "", Refused(421, why));
        return;
    }
    let cors = match head.header("origin") {
        None => String::new(),
        Some(origin) if shared.access.origin(origin, &host) => cors_for(origin),
        Some(_) => {
            let why = "pages from this origin may not call (see serve --allow-origin)";
            let _ = refuse(&mut conn, "", Refused(403, why));
            return;
        }
    };
    if head.method == "OPTIONS" {
        // A browser's preflight, from an allowed page.
        let asked = head
            .header("access-control-request-headers")
            .unwrap_or("Content-Type, Authorization");
        if !header_list_ok(asked) {
            let _ = refuse(&mut conn, &cors, Refused(400, "a malformed header list"));
            return;
        }
        let headers = format!(
            "{cors}Allow: POST, OPTIONS\r\nAccess-Control-Allow-Methods: POST\r\n\
             Access-Control-Allow-Headers: {asked}\r\nAccess-Control-Max-Age: 600\r\n"
        );
        let _ = http::respond(&mut conn, 204, &headers, "text/plain", b"");
        http::close(&mut conn);
        return;
    }
    if head.method != "POST" {
        let _ = refuse(
            &mut conn,
            &cors,
            Refused(405, "POST an AG-UI RunAgentInput"),
        );
        return;
    }
    if !head.header("content-type").is_some_and(is_json) {
        let why = "the body must be Content-Type: application/json";
        let _ = refuse(&mut conn, &cors, Refused(415, why));
        return;
    }
    if let Some(token) = &shared.token {
        let given = head.header("authorization").and_then(bearer).unwrap_or("");
        if !same_secret(given.as_bytes(), token) {
            let why = "a wrong or missing bearer token";
            let _ = refuse(&mut conn, &cors, Refused(401, why));
            return;
        }
    }
    if head.content_length > MAX_BODY {
        let why = "the request body is too large";
        let _ = refuse(&mut conn, &cors, Refused(413, why));
        return;
    }
    let body = match http::read_body(&mut conn, &mut head, deadline) {
        Ok(body) => body,
        Err(r) => {
            let _ = refuse(&mut conn, &cors, r);
            return;
        }
    };
    pending.done();
    let input: RunAgentInput = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => {
            let msg = format!("not an AG-UI RunAgentInput: {e}");
            let _ = refuse_with(&mut conn, &cors, 400, &msg);
            return;
        }
    };
    if !id_ok(&input.thread_id) || !input.run_id.as_deref().is_none_or(id_ok) {
        let why = "threadId and runId must be 1 to 1024 bytes without control characters";
        let _ = refuse(&mut conn, &cors, Refused(400, why));
        return;
    }
    let resuming = input.resume.is_some_and(|r| {
        serde_json::from_str::<Vec<serde::de::IgnoredAny>>(r.get()).map_or(true, |v| !v.is_empty())
    });
    let prompt = prompt_of(&input);
    if prompt.is_none() && !resuming {
        let _ = refuse(&mut conn, &cors, Refused(400, "no user message with text"));
        return;
    }
    if shared.running.fetch_add(1, Ordering::SeqCst) >= MAX_RUNS
        || shared.stopping.load(Ordering::SeqCst)
    {
        shared.running.fetch_sub(1, Ordering::SeqCst);
        let _ = refuse(&mut conn, &cors, Refused(503, "too many runs at once"));
        return;
    }
    let _slot = Slot(&shared.running);
    if !shared
        .busy
        .lock()
        .expect("not poisoned")
        .insert(input.thread_id.clone())
    {
        let _ = refuse(
            &mut conn,
            &cors,
            Refused(409, "this thread has a run going"),
        );
        return;
    }
    let waiting = shared
        .waiting
        .lock()
        .expect("not poisoned")
        .remove(&input.thread_id);
    match (waiting, prompt) {
        (Some(w), _) => resume_run(&mut conn, shared, &input, w, &cors),
        (None, Some(prompt)) if !resuming => run_one(&mut conn, shared, &input, &prompt, &cors),
        (None, _) => {
            let why = "nothing on this thread waits for a decision: the resume is stale (or names interrupts this server never made)";
            let _ = answer_error(&mut conn, shared, &input, &cors, why, code::INVALID_RESUME);
        }
    }
    shared
        .busy
        .lock()
        .expect("not poisoned")
        .remove(&input.thread_id);
    // The response ends only now, with what the run leaves kept and the
    // thread free: the client's next request on it resumes the session.
    let _ = conn.shutdown(Shutdown::Both);
}

/// The session file of one run, removed when dropped.
struct SessionFile(PathBuf);

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
    }
}

/// A run: its process, the pipes to it, and its session file; kept, its
/// process alive, while it waits for its thread's decisions (`--approval
/// ask`).
struct Waiting {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    file: SessionFile,
    since: Instant,
}

/// How a run's response ended.
#[derive(PartialEq, Eq)]
enum Streamed {
    /// The run's output ended.
    Ended,
    /// The run waits for the thread's next request.
    Waiting,
}

fn run_one(conn: &mut TcpStream, shared: &Shared, input: &RunAgentInput, prompt: &str, cors: &str) {
    let n = shared.next_file.fetch_add(1, Ordering::SeqCst);
    let file = SessionFile(shared.session_dir.join(n.to_string()));
    let (resume, plan_file) = {
        let threads = shared.threads.lock().expect("not poisoned");
        let resume = threads.session(&input.thread_id).map(str::to_owned);
        (resume, threads.plan_file(&input.thread_id))
    };
    let argv = run_argv(
        shared.cli,
        &shared.run_options,
        &input.thread_id,
        input.run_id.as_deref(),
        resume.as_deref(),
        &file.0,
        kept_args(&plan_file, shared.version.of(Some(input)), shared.raw),
    );
    let mut argv = argv;
    if shared.ask {
        // After `run CLI -`, before the run options (which may end in `--`).
        argv.insert(3, "--input-marker".into());
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            let _ = refuse_with(conn, cors, 500, &format!("cannot start the run: {e}"));
            return;
        }
    };
    let mut cmd = Command::new(exe);
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
    let mut child = match shared.spawner.spawn(cmd) {
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
        let _ = if shared.ask {
            // One line, the prompt as a JSON string: the decisions follow.
            let line = serde_json::to_string(prompt).expect("a string");
            writeln!(pipe, "{line}")
        } else {
            pipe.write_all(prompt.as_bytes())
        };
    }
    if !shared.ask {
        stdin = None;
    }
    let mut w = Waiting {
        child,
        stdin,
        stdout,
        file,
        since: Instant::now(),
    };
    let streamed = stream_run(conn, pid, &mut w.stdout, cors, shared.ask);
    settle(shared, &input.thread_id, w, streamed);
}

/// The thread's next request to a run that waits for decisions: its
/// `runId` and `resume` go to the run as one line (anything else of the
/// request, such as the `role: "tool"` messages CopilotKit adds, is not
/// the run's concern), and the run's output is this response. A run that
/// has ended meanwhile (its approval timeout passed) is answered here.
fn resume_run(
    conn: &mut TcpStream,
    shared: &Shared,
    input: &RunAgentInput,
    mut w: Waiting,
    cors: &str,
) {
    let pid = w.child.id();
    let mut line = serde_json::json!({ "runId": input.run_id });
    if let Some(r) = input.resume {
        line["resume"] = serde_json::from_str(r.get()).unwrap_or(serde_json::Value::Null);
    }
    let alive = matches!(w.child.try_wait(), Ok(None))
        && w.stdin
            .as_mut()
            .is_some_and(|p| writeln!(p, "{line}").and_then(|()| p.flush()).is_ok());
    if !alive {
        let why = match w.child.wait().ok().and_then(|s| s.code()) {
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

/// A run whose response has ended: kept if it waits for decisions (the
/// longest waiting one ended if too many wait), else waited for, its
/// session kept for the thread.
fn settle(shared: &Shared, thread: &str, mut w: Waiting, streamed: Streamed) {
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

/// A response that is one run ending in RUN_ERROR, made here (no CLI is
/// started).
fn answer_error(
    conn: &mut TcpStream,
    shared: &Shared,
    input: &RunAgentInput,
    cors: &str,
    why: &str,
    code: &str,
) -> io::Result<()> {
    let mut em = crate::agui::Emitter::new(
        crate::agui::Format::Sse,
        Some(input.thread_id.clone()),
        input.run_id.clone(),
    );
    if let Some(v) = shared.version.of(Some(input)) {
        em.set_version(v);
    }
    em.start_run(None, None);
    em.fail_run(why, code, &[], None);
    em.end_of_input(true);
    write_within(conn, sse_head(cors).as_bytes(), STALL_TIMEOUT)?;
    write_within(conn, em.output(), STALL_TIMEOUT)
}

/// The head of an SSE response.
fn sse_head(cors: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\n{cors}Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )
}

/// Copies the run's events to the client as they come. A client that goes
/// away (seen by a read that ends, even while the run is quiet, or by a
/// write that fails) or that leaves its stream unread for
/// [`STALL_TIMEOUT`] ends the run as SIGTERM does. With `marker`, the
/// run's [`MARKER`](crate::converse::ask::MARKER) ends the response (it is not
/// sent): the run waits for the thread's next request.
fn stream_run(
    conn: &mut TcpStream,
    pid: u32,
    out: &mut ChildStdout,
    cors: &str,
    marker: bool,
) -> Streamed {
    let mut gone = write_within(conn, sse_head(cors).as_bytes(), STALL_TIMEOUT).is_err();
    if gone {
        terminate(pid);
    }
    let done = Arc::new(AtomicBool::new(false));
    let watcher = conn.try_clone().ok().map(|mut peer| {
        let _ = peer.set_read_timeout(None);
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
    });
    let mut send = |bytes: &[u8]| {
        if !gone && !bytes.is_empty() && write_within(conn, bytes, STALL_TIMEOUT).is_err() {
            // The rest of the run is read and dropped, so that it can end.
            gone = true;
            terminate(pid);
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
        if !marker {
            send(&buf[..n]);
            continue;
        }
        held.extend_from_slice(&buf[..n]);
        let m = crate::converse::ask::MARKER;
        if held.ends_with(m) {
            send(&held[..held.len() - m.len()]);
            held.clear();
            streamed = Streamed::Waiting;
            break;
        }
        let keep = (1..m.len().min(held.len() + 1))
            .rev()
            .find(|&k| held.ends_with(&m[..k]))
            .unwrap_or(0);
        let upto = held.len() - keep;
        send(&held[..upto]);
        held.drain(..upto);
    }
    send(&held);
    // The watcher ends when the connection is shut down, after the run's
    // session is kept (see `serve_one`).
    done.store(true, Ordering::SeqCst);
    drop(watcher);
    if gone && streamed == Streamed::Waiting {
        // No one took the response: the run is not kept waiting.
        terminate(pid);
        return Streamed::Ended;
    }
    streamed
}

/// Writes all of `bytes` within `limit`, or fails: a reader that takes
/// that long to take one piece of the stream has stopped reading (a write
/// timeout alone would not see it, as the socket's buffers grow a little
/// now and then).
fn write_within(conn: &mut TcpStream, mut bytes: &[u8], limit: Duration) -> io::Result<()> {
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

    fn input(json: &str) -> RunAgentInput<'_> {
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
    fn the_client_s_release_is_told_by_protocol_version() {
        let of = |extra: &str| {
            client_version(&input(&format!(r#"{{"threadId":"t","runId":"r"{extra}}}"#)))
        };
        assert_eq!(of(""), AguiVersion::V0_0);
        assert_eq!(of(r#","protocolVersion":"1.0.0""#), AguiVersion::V1_0);
        assert_eq!(of(r#","protocolVersion":"1.3""#), AguiVersion::V1_0);
        assert_eq!(of(r#","protocolVersion":"2.0.0""#), AguiVersion::V1_0);
        assert_eq!(of(r#","protocolVersion":"0.0.59""#), AguiVersion::V0_0);
        assert_eq!(of(r#","protocolVersion":"next""#), AguiVersion::V0_0);
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

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"abcabc", b"abc"));
        assert!(!same_secret(b"", b"abc"));
        assert!(!same_secret(b"", b""));
    }

    #[test]
    fn the_bearer_scheme_is_any_case() {
        assert_eq!(bearer("Bearer t"), Some("t"));
        assert_eq!(bearer("bearer t"), Some("t"));
        assert_eq!(bearer("BEARER  t"), Some("t"));
        assert_eq!(bearer("Basic t"), None);
        assert_eq!(bearer("Bearert"), None);
    }

    #[test]
    fn hosts_are_the_server_s_names() {
        let local: SocketAddr = "127.0.0.1:8799".parse().unwrap();
        let a = Access::new(local, &["Proxy.example".into()], &[]);
        for ok in [
            "127.0.0.1:8799",
            "localhost:8799",
            "LOCALHOST",
            "[::1]:8799",
            "proxy.example",
            "proxy.example:443",
        ] {
            assert!(a.host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8799",
            "127.0.0.2:8799",
            "localhost:",
            "localhost:80x",
            "proxy.example.evil",
            "[::1",
            "",
        ] {
            assert!(!a.host(bad), "{bad}");
        }
        let any = Access::new("0.0.0.0:8799".parse().unwrap(), &[], &[]);
        assert!(any.host("192.0.2.7:8799") && any.host("[2001:db8::1]:8799"));
        assert!(!any.host("evil.example:8799"));
    }

    #[test]
    fn origins_are_given_ones_or_the_server_s_own() {
        let local: SocketAddr = "127.0.0.1:8799".parse().unwrap();
        let a = Access::new(local, &[], &["https://App.example".into()]);
        assert!(a.origin("https://app.example", "127.0.0.1:8799"));
        assert!(a.origin("http://127.0.0.1:8799", "127.0.0.1:8799"));
        assert!(!a.origin("http://app.example", "127.0.0.1:8799"));
        assert!(!a.origin("https://app.example:444", "127.0.0.1:8799"));
        assert!(!a.origin("null", "127.0.0.1:8799"));
        assert!(origin_ok("http://localhost:3000") && origin_ok("https://a.example"));
        for bad in [
            "a.example",
            "https://a.example/",
            "null",
            "https://",
            "ftp://a",
        ] {
            assert!(!origin_ok(bad), "{bad}");
        }
    }

    #[test]
    fn only_json_bodies_are_taken() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json5",
            "",
        ] {
            assert!(!is_json(bad), "{bad}");
        }
    }

    #[test]
    fn ids_are_short_and_printable() {
        assert!(id_ok("thread-1") && id_ok("-x") && id_ok(&"a".repeat(MAX_ID)));
        for bad in ["", "a\0b", "a\nb", "\u{7f}"] {
            assert!(!id_ok(bad), "{bad:?}");
        }
        assert!(!id_ok(&"a".repeat(MAX_ID + 1)));
    }
}
