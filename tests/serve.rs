//! `agui-translate serve`, with the stand-in CLI of the `run` tests
//! (`tests/fake/cli`) answering, spoken to over plain HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::serve;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-serve-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn body(thread: &str, run: &str, prompt: &str) -> String {
    serde_json::json!({
        "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {},
        "messages": [{"id": format!("{run}-m"), "role": "user", "content": prompt}],
    })
    .to_string()
}

/// Sends a POST and returns the open connection, its headers read.
fn post(addr: &str, body: &str, auth: Option<&str>) -> (u16, BufReader<TcpStream>) {
    let mut conn = TcpStream::connect(addr).unwrap();
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        conn,
        "POST /agent HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(conn);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let code = status.split(' ').nth(1).unwrap().parse().unwrap();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h.trim().is_empty() {
            break;
        }
    }
    (code, r)
}

/// The events of a whole SSE response.
fn events(mut r: BufReader<TcpStream>) -> Vec<serde_json::Value> {
    let mut text = String::new();
    r.read_to_string(&mut text).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Reads events until one of type `ty`.
fn until(r: &mut BufReader<TcpStream>, ty: &str) -> serde_json::Value {
    loop {
        let mut line = String::new();
        assert!(
            r.read_line(&mut line).unwrap() > 0,
            "the stream ended before {ty}"
        );
        if let Some(d) = line.trim_end().strip_prefix("data: ") {
            let ev: serde_json::Value = serde_json::from_str(d).unwrap();
            if ev["type"] == ty {
                return ev;
            }
        }
    }
}

/// A server whose CLI writes its first records, its process id to
/// `pid_file`, and then hangs (until a signal).
fn hanging_server(pid_file: &Path) -> common::Server {
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    serve(
        "gemini",
        &[],
        &[
            ("FAKE_REPLAY", &recording),
            ("FAKE_LINES", Path::new("2")),
            ("FAKE_PID", pid_file),
            ("FAKE_HANG", Path::new("60")),
        ],
    )
}

/// The stand-in CLI's process id, once it has written it to `file`.
fn cli_pid(file: &Path) -> i32 {
    let start = Instant::now();
    while !file.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the CLI never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[test]
fn a_thread_s_second_message_resumes_its_cli_session() {
    let argv = tmp("resume-argv");
    let server = serve(
        "gemini",
        &[],
        &[
            (
                "FAKE_REPLAY",
                &root().join("testdata/gemini/0.61.0/resume.jsonl"),
            ),
            ("FAKE_ARGV", &argv),
        ],
    );
    let (code, r) = post(
        &server.addr,
        &body("thread-a", "run-a1", "Remember teal."),
        None,
    );
    assert_eq!(code, 200);
    let first = events(r);
    assert_eq!(first[0]["type"], "RUN_STARTED");
    assert_eq!(first[0]["threadId"], "thread-a");
    assert_eq!(first[0]["runId"], "run-a1");
    let last = first.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(
        (&last["threadId"], &last["runId"]),
        (&first[0]["threadId"], &first[0]["runId"])
    );
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(args.lines().any(|l| l == "Remember teal."), "{args}");
    assert!(!args.contains("--resume"), "{args}");

    let (code, r) = post(
        &server.addr,
        &body("thread-a", "run-a2", "Which word?"),
        None,
    );
    assert_eq!(code, 200);
    let second = events(r);
    assert_eq!(second[0]["runId"], "run-a2");
    let args = std::fs::read_to_string(&argv).unwrap();
    let session = "b2910361-f4a9-4aa4-9e3b-29312e1030c0"; // the recording's session_id
    assert!(
        args.contains(&format!("--resume\n{session}\n")),
        "the second turn resumes the session the first reported: {args}"
    );

    // Another thread starts a session of its own.
    let (_, r) = post(&server.addr, &body("thread-b", "run-b1", "Hello"), None);
    events(r);
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(!args.contains("--resume"), "{args}");
}

#[test]
fn the_stream_is_valid_ag_ui() {
    let server = serve(
        "claude",
        &[],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/claude/2.1.330/shell.jsonl"),
        )],
    );
    let (_, mut r) = post(&server.addr, &body("t", "r", "Run a command"), None);
    let mut sse = Vec::new();
    r.read_to_end(&mut sse).unwrap();
    let mut check = Command::new(BIN)
        .arg("check")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check.stdin.take().unwrap().write_all(&sse).unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&sse).contains("\"type\":\"TOOL_CALL_RESULT\""));
}

#[test]
fn a_client_that_goes_away_ends_the_cli() {
    let pid_file = tmp("gone-pid");
    let server = hanging_server(&pid_file);
    let (code, mut r) = post(&server.addr, &body("t", "r", "Hello"), None);
    assert_eq!(code, 200);
    until(&mut r, "RUN_STARTED");
    let pid = cli_pid(&pid_file);
    assert!(alive(pid));
    drop(r); // the client goes away while the CLI is quiet
    let start = Instant::now();
    while alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the CLI outlived its client"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn threads_run_at_once_and_a_busy_thread_refuses() {
    let server = hanging_server(&tmp("at-once-pid"));
    // Neither run can end (the CLI hangs), so both being under way proves
    // they run at once.
    let (_, mut one) = post(&server.addr, &body("one", "r1", "Hello"), None);
    let (_, mut two) = post(&server.addr, &body("two", "r2", "Hello"), None);
    assert_eq!(until(&mut one, "RUN_STARTED")["threadId"], "one");
    assert_eq!(until(&mut two, "RUN_STARTED")["threadId"], "two");
    let (code, mut busy) = post(&server.addr, &body("one", "r3", "Again"), None);
    assert_eq!(code, 409);
    let mut why = String::new();
    busy.read_to_string(&mut why).unwrap();
    assert!(why.contains("\"error\""), "{why}");
}

#[test]
fn a_token_is_required_when_given() {
    let server = serve(
        "gemini",
        &["--token", "s3cret"],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/gemini/0.61.0/text.jsonl"),
        )],
    );
    let req = body("t", "r", "Hello");
    assert_eq!(post(&server.addr, &req, None).0, 401);
    assert_eq!(post(&server.addr, &req, Some("s3cre")).0, 401);
    let (code, r) = post(&server.addr, &req, Some("s3cret"));
    assert_eq!(code, 200);
    assert_eq!(events(r).last().unwrap()["type"], "RUN_FINISHED");
}

#[test]
fn bad_requests_get_a_status_that_says_why() {
    let server = serve("gemini", &[], &[]);
    assert_eq!(post(&server.addr, "{not json", None).0, 400);
    let no_user =
        r#"{"threadId":"t","runId":"r","messages":[{"id":"1","role":"assistant","content":"hi"}]}"#;
    assert_eq!(post(&server.addr, no_user, None).0, 400);
    let mut conn = TcpStream::connect(&server.addr).unwrap();
    write!(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 405 "), "{text}");
    // A browser's preflight.
    let mut conn = TcpStream::connect(&server.addr).unwrap();
    write!(
        conn,
        "OPTIONS /agent HTTP/1.1\r\nHost: x\r\nOrigin: http://app.example\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 204 "), "{text}");
    assert!(
        text.contains("Access-Control-Allow-Headers: Content-Type, Authorization"),
        "{text}"
    );
}

#[test]
fn a_server_beyond_loopback_needs_a_token() {
    let out = Command::new(BIN)
        .args(["serve", "claude", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token"));
    // Options that serve sets itself are refused at start, not per request.
    let out = Command::new(BIN)
        .args(["serve", "claude", "--", "--run-id", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_stopped_server_ends_its_runs() {
    let pid_file = tmp("stopped-pid");
    let mut server = hanging_server(&pid_file);
    let (_, mut r) = post(&server.addr, &body("t", "r", "Hello"), None);
    until(&mut r, "RUN_STARTED");
    let pid = cli_pid(&pid_file);
    // SAFETY: the server's own process id, not yet waited for.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let end = until(&mut r, "RUN_FINISHED");
    assert_eq!(end["outcome"]["type"], "cancelled", "{end}");
    assert!(!alive(pid), "the CLI outlived the server");
}
