//! A CLI's own transcript of a session, read back for a thread whose
//! history `serve` did not keep, and handed to the CLI's translator:
//! Claude Code's session file, the JSONL it writes under its
//! configuration directory (`projects/<working directory>/<session>.jsonl`),
//! whose user and assistant records are the records of its stream; and
//! Copilot CLI's `session-state/<session>/events.jsonl`, the events of
//! its JSON mode; and Codex's thread as its app-server reads it back
//! (`codex app-server`, `thread/read` with its turns), each turn's items
//! as the notifications of a turn; and, for a run over the Agent Client
//! Protocol, the session as the agent replays it when asked to load it
//! (`session/load`). The other CLIs have none read here ([`read`] says
//! why).
//!
//! A transcript is untrusted-sized input: at most [`MAX_TRANSCRIPT`] bytes
//! of a file's end are read (the oldest records go first, as in a kept
//! history), at most [`MAX_FOLDERS`] folders are looked in for it, and the
//! app-server's answer (and an ACP agent's replay) is read up to the same
//! size, for [`CODEX_READ_TIMEOUT`] at most.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::dialect::{Dialect, FromCli};

/// The most bytes of a transcript read: its end, when it is longer.
pub const MAX_TRANSCRIPT: u64 = 32 * 1024 * 1024;

/// The most folders of Claude Code's `projects` looked in for a session.
const MAX_FOLDERS: usize = 10_000;

/// Why a transcript cannot be read back: `why` may be told to the page
/// (it names no place on the server's machine), `detail` is for the
/// server's log.
#[derive(Debug)]
pub struct Cannot {
    pub why: String,
    pub detail: Option<String>,
}

impl Cannot {
    fn said(why: String) -> Cannot {
        Cannot { why, detail: None }
    }
}

/// The AG-UI events (NDJSON) of the transcript of `session`, a session
/// of `cli` run in `cwd`, or why there is none to read.
///
/// `cli_path` is the CLI's program as the runs name it (`--cli`), for a
/// CLI asked for its transcript (Codex's app-server).
///
/// `acp`: the run went over the Agent Client Protocol, started with
/// these arguments after `--`: the agent is asked to load the session
/// ([`acp_session`]).
pub fn read(
    cli: Dialect,
    session: &str,
    cwd: &Path,
    cli_path: Option<&Path>,
    acp: Option<&[String]>,
) -> Result<Vec<u8>, Cannot> {
    let title = cli.spec().title;
    if let Some(extra) = acp.filter(|_| cli.acp().is_some()) {
        return acp_session(cli, session, cwd, cli_path, extra);
    }
    let file = match cli.name() {
        "claude" => claude_session_file(claude_config_dir(), session, cwd),
        "copilot" => copilot_session_file(session),
        "codex" | "codex-app-server" => return codex_thread(session, cli_path),
        "gemini" | "qwen" => {
            return Err(Cannot::said(format!(
                "{title} keeps its chats in a format of its own, which this server does not \
                 read back"
            )))
        }
        _ => {
            return Err(Cannot::said(format!(
                "{title} writes no transcript this server reads back"
            )))
        }
    };
    let unread = |detail: String| Cannot {
        why: format!("{title}'s transcript of the thread's session cannot be read"),
        detail: Some(detail),
    };
    let file = file.map_err(unread)?;
    let bytes =
        read_end(&file, MAX_TRANSCRIPT).map_err(|e| unread(format!("{}: {e}", file.display())))?;
    translate(cli, bytes).ok_or_else(|| unread(format!("{}: holds no message", file.display())))
}

/// The AG-UI events (NDJSON) of `cli`'s transcript `bytes`, translated by
/// the CLI's translator; `None` when it holds no record of the
/// conversation.
pub fn translate(cli: Dialect, bytes: Vec<u8>) -> Option<Vec<u8>> {
    let records = match cli.name() {
        "claude" => claude_records(bytes),
        _ => bytes,
    };
    if records.trim_ascii().is_empty() {
        return None;
    }
    Some(crate::run::translate_bytes(FromCli::Dialect(cli), &records))
}

/// How long Codex's app-server has to answer `thread/read`.
const CODEX_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The thread `session` as Codex's app-server reads it (`codex
/// app-server`: `initialize`, then `thread/read` with its turns), each
/// turn's items handed to the app-server's translator as the
/// notifications of a turn that completed them.
fn codex_thread(session: &str, cli_path: Option<&Path>) -> Result<Vec<u8>, Cannot> {
    let unread = |detail: String| Cannot {
        why: "Codex's app-server could not read the thread's session back".into(),
        detail: Some(detail),
    };
    session_ok(session).map_err(unread)?;
    let codex = Dialect::named("codex").expect("a dialect");
    let exe = crate::process::spawn::executable(codex, cli_path)
        .map_err(|name| unread(format!("no {} on PATH", name.display())))?;
    let mut child = std::process::Command::new(&exe)
        .arg("app-server")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| unread(format!("{}: {e}", exe.display())))?;
    let asks = serde_json::json!([
        {"id": 0, "method": "initialize", "params": {"clientInfo":
            {"name": "agui_translate", "title": "agui-translate", "version": env!("CARGO_PKG_VERSION")}}},
        {"method": "initialized"},
        {"id": 1, "method": "thread/read", "params": {"threadId": session, "includeTurns": true}},
    ]);
    let mut stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(codex_answer(stdout));
    });
    for ask in asks.as_array().expect("an array") {
        let _ = std::io::Write::write_all(&mut stdin, format!("{ask}\n").as_bytes());
    }
    let answer = rx.recv_timeout(CODEX_READ_TIMEOUT);
    drop(stdin);
    // SAFETY: the group of the child started here, not yet waited for.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let answer = match answer {
        Ok(Ok(answer)) => answer,
        Ok(Err(why)) => return Err(unread(why)),
        Err(_) => return Err(unread(format!("no answer in {CODEX_READ_TIMEOUT:?}"))),
    };
    if let Some(error) = answer.get("error") {
        return Err(unread(format!("thread/read: {error}")));
    }
    let thread = &answer["result"]["thread"];
    let mut lines = Vec::new();
    for turn in thread["turns"].as_array().into_iter().flatten() {
        let params = |item: &serde_json::Value| serde_json::json!({"threadId": session, "turnId": turn["id"], "item": item});
        let started = serde_json::json!({"method": "turn/started", "params": {"threadId": session,
            "turn": {"id": turn["id"], "items": [], "status": "inProgress"}}});
        lines.push(started);
        for item in turn["items"].as_array().into_iter().flatten() {
            lines.push(serde_json::json!({"method": "item/completed", "params": params(item)}));
        }
        let ended = serde_json::json!({"method": "turn/completed", "params": {"threadId": session,
            "turn": {"id": turn["id"], "items": [], "status": turn["status"]}}});
        lines.push(ended);
    }
    let mut records = Vec::new();
    for line in lines {
        records.extend_from_slice(line.to_string().as_bytes());
        records.push(b'\n');
    }
    let server = Dialect::named("codex-app-server").expect("a dialect");
    translate(server, records).ok_or_else(|| unread("the thread has no turn".into()))
}

/// The next line of a process asked for its transcript into `line`; an
/// error if it ended first or could not be read.
fn next_line(lines: &mut impl std::io::BufRead, line: &mut Vec<u8>) -> Result<(), String> {
    line.clear();
    match lines.read_until(b'\n', line) {
        Ok(0) => Err("it ended without answering".into()),
        Err(e) => Err(e.to_string()),
        Ok(_) => Ok(()),
    }
}

/// The app-server's answer to request 1 (`thread/read`), from its stdout,
/// reading at most [`MAX_TRANSCRIPT`] bytes.
fn codex_answer(stdout: std::process::ChildStdout) -> Result<serde_json::Value, String> {
    let mut lines = std::io::BufReader::new(stdout.take(MAX_TRANSCRIPT));
    let mut line = Vec::new();
    loop {
        next_line(&mut lines, &mut line)?;
        if !line.starts_with(b"{\"id\":1,") {
            continue;
        }
        return serde_json::from_slice(&line).map_err(|e| format!("its answer: {e}"));
    }
}

/// What the reader of a loading agent's output saw, as it saw it.
enum Seen {
    /// A `session/update` notification (its line).
    Update(Vec<u8>),
    /// The load's answer.
    Loaded,
    /// Its `initialize` answer has no `agentCapabilities.loadSession`.
    CannotLoad,
    /// It failed, or could not be asked.
    Failed(String),
}

/// The session `session` as the ACP agent replays it when asked to load it
/// (`initialize`, then `session/load` in `cwd` with no MCP server): the
/// `session/update` notifications it sends before the load's answer, and
/// after it until it has been quiet for
/// [`SETTLE`](crate::converse::acp::SETTLE), handed to the
/// ACP translator. The agent is started as a run over ACP starts it, and
/// ended then, or after [`CODEX_READ_TIMEOUT`] in all.
fn acp_session(
    cli: Dialect,
    session: &str,
    cwd: &Path,
    cli_path: Option<&Path>,
    extra: &[String],
) -> Result<Vec<u8>, Cannot> {
    let title = cli.spec().title;
    let unread = |detail: String| Cannot {
        why: format!("{title} could not load the thread's session back"),
        detail: Some(detail),
    };
    session_ok(session).map_err(unread)?;
    let (exe, args) = crate::process::spawn::acp_command(cli, cli_path, extra)
        .map_err(|e| unread(e.to_string()))?;
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let mut child = std::process::Command::new(&exe)
        .args(&args)
        .current_dir(&cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| unread(format!("{}: {e}", exe.display())))?;
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let load = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/load",
        "params": {"sessionId": session, "cwd": cwd, "mcpServers": []}});
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if let Err(why) = acp_replay(stdin, stdout, &load, &tx) {
            let _ = tx.send(Seen::Failed(why));
        }
    });
    let replayed = replay_of(&rx);
    // SAFETY: the group of the child started here, not yet waited for.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let records = match replayed {
        Ok(records) => records,
        Err(None) => {
            return Err(Cannot::said(format!(
                "{title} cannot load a session (its initialize answer has no loadSession \
                 capability)"
            )))
        }
        Err(Some(why)) => return Err(unread(why)),
    };
    let acp = Dialect::named("acp").expect("a dialect");
    translate(acp, records).ok_or_else(|| unread("it replayed no message".into()))
}

/// The replay the reader of a loading agent passes on: its updates, once
/// it has answered and then been quiet for
/// [`SETTLE`](crate::converse::acp::SETTLE) (or has ended,
/// or [`CODEX_READ_TIMEOUT`] has passed since it was started). `Err(None)`:
/// it cannot load sessions; `Err(Some(why))`: it did not answer.
fn replay_of(rx: &std::sync::mpsc::Receiver<Seen>) -> Result<Vec<u8>, Option<String>> {
    use std::sync::mpsc::RecvTimeoutError;
    let deadline = std::time::Instant::now() + CODEX_READ_TIMEOUT;
    let mut records = Vec::new();
    let mut loaded = false;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let wait = if loaded {
            left.min(crate::converse::acp::SETTLE)
        } else {
            left
        };
        match rx.recv_timeout(wait) {
            Ok(Seen::Update(line)) => {
                records.extend_from_slice(&line);
                records.push(b'\n');
            }
            Ok(Seen::Loaded) => loaded = true,
            Ok(Seen::CannotLoad) => return Err(None),
            Ok(Seen::Failed(_)) | Err(_) if loaded => return Ok(records),
            Ok(Seen::Failed(why)) => return Err(Some(why)),
            Err(RecvTimeoutError::Timeout) => {
                return Err(Some(format!("no answer in {CODEX_READ_TIMEOUT:?}")))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Some("it ended without answering".into()))
            }
        }
    }
}

/// The agent's side of a session's load, passed on as it comes: `initialize`
/// asked, then (if the agent can load sessions) `load`; the `initialize`
/// request and its answer, the `session/update` notifications and the
/// load's answer, until its output ends (at most
/// [`MAX_TRANSCRIPT`] bytes read).
fn acp_replay(
    mut stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    load: &serde_json::Value,
    seen: &std::sync::mpsc::Sender<Seen>,
) -> Result<(), String> {
    use std::io::Write;
    let said = |e: std::io::Error| format!("it could not be asked: {e}");
    let initialize = crate::converse::acp::initialize_line(0);
    stdin.write_all(initialize.as_bytes()).map_err(said)?;
    let mut lines = std::io::BufReader::new(stdout.take(MAX_TRANSCRIPT));
    let mut line = Vec::new();
    loop {
        next_line(&mut lines, &mut line)?;
        let Ok(msg) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        let step = if msg["method"] == "session/update" {
            Seen::Update(line.trim_ascii_end().to_vec())
        } else if msg.get("method").is_some() {
            continue;
        } else if let Some(error) = msg.get("error") {
            let what = if msg["id"] == 0 {
                "initialize"
            } else {
                "session/load"
            };
            return Err(format!("{what}: {error}"));
        } else if msg["id"] == 0 {
            if msg["result"]["agentCapabilities"]["loadSession"] != true {
                Seen::CannotLoad
            } else {
                stdin
                    .write_all(format!("{load}\n").as_bytes())
                    .map_err(said)?;
                // The translator is told the agent's `initialize` answer, as
                // in a run: OpenCode's calls are named by what it says.
                let asked = Seen::Update(initialize.trim_ascii_end().as_bytes().to_vec());
                if seen.send(asked).is_err() {
                    return Ok(());
                }
                Seen::Update(line.trim_ascii_end().to_vec())
            }
        } else if msg["id"] == 1 {
            Seen::Loaded
        } else {
            continue;
        };
        if seen.send(step).is_err() {
            return Ok(());
        }
    }
}

/// Claude Code's configuration directory: `CLAUDE_CONFIG_DIR`, or
/// `~/.claude`.
fn claude_config_dir() -> Result<PathBuf, String> {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(home()?.join(".claude")),
    }
}

/// A session id that names a file and nothing else: letters, digits, `-`
/// and `_`, at most 128 of them.
fn session_ok(session: &str) -> Result<(), String> {
    let ok = !session.is_empty()
        && session.len() <= 128
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!("{session:?} is not a session id this server reads"))
    }
}

/// Copilot CLI's events of `session`: under `COPILOT_HOME`, or
/// `~/.copilot`.
fn copilot_session_file(session: &str) -> Result<PathBuf, String> {
    session_ok(session)?;
    let home = match std::env::var_os("COPILOT_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => home()?.join(".copilot"),
    };
    let file = home
        .join("session-state")
        .join(session)
        .join("events.jsonl");
    if file.is_file() {
        Ok(file)
    } else {
        Err(format!("{}: not found", file.display()))
    }
}

/// The user's home directory.
fn home() -> Result<PathBuf, String> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| "HOME is not set".into())
}

/// The session file of `session`: in the folder Claude Code names after
/// the working directory `cwd` (each character but a letter or a digit
/// written `-`), or else in any folder of `projects` (a long directory's
/// name is shortened).
fn claude_session_file(
    config: Result<PathBuf, String>,
    session: &str,
    cwd: &Path,
) -> Result<PathBuf, String> {
    session_ok(session)?;
    let config = config?;
    let projects = config.join("projects");
    let name = format!("{session}.jsonl");
    let folder: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let first = projects.join(folder).join(&name);
    if first.is_file() {
        return Ok(first);
    }
    let entries = std::fs::read_dir(&projects)
        .map_err(|e| format!("{}: cannot be read: {e}", projects.display()))?;
    entries
        .take(MAX_FOLDERS)
        .filter_map(Result::ok)
        .map(|e| e.path().join(&name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "no session file of session {session} under {}",
                projects.display()
            )
        })
}

/// The last `limit` bytes of the regular file `path` (not through a
/// link), from the first whole line among them.
fn read_end(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let cut = meta.len() > limit;
    if cut {
        file.seek(SeekFrom::Start(meta.len() - limit))?;
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    if cut {
        let start = memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |i| i + 1);
        bytes.drain(..start);
    }
    Ok(bytes)
}

/// What a record of the session file is, as far as it is read here.
#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a str>,
    #[serde(rename = "isSidechain", default)]
    sidechain: bool,
    #[serde(rename = "isMeta", default)]
    meta: bool,
}

/// The records of a session file that are the conversation: the user's
/// and the assistant's, not a subagent's (`isSidechain`) nor those Claude
/// Code adds for the model (`isMeta`); the rest (attachments, snapshots,
/// the requests' shapes, costs) is left out.
fn claude_records(bytes: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    for line in bytes.split(|&b| b == b'\n') {
        let quick = |k: &[u8]| memchr::memmem::find(line, k).is_some();
        if !quick(b"\"type\":\"user\"") && !quick(b"\"type\":\"assistant\"") {
            continue;
        }
        let Ok(k) = serde_json::from_slice::<Kind>(line) else {
            continue;
        };
        if matches!(k.kind, Some("user" | "assistant")) && !k.sidechain && !k.meta {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_end_of_a_long_transcript_is_read_from_a_whole_line() {
        let dir = std::env::temp_dir().join(format!("agui-transcript-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.jsonl");
        std::fs::write(&file, b"aaaa\nbbbb\ncccc\n").unwrap();
        assert_eq!(read_end(&file, 7).unwrap(), b"cccc\n");
        assert_eq!(read_end(&file, 100).unwrap(), b"aaaa\nbbbb\ncccc\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_session_id_that_could_name_another_file_is_refused() {
        for bad in ["../x", "a/b", "", ".."] {
            assert!(claude_session_file(Ok("/nonexistent".into()), bad, Path::new("/")).is_err());
        }
    }
}
