//! What `serve` keeps of each thread across runs and restarts: the CLI's
//! session id, the file where the thread's runs keep their plan, and the
//! file of the page's shared state (`RunAgentInput.state`, which the model
//! may change), in a private state directory.
//!
//! Each thread is one file, `<stem>.json` = `{"thread": ID, "session": ID}`
//! (with `"acp": true` when the session was made over the Agent Client
//! Protocol, where its history is loaded back from),
//! written whole to a temporary file in the same directory and renamed over
//! the old one, so that a crash leaves the old version or the new, never a
//! part. The stem is the thread id in hex (cut and hashed when long); the
//! file names its thread, so a stem shared by two threads only forgets the
//! older. The directory is created 0700 and the files 0600: a session id
//! resumes a conversation. At most `max` threads are kept; the oldest (by
//! when its file was written) is forgotten first, files and all.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::base::files::write_atomic;
use serde::{Deserialize, Serialize};

/// The state directory when `--state-dir` is not given:
/// `$XDG_STATE_HOME/agui-translate`, or `~/.local/state/agui-translate`.
pub fn default_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let home = || {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|h| h.join(".local/state"))
    };
    Some(xdg.or_else(home)?.join("agui-translate"))
}

/// Checks that `dir` (created 0700 when missing) is this user's and that
/// no one else may write in it: whoever can put files there chooses the
/// sessions the runs resume and the token the server takes. `Err` says
/// what is wrong.
pub fn own_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| e.to_string())?;
    let meta = fs::metadata(dir).map_err(|e| e.to_string())?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "owned by user {}, not this one ({me}): the state directory must be this user's own",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "others may write in it (mode {:04o}): whoever can put files there chooses \
             the sessions runs resume; make it private with `chmod 700`",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// The record of one thread.
#[derive(Serialize, Deserialize)]
struct Entry {
    thread: String,
    session: String,
    /// Whether the session was made over the Agent Client Protocol (the
    /// route a run with `--transport auto` took): it is loaded back that
    /// way. Absent, as in the files of earlier servers: not known so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    acp: bool,
}

/// Threads of one CLI, in one directory.
pub struct Threads {
    dir: PathBuf,
    max: usize,
    /// File stem → the thread's record.
    by_stem: HashMap<String, Entry>,
    /// File stems, oldest first.
    order: VecDeque<String>,
}

impl Threads {
    /// The threads kept in `dir` (created 0700 if missing, made 0700 if
    /// not), at most `max`; files beyond it, oldest first, are removed.
    pub fn open(dir: &Path, max: usize) -> anyhow::Result<Threads> {
        let context = || format!("--state-dir {}", dir.display());
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(context)?;
        let meta = fs::metadata(dir).with_context(context)?;
        if meta.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .with_context(|| format!("{}: making it private", context()))?;
        }
        let mut found = Vec::new();
        for e in fs::read_dir(dir).with_context(context)? {
            let e = e.with_context(context)?;
            let name = e.file_name();
            let Some(stem) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|s| {
                    !s.starts_with('.')
                        && !s.ends_with(".plan")
                        && !s.ends_with(".history")
                        && !s.ends_with(".state")
                })
            else {
                continue;
            };
            let Ok(text) = crate::base::files::read_regular(&e.path(), MAX_FILE) else {
                continue;
            };
            let Ok(entry) = serde_json::from_slice::<Entry>(&text) else {
                continue;
            };
            if stem != file_stem(&entry.thread) {
                continue;
            }
            if !session_ok(&entry.session) {
                warn_session(&e.path().display().to_string(), &entry.session);
                continue;
            }
            let written = e.metadata().and_then(|m| m.modified()).ok();
            found.push((written, stem.to_owned(), entry));
        }
        found.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut threads = Threads {
            dir: dir.to_owned(),
            max,
            by_stem: HashMap::new(),
            order: VecDeque::new(),
        };
        for (_, stem, entry) in found {
            threads.remember(stem, entry);
        }
        Ok(threads)
    }

    /// The session id of `thread`, if one is kept.
    pub fn session(&self, thread: &str) -> Option<&str> {
        self.entry(thread).map(|e| e.session.as_str())
    }

    /// Whether the session of `thread` is known to be one made over the
    /// Agent Client Protocol.
    pub fn session_over_acp(&self, thread: &str) -> bool {
        self.entry(thread).is_some_and(|e| e.acp)
    }

    fn entry(&self, thread: &str) -> Option<&Entry> {
        self.by_stem
            .get(&file_stem(thread))
            .filter(|e| e.thread == thread)
    }

    /// The file where the runs of `thread` keep its plan.
    pub fn plan_file(&self, thread: &str) -> PathBuf {
        self.dir.join(format!("{}.plan.json", file_stem(thread)))
    }

    /// The file of the messages of `thread` ([`super::history`]).
    pub(super) fn history_file(&self, thread: &str) -> PathBuf {
        self.dir.join(format!("{}.history.json", file_stem(thread)))
    }

    /// The file of what the last run of `thread` used (its model, effort,
    /// approval, directory and usage: [`super::page::RunInfo`]), told to a
    /// page that comes back to the thread.
    pub(super) fn info_file(&self, thread: &str) -> PathBuf {
        self.dir.join(format!("{}.info.json", file_stem(thread)))
    }

    /// The file of the shared state of `thread`: the page's last, or the
    /// model's since.
    pub(super) fn state_file(&self, thread: &str) -> PathBuf {
        self.dir.join(format!("{}.state.json", file_stem(thread)))
    }

    /// The shared state kept for `thread`, if any: a JSON object of at
    /// most [`MAX_STATE`] bytes (anything else is not taken), compacted
    /// onto one line.
    pub(super) fn kept_state(&self, thread: &str) -> Option<String> {
        let bytes =
            crate::base::files::read_regular(&self.state_file(thread), MAX_STATE as u64).ok()?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        value
            .is_object()
            .then(|| serde_json::to_string(&value).expect("serializable"))
    }

    /// Keep `state` (JSON) as the shared state of `thread`.
    pub(super) fn keep_state(&self, thread: &str, state: &str) -> io::Result<()> {
        write_atomic(&self.state_file(thread), state.as_bytes())
    }

    /// A run of `thread` has ended, having reported `session` (or none),
    /// with whether it was made over the Agent Client Protocol: the session
    /// is kept for the next run. A thread with no session kept keeps no
    /// plan either.
    pub fn ran(&mut self, thread: &str, session: Option<(&str, bool)>) -> io::Result<()> {
        let Some((session, acp)) = session else {
            if self.session(thread).is_none() {
                remove(&self.plan_file(thread));
                remove(&self.history_file(thread));
                remove(&self.state_file(thread));
                remove(&self.info_file(thread));
            }
            return Ok(());
        };
        if self.session(thread) == Some(session) && self.session_over_acp(thread) == acp {
            return Ok(());
        }
        if !session_ok(session) {
            warn_session(&format!("the run of thread {thread:?}"), session);
            return Ok(());
        }
        let stem = file_stem(thread);
        let entry = Entry {
            thread: thread.to_owned(),
            session: session.to_owned(),
            acp,
        };
        let json = serde_json::to_vec(&entry).map_err(io::Error::other)?;
        write_atomic(&self.dir.join(format!("{stem}.json")), &json)?;
        self.remember(stem, entry);
        Ok(())
    }

    fn remember(&mut self, stem: String, entry: Entry) {
        // A stem shared with another thread replaces it, where it was.
        if self.by_stem.insert(stem.clone(), entry).is_some() {
            return;
        }
        self.order.push_back(stem);
        while self.order.len() > self.max {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.by_stem.remove(&old);
            remove(&self.dir.join(format!("{old}.json")));
            remove(&self.dir.join(format!("{old}.plan.json")));
            remove(&self.dir.join(format!("{old}.history.json")));
            remove(&self.dir.join(format!("{old}.state.json")));
            remove(&self.dir.join(format!("{old}.info.json")));
        }
    }
}

/// The largest shared state kept (bytes of JSON).
const MAX_STATE: usize = crate::converse::state::MAX_STATE;

/// The most a thread's file is read of (a thread id and a session id).
const MAX_FILE: u64 = 64 * 1024;

/// The longest session id kept.
const MAX_SESSION: usize = 1024;

/// A session id a run can give its CLI: not empty, bounded, no control
/// characters, and not beginning with `-` (which the CLI would take for an
/// option, and which `run` refuses).
pub fn session_ok(session: &str) -> bool {
    !session.is_empty()
        && session.len() <= MAX_SESSION
        && !session.starts_with('-')
        && !session.chars().any(char::is_control)
}

fn warn_session(whose: &str, session: &str) {
    let shown: String = session.chars().take(80).collect();
    let _ = std::io::Write::write_fmt(
        &mut io::stderr(),
        format_args!(
            "agui-translate: serve: warning: {whose}: session id {shown:?} is not one a CLI \
             can resume (empty, over {MAX_SESSION} bytes, a control character or a leading \
             '-'): ignored, the thread starts a new session\n"
        ),
    );
}

fn remove(path: &Path) {
    let _ = fs::remove_file(path);
}

/// The file name of a thread's files: its id in hex, or, when that would
/// be long, the hex of its first 48 bytes and a digest of the whole.
fn file_stem(thread: &str) -> String {
    use std::fmt::Write as _;
    let bytes = thread.as_bytes();
    let mut stem = String::with_capacity(2 * bytes.len().min(48) + 17);
    for b in &bytes[..bytes.len().min(48)] {
        let _ = write!(stem, "{b:02x}");
    }
    if bytes.len() > 48 {
        // FNV-1a: the same on every build, as the name must be after an
        // upgrade.
        let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let _ = write!(stem, "-{h:016x}");
    }
    stem
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("agui-threads-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// The route a session was made by outlives the process, and a file
    /// of an earlier server, without it, reads as not known to be ACP.
    #[test]
    fn a_session_made_over_acp_is_kept_so() {
        let dir = scratch("acp").join("state");
        let mut t = Threads::open(&dir, 10).unwrap();
        t.ran("over-acp", Some(("s1", true))).unwrap();
        t.ran("stream", Some(("s2", false))).unwrap();
        drop(t);
        let mut t = Threads::open(&dir, 10).unwrap();
        assert!(t.session_over_acp("over-acp"));
        assert!(!t.session_over_acp("stream"));
        assert!(!t.session_over_acp("unknown"));
        // The same session, now made over ACP: the record is written again.
        t.ran("stream", Some(("s2", true))).unwrap();
        drop(t);
        let t = Threads::open(&dir, 10).unwrap();
        assert!(t.session_over_acp("stream"));
        assert_eq!(t.session("stream"), Some("s2"));
        let earlier = dir.join(format!("{}.json", file_stem("old")));
        fs::write(&earlier, r#"{"thread":"old","session":"s3"}"#).unwrap();
        let t = Threads::open(&dir, 10).unwrap();
        assert_eq!(t.session("old"), Some("s3"));
        assert!(!t.session_over_acp("old"));
    }

    #[test]
    fn sessions_outlive_the_process_in_a_private_directory() {
        let dir = scratch("outlive").join("state");
        let mut t = Threads::open(&dir, 10).unwrap();
        assert_eq!(mode(&dir), 0o700);
        t.ran("thread-a", Some(("s1", false))).unwrap();
        t.ran("thread-b", None).unwrap();
        drop(t);
        let t = Threads::open(&dir, 10).unwrap();
        assert_eq!(t.session("thread-a"), Some("s1"));
        assert_eq!(t.session("thread-b"), None);
        let files: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}: no temporary file is left");
        assert_eq!(mode(&files[0]), 0o600);
        // A directory that others can read is made private.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        Threads::open(&dir, 10).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn threads_are_bounded_oldest_first_files_and_all() {
        let dir = scratch("bounded");
        let mut t = Threads::open(&dir, 3).unwrap();
        for i in 0..3 {
            t.ran(&format!("t{i}"), Some((&format!("s{i}"), false)))
                .unwrap();
            fs::write(t.plan_file(&format!("t{i}")), "[]").unwrap();
        }
        t.ran("t3", Some(("s3", false))).unwrap();
        assert_eq!(t.session("t0"), None);
        assert!(!t.plan_file("t0").exists());
        assert!(t.plan_file("t1").exists());
        // t1..t3, and the plans of t1 and t2.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 5);
        drop(t);
        // Reopened with a smaller bound: the oldest kept go.
        std::thread::sleep(std::time::Duration::from_millis(10));
        let t = Threads::open(&dir, 2).unwrap();
        assert_eq!(t.session("t1"), None);
        assert_eq!(t.session("t3"), Some("s3"));
        assert_eq!(t.by_stem.len(), 2);
    }

    #[test]
    fn a_thread_s_state_is_kept_private_bounded_and_goes_with_it() {
        let dir = scratch("state");
        let mut t = Threads::open(&dir, 1).unwrap();
        assert_eq!(t.kept_state("a"), None);
        t.keep_state("a", "{\n  \"branch\": \"dev\"\n}").unwrap();
        t.ran("a", Some(("s1", false))).unwrap();
        drop(t);
        let mut t = Threads::open(&dir, 1).unwrap();
        assert_eq!(t.kept_state("a").as_deref(), Some(r#"{"branch":"dev"}"#));
        assert_eq!(mode(&t.state_file("a")), 0o600);
        assert_eq!(
            t.session("a"),
            Some("s1"),
            "the state file is no thread's record"
        );
        // Not an object, or too large: not taken.
        fs::write(t.state_file("a"), "[1]").unwrap();
        assert_eq!(t.kept_state("a"), None);
        let big = format!(r#"{{"a":"{}"}}"#, "x".repeat(MAX_STATE));
        fs::write(t.state_file("a"), big).unwrap();
        assert_eq!(t.kept_state("a"), None);
        // A link is not followed.
        fs::remove_file(t.state_file("a")).unwrap();
        let elsewhere = dir.join("elsewhere");
        fs::write(&elsewhere, "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, t.state_file("a")).unwrap();
        assert_eq!(t.kept_state("a"), None);
        fs::remove_file(t.state_file("a")).unwrap();
        t.keep_state("a", "{}").unwrap();
        // Forgotten with its thread.
        t.ran("b", Some(("s2", false))).unwrap();
        assert!(!t.state_file("a").exists());
        t.keep_state("c", "{}").unwrap();
        t.ran("c", None).unwrap();
        assert!(
            !t.state_file("c").exists(),
            "a thread with no session keeps no state"
        );
    }

    #[test]
    fn a_thread_with_no_session_keeps_no_plan() {
        let dir = scratch("noplan");
        let mut t = Threads::open(&dir, 3).unwrap();
        fs::write(t.plan_file("x"), "[]").unwrap();
        t.ran("x", None).unwrap();
        assert!(!t.plan_file("x").exists());
    }

    #[test]
    fn long_thread_ids_get_short_distinct_names() {
        let a = "a".repeat(300);
        let b = format!("{}b", "a".repeat(299));
        assert_ne!(file_stem(&a), file_stem(&b));
        assert!(file_stem(&a).len() < 120);
        assert_eq!(file_stem("t/../x"), "742f2e2e2f78");
    }
}
