//! `agui-translate serve`: an AG-UI endpoint over HTTP.
//!
//! Each `POST` carries an AG-UI `RunAgentInput`; its last user message is the
//! prompt of one `agui-translate run` (this program, started again), whose
//! server-sent events are copied to the response as they come. The run gets
//! the request's `threadId` and `runId`, and a thread's later requests resume
//! the CLI's session (the session id the run reports). A client that goes
//! away ends its run as SIGTERM does, unless a reader rejoins the run
//! within the rejoin grace (`--rejoin-grace`). A connection is a thread: the server
//! is blocking, and the runs are processes of their own.
//!
//! This file holds the options and the start; the parts, in the order a
//! request meets them:
//! - [`listen`]: the listening loop, connections, run slots, the stop;
//! - [`access`]: who may call (`Host`, `Origin`, the token, CORS);
//! - [`input`]: the request's body, a `RunAgentInput`, read and checked;
//!   [`page`]: what the page gives besides its prompt (tools, context,
//!   state, answers) and what it chooses (the model, the effort), checked;
//! - [`history`]: what a thread has said, for a page that comes back;
//! - [`launch`]: a run started and streamed to its client;
//! - [`waiting`]: runs kept for their thread's decisions, and what a run
//!   leaves for its thread;
//! - [`http`] and [`threads`]: the HTTP spoken, and what is kept of threads.

mod access;
mod history;
pub mod http;
mod input;
mod launch;
mod listen;
mod page;
pub mod threads;
mod waiting;

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};

use anyhow::Context;

use crate::agui::{AguiVersion, RawMode};
use crate::serve::access::{host_name, origin_ok, token_of, Access};
use crate::serve::input::Version;
use crate::serve::launch::Spawner;
use crate::serve::threads::Threads;
use crate::serve::waiting::Waiting;

/// Threads whose CLI session is kept; the oldest is forgotten first.
const MAX_THREADS: usize = 10_000;

/// The environment variable that gives the token.
pub const TOKEN_VAR: &str = "AGUI_SERVE_TOKEN";

/// What the connections share.
struct Shared {
    cli: crate::dialect::Dialect,
    token: Option<Vec<u8>>,
    access: Access,
    /// Options for every run (after `--` on the command line).
    run_options: Vec<String>,
    /// The most bytes a file of a page's may have (`--max-attachment`).
    max_attachment: usize,
    /// The hosts a page's `url` parts are fetched from (`--allow-fetch`).
    allow_fetch: Vec<page::FetchHost>,
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
    /// The events of each thread's run going, for readers that rejoin it.
    live: Mutex<HashMap<String, Arc<history::Live>>>,
    /// How long a run whose client has gone away goes on for a reader
    /// to rejoin it (`--rejoin-grace`).
    rejoin_grace: std::time::Duration,
    /// How long a thread's agent is kept between its turns over ACP
    /// (`--keep-idle`); zero: none is.
    keep_idle: std::time::Duration,
    /// `-- --approval ask`: a run that ends in interrupts is kept, its CLI
    /// alive, for the thread's next request.
    ask: bool,
    /// The runs waiting for decisions, by thread (each holds a run slot).
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Threads whose waiting run is gone (expired, ended to make room), why
    /// and since when, for their next request.
    gone: Mutex<HashMap<String, (waiting::Gone, std::time::Instant)>>,
    /// Starts the runs.
    spawner: Spawner,
    /// The runs going, by process id: ended when the server stops.
    runs: Mutex<HashSet<u32>>,
    /// Run slots taken: CLIs alive, running or waiting.
    running: AtomicUsize,
    /// Connections still sending their request.
    pending: Mutex<listen::PendingPool>,
    /// Every open connection, to be closed when the server stops.
    open: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
    next_file: AtomicUsize,
    stopping: AtomicBool,
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
    /// No token at all (`--no-token`, loopback only); without it and
    /// without a token given, the server keeps one of its own.
    pub no_token: bool,
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
    /// The most bytes a file of a page's may have, decoded.
    pub max_attachment: usize,
    /// The hosts a page's `url` parts are fetched from
    /// (`[http://]HOST[:PORT]`).
    pub allow_fetch: Vec<String>,
    /// How long a run whose client has gone away goes on, for a reader to
    /// rejoin it; zero: it ends at once.
    pub rejoin_grace: std::time::Duration,
    /// How long a thread's ACP agent is kept between its turns; zero: a
    /// new process for each turn.
    pub keep_idle: std::time::Duration,
}

/// `agui-translate serve`. `check_run` checks the arguments of a run as the
/// command line takes them.
pub fn main(
    a: Config,
    check_run: impl Fn(Vec<std::ffi::OsString>) -> Result<(), clap::Error>,
) -> anyhow::Result<ExitCode> {
    // First, before any start-up work: a stop signal from here on stops
    // the server, even one that comes while it is starting.
    let stop = listen::stop_flag()?;
    crate::base::interrupt::release();
    let settings = match settings(&a) {
        Ok(s) => s,
        Err(msg) => return usage(&msg),
    };
    check_run_options(&a, &settings, check_run);
    let Some(state) = a.state_dir.clone().or_else(threads::default_dir) else {
        return usage("give --state-dir: neither XDG_STATE_HOME nor HOME is set");
    };
    if let Err(msg) = threads::own_dir(&state) {
        return usage(&format!("--state-dir {}: {msg}", state.display()));
    }
    let kept = state.join(access::KEPT_TOKEN);
    let (token, kept) = match settings.token {
        Some(t) => (Some(t), None),
        None if a.no_token => (None, None),
        None => match access::kept_token(&kept) {
            Ok(t) => (Some(t), Some(kept)),
            Err(msg) => return usage(&format!("the token: {msg}")),
        },
    };
    let threads = Threads::open(&state.join(a.cli.name()), MAX_THREADS)?;
    let addr = settings.addr;
    let listener = TcpListener::bind(addr).with_context(|| format!("--listen {addr}"))?;
    let local = listener.local_addr()?;
    let session_dir = PrivateDir::new()?;
    let cli = a.cli;
    let missing = cli_missing(cli, &a.run_options);
    let shared = Arc::new(Shared {
        cli,
        token: token.map(String::into_bytes),
        access: Access::new(local, &a.allow_host, &a.allow_origin),
        run_options: a.run_options,
        max_attachment: a.max_attachment,
        allow_fetch: settings.allow_fetch,
        session_dir: session_dir.0.clone(),
        version: settings.version,
        raw: settings.raw,
        threads: Mutex::new(threads),
        busy: Mutex::default(),
        live: Mutex::default(),
        rejoin_grace: a.rejoin_grace,
        keep_idle: a.keep_idle,
        ask: settings.ask,
        waiting: Mutex::default(),
        gone: Mutex::default(),
        spawner: Spawner::new()?,
        runs: Mutex::default(),
        running: AtomicUsize::new(0),
        pending: Mutex::default(),
        open: Mutex::default(),
        next_conn: AtomicU64::new(0),
        next_file: AtomicUsize::new(0),
        stopping: AtomicBool::new(false),
    });
    let _ = writeln!(
        io::stderr(),
        "agui-translate: serving {} on http://{local}/",
        cli.name()
    );
    if let Some(file) = kept {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: serve: requests need `Authorization: Bearer TOKEN`, \
             the token in {} (kept across restarts; --token-file to give one, \
             --no-token for none)",
            file.display()
        );
    } else if a.no_token {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: serve: warning: --no-token: any local user's programs \
             (and any web page given with --allow-origin) can start runs, and approve \
             their tool calls, as this user"
        );
    }
    if let Some(warning) = missing {
        let _ = writeln!(io::stderr(), "agui-translate: serve: warning: {warning}");
    }
    listen::serve(listener, &stop, &shared)?;
    Ok(ExitCode::SUCCESS)
}

/// Why every run would fail with `cli_missing`, if it would: the CLI's
/// program (`--cli` among the run options, its environment variable, or
/// its name on PATH) is not there.
fn cli_missing(cli: crate::dialect::Dialect, run_options: &[String]) -> Option<String> {
    let own = run_options
        .iter()
        .take_while(|o| *o != "--")
        .zip(run_options.iter().skip(1).map(Some).chain([None]))
        .find_map(|(o, next)| match o.strip_prefix("--cli=") {
            Some(path) => Some(path),
            None => next.filter(|_| o == "--cli").map(String::as_str),
        });
    let exe = crate::process::spawn::executable(cli, own.map(Path::new));
    let spec = cli.spec();
    let missing = match exe {
        Ok(exe) if exe.is_file() => return None,
        Ok(exe) => format!("{} does not exist", exe.display()),
        Err(name) => format!("no {} on PATH", name.display()),
    };
    Some(format!(
        "{} is not installed ({missing}): every request will fail with cli_missing \
         until it is (install it with `npm install -g {}`, or name it with `-- --cli PATH` \
         or {})",
        spec.program, spec.package, spec.env_var
    ))
}

/// What the options come to, once checked.
struct Settings {
    addr: SocketAddr,
    token: Option<String>,
    version: Version,
    ask: bool,
    raw: Option<RawMode>,
    allow_fetch: Vec<page::FetchHost>,
}

/// The options checked, in the order the messages name them; `Err` says
/// what is wrong with them.
fn settings(a: &Config) -> Result<Settings, String> {
    let Ok(addr) = a.listen.parse::<SocketAddr>() else {
        return Err(format!("--listen {:?}: not ADDR:PORT", a.listen));
    };
    let token = token_of(a)?;
    if a.no_token && std::env::var_os(TOKEN_VAR).is_some() {
        return Err(format!("--no-token and {TOKEN_VAR} both given: unset one"));
    }
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(format!(
            "--listen {addr} is not a loopback address: give a token (--token-file, \
             {TOKEN_VAR} or --token), since the CLI runs tools on this machine"
        ));
    }
    if let Some(o) = a.allow_origin.iter().find(|o| !origin_ok(o)) {
        return Err(format!(
            "--allow-origin {o:?}: not an origin (scheme://host[:port], no path)"
        ));
    }
    if let Some(h) = a
        .allow_host
        .iter()
        .find(|h| host_name(h) != Some(h.as_str()))
    {
        return Err(format!("--allow-host {h:?}: not a host name (no port)"));
    }
    let allow_fetch = a
        .allow_fetch
        .iter()
        .map(|h| page::fetch_host(h))
        .collect::<Result<Vec<_>, _>>()?;
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
        if let Some(e) = crate::process::spawn::ask_refused(a.cli, &a.run_options) {
            return Err(format!("{e:#}"));
        }
    }
    let raw = Some(a.raw).filter(|_| {
        !a.run_options
            .iter()
            .any(|o| o == "--raw" || o.starts_with("--raw="))
    });
    Ok(Settings {
        addr,
        token,
        version,
        ask,
        raw,
        allow_fetch,
    })
}

/// The run options checked as `run` takes them, with what serve adds: a
/// mistake ends serve as it would end `run`.
fn check_run_options(
    a: &Config,
    s: &Settings,
    check_run: impl Fn(Vec<std::ffi::OsString>) -> Result<(), clap::Error>,
) {
    let probe = launch::run_argv(
        a.cli,
        &a.run_options,
        "thread",
        Some("run"),
        Some("session"),
        Path::new("file"),
        launch::kept_args(Path::new("plan"), s.version.of(None), s.raw),
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
