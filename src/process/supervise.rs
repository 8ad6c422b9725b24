//! Process supervision for `run`: the CLI in a process group of its own, its
//! exit status, its stdout read so that a descendant holding the pipe open
//! cannot keep the run open, its stderr passed through, and the signals that
//! end it. Nothing here knows one CLI from another.

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::process::stderr::Tail;

/// How long the CLI has after SIGTERM before SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(5);
/// How long its stdout is still read once the CLI has exited and the pipe
/// has gone quiet: a process it left behind may hold the pipe open forever.
pub const READ_GRACE: Duration = Duration::from_millis(500);

pub use crate::base::interrupt::STOP_SIGNALS;

/// Which of [`STOP_SIGNALS`] asked us to stop (0: none).
pub struct Signals(Arc<AtomicUsize>);

impl Signals {
    /// Catch the stop signals from now on: they no longer end the process,
    /// they are recorded (and passed to the CLI by the [`watchdog`]).
    pub fn install() -> anyhow::Result<Signals> {
        let caught = Arc::new(AtomicUsize::new(0));
        for sig in STOP_SIGNALS {
            signal_hook::flag::register_usize(sig, caught.clone(), sig as usize)
                .map_err(|e| anyhow::anyhow!("cannot catch signal {sig}: {e}"))?;
        }
        Ok(Signals(caught))
    }

    /// The signal caught, if any.
    pub fn caught(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig as i32),
        }
    }
}

/// Make us the subreaper of the CLI's descendants: processes it starts in
/// groups of their own (Gemini CLI runs shell commands that way) become our
/// children when the CLI dies, so that a cancelled run can end them too.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if r == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Start `cmd` in a process group of its own, with SIGKILL as its
/// parent-death signal: if we die, even by SIGKILL, it does not outlive us.
pub fn spawn(cmd: &mut Command) -> io::Result<Child> {
    // SAFETY: getpid is async-signal-safe.
    let parent = unsafe { libc::getpid() };
    cmd.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes async-signal-safe calls (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            // We died before the signal was set up: do not start at all.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    };
    cmd.spawn()
}

/// The CLI's exit status once it has been reaped, and when.
#[derive(Default)]
pub struct Exit {
    status: Mutex<Option<(ExitStatus, Instant)>>,
    changed: Condvar,
}

impl Exit {
    /// Reap `child` on a thread of its own.
    pub fn watch(mut child: Child) -> Arc<Exit> {
        let exit = Arc::new(Exit::default());
        let e = exit.clone();
        std::thread::spawn(move || {
            // wait() only fails for a child already reaped: never here.
            let status = child
                .wait()
                .unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(libc::SIGKILL));
            *e.status.lock().unwrap_or_else(|p| p.into_inner()) = Some((status, Instant::now()));
            e.changed.notify_all();
        });
        exit
    }

    /// The status and when it came, if the CLI has exited.
    pub fn get(&self) -> Option<(ExitStatus, Instant)> {
        *self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for the CLI to exit.
    pub fn wait(&self) -> ExitStatus {
        let guard = self.status.lock().unwrap_or_else(|p| p.into_inner());
        let guard = self
            .changed
            .wait_while(guard, |s| s.is_none())
            .unwrap_or_else(|p| p.into_inner());
        guard.expect("waited for").0
    }

    /// Wait for the CLI to exit, at most `limit`.
    pub fn wait_for(&self, limit: Duration) -> Option<ExitStatus> {
        let guard = self.status.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, limit, |s| s.is_none())
            .unwrap_or_else(|p| p.into_inner());
        guard.map(|(s, _)| s)
    }
}

/// The CLI's stdout, read on a thread of its own. It ends at end of file,
/// or once the CLI has exited and nothing more came for [`READ_GRACE`].
pub struct Output {
    chunks: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
    exit: Arc<Exit>,
    tick: bool,
    /// The reading thread's sender, while it reads: an empty chunk sent
    /// through it wakes a read that waits (see [`Output::set_tick`]).
    poke: std::sync::Weak<mpsc::SyncSender<Vec<u8>>>,
}

impl Output {
    pub fn new(mut stdout: ChildStdout, exit: Arc<Exit>) -> Output {
        // A few chunks in flight: the CLI waits for us when we fall behind.
        let (tx, rx) = mpsc::sync_channel(4);
        // Held by the thread alone: the channel ends with it.
        let tx = Arc::new(tx);
        let poke = Arc::downgrade(&tx);
        std::thread::spawn(move || {
            let mut buf = vec![0; 64 * 1024];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
        Output {
            chunks: rx,
            chunk: Vec::new(),
            at: 0,
            exit,
            tick: false,
            poke,
        }
    }

    /// While on, a read that has waited a moment without data fails with
    /// `WouldBlock` (nothing is lost): the reader can look at other things
    /// in between. An input line that comes meanwhile (see
    /// [`crate::converse::ask::wake_on_input`]) ends the wait at once, so
    /// that a page's answer or a decision is not held for the moment.
    pub fn set_tick(&mut self, on: bool) {
        self.tick = on;
        let poke = self.poke.clone();
        crate::converse::ask::wake_on_input(on.then(|| {
            Box::new(move || {
                if let Some(tx) = poke.upgrade() {
                    // A full channel has data for the read: no need.
                    let _ = tx.try_send(Vec::new());
                }
            }) as Box<dyn Fn() + Send>
        }));
    }
}

impl Read for Output {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        const POLL: Duration = Duration::from_millis(50);
        while self.at == self.chunk.len() {
            match self.chunks.recv_timeout(POLL) {
                // Woken: an input line came.
                Ok(chunk) if chunk.is_empty() => {
                    if self.tick {
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                }
                Ok(chunk) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(0),
                Err(RecvTimeoutError::Timeout) => {
                    if self
                        .exit
                        .get()
                        .is_some_and(|(_, when)| when.elapsed() >= READ_GRACE)
                    {
                        return Ok(0);
                    }
                    if self.tick {
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Send `sig` to the process group `group`.
pub fn signal_group(group: i32, sig: i32) {
    // SAFETY: a negative pid names the group; the group is one we created.
    // It may be gone already (ESRCH): nothing to do then.
    unsafe {
        libc::kill(-group, sig);
    }
}

/// End the CLI: SIGTERM to its group, SIGKILL if it has not exited after
/// [`KILL_GRACE`].
pub fn stop(group: i32, exit: &Exit) {
    signal_group(group, libc::SIGTERM);
    if exit.wait_for(KILL_GRACE).is_none() {
        signal_group(group, libc::SIGKILL);
        exit.wait_for(KILL_GRACE);
    }
}

/// Watch the running CLI: after `limit` (if any), SIGTERM its group; pass a
/// stop signal we caught on to it; once it has been asked to stop, SIGKILL
/// the group if it has not exited after [`KILL_GRACE`].
///
/// With `ask`, the CLI is asked to stop by setting that flag instead (a
/// client of the CLI sends the request), and gets [`KILL_GRACE`] to end
/// before the SIGTERM and another before the SIGKILL.
pub fn watchdog(
    group: i32,
    limit: Option<Duration>,
    signals: Arc<Signals>,
    exit: Arc<Exit>,
    timed_out: Arc<AtomicBool>,
    ask: Option<Arc<AtomicBool>>,
) {
    std::thread::spawn(move || {
        let start = Instant::now();
        // When the last step was taken, and the signals still to send.
        let mut stopping: Option<(Instant, &[i32])> = None;
        let steps: &[i32] = match ask {
            Some(_) => &[libc::SIGTERM, libc::SIGKILL],
            None => &[libc::SIGKILL],
        };
        loop {
            if exit.get().is_some() {
                return;
            }
            match stopping {
                None => {
                    let sig = if let Some(sig) = signals.caught() {
                        Some(sig)
                    } else if limit.is_some_and(|l| start.elapsed() >= l) {
                        timed_out.store(true, Ordering::SeqCst);
                        Some(libc::SIGTERM)
                    } else {
                        None
                    };
                    if let Some(sig) = sig {
                        match &ask {
                            Some(flag) => flag.store(true, Ordering::SeqCst),
                            None => signal_group(group, sig),
                        }
                        stopping = Some((Instant::now(), steps));
                    }
                }
                Some((t, [sig, rest @ ..])) if t.elapsed() >= KILL_GRACE => {
                    signal_group(group, *sig);
                    stopping = Some((Instant::now(), rest));
                }
                Some((_, [])) => return,
                Some(_) => {}
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
}

/// A cancelled run: end what the CLI left behind (its processes that were in
/// groups of their own, now our children as we are their subreaper):
/// SIGTERM, then SIGKILL after a grace period, and reap them. Call it only
/// once the CLI itself has been reaped.
pub fn end_orphans() {
    let me = std::process::id() as i32;
    // SAFETY: getpgrp has no preconditions.
    let my_group = unsafe { libc::getpgrp() };
    // Our children, with their process groups.
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
            }
            if group > 1 && group != my_group {
                signal_group(group, sig);
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

/// Drain the CLI's stderr on its own thread: pass it on to ours as it
/// arrives, byte for byte and a chunk at a time (a prompt without a newline
/// shows at once), and keep its last lines. A CLI blocked on a full stderr
/// pipe would never finish its stdout.
pub fn drain_stderr(mut err: impl Read + Send + 'static, tail: Arc<Mutex<Tail>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        let stderr = io::stderr();
        loop {
            match err.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let _ = stderr.lock().write_all(&buf[..n]);
                    if let Ok(mut t) = tail.lock() {
                        t.feed(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}
