//! Shared by the test binaries (each uses a part of it).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The project's folder.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The file `name` in the test binary's own temporary folder
/// (`agui-<folder>-<pid>`), made if need be; an old file of that name is
/// removed.
pub fn scratch(folder: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-{folder}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    let _ = std::fs::remove_file(&file);
    file
}

/// The `testdata/` folder.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

/// Every `*.jsonl` file below `dir`, sorted.
pub fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The whole response (status line, head, body) to one POST of `body` to
/// `serve` at `addr`.
pub fn post_raw(addr: &str, body: &str) -> String {
    use std::io::Read;
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    write!(
        conn,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    BufReader::new(conn).read_to_string(&mut text).unwrap();
    text
}

/// The events of an SSE response: its `data:` lines.
pub fn sse_events(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Waits until `cond` holds, for `limit` at most (then fails, saying
/// `what` never came).
pub fn until(what: &str, limit: std::time::Duration, cond: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "never: {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// One JSON value per line.
pub fn values(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The JSON-RPC messages a client sent are the recorded client's;
/// `initialize` and the thread request carry the client's own name and
/// options, so only their method and id are compared.
pub fn assert_same_messages(
    name: &str,
    sent: &[serde_json::Value],
    recorded: &[serde_json::Value],
) {
    assert_eq!(sent.len(), recorded.len(), "{name}: {sent:#?}");
    for (s, r) in sent.iter().zip(recorded) {
        match r["method"].as_str() {
            Some("initialize" | "thread/start") => {
                assert_eq!((&s["id"], &s["method"]), (&r["id"], &r["method"]), "{name}")
            }
            _ => assert_eq!(s, r, "{name}"),
        }
    }
}

/// Append a verdict on `path` (shown relative to the crate) to the file
/// named by `$AGUI_RESULTS`, when it is set: `KIND<TAB>PATH<TAB>ok|fail`,
/// one line each. `scripts/matrix.py` turns these into the
/// compatibility matrix in docs/compatibility.md.
pub fn report_verdicts<'a>(kind: &str, verdicts: impl IntoIterator<Item = (&'a Path, bool)>) {
    let Some(file) = std::env::var_os("AGUI_RESULTS") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = String::new();
    for (path, ok) in verdicts {
        let rel = path.strip_prefix(root).unwrap_or(path).display();
        text += &format!("{kind}\t{rel}\t{}\n", if ok { "ok" } else { "fail" });
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("AGUI_RESULTS is writable");
}

/// A running server; stopped when dropped.
pub struct Server {
    pub child: Child,
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM, as a service manager stops it: its runs end too.
        // SAFETY: the server's own process id, not yet waited for.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// `serve CLI --listen 127.0.0.1:0 ARGS -- --cli FAKE`, the fake driven by
/// `env`; returns once the server says where it listens. Unless ARGS give
/// `--state-dir`, the server keeps its threads in a fresh directory of its
/// own. Unless ARGS or `env` give a token, the server is opened with
/// `--no-token` (the tests that are about the token it makes by default
/// use [`serve_default`]).
pub fn serve(cli: &str, args: &[&str], env: &[(&str, &Path)]) -> Server {
    serve_run(cli, args, &[], env)
}

/// [`serve`], with `run_args` for every run after `--cli FAKE`.
#[allow(dead_code)]
pub fn serve_run(cli: &str, args: &[&str], run_args: &[&str], env: &[(&str, &Path)]) -> Server {
    let given = args.iter().any(|a| a.starts_with("--token"))
        || env.iter().any(|(k, _)| *k == "AGUI_SERVE_TOKEN");
    let mut args = args.to_vec();
    if !given {
        args.push("--no-token");
    }
    serve_default(cli, &args, run_args, env)
}

/// [`serve_run`] as a user starts it: without a token given, the server
/// makes one of its own (in the state directory).
pub fn serve_default(cli: &str, args: &[&str], run_args: &[&str], env: &[(&str, &Path)]) -> Server {
    static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mut c = Command::new(env!("CARGO_BIN_EXE_agui-translate"));
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["serve", cli, "--listen", "127.0.0.1:0"])
        .args(args);
    if !args.contains(&"--state-dir") {
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("agui-serve-state-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        c.arg("--state-dir").arg(dir);
    }
    c.args(["--", "--cli"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake/cli"))
        .args(run_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    // Warnings about the state directory come before the address.
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 && !line.contains(" on http://") {
        line.clear();
    }
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|a| a.trim().strip_suffix('/'))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    // The rest of stderr (the CLI's, passed through) is drained.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Server { child, addr }
}

/// The interrupts that end `run`, which must end in RUN_FINISHED with the
/// interrupt outcome.
pub fn interrupts(run: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let end = run.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{end}");
    assert_eq!(end["outcome"]["type"], "interrupt", "{end}");
    end["outcome"]["interrupts"].as_array().unwrap().clone()
}

/// The answer in the control_response Claude Code was sent for request `id`.
pub fn answer_for(sent: &[serde_json::Value], id: &str) -> serde_json::Value {
    sent.iter()
        .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == id)
        .unwrap_or_else(|| panic!("no answer for {id} in {sent:?}"))["response"]["response"]
        .clone()
}

/// Progress of a long test, on the terminal: `cargo test` shows what a
/// test writes to the process's stderr (only the `eprintln!` family is
/// captured), so a slow test is told from a hung one. A line at the start
/// (`conformance: 0/7600 streams`), then one at each further tenth.
pub struct Progress {
    what: &'static str,
    unit: &'static str,
    total: usize,
    done: std::sync::atomic::AtomicUsize,
}

impl Progress {
    pub fn new(what: &'static str, total: usize, unit: &'static str) -> Progress {
        let p = Progress {
            what,
            unit,
            total,
            done: std::sync::atomic::AtomicUsize::new(0),
        };
        p.say(0);
        p
    }

    /// `n` more are done.
    pub fn add(&self, n: usize) {
        let before = self.done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        let tenth = |k: usize| k * 10 / self.total.max(1);
        if n > 0 && tenth(before) != tenth(before + n) {
            self.say(before + n);
        }
    }

    fn say(&self, done: usize) {
        let _ = writeln!(
            std::io::stderr(),
            "{}: {done}/{} {}",
            self.what,
            self.total,
            self.unit
        );
    }
}
