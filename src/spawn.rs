//! `agui-translate run`: start a CLI in its headless streaming mode, pipe
//! its stdout through the same translator, and make the way the CLI ended
//! part of the AG-UI stream.
//!
//! The CLI runs in its own process group (Gemini CLI re-launches itself, so
//! a signal must reach the whole group). Its stderr is drained on its own
//! thread, passed through to ours as it arrives, and its last lines are kept
//! for RUN_ERROR. SIGINT and SIGTERM sent to us are passed to the group and
//! end the stream as a cancelled run; `--timeout` does the same.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::agui::{code, Outcome};
use crate::cli::RunArgs;
use crate::dialect::Dialect;
use crate::run::{self, Options, Stats};
use crate::source;

/// How tool calls are approved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Approval {
    /// The CLI's own default (it may refuse tools it would ask about).
    #[default]
    Default,
    /// Approve file edits without asking.
    AutoEdit,
    /// Approve everything without asking.
    Yolo,
}

/// `90s`, `10m`, `1h`, `500ms`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (try 90s, 10m, 1h)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?} (use ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("a duration must be positive: {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A file of ours in the temporary directory, removed when dropped (after
/// the CLI has exited).
struct TempFile(PathBuf);

impl TempFile {
    /// Created new (never an existing file or link) and private to us.
    fn create(stem: &str, ext: &str, contents: &str) -> anyhow::Result<TempFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir();
        let mut n = 0;
        loop {
            let path = dir.join(format!("{stem}-{}-{n}.{ext}", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut f) => {
                    let file = TempFile(path);
                    f.write_all(contents.as_bytes())
                        .with_context(|| format!("writing {}", file.0.display()))?;
                    return Ok(file);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The executable: `--cli`, else the environment variable, else the
/// program name (found on PATH when spawned). A relative path is made
/// absolute here: with --cwd it would be looked up from DIR instead.
fn executable(cli: Dialect, a: &RunArgs) -> PathBuf {
    let exe = a
        .cli_path
        .clone()
        .or_else(|| {
            std::env::var_os(cli.env_var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(cli.program));
    if exe.components().count() > 1 {
        std::path::absolute(&exe).unwrap_or(exe)
    } else {
        exe
    }
}

/// The process group of the running CLI (0: none), for the signal handler.
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);
/// The signal that asked us to stop (0: none).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
    let group = CHILD_GROUP.load(Ordering::SeqCst);
    if group > 0 {
        // SAFETY: kill is async-signal-safe; a negative pid names the group.
        unsafe {
            libc::kill(-group, sig);
        }
    }
}

fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches atomics and calls kill(2).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The last lines of the CLI's stderr.
#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
}

impl Tail {
    const LINES: usize = 20;
    const LINE_BYTES: usize = 2000;

    fn push(&mut self, line: &str) {
        let line = strip_ansi(line);
        if line.trim().is_empty() {
            return;
        }
        if self.lines.len() == Self::LINES {
            self.lines.pop_front();
        }
        let mut l = line.trim_end().to_owned();
        if l.len() > Self::LINE_BYTES {
            let mut cut = Self::LINE_BYTES;
            while !l.is_char_boundary(cut) {
                cut -= 1;
            }
            l.truncate(cut);
            l.push('…');
        }
        self.lines.push_back(l);
    }

    fn text(&self) -> String {
        self.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// A line without its terminal escape sequences: CLIs colour their errors
/// (Gemini CLI's untrusted-folder message is red), and RUN_ERROR is read by
/// a UI, not a terminal. CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or
/// `ESC \\`) and the other `ESC …` sequences go.
fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\x1b') {
        return line.into();
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            // `ESC ( B` and the like: intermediate bytes, then a final one.
            Some(c) if (' '..='/').contains(&c) => {
                for c in chars.by_ref() {
                    if !(' '..='/').contains(&c) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out.into()
}

/// Drain the CLI's stderr on its own thread: forward it as it arrives and
/// keep its last lines. A CLI blocked on a full stderr pipe would never
/// finish its stdout.
fn drain_stderr(
    err: impl Read + Send + 'static,
    tail: Arc<Mutex<Tail>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut rdr = BufReader::with_capacity(64 * 1024, err);
        let mut buf = Vec::new();
        let stderr = io::stderr();
        loop {
            buf.clear();
            match rdr.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let _ = stderr.lock().write_all(&buf);
                    if let Ok(mut t) = tail.lock() {
                        t.push(&String::from_utf8_lossy(&buf));
                    }
                }
            }
        }
    })
}

/// What an exit status means: the CLI's own table first, then what any
/// process's status says: (code, explanation).
fn meaning(cli: Dialect, status: i32) -> (&'static str, String) {
    if let Some(m) = (cli.exit_status)(status) {
        return m;
    }
    match status {
        127 => (code::CLI_ERROR, "a program it needs was not found".into()),
        s if s > 128 && s < 160 => (
            code::CLI_ERROR,
            format!("it was killed by signal {}", s - 128),
        ),
        _ => (code::CLI_ERROR, "it reported an error".into()),
    }
}

/// `agui-translate run`.
pub fn main(a: RunArgs) -> anyhow::Result<ExitCode> {
    if a.check {
        return check();
    }
    let cli = a.cli.expect("clap requires the CLI unless --check");
    if let Some(d) = &a.cwd {
        // Checked here: a spawn that fails on it would look like a missing CLI.
        if !d.is_dir() {
            anyhow::bail!("--cwd {}: no such directory", d.display());
        }
    }
    let prompt = match a.prompt.as_deref() {
        None | Some("-") => {
            let mut p = String::new();
            io::stdin()
                .read_to_string(&mut p)
                .context("reading the prompt from stdin")?;
            // `echo PROMPT | agui-translate run …`: the newline is not part of it.
            let end = p.trim_end_matches(['\n', '\r']).len();
            p.truncate(end);
            p
        }
        Some(p) => p.to_owned(),
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty (give it as an argument, or on standard input)");
    }
    let command = cli
        .command
        .as_ref()
        .with_context(|| format!("{cli} cannot be started by run"))?;
    let policy = match &command.deny_file {
        Some(file) if !a.deny_tool.is_empty() => Some(TempFile::create(
            "agui-translate-deny-tools",
            file.ext,
            &(file.contents)(&a.deny_tool)?,
        )?),
        _ => None,
    };
    let args = (command.argv)(&a, &prompt, policy.as_ref().map(|p| p.0.as_path()))?;
    let exe = executable(cli, &a);
    let mut em = run::emitter(&a.output);
    let stdout = io::stdout();
    let mut out = stdout.lock();

    let mut cmd = Command::new(&exe);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(d) = &a.cwd {
        cmd.current_dir(d);
    }
    install_signal_handlers();
    // Processes the CLI starts in groups of their own (Gemini CLI runs shell
    // commands that way) become our children when the CLI dies, so that a
    // cancelled run can end them too.
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on us.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let msg = format!(
                "{} is not installed: no executable {} found (install it with `npm install -g {}`, or name it with --cli or {})",
                cli.program,
                exe.display(),
                cli.package,
                cli.env_var
            );
            let _ = writeln!(io::stderr(), "agui-translate: {msg}");
            em.start_run(None, None);
            em.fail_run(&msg, code::CLI_MISSING, &[], None);
            em.end_of_input(true);
            em.drain_to(&mut out).context("writing stdout")?;
            out.flush().context("writing stdout")?;
            return Ok(ExitCode::from(127));
        }
        Err(e) => return Err(e).with_context(|| format!("cannot start {}", exe.display())),
    };
    CHILD_GROUP.store(child.id() as i32, Ordering::SeqCst);
    let tail = Arc::new(Mutex::new(Tail::default()));
    let err_thread = drain_stderr(child.stderr.take().expect("piped"), tail.clone());
    let timed_out = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    watchdog(
        child.id() as i32,
        a.timeout,
        timed_out.clone(),
        done.clone(),
    );

    let mut tr = source::for_dialect(cli)?;
    let mut stats = Stats::default();
    let child_out = child.stdout.take().expect("piped");
    let pumped = run::pump(
        child_out,
        cli.name(),
        tr.as_mut(),
        &mut em,
        &mut out,
        Options::default(),
        &mut stats,
    );
    if let Err(e) = pumped {
        // Our stdout went away (or the pipe failed): stop the CLI too.
        stop(&mut child);
        done.store(true, Ordering::SeqCst);
        return Err(e);
    }
    let saw_input = pumped.unwrap_or(false);
    let status = child.wait().context("waiting for the CLI")?;
    done.store(true, Ordering::SeqCst);
    CHILD_GROUP.store(0, Ordering::SeqCst);
    if STOP_SIGNAL.load(Ordering::SeqCst) != 0 || timed_out.load(Ordering::SeqCst) {
        end_orphans();
    }
    // A process the CLI left behind may still hold its stderr: the tail is
    // taken as it is after a short wait, without waiting for that process.
    let wait = Instant::now();
    while !err_thread.is_finished() && wait.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let tail = tail.lock().map(|t| t.text()).unwrap_or_default();

    let signal = STOP_SIGNAL.load(Ordering::SeqCst);
    let cancelled = signal != 0 || timed_out.load(Ordering::SeqCst);
    if cancelled {
        // Our own stop: the run ends as cancelled, unless it had ended.
        if !em.run_ended() {
            em.finish_run(None, Some(Outcome::Cancelled), &[]);
        }
    } else if let Some(code_num) = failure(status) {
        let (code, why) = meaning(cli, code_num);
        let mut msg = format!("{} exited with status {code_num}: {why}", cli.name());
        if !tail.is_empty() {
            msg.push_str(": ");
            msg.push_str(&tail);
        }
        if em.run_ended() {
            // The stream said success but the exit status says otherwise.
            if !em.terminal_is_error() {
                em.refail_run(&msg, code, &[], None);
            }
        } else {
            em.fail_run(&msg, code, &[], None);
        }
    }
    run::settle(
        cli.name(),
        tr.as_mut(),
        &mut em,
        &mut out,
        saw_input || cancelled,
        Options::default(),
        &mut stats,
    )?;

    let exit = if timed_out.load(Ordering::SeqCst) {
        124
    } else if signal != 0 {
        128 + signal
    } else {
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
    };
    Ok(ExitCode::from(exit.clamp(0, 255) as u8))
}

/// The exit status as a failure number, or `None` for success.
fn failure(status: ExitStatus) -> Option<i32> {
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(c), _) => Some(c),
        (None, Some(sig)) => Some(128 + sig),
        (None, None) => Some(1),
    }
}

/// A cancelled run: end what the CLI left behind (its processes that were in
/// groups of their own, now our children as we are their subreaper):
/// SIGTERM, then SIGKILL after a grace period, and reap them.
fn end_orphans() {
    let me = std::process::id() as i32;
    // SAFETY: getpgrp has no preconditions.
    let my_group = unsafe { libc::getpgrp() };
    // Our children other than the CLI, with their process groups.
    let orphans = || -> Vec<(i32, i32)> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                // pid (comm) state ppid pgrp …: comm may hold spaces.
                let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace().skip(1);
                let ppid: i32 = rest.next()?.parse().ok()?;
                let pgrp: i32 = rest.next()?.parse().ok()?;
                (ppid == me).then_some((pid, pgrp))
            })
            .collect()
    };
    let reap = || {
        // SAFETY: waitpid on our own children, without blocking.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
    };
    // SIGTERM first; then SIGKILL, again for whatever each kill orphans next
    // (a shell's command becomes ours when the shell dies).
    for (sig, grace) in [
        (libc::SIGTERM, 2000),
        (libc::SIGKILL, 300),
        (libc::SIGKILL, 300),
        (libc::SIGKILL, 300),
    ] {
        let found = orphans();
        if found.is_empty() {
            return;
        }
        for (pid, group) in found {
            // SAFETY: signalling processes that are our children, and their
            // groups (never our own).
            unsafe {
                libc::kill(pid, sig);
                if group > 1 && group != my_group {
                    libc::kill(-group, sig);
                }
            }
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(grace) {
            reap();
            if orphans().is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    reap();
}

/// End the CLI: SIGTERM to its group, SIGKILL if it is still there after a
/// grace period.
fn stop(child: &mut Child) {
    let group = child.id() as i32;
    // SAFETY: signalling a process group we created.
    unsafe {
        libc::kill(-group, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// Watch the running CLI: after `limit` (if any), SIGTERM its group; once
/// it has been asked to stop (by the timeout or by a signal passed on to it),
/// SIGKILL the group if it is still there after a grace period.
fn watchdog(
    group: i32,
    limit: Option<Duration>,
    timed_out: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
) {
    const GRACE: Duration = Duration::from_secs(5);
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut stopping: Option<Instant> = None;
        loop {
            if done.load(Ordering::SeqCst) {
                return;
            }
            if stopping.is_none() {
                if limit.is_some_and(|l| start.elapsed() >= l) {
                    timed_out.store(true, Ordering::SeqCst);
                    // SAFETY: signalling the process group we created.
                    unsafe {
                        libc::kill(-group, libc::SIGTERM);
                    }
                    stopping = Some(Instant::now());
                } else if STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
                    stopping = Some(Instant::now());
                }
            } else if stopping.is_some_and(|t| t.elapsed() >= GRACE) {
                // SAFETY: as above.
                unsafe {
                    libc::kill(-group, libc::SIGKILL);
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
}

/// `run --check`: which CLIs are installed, and their versions.
fn check() -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut missing = 0;
    for cli in Dialect::all().filter(|d| d.command.is_some()) {
        let exe = match std::env::var_os(cli.env_var).filter(|v| !v.is_empty()) {
            Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_file()),
            None => find_on_path(cli.program),
        };
        match exe {
            None => {
                missing += 1;
                writeln!(
                    out,
                    "{:<7} missing: npm install -g {}",
                    cli.name(),
                    cli.package
                )?;
            }
            Some(path) => {
                let version = probe_version(&path).unwrap_or_else(|| "version unknown".into());
                writeln!(out, "{:<7} {version} ({})", cli.name(), path.display())?;
            }
        }
    }
    Ok(if missing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `PROGRAM --version`, given 10 seconds.
fn probe_version(path: &Path) -> Option<String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                stop(&mut child);
                return None;
            }
        }
    }
    let mut s = String::new();
    child.stdout.take()?.read_to_string(&mut s).ok()?;
    s.lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn escape_sequences_leave_the_stderr_tail() {
        assert_eq!(strip_ansi("plain"), "plain");
        assert_eq!(
            strip_ansi("\x1b[31mnot trusted\x1b[0m: see \x1b]8;;https://x\x07link\x1b]8;;\x1b\\ \x1b(Bdone"),
            "not trusted: see link done"
        );
        assert_eq!(strip_ansi("cut \x1b[1;3"), "cut ");
        let mut t = Tail::default();
        t.push("\x1b[2K\x1b[0m\n");
        t.push("\x1b[31mError: boom\x1b[0m\n");
        assert_eq!(t.text(), "Error: boom");
    }

    #[test]
    fn exit_statuses_mean_something() {
        let d = |n| Dialect::named(n).unwrap();
        assert_eq!(meaning(d("gemini"), 41).0, code::AUTH_ERROR);
        assert_eq!(meaning(d("gemini"), 143).1, "it was killed by signal 15");
        assert_eq!(meaning(d("codex"), 1).0, code::CLI_ERROR);
        assert_eq!(meaning(d("claude"), 143).1, "it was killed by signal 15");
    }
}
