//! SIGINT, SIGTERM and SIGHUP in the filter: stop reading, end the open run
//! as cancelled, exit 128+N.
//!
//! The handler only records the signal and puts `/dev/null` in place of
//! standard input (both async-signal-safe), and is installed without
//! `SA_RESTART`: a read blocked on a live pipe returns at once (EINTR), and a
//! read that starts after the signal sees the end of the input, so the signal
//! is never missed between checking for it and blocking in `read`. The line
//! in hand is translated to the end; the filter loop and its reader ask
//! [`caught`].

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal caught (0: none).
static CAUGHT: AtomicI32 = AtomicI32::new(0);
/// A descriptor open on `/dev/null` (-1: none), put on standard input by the
/// handler.
static DEV_NULL: AtomicI32 = AtomicI32::new(-1);

/// The signals that end a translation or a run: SIGINT, SIGTERM and SIGHUP
/// (the terminal closed).
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = CAUGHT.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    let null = DEV_NULL.load(Ordering::SeqCst);
    if null >= 0 {
        // SAFETY: dup2 is async-signal-safe; both descriptors are ours.
        unsafe { libc::dup2(null, libc::STDIN_FILENO) };
    }
}

/// Install the handlers for SIGINT, SIGTERM and SIGHUP.
pub fn install() -> io::Result<()> {
    // SAFETY: opening a file with a NUL-terminated path.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if null < 0 {
        return Err(io::Error::last_os_error());
    }
    DEV_NULL.store(null, Ordering::SeqCst);
    for sig in STOP_SIGNALS {
        // SAFETY: a zeroed sigaction is valid; the handler only touches
        // atomics and calls dup2.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            if libc::sigemptyset(&mut sa.sa_mask) != 0 {
                return Err(io::Error::last_os_error());
            }
            sa.sa_flags = 0; // no SA_RESTART: a blocked read must return
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Holds the stop signals: until [`release`], one that comes waits, neither
/// acted on nor lost. For a command that installs its handlers only after
/// work of its own (reading its command line first of all).
pub fn hold() {
    stop_signals_mask(libc::SIG_BLOCK);
}

/// Lets the stop signals come again, one held meanwhile first.
pub fn release() {
    stop_signals_mask(libc::SIG_UNBLOCK);
}

fn stop_signals_mask(how: libc::c_int) {
    // SAFETY: a sigset_t filled by sigemptyset and sigaddset, and the
    // calling thread's mask changed; neither call can fail with these
    // arguments.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in STOP_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// The signal caught so far, if any.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}
