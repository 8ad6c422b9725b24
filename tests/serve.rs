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

use common::root;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-serve-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A RunAgentInput as the 1.0 HttpAgent sends it.
fn body(thread: &str, run: &str, prompt: &str) -> String {
    serde_json::json!({
        "threadId": thread, "runId": run, "protocolVersion": "1.0",
        "state": {}, "tools": [], "context": [],
        "forwardedProps": {},
        "messages": [{"id": format!("{run}-m"), "role": "user", "content": prompt}],
    })
    .to_string()
}

/// Sends a POST and returns the open connection, its headers read.
fn post(addr: &str, body: &str, auth: Option<&str>) -> (u16, BufReader<TcpStream>) {
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    post_with(addr, body, &auth)
}

/// Sends a POST with the extra header lines `headers` and returns the open
/// connection, its headers read.
fn post_with(addr: &str, body: &str, headers: &str) -> (u16, BufReader<TcpStream>) {
    let mut conn = TcpStream::connect(addr).unwrap();
    write!(
        conn,
        "POST /agent HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
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
    hanging_after(pid_file, "2", &[])
}

/// [`hanging_server`] with the server's `args`, its CLI hanging after
/// `lines` records.
fn hanging_after(pid_file: &Path, lines: &str, args: &[&str]) -> common::Server {
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    serve(
        "gemini",
        args,
        &[
            ("FAKE_REPLAY", &recording),
            ("FAKE_LINES", Path::new(lines)),
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
fn a_thread_survives_a_restart_of_the_server() {
    let argv = tmp("restart-argv");
    let state = tmp("restart-state");
    let _ = std::fs::remove_dir_all(&state);
    let state_arg = state.to_str().unwrap();
    let recording = root().join("testdata/gemini/0.61.0/resume.jsonl");
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)];
    let server = serve("gemini", &["--state-dir", state_arg], env);
    let (code, r) = post(
        &server.addr,
        &body("thread-r", "run-1", "Remember teal."),
        None,
    );
    assert_eq!(code, 200);
    events(r);
    drop(server); // stopped as a service manager stops it
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&state), 0o700, "the state directory is private");
    assert_eq!(mode(&state.join("gemini")), 0o700);

    let server = serve("gemini", &["--state-dir", state_arg], env);
    let (code, r) = post(
        &server.addr,
        &body("thread-r", "run-2", "Which word?"),
        None,
    );
    assert_eq!(code, 200);
    assert_eq!(events(r)[0]["runId"], "run-2");
    let args = std::fs::read_to_string(&argv).unwrap();
    let session = "b2910361-f4a9-4aa4-9e3b-29312e1030c0"; // the recording's session_id
    assert!(
        args.contains(&format!("--resume\n{session}\n")),
        "the restarted server resumes the thread's session: {args}"
    );
}

/// The ACTIVITY_SNAPSHOT PLAN events of a response.
fn plans(events: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    events
        .iter()
        .filter(|e| e["type"] == "ACTIVITY_SNAPSHOT" && e["activityType"] == "PLAN")
        .collect()
}

#[test]
fn a_thread_has_one_plan_across_its_runs() {
    // Two runs of one session: the first creates a task, the second (its
    // own process, as each run is) updates it.
    let recording =
        std::fs::read_to_string(root().join("testdata/claude/cases/task_list_resumed.jsonl"))
            .unwrap();
    let lines: Vec<&str> = recording.lines().collect();
    let second = lines
        .iter()
        .rposition(|l| l.contains(r#""subtype": "init""#))
        .unwrap();
    let replay = tmp("plan-replay");
    std::fs::write(&replay, lines[..second].join("\n")).unwrap();
    let server = serve("claude", &[], &[("FAKE_REPLAY", &replay)]);
    let (_, r) = post(&server.addr, &body("thread-p", "run-1", "Plan it"), None);
    let first = events(r);
    std::fs::write(&replay, lines[second..].join("\n")).unwrap();
    let (_, r) = post(&server.addr, &body("thread-p", "run-2", "Start"), None);
    let second = events(r);
    let (one, two) = (plans(&first), plans(&second));
    assert_eq!(one.len(), 1, "{first:?}");
    assert_eq!(two.len(), 1, "the update makes a plan: {second:?}");
    assert_eq!(one[0]["messageId"], "thread-p-plan");
    assert_eq!(
        two[0]["messageId"], one[0]["messageId"],
        "one plan per thread"
    );
    let item = &two[0]["content"]["items"][0];
    assert_eq!(
        (&item["id"], &item["text"], &item["status"]),
        (&"1".into(), &"Read the code".into(), &"in_progress".into()),
        "{item}"
    );
    // Another thread has a plan of its own, with none of this one's tasks.
    let (_, r) = post(&server.addr, &body("thread-q", "run-3", "Start"), None);
    assert!(plans(&events(r)).is_empty());
}

/// The subtypes of the `system` records a response echoes as RAW, and how
/// many RAW events it has.
fn raw_systems(events: &[serde_json::Value]) -> (Vec<String>, usize) {
    let raws: Vec<_> = events.iter().filter(|e| e["type"] == "RAW").collect();
    let systems = raws
        .iter()
        .filter(|e| e["event"]["type"] == "system")
        .filter_map(|e| e["event"]["subtype"].as_str().map(str::to_owned))
        .collect();
    (systems, raws.len())
}

#[test]
fn a_browser_gets_only_the_raw_events_that_nothing_else_carries() {
    let recording = root().join("testdata/claude/2.1.330/shell.jsonl");
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording)];
    let get = |args: &[&str]| {
        let server = serve("claude", args, env);
        let (code, r) = post(&server.addr, &body("t", "r", "Run a command"), None);
        assert_eq!(code, 200);
        raw_systems(&events(r))
    };
    // By default, the init (its tools, MCP servers and paths) became
    // RUN_STARTED and is not echoed; records with no AG-UI event are.
    let (systems, _) = get(&[]);
    assert!(!systems.contains(&"init".to_owned()), "{systems:?}");
    assert!(systems.contains(&"status".to_owned()), "{systems:?}");
    let (systems, _) = get(&["--raw", "all"]);
    assert!(systems.contains(&"init".to_owned()), "{systems:?}");
    assert_eq!(get(&["--raw", "none"]).1, 0);
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
    common::until(
        "the CLI ends with its client",
        Duration::from_secs(20),
        || !alive(pid),
    );
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
    write!(conn, "GET / HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 405 "), "{text}");
}

#[test]
fn a_server_beyond_loopback_needs_a_token() {
    for extra in [&[][..], &["--no-token"]] {
        let out = Command::new(BIN)
            .args(["serve", "claude", "--listen", "0.0.0.0:0"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--token"));
    }
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

/// Sends `request` as it is and reads the whole answer ("" if the
/// connection was reset before one came).
fn raw(addr: &str, request: &[u8]) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = conn.write_all(request);
    let mut text = Vec::new();
    let _ = conn.read_to_end(&mut text);
    String::from_utf8_lossy(&text).into_owned()
}

/// The status of an answer read by [`raw`] (0: none).
fn status(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A request head for a POST of `body` with `headers` (lines ending in CR LF).
fn request(addr: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /agent HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A server whose CLI answers with the text recording and writes its
/// arguments to `argv` (which exists once a CLI has run).
fn logging_server(args: &[&str], argv: &Path) -> common::Server {
    let _ = std::fs::remove_file(argv);
    serve(
        "gemini",
        args,
        &[
            (
                "FAKE_REPLAY",
                &root().join("testdata/gemini/0.61.0/text.jsonl"),
            ),
            ("FAKE_ARGV", argv),
        ],
    )
}

/// The header `name` of an answer, if there.
fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next().unwrap();
    head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

const JSON: &str = "Content-Type: application/json\r\n";

#[test]
fn pages_from_other_origins_can_neither_start_nor_read_a_run() {
    let argv = tmp("origin-argv");
    let server = logging_server(&[], &argv);
    let addr = &server.addr;
    let input = body("t", "r", "Hello");
    let evil = "Origin: http://evil.example\r\n";
    // A page's simple request (no preflight): text/plain, and a form.
    for ct in [
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
    ] {
        let a = raw(
            addr,
            &request(addr, &format!("{evil}Content-Type: {ct}\r\n"), &input),
        );
        assert_eq!(status(&a), 403, "{a}");
        assert_eq!(header(&a, "access-control-allow-origin"), None, "{a}");
    }
    let a = raw(addr, &request(addr, &format!("{evil}{JSON}"), &input));
    assert_eq!(status(&a), 403, "{a}");
    // Its preflight is refused too.
    let a = preflight(addr, "http://evil.example");
    assert_eq!(status(&a), 403, "{a}");
    assert_eq!(header(&a, "access-control-allow-origin"), None, "{a}");
    assert!(!argv.exists(), "a foreign page started the CLI");
}

/// A browser's preflight of a POST with JSON and `X-Request-Id`.
fn preflight(addr: &str, origin: &str) -> String {
    raw(
        addr,
        format!(
            "OPTIONS /agent HTTP/1.1\r\nHost: {addr}\r\nOrigin: {origin}\r\n\
             Access-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: content-type,x-request-id\r\n\r\n"
        )
        .as_bytes(),
    )
}

#[test]
fn a_page_from_an_allowed_origin_runs() {
    let argv = tmp("allowed-argv");
    let server = logging_server(&["--allow-origin", "http://app.example:3000"], &argv);
    let addr = &server.addr;
    let input = body("t", "r", "Hello");
    assert_eq!(status(&preflight(addr, "http://app.example")), 403);
    // The allowed page's preflight is answered with the headers it asks for.
    let a = preflight(addr, "http://app.example:3000");
    assert_eq!(status(&a), 204, "{a}");
    assert_eq!(
        header(&a, "access-control-allow-origin"),
        Some("http://app.example:3000")
    );
    assert_eq!(
        header(&a, "access-control-allow-headers"),
        Some("content-type,x-request-id"),
        "{a}"
    );
    assert!(!a.contains('*'), "{a}");
    let a = raw(
        addr,
        &request(
            addr,
            &format!("Origin: http://app.example:3000\r\n{JSON}"),
            &input,
        ),
    );
    assert_eq!(status(&a), 200, "{a}");
    assert_eq!(
        header(&a, "access-control-allow-origin"),
        Some("http://app.example:3000")
    );
    assert!(a.contains("\"type\":\"RUN_FINISHED\""), "{a}");
    assert!(argv.exists());
}

#[test]
fn a_request_for_another_host_name_starts_nothing() {
    let argv = tmp("rebind-argv");
    let server = logging_server(&[], &argv);
    let addr = &server.addr;
    let port = addr.rsplit(':').next().unwrap();
    let input = body("t", "r", "Hello");
    // A DNS-rebinding page: its own name, this server's address.
    for host in [format!("evil.example:{port}"), "evil.example".into()] {
        let req = format!(
            "POST / HTTP/1.1\r\nHost: {host}\r\n{JSON}Content-Length: {}\r\n\r\n{input}",
            input.len()
        );
        let a = raw(addr, req.as_bytes());
        assert_eq!(status(&a), 421, "{a}");
    }
    let no_host = format!(
        "POST / HTTP/1.1\r\n{JSON}Content-Length: {}\r\n\r\n{input}",
        input.len()
    );
    assert_eq!(status(&raw(addr, no_host.as_bytes())), 400);
    assert!(!argv.exists(), "a request for another name started the CLI");
    let req = format!(
        "POST / HTTP/1.1\r\nHost: localhost:{port}\r\n{JSON}Content-Length: {}\r\n\r\n{input}",
        input.len()
    );
    assert_eq!(status(&raw(addr, req.as_bytes())), 200);
}

#[test]
fn a_host_name_can_be_allowed() {
    let server = logging_server(&["--allow-host", "agent.internal"], &tmp("named-argv"));
    let addr = &server.addr;
    let input = body("t", "r", "Hello");
    for (host, code) in [("agent.internal", 200), ("evil.example", 421)] {
        let req = format!(
            "POST / HTTP/1.1\r\nHost: {host}\r\n{JSON}Content-Length: {}\r\n\r\n{input}",
            input.len()
        );
        assert_eq!(status(&raw(addr, req.as_bytes())), code, "{host}");
    }
}

#[test]
fn only_a_json_body_starts_a_run() {
    let argv = tmp("type-argv");
    let server = logging_server(&[], &argv);
    let addr = &server.addr;
    let input = body("t", "r", "Hello");
    for ct in [
        "Content-Type: text/plain\r\n",
        "Content-Type: application/x-www-form-urlencoded\r\n",
        "Content-Type: multipart/form-data; boundary=x\r\n",
        "",
    ] {
        let a = raw(addr, &request(addr, ct, &input));
        assert_eq!(status(&a), 415, "{ct}: {a}");
    }
    assert!(!argv.exists(), "a body not typed JSON started the CLI");
    let typed = "Content-Type: application/json; charset=utf-8\r\n";
    assert_eq!(status(&raw(addr, &request(addr, typed, &input))), 200);
}

#[test]
fn ambiguous_requests_are_refused_and_start_nothing() {
    let argv = tmp("parser-argv");
    let server = logging_server(&[], &argv);
    let addr = &server.addr;
    let input = body("t", "r", "Hello");
    let n = input.len();
    for (what, req) in [
        (
            "a signed length",
            format!("POST / HTTP/1.1\r\nHost: {addr}\r\n{JSON}Content-Length: +{n}\r\n\r\n{input}"),
        ),
        (
            "two lengths",
            format!(
                "POST / HTTP/1.1\r\nHost: {addr}\r\n{JSON}Content-Length: {n}\r\nContent-Length: {}\r\n\r\n{input}",
                n + 1
            ),
        ),
        (
            "one length twice",
            format!(
                "POST / HTTP/1.1\r\nHost: {addr}\r\n{JSON}Content-Length: {n}\r\nContent-Length: {n}\r\n\r\n{input}"
            ),
        ),
        (
            "a space before the colon",
            format!("POST / HTTP/1.1\r\nHost: {addr}\r\n{JSON}Content-Length : {n}\r\n\r\n{input}"),
        ),
        (
            "bare LF",
            format!("POST / HTTP/1.1\nHost: {addr}\nContent-Type: application/json\nContent-Length: {n}\n\n{input}"),
        ),
        (
            "obs-fold",
            format!(
                "POST / HTTP/1.1\r\nHost: {addr}\r\n{JSON}X-Note: a\r\n b\r\nContent-Length: {n}\r\n\r\n{input}"
            ),
        ),
    ] {
        let a = raw(addr, req.as_bytes());
        assert_eq!(status(&a), 400, "{what}: {a}");
        assert!(a.contains("\"error\""), "{what}: {a}");
    }
    assert!(!argv.exists(), "an ambiguous request started the CLI");
}

#[test]
fn the_bearer_scheme_is_case_insensitive() {
    let server = serve(
        "gemini",
        &["--token", "s3cret"],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/gemini/0.61.0/text.jsonl"),
        )],
    );
    let addr = &server.addr;
    let input = body("t", "r", "Hello");
    for auth in ["bearer s3cret", "BEARER s3cret", "Bearer  s3cret"] {
        let a = raw(
            addr,
            &request(addr, &format!("{JSON}authorization: {auth}\r\n"), &input),
        );
        assert_eq!(status(&a), 200, "{auth}: {a}");
    }
    for auth in [
        "Basic s3cret",
        "bearer s3cret2",
        "bearer s3cre",
        "Bearers3cret",
    ] {
        let a = raw(
            addr,
            &request(addr, &format!("{JSON}Authorization: {auth}\r\n"), &input),
        );
        assert_eq!(status(&a), 401, "{auth}: {a}");
    }
}

#[test]
fn a_token_from_a_file_or_the_environment_reaches_no_child() {
    let argv = tmp("token-argv");
    let env = tmp("token-env");
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let token_file = tmp("token-file");
    private_file(&token_file, "fr0m-file\n");
    let from_file = serve(
        "gemini",
        &["--token-file", token_file.to_str().unwrap()],
        &[("FAKE_REPLAY", &recording)],
    );
    let from_env = serve(
        "gemini",
        &[],
        &[
            ("FAKE_REPLAY", &recording),
            ("FAKE_ARGV", &argv),
            ("FAKE_ENV", &env),
            ("AGUI_SERVE_TOKEN", Path::new("fr0m-env")),
        ],
    );
    for (server, token) in [(&from_file, "fr0m-file"), (&from_env, "fr0m-env")] {
        let req = body("t", "r", "Hello");
        assert_eq!(post(&server.addr, &req, None).0, 401, "{token}");
        assert_eq!(post(&server.addr, &req, Some("wrong")).0, 401, "{token}");
        let (code, r) = post(&server.addr, &req, Some(token));
        assert_eq!(code, 200, "{token}");
        assert_eq!(events(r).last().unwrap()["type"], "RUN_FINISHED");
    }
    let args = std::fs::read_to_string(&argv).unwrap();
    let environment = std::fs::read_to_string(&env).unwrap();
    assert!(environment.contains("FAKE_REPLAY="), "{environment}");
    assert!(!args.contains("fr0m-env"), "{args}");
    assert!(!environment.contains("fr0m-env"), "{environment}");
    // An empty token is no token.
    let empty = tmp("token-empty");
    private_file(&empty, "\n");
    let out = Command::new(BIN)
        .args(["serve", "claude", "--token-file"])
        .arg(&empty)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

/// Writes `text` to `path`, readable and writable by its owner only.
fn private_file(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A token file others may read or write is refused at start, saying why,
/// as ssh refuses a loose key.
#[test]
fn a_token_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let file = tmp("token-loose");
    for mode in [0o644, 0o620, 0o604] {
        std::fs::write(&file, "l00se\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = Command::new(BIN)
            .args(["serve", "claude", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mode:o}: {stderr}");
        assert!(stderr.contains("others may read or write"), "{stderr}");
        assert!(stderr.contains("chmod 600"), "{stderr}");
    }
}

/// The token file a server keeps in `state`, as its start-up names it.
fn kept_token(state: &Path) -> String {
    let file = state.join("token");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    std::fs::read_to_string(file).unwrap().trim().to_owned()
}

/// Without a token given, the server makes one, keeps it (0600) in its
/// state directory, says where, and takes the same one after a restart.
#[test]
fn a_server_makes_a_token_by_default_and_keeps_it() {
    // `start_up_words`' own state directory.
    let state = tmp("words-state-gemini");
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let args = ["--state-dir", state.to_str().unwrap()];
    let said = start_up_words("gemini", &[], Path::new("/usr/bin:/bin"));
    assert!(
        said.contains(state.join("token").to_str().unwrap()),
        "{said}"
    );
    let token = kept_token(&state);
    assert_eq!(token.len(), 64, "{token}");
    assert!(!said.contains(&token), "the token is not printed: {said}");
    let server = common::serve_default("gemini", &args, &[], &[("FAKE_REPLAY", &recording)]);
    let req = body("t", "r", "Hello");
    let (code, mut r) = post(&server.addr, &req, None);
    assert_eq!(code, 401);
    // A front end that worked before is told what to send, and how to open.
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut r, &mut answer).unwrap();
    assert!(answer.contains("Authorization: Bearer"), "{answer}");
    assert!(answer.contains("--no-token"), "{answer}");
    let (code, r) = post(&server.addr, &req, Some(&token));
    assert_eq!(code, 200);
    assert_eq!(events(r).last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(kept_token(&state), token, "the same token after a restart");
}

/// Runs `args` as user `nobody` (uid 65534), or says why it cannot
/// (not root, or no setpriv): the skip is refused under AGUI_NO_SKIP=1.
fn as_nobody(test: &str, args: &[&str]) -> Option<std::process::Output> {
    // SAFETY: geteuid cannot fail.
    let why = if unsafe { libc::geteuid() } != 0 {
        "not run as root, so it cannot run a client as another user"
    } else if Command::new("setpriv").arg("--version").output().is_err() {
        "setpriv is not installed"
    } else {
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .args(args)
            .output()
            .unwrap();
        return Some(out);
    };
    assert!(
        std::env::var_os("AGUI_NO_SKIP").is_none_or(|v| v != "1"),
        "{test}: {why}; AGUI_NO_SKIP=1 refuses the skip"
    );
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
    None
}

/// Another local user can neither start a run on a server started with
/// no option (its client gets 401) nor read the token the server keeps.
#[test]
fn another_local_user_cannot_start_a_run() {
    let test = "another_local_user_cannot_start_a_run";
    let state = tmp("other-user-state");
    let _ = std::fs::remove_dir_all(&state);
    let args = ["--state-dir", state.to_str().unwrap()];
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let server = common::serve_default("gemini", &args, &[], &[("FAKE_REPLAY", &recording)]);
    let token_file = state.join("token");
    let Some(read) = as_nobody(test, &["cat", token_file.to_str().unwrap()]) else {
        return;
    };
    assert!(!read.status.success(), "nobody read the token");
    assert!(read.stdout.is_empty());
    let script = format!(
        "curl -s -o /dev/null -w '%{{http_code}}' http://{}/ -H 'Content-Type: application/json' \
         -H \"Authorization: Bearer $(cat {} 2>/dev/null)\" -d '{}'",
        server.addr,
        token_file.display(),
        body("t", "r", "Approve yourself")
    );
    let out = as_nobody(test, &["sh", "-c", &script]).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "401", "{out:?}");
    // The same request with the token (as its owner sends it) runs.
    let (code, _) = post(
        &server.addr,
        &body("t", "r", "Hello"),
        Some(&kept_token(&state)),
    );
    assert_eq!(code, 200);
}

/// A page from an origin not allowed sees only "Failed to fetch": the
/// server says on stderr, once per origin, which origin it refused and
/// how to allow it.
#[test]
fn a_refused_origin_is_named_on_stderr_once() {
    let log = tmp("origin-log");
    let mut child = Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["serve", "claude", "--listen", "127.0.0.1:0", "--no-token"])
        .arg("--state-dir")
        .arg(tmp("origin-state"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let addr = loop {
        let text = std::fs::read_to_string(&log).unwrap();
        if let Some(a) = text
            .split("http://")
            .nth(1)
            .and_then(|a| a.split('/').next())
        {
            break a.to_owned();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{text}");
        std::thread::sleep(Duration::from_millis(20));
    };
    for _ in 0..3 {
        let answer = raw(
            &addr,
            &request(&addr, "Origin: http://evil.example:3000\r\n", "{}"),
        );
        assert_eq!(status(&answer), 403);
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: the server's own process id, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let named: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("http://evil.example:3000"))
        .collect();
    assert_eq!(named.len(), 1, "{text}");
    assert!(named[0].contains("--allow-origin"), "{text}");
}

/// An upgrade that replaces the program on disk while it serves (a new
/// file renamed over it, as package managers do) leaves the server able to
/// start its runs.
#[test]
fn a_server_whose_program_is_replaced_still_runs() {
    let dir = tmp("replaced-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("agui-translate");
    std::fs::copy(BIN, &copy).unwrap();
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let mut child = Command::new(&copy)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("FAKE_REPLAY", &recording)
        .args(["serve", "gemini", "--listen", "127.0.0.1:0", "--no-token"])
        .arg("--state-dir")
        .arg(tmp("replaced-state"))
        .args(["--", "--cli"])
        .arg(root().join("tests/fake/cli"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .trim()
        .trim_end_matches('/')
        .to_owned();
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let new = dir.join("agui-translate.new");
    std::fs::copy(BIN, &new).unwrap();
    std::fs::rename(&new, &copy).unwrap();
    let (code, r) = post(&addr, &body("t", "r", "Hello"), None);
    assert_eq!(code, 200);
    assert_eq!(events(r).last().unwrap()["type"], "RUN_FINISHED");
    // SAFETY: the server's own process id, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
}

/// A state directory that others may write in is refused at start, saying
/// why: whoever can put files there chooses the sessions runs resume.
#[test]
fn a_state_directory_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let state = tmp("loose-state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o775)).unwrap();
    let out = Command::new(BIN)
        .args(["serve", "claude", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("others may write"), "{stderr}");
    assert!(!state.join("token").exists());
}

/// A thread's state directory for `cli`, with `name` in it (thread `t`'s
/// files are `74.json` and `74.plan.json`).
fn state_with(name: &str, cli: &str) -> PathBuf {
    let state = tmp(name);
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(state.join(cli)).unwrap();
    state
}

/// A FIFO planted where a thread's plan is kept neither hangs its run nor
/// the server: the run ends as usual.
#[test]
fn a_fifo_for_a_plan_file_does_not_hang_the_run() {
    let state = state_with("fifo-state", "gemini");
    let fifo = state.join("gemini/74.plan.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let server = serve(
        "gemini",
        &["--state-dir", state.to_str().unwrap()],
        &[("FAKE_REPLAY", &recording)],
    );
    let (code, r) = post(&server.addr, &body("t", "r", "Hello"), None);
    assert_eq!(code, 200);
    r.get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(events(r).last().unwrap()["type"], "RUN_FINISHED");
}

/// A session id read back from the state directory that a CLI would take
/// for an option (`-rf`) is not resumed: the thread starts a new session,
/// and its run ends as usual (not in an empty response).
#[test]
fn an_option_like_session_id_in_the_state_is_ignored() {
    let state = state_with("dash-state", "gemini");
    std::fs::write(
        state.join("gemini/74.json"),
        r#"{"thread":"t","session":"-rf"}"#,
    )
    .unwrap();
    let argv = tmp("dash-argv");
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let server = serve(
        "gemini",
        &["--state-dir", state.to_str().unwrap()],
        &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)],
    );
    let (code, r) = post(&server.addr, &body("t", "r", "Hello"), None);
    assert_eq!(code, 200);
    let run = events(r);
    assert_eq!(run.first().map(|e| &e["type"]), Some(&"RUN_STARTED".into()));
    assert_eq!(run.last().unwrap()["type"], "RUN_FINISHED");
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(!args.contains("-rf"), "{args}");
}

#[test]
fn ids_are_bounded_and_any_printable_id_works() {
    let argv = tmp("ids-argv");
    let server = logging_server(&[], &argv);
    let addr = &server.addr;
    let long = "t".repeat(2048);
    for (thread, run) in [
        (long.as_str(), "r"),
        ("t", long.as_str()),
        ("a\u{0}b", "r"),
        ("t", "r\nx"),
        ("", "r"),
    ] {
        let a = raw(addr, &request(addr, JSON, &body(thread, run, "Hello")));
        assert_eq!(status(&a), 400, "{thread:?} {run:?}: {a}");
    }
    assert!(!argv.exists(), "a bad id started the CLI");
    // An id that looks like an option is an id all the same.
    let (code, r) = post(addr, &body("-x", "--run", "Hello"), None);
    assert_eq!(code, 200);
    let evs = events(r);
    assert_eq!(evs[0]["type"], "RUN_STARTED", "{evs:?}");
    assert_eq!(
        (&evs[0]["threadId"], &evs[0]["runId"]),
        (&"-x".into(), &"--run".into())
    );
}

/// The peak resident memory of a process, in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    kb * 1024
}

const MIB: u64 = 1024 * 1024;

#[test]
fn an_announced_body_costs_nothing_until_it_comes() {
    let server = serve("gemini", &[], &[]);
    let addr = &server.addr;
    let before = peak_memory(server.child.id());
    let conns: Vec<TcpStream> = (0..32)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            write!(
                c,
                "POST / HTTP/1.1\r\nHost: {addr}\r\n{JSON}Content-Length: 16777216\r\n\r\n{{"
            )
            .unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let grew = peak_memory(server.child.id()) - before;
    drop(conns);
    assert!(
        grew < 32 * MIB,
        "32 announced bodies of 16 MiB took {} MiB",
        grew / MIB
    );
}

#[test]
fn a_large_body_costs_a_small_multiple_of_its_size() {
    let server = serve(
        "gemini",
        &[],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/gemini/0.61.0/text.jsonl"),
        )],
    );
    let addr = &server.addr;
    let before = peak_memory(server.child.id());
    // Nearly 16 MiB of text parts without text behind one with text.
    let head = r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"text","text":"Hello"}"#;
    let tail = "]}]}";
    let filler = r#",{"type":"text"}"#;
    let parts = (16 * MIB as usize - head.len() - tail.len()) / filler.len();
    let input = format!("{head}{}{tail}", filler.repeat(parts));
    let a = raw(addr, &request(addr, JSON, &input));
    assert_eq!(status(&a), 200, "{}", &a[..a.len().min(500)]);
    assert!(a.contains("\"type\":\"RUN_FINISHED\""));
    let grew = peak_memory(server.child.id()) - before;
    assert!(grew < 64 * MIB, "a 16 MiB body took {} MiB", grew / MIB);
}

/// The process ids of the children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return found;
    };
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    found
}

#[test]
fn slow_clients_hold_no_run_slot() {
    let server = serve(
        "gemini",
        &[],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/gemini/0.61.0/text.jsonl"),
        )],
    );
    let addr = &server.addr;
    // 40 clients that have begun their requests and send no more.
    let slow: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            write!(c, "POST / HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.write_all(&request(addr, JSON, &body("t", "r", "Hello")))
        .unwrap();
    let mut first = [0u8; 12];
    let got = conn.read_exact(&mut first);
    let took = start.elapsed();
    assert!(got.is_ok(), "no answer while slow clients wait");
    assert_eq!(&first, b"HTTP/1.1 200");
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    // The slow clients' deadline passes: they are answered 408.
    let mut c = slow.into_iter().next().unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut text = String::new();
    let _ = c.read_to_string(&mut text);
    assert!(text.starts_with("HTTP/1.1 408 "), "{text}");
}

#[test]
fn half_sent_connections_cannot_lock_out_a_client() {
    let server = serve(
        "gemini",
        &["--token", "s3cret"],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/gemini/0.61.0/text.jsonl"),
        )],
    );
    let addr = server.addr.clone();
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // 1,000 connections that begin a request and send no more, at most
    // 400 held at once (the oldest dropped), sent in waves as an attacker
    // who reconnects does.
    let attacker = {
        let (addr, opened, stop) = (addr.clone(), opened.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut held = std::collections::VecDeque::new();
            for _ in 0..1000 {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(mut c) = TcpStream::connect(&addr) else {
                    continue;
                };
                let _ = c.write_all(b"POST / HTTP/1.1\r\n");
                held.push_back(c);
                if held.len() > 400 {
                    held.pop_front();
                }
                opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            held
        })
    };
    let start = Instant::now();
    while opened.load(std::sync::atomic::Ordering::SeqCst) < 300 {
        assert!(start.elapsed() < Duration::from_secs(30), "cannot connect");
        std::thread::sleep(Duration::from_millis(10));
    }
    let auth = "Authorization: Bearer s3cret\r\nContent-Type: application/json\r\n";
    for i in 0..3 {
        let start = Instant::now();
        let mut conn = TcpStream::connect(&addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        conn.write_all(&request(&addr, auth, &body(&format!("t{i}"), "r", "Hello")))
            .unwrap();
        let mut first = [0u8; 12];
        let got = conn.read_exact(&mut first);
        let took = start.elapsed();
        assert!(got.is_ok(), "no answer while half-sent connections wait");
        assert_eq!(
            String::from_utf8_lossy(&first),
            "HTTP/1.1 200",
            "request {i}, with {} half-sent connections opened",
            opened.load(std::sync::atomic::Ordering::SeqCst)
        );
        assert!(took < Duration::from_secs(2), "answered after {took:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    drop(attacker.join().unwrap());
}

#[test]
fn a_full_server_answers_503_with_retry_after() {
    let server = hanging_server(&tmp("full-pid"));
    let addr = &server.addr;
    let mut runs = Vec::new();
    for i in 0..32 {
        let (code, mut r) = post(addr, &body(&format!("t{i}"), "r", "Hello"), None);
        assert_eq!(code, 200);
        until(&mut r, "RUN_STARTED");
        runs.push(r);
    }
    let a = raw(addr, &request(addr, JSON, &body("one-more", "r", "Hello")));
    assert_eq!(status(&a), 503, "{a}");
    assert!(header(&a, "retry-after").is_some(), "{a}");
    drop(runs);
}

/// A recording of `bytes` or more: the text recording with its assistant
/// delta repeated.
fn big_recording(bytes: usize) -> PathBuf {
    let path = tmp("big.jsonl");
    let text = std::fs::read_to_string(root().join("testdata/gemini/0.61.0/text.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let delta = lines.iter().find(|l| l.contains("\"delta\":true")).unwrap();
    let mut out = format!("{}\n", lines[0]);
    while out.len() < bytes {
        out.push_str(delta);
        out.push('\n');
    }
    out.push_str(lines.last().unwrap());
    out.push('\n');
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn a_client_that_never_reads_its_stream_ends_its_run() {
    let recording = big_recording(32 * MIB as usize);
    let server = serve("gemini", &[], &[("FAKE_REPLAY", &recording)]);
    let pid = server.child.id();
    let (code, r) = post(&server.addr, &body("t", "r", "Hello"), None);
    assert_eq!(code, 200);
    // The client keeps its connection and reads nothing more.
    let start = Instant::now();
    while children(pid).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10), "no run started");
        std::thread::sleep(Duration::from_millis(20));
    }
    while !children(pid).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(45),
            "the run of a client that reads nothing goes on"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(r);
    let _ = std::fs::remove_file(recording);
}

#[test]
fn a_stopped_server_exits_whatever_its_clients_do() {
    let mut server = serve("gemini", &[], &[]);
    let addr = server.addr.clone();
    let mut clients: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    for c in &mut clients[..4] {
        write!(c, "POST / HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    // SAFETY: the server's own process id, not yet waited for.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert_eq!(status.code(), Some(0));
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the server outlived SIGTERM by 5 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(clients);
}

#[test]
fn the_session_id_passes_through_no_shared_file() {
    let dir = tmp("shared-tmp");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let argv = tmp("session-argv");
    // A server whose runs report a session, and one whose runs report none.
    let reporting = serve(
        "gemini",
        &[],
        &[
            (
                "FAKE_REPLAY",
                &root().join("testdata/gemini/0.61.0/resume.jsonl"),
            ),
            ("TMPDIR", &dir),
        ],
    );
    let silent = serve(
        "gemini",
        &[],
        &[
            ("FAKE_REPLAY", Path::new("/dev/null")),
            ("FAKE_ARGV", &argv),
            ("TMPDIR", &dir),
        ],
    );
    // What another user of the temporary directory could put there.
    let victim = tmp("victim");
    std::fs::write(&victim, "precious").unwrap();
    for n in 0..4 {
        let name = format!("agui-translate-serve-{}-{n}", reporting.child.id());
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        let name = format!("agui-translate-serve-{}-{n}", silent.child.id());
        std::fs::write(dir.join(name), "planted").unwrap();
    }
    let planted: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let (code, r) = post(&reporting.addr, &body("a", "r1", "Hello"), None);
    assert_eq!(code, 200);
    events(r);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    for run in ["r1", "r2"] {
        let (code, r) = post(&silent.addr, &body("b", run, "Hello"), None);
        assert_eq!(code, 200);
        events(r);
    }
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(!args.contains("planted"), "{args}");
    // What the servers made there is theirs alone.
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        if !planted.contains(&entry.path()) {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            assert!(meta.is_dir(), "{:?}", entry.path());
            assert_eq!(
                meta.permissions().mode() & 0o777,
                0o700,
                "{:?}",
                entry.path()
            );
        }
    }
}

/// A request without a `runId` gets a fresh one (a UUID v7), not one
/// derived from the CLI's records: two such requests whose CLI writes the
/// same records get runs of their own.
#[test]
fn a_request_without_a_run_id_gets_a_fresh_one() {
    let server = serve(
        "gemini",
        &[],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/gemini/0.61.0/b_shell.jsonl"),
        )],
    );
    let run_id = |thread: &str| {
        let request = serde_json::json!({
            "threadId": thread,
            "messages": [{"id": "m", "role": "user", "content": "Run a command"}],
        });
        let (status, r) = post(&server.addr, &request.to_string(), None);
        assert_eq!(status, 200);
        let evs = events(r);
        assert_eq!(evs[0]["type"], "RUN_STARTED");
        assert_eq!(evs[0]["threadId"], thread);
        evs[0]["runId"].as_str().unwrap().to_owned()
    };
    let (a, b) = (run_id("t1"), run_id("t2"));
    assert_ne!(a, b);
    for id in [&a, &b] {
        assert_eq!(id.len(), 36, "{id}");
        assert_eq!(&id[14..15], "7", "{id}");
    }
}

/// A port that is taken: exit status 2, as `serve --help` and the README
/// say.
#[test]
fn a_port_that_cannot_be_bound_is_exit_status_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(BIN)
        .args(["serve", "claude", "--listen", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    let two = agui_translate::cli::EXIT_STATUSES
        .iter()
        .find(|s| s.status == "2")
        .unwrap();
    assert!(two.serve.contains("the address could not be bound"));
}

/// Two messages on one thread of `serve CLI`, the stand-in replaying
/// `recording` for both: the first run's events (which end in
/// RUN_FINISHED) and the CLI's arguments of each run (the second run named
/// `<thread>2`).
fn two_turns(cli: &str, recording: &str, thread: &str) -> (Vec<serde_json::Value>, String, String) {
    let argv = tmp(&format!("{cli}-resume-argv"));
    let server = serve(
        cli,
        &[],
        &[
            ("FAKE_REPLAY", &root().join("testdata").join(recording)),
            ("FAKE_ARGV", &argv),
        ],
    );
    let (one, two) = (format!("{thread}1"), format!("{thread}2"));
    let (code, r) = post(&server.addr, &body(thread, &one, "Remember teal."), None);
    assert_eq!(code, 200);
    let first = events(r);
    assert_eq!(first.last().unwrap()["type"], "RUN_FINISHED");
    let first_args = std::fs::read_to_string(&argv).unwrap();
    let (code, r) = post(&server.addr, &body(thread, &two, "Which word?"), None);
    assert_eq!(code, 200);
    assert_eq!(events(r)[0]["runId"], two.as_str());
    (first, first_args, std::fs::read_to_string(&argv).unwrap())
}

/// `serve qwen`: a thread's first message starts Qwen Code, its second
/// resumes the session the first reported (`--resume`), and the stream is
/// valid AG-UI.
#[test]
fn serve_qwen_resumes_its_session() {
    let (first, args, resumed) = two_turns("qwen", "qwen/0.24.4/resume.jsonl", "q");
    assert_eq!(first[0]["type"], "RUN_STARTED");
    assert!(first.iter().any(|e| e["type"] == "TEXT_MESSAGE_CONTENT"));
    assert!(args.contains("--output-format\nstream-json\n"), "{args}");
    assert!(!args.contains("--resume"), "{args}");
    assert!(
        resumed.contains("--resume\n94e53f91-aebc-47d9-8cfa-68a277ff9bac\n"),
        "{resumed}"
    );
}

/// `serve copilot`: Copilot CLI names its session only in its last line;
/// a thread's second message resumes that session (`--resume=ID`).
#[test]
fn serve_copilot_resumes_its_session() {
    let (_, args, resumed) = two_turns("copilot", "copilot/1.0.102/resume.jsonl", "c");
    assert!(!args.contains("--resume"), "{args}");
    assert!(
        resumed.contains("--resume=5164e585-8112-4b29-acd4-bab2eebfbce4\n"),
        "{resumed}"
    );
}

/// `serve opencode`: every record names OpenCode's session; a thread's
/// second message continues it (`--session=ID`).
#[test]
fn serve_opencode_resumes_its_session() {
    let (first, args, resumed) = two_turns("opencode", "opencode/1.18.33/resume.jsonl", "o");
    assert!(first.iter().any(|e| e["type"] == "TEXT_MESSAGE_CONTENT"));
    assert!(args.starts_with("run\n--format\njson\n"), "{args}");
    assert!(!args.contains("--session"), "{args}");
    assert!(
        resumed.contains("--session=ses_dea310b09ffe4eZyWn5gbn4qar\n"),
        "{resumed}"
    );
    assert!(resumed.ends_with("\nWhich word?\n"), "{resumed}");
}

#[test]
fn a_stream_tells_a_proxy_not_to_buffer_it() {
    let server = serve(
        "claude",
        &[],
        &[(
            "FAKE_REPLAY",
            &root().join("testdata/claude/2.1.330/text-plain.jsonl"),
        )],
    );
    let answer = raw(
        &server.addr,
        &request(&server.addr, JSON, &body("t", "r", "Hello")),
    );
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(header(&answer, "x-accel-buffering"), Some("no"), "{answer}");
    assert!(answer.contains("RUN_FINISHED"), "{answer}");
}

/// `serve CLI ARGS`, its stderr read until it stops (SIGTERM after the
/// address is printed).
fn start_up_words(cli: &str, args: &[&str], path: &Path) -> String {
    let mut child = Command::new(BIN)
        .env_clear()
        .env("PATH", path)
        .args(["serve", cli, "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(tmp(&format!("words-state-{cli}")))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.contains("serving"), "{first}");
    // Whatever start-up says is said before a request can be served.
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: the server's own process id, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0), "{rest}");
    first + &rest
}

#[test]
fn a_missing_cli_is_named_at_start_and_the_server_serves() {
    let empty = tmp("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let said = start_up_words("claude", &[], &empty);
    let warnings: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{said}");
    for word in [
        "claude",
        "npm install -g @anthropic-ai/claude-code",
        "cli_missing",
    ] {
        assert!(warnings[0].contains(word), "{word}: {said}");
    }
    let gone = tmp("no-such-cli");
    let said = start_up_words("gemini", &["--", "--cli", gone.to_str().unwrap()], &empty);
    assert!(
        said.lines()
            .any(|l| l.contains("warning") && l.contains(gone.to_str().unwrap())),
        "{said}"
    );
    let fake = root().join("tests/fake/cli");
    let said = start_up_words("claude", &["--", "--cli", fake.to_str().unwrap()], &empty);
    assert!(!said.contains("warning"), "{said}");
}

/// Whether process `pid` has begun to run this program: Rust's start-up
/// catches SIGSEGV (to report a stack overflow) before `main`, and a
/// handler does not survive `exec`.
fn has_started(pid: u32) -> bool {
    // The program's first line holds the stop signals (or, later, a
    // handler catches them): from then on a SIGTERM is its own to act on.
    // The runtime's SIGSEGV guard is installed earlier, before `main`, when
    // a SIGTERM still ends the process by the default action.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .unwrap_or(0)
    };
    let term = 1 << (libc::SIGTERM - 1);
    (mask("SigBlk:") | mask("SigCgt:")) & term != 0
}

/// SIGTERM at any moment of a server's first 60 ms, while it reads a large
/// state directory, stops it as documented: exit status 0 within seconds.
#[test]
fn a_signal_while_starting_stops_the_server() {
    let state = tmp("slow-start-state");
    let dir = state.join("claude");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..6000 {
        std::fs::write(dir.join(format!("junk-{i}.json")), "{}").unwrap();
    }
    for i in 0..20u64 {
        let mut child = Command::new(BIN)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["serve", "claude", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(&state)
            .args(["--", "--cli"])
            .arg(root().join("tests/fake/cli"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The moments are counted from when the program's first line runs:
        // before it a SIGTERM ends the process (the default action) and no
        // code of its own can be asked to do otherwise.
        while !has_started(child.id()) {
            std::thread::sleep(Duration::from_micros(200));
        }
        let after = Duration::from_millis(i * 3);
        std::thread::sleep(after);
        // SAFETY: the server's own process id, not yet waited for.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(8);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("SIGTERM after {after:?}: the server still serves");
        };
        assert_eq!(status.code(), Some(0), "SIGTERM after {after:?}: {status}");
    }
}

/// A request whose `forwardedProps` are `props`.
fn body_with(thread: &str, run: &str, props: serde_json::Value) -> String {
    let mut b: serde_json::Value = serde_json::from_str(&body(thread, run, "Hello")).unwrap();
    b["forwardedProps"] = props;
    b.to_string()
}

#[test]
fn a_page_chooses_the_model_and_effort_of_a_run() {
    let argv = tmp("choices-argv");
    let _ = std::fs::remove_file(&argv);
    let recording = root().join("testdata/codex/0.169.0/text.jsonl");
    let server = serve(
        "codex",
        &[],
        &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)],
    );
    // CopilotKit's own keys are left alone and reach no CLI.
    let props = serde_json::json!({
        "model": "gpt-5-codex", "effort": "high",
        "threadMetadata": {"title": "--yolo"}, "nodeName": "agent",
        "properties": {"model": "--other"},
    });
    let (code, r) = post(&server.addr, &body_with("t-choice", "r1", props), None);
    assert_eq!(code, 200);
    let run = events(r);
    assert_eq!(run.last().unwrap()["type"], "RUN_FINISHED");
    // What the run used is published in the page's state.
    let state = run.iter().find(|e| e["type"] == "STATE_SNAPSHOT").unwrap();
    let info = &state["snapshot"]["agui-translate"];
    assert_eq!(info["model"], "gpt-5-codex", "{state}");
    assert_eq!(info["effort"], "high", "{state}");
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(args.contains("--model\ngpt-5-codex\n"), "{args}");
    assert!(args.contains("-c\nmodel_reasoning_effort=high\n"), "{args}");
    assert!(
        !args.contains("--yolo") && !args.contains("--other"),
        "{args}"
    );
    // Claude Code takes an effort as its own `--effort`.
    let claude_recording = root().join("testdata/claude/1.0.128/text.jsonl");
    let claude = serve(
        "claude",
        &[],
        &[("FAKE_REPLAY", &claude_recording), ("FAKE_ARGV", &argv)],
    );
    let props = serde_json::json!({"effort": "max"});
    let (code, r) = post(&claude.addr, &body_with("t-effort", "r1", props), None);
    assert_eq!(code, 200);
    events(r);
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(args.contains("--effort\nmax\n"), "{args}");
    // Without choices, none.
    let (_, r) = post(&server.addr, &body("t-plain", "r1", "Hello"), None);
    let run = events(r);
    let state = run.iter().find(|e| e["type"] == "STATE_SNAPSHOT").unwrap();
    assert_eq!(
        state["snapshot"]["agui-translate"]["effort"],
        serde_json::Value::Null
    );
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(
        !args.contains("--model") && !args.contains("effort"),
        "{args}"
    );
}

#[test]
fn a_hostile_or_unknown_choice_is_refused_and_starts_nothing() {
    let argv = tmp("choices-refused-argv");
    let _ = std::fs::remove_file(&argv);
    let recording = root().join("testdata/codex/0.169.0/text.jsonl");
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)];
    let codex = serve("codex", &[], env);
    let claude = serve("claude", &[], env);
    let gemini = serve("gemini", &[], env);
    let qwen = serve("qwen", &[], env);
    let opencode = serve("opencode", &[], env);
    let long = "m".repeat(257);
    for (server, props, says) in [
        (
            &codex,
            serde_json::json!({"model": "--dangerously-bypass-approvals-and-sandbox"}),
            "begins with '-'",
        ),
        (
            &codex,
            serde_json::json!({"model": "gpt\n-5"}),
            "control character",
        ),
        (&codex, serde_json::json!({"model": long}), "too long"),
        (
            &codex,
            serde_json::json!({"model": ["gpt-5"]}),
            "must be a string",
        ),
        (
            &codex,
            serde_json::json!({"effort": "extreme"}),
            "is not one of",
        ),
        (
            &codex,
            serde_json::json!({"effort": "high\n-c x=1"}),
            "is not one of",
        ),
        (
            &gemini,
            serde_json::json!({"effort": "high"}),
            "Gemini CLI has no choice of a reasoning effort",
        ),
        (
            &qwen,
            serde_json::json!({"effort": "high"}),
            "Qwen Code has no choice of a reasoning effort",
        ),
        (
            &opencode,
            serde_json::json!({"effort": "--auto"}),
            "is not a level's name",
        ),
        (
            &claude,
            serde_json::json!({"effort": "minimal"}),
            "is not one of low, medium, high, xhigh, max",
        ),
    ] {
        let (code, mut r) = post(&server.addr, &body_with("t-bad", "r1", props.clone()), None);
        let mut answer = String::new();
        r.read_to_string(&mut answer).unwrap();
        assert_eq!(code, 400, "{props}: {answer}");
        let error: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert!(
            error["error"].as_str().unwrap().contains(says),
            "{props}: {answer}"
        );
    }
    assert!(!argv.exists(), "a refused choice started a CLI");
    // The thread is free again: a good request runs.
    let (code, r) = post(
        &codex.addr,
        &body_with("t-bad", "r2", serde_json::json!({"model": "o3"})),
        None,
    );
    assert_eq!(code, 200);
    events(r);
}

#[test]
fn a_model_from_the_page_reaches_each_cli_as_its_own_option() {
    for (cli, recording, want) in [
        ("claude", "claude/1.0.128", "--model\nsonnet-x\n"),
        ("gemini", "gemini/0.11.3", "--model\nsonnet-x\n"),
        ("qwen", "qwen/0.24.4", "--model\nsonnet-x\n"),
        ("copilot", "copilot/1.0.102", "--model=sonnet-x\n"),
        ("opencode", "opencode/1.18.33", "--model=sonnet-x\n"),
    ] {
        let argv = tmp(&format!("model-{cli}-argv"));
        let _ = std::fs::remove_file(&argv);
        let recording = root().join(format!("testdata/{recording}/text.jsonl"));
        let server = serve(
            cli,
            &[],
            &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)],
        );
        let props = serde_json::json!({"model": "sonnet-x", "nodeName": "n"});
        let (code, r) = post(&server.addr, &body_with("t-model", "r1", props), None);
        assert_eq!(code, 200, "{cli}");
        events(r);
        let args = std::fs::read_to_string(&argv).unwrap();
        assert!(args.contains(want), "{cli}: {args}");
    }
}

#[test]
fn an_effort_from_the_page_reaches_each_cli_that_has_one_as_its_own_option() {
    for (cli, recording, want) in [
        (
            "claude",
            "claude/1.0.128",
            "--effort
high
",
        ),
        (
            "codex",
            "codex/0.169.0",
            "-c
model_reasoning_effort=high
",
        ),
        (
            "copilot",
            "copilot/1.0.102",
            "--reasoning-effort=high
",
        ),
        // Its JSON mode (the stand-in is no 1.18.33): the model's variant.
        (
            "opencode",
            "opencode/1.18.33",
            "--variant=high
",
        ),
    ] {
        let argv = tmp(&format!("effort-{cli}-argv"));
        let _ = std::fs::remove_file(&argv);
        let recording = root().join(format!("testdata/{recording}/text.jsonl"));
        let server = serve(
            cli,
            &[],
            &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)],
        );
        let props = serde_json::json!({"effort": "high", "nodeName": "n"});
        let (code, r) = post(&server.addr, &body_with("t-effort", "r1", props), None);
        assert_eq!(code, 200, "{cli}");
        events(r);
        let args = std::fs::read_to_string(&argv).unwrap();
        assert!(args.contains(want), "{cli}: {args}");
    }
}

/// A request that asks for its thread: no new user message.
fn ask_thread(addr: &str, thread: &str, run: &str) -> Vec<serde_json::Value> {
    let b = serde_json::json!({
        "threadId": thread, "runId": run, "protocolVersion": "1.0.0",
        "state": {}, "tools": [], "context": [], "forwardedProps": {}, "messages": [],
    });
    let (code, r) = post(addr, &b.to_string(), None);
    assert_eq!(code, 200);
    events(r)
}

#[test]
fn a_thread_s_history_comes_back_without_starting_a_cli() {
    let argv = tmp("history-argv");
    let state = tmp("history-state");
    let _ = std::fs::remove_dir_all(&state);
    let state_arg = state.to_str().unwrap();
    let recording = root().join("testdata/gemini/0.61.0/resume.jsonl");
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)];
    let server = serve("gemini", &["--state-dir", state_arg], env);
    let mut last_info = serde_json::Value::Null;
    for (run, prompt) in [("h1", "Remember teal."), ("h2", "Which word?")] {
        let (code, r) = post(&server.addr, &body("thread-h", run, prompt), None);
        assert_eq!(code, 200);
        let run = events(r);
        // What the run used, with its usage, just before RUN_FINISHED.
        last_info = run[run.len() - 2]["delta"][0]["value"].clone();
    }
    assert!(
        !last_info["usage"].as_array().unwrap().is_empty(),
        "{last_info}"
    );
    let check_types = |events: &[serde_json::Value]| {
        let types: Vec<_> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "RUN_STARTED",
                "MESSAGES_SNAPSHOT",
                "STATE_SNAPSHOT",
                "RUN_FINISHED"
            ]
        );
    };
    let check = |events: &[serde_json::Value]| {
        check_types(events);
        // What the thread's last run used, as that run published it.
        assert_eq!(
            events[2]["snapshot"],
            serde_json::json!({ "agui-translate": last_info })
        );
        let messages = events[1]["messages"].as_array().unwrap();
        let users: Vec<_> = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| &m["content"])
            .collect();
        assert_eq!(users, ["Remember teal.", "Which word?"], "{messages:?}");
        let ids: Vec<_> = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| &m["id"])
            .collect();
        assert_eq!(ids, ["h1-m", "h2-m"], "the page's own message ids");
        assert!(
            messages.iter().filter(|m| m["role"] == "assistant").count() >= 2,
            "{messages:?}"
        );
    };
    let _ = std::fs::remove_file(&argv);
    check(&ask_thread(&server.addr, "thread-h", "h3"));
    assert!(!argv.exists(), "asking for the thread started a CLI");
    drop(server);
    let server = serve("gemini", &["--state-dir", state_arg], env);
    check(&ask_thread(&server.addr, "thread-h", "h4"));
    // A page that lacks the earlier messages gets them before its new one.
    let (_, r) = post(&server.addr, &body("thread-h", "h5", "Again?"), None);
    let again = events(r);
    let types: Vec<_> = again
        .iter()
        .take(3)
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["RUN_STARTED", "MESSAGES_SNAPSHOT", "MESSAGES_SNAPSHOT"]
    );
    let with_new = again[2]["messages"].as_array().unwrap();
    assert_eq!(
        with_new.len(),
        again[1]["messages"].as_array().unwrap().len() + 1
    );
    assert_eq!(with_new.last().unwrap()["id"], "h5-m");
    // One that holds them gets none.
    let mut holding: serde_json::Value =
        serde_json::from_str(&body("thread-h", "h6", "More?")).unwrap();
    holding["messages"] = serde_json::json!([
        {"id": "h5-m", "role": "user", "content": "Again?"},
        {"id": "h6-m", "role": "user", "content": "More?"},
    ]);
    let (_, r) = post(&server.addr, &holding.to_string(), None);
    let more = events(r);
    assert!(
        more.iter().all(|e| e["type"] != "MESSAGES_SNAPSHOT"),
        "{more:?}"
    );
    // A page that sends only what the server has asks for the thread: no
    // run of an old message again.
    let _ = std::fs::remove_file(&argv);
    holding["runId"] = "h7".into();
    let (_, r) = post(&server.addr, &holding.to_string(), None);
    check_types(&events(r));
    assert!(!argv.exists(), "an old message started a CLI again");
    // The same id with other words is a new message (a client that reuses
    // its ids), and the page's context is not the user's words.
    holding["runId"] = "h8".into();
    holding["messages"] = serde_json::json!([
        {"id": "h6-m", "role": "user", "content": "Other words?"},
    ]);
    holding["context"] = serde_json::json!([{"description": "Page", "value": "settings"}]);
    let (_, r) = post(&server.addr, &holding.to_string(), None);
    assert_eq!(events(r).last().unwrap()["type"], "RUN_FINISHED");
    assert!(argv.exists(), "a new message under an old id did not run");
    let back = ask_thread(&server.addr, "thread-h", "h9");
    let last_user = back[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(last_user["content"], "Other words?", "{last_user}");
    // A thread the server does not know, and no message: 400 as before.
    let empty = serde_json::json!({"threadId": "unknown", "messages": []}).to_string();
    assert_eq!(post(&server.addr, &empty, None).0, 400);
    use std::os::unix::fs::PermissionsExt;
    let kept = std::fs::read_dir(state.join("gemini"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".history.json"))
        .unwrap();
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// The events of a whole SSE response, each with its `id:`.
fn events_with_ids(mut r: BufReader<TcpStream>) -> Vec<(String, serde_json::Value)> {
    let mut text = String::new();
    r.read_to_string(&mut text).unwrap();
    let mut out = Vec::new();
    let mut id = String::new();
    for line in text.lines() {
        if let Some(i) = line.strip_prefix("id: ") {
            id = i.to_owned();
        } else if let Some(d) = line.strip_prefix("data: ") {
            out.push((std::mem::take(&mut id), serde_json::from_str(d).unwrap()));
        }
    }
    out
}

/// A request that asks for its thread, with `headers`.
fn rejoin(addr: &str, thread: &str, headers: &str) -> (u16, BufReader<TcpStream>) {
    let b = serde_json::json!({
        "threadId": thread, "runId": "rejoin", "protocolVersion": "1.0.0",
        "state": {}, "tools": [], "context": [], "forwardedProps": {}, "messages": [],
    })
    .to_string();
    post_with(addr, &b, headers)
}

#[test]
fn readers_rejoin_a_run_still_going() {
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let gate = tmp("rejoin-gate");
    let _ = std::fs::remove_file(&gate);
    let server = serve(
        "gemini",
        &[],
        &[
            ("FAKE_REPLAY", &recording),
            ("FAKE_LINES", Path::new("4")),
            ("FAKE_GATE", &gate),
        ],
    );
    let (code, mut own) = post(&server.addr, &body("tj", "r1", "Hello"), None);
    assert_eq!(code, 200);
    // The run has said part of its text, and waits.
    until(&mut own, "TEXT_MESSAGE_CONTENT");
    let (code, joined) = rejoin(&server.addr, "tj", "");
    assert_eq!(code, 200);
    let (code, second) = rejoin(&server.addr, "tj", "");
    assert_eq!(code, 200);
    let (code, later) = rejoin(&server.addr, "tj", "Last-Event-ID: r1:2\r\n");
    assert_eq!(code, 200);
    // One that never reads stalls no one.
    let (code, stalled) = rejoin(&server.addr, "tj", "");
    assert_eq!(code, 200);
    // A new message while the run goes is still refused.
    let (code, _) = post(&server.addr, &body("tj", "r2", "Again"), None);
    assert_eq!(code, 409);
    // The request that started the run, sent again, rejoins it.
    let (code, again) = post(&server.addr, &body("tj", "r1", "Hello"), None);
    assert_eq!(code, 200);
    std::fs::write(&gate, "").unwrap();
    let own_rest = events_with_ids(own);
    let joined = events_with_ids(joined);
    let types = |e: &[(String, serde_json::Value)]| {
        e.iter()
            .map(|(_, v)| v["type"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(joined[0].1["type"], "RUN_STARTED");
    assert_eq!(joined[0].0, "r1:1");
    assert_eq!(joined.last().unwrap().1["type"], "RUN_FINISHED");
    // The joiner got the whole run: the events the run's client read
    // before it joined, then the same as the client.
    assert!(joined.ends_with(&own_rest), "{joined:?}\n{own_rest:?}");
    let text: String = joined
        .iter()
        .filter(|(_, v)| v["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|(_, v)| v["delta"].as_str().unwrap())
        .collect();
    assert!(text.contains("Héllo wörld"), "{text}");
    assert_eq!(
        events_with_ids(second),
        joined,
        "two readers, the same events"
    );
    assert_eq!(events_with_ids(again), joined);
    let later = events_with_ids(later);
    assert_eq!(later[0].0, "r1:3", "only the events after r1:2");
    assert_eq!(later[..], joined[2..]);
    for (i, (id, _)) in joined.iter().enumerate() {
        assert_eq!(*id, format!("r1:{}", i + 1));
    }
    assert!(types(&joined).contains(&"TEXT_MESSAGE_END".to_owned()));
    drop(stalled);
}

/// Reads events, each with its `id:`, until one that `last` takes.
fn until_with_ids(
    r: &mut BufReader<TcpStream>,
    last: impl Fn(&serde_json::Value) -> bool,
) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let mut id = String::new();
    loop {
        let mut line = String::new();
        assert!(r.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(i) = line.trim_end().strip_prefix("id: ") {
            id = i.to_owned();
        } else if let Some(d) = line.trim_end().strip_prefix("data: ") {
            let ev: serde_json::Value = serde_json::from_str(d).unwrap();
            let done = last(&ev);
            out.push((std::mem::take(&mut id), ev));
            if done {
                return out;
            }
        }
    }
}

/// The assistant's text in `events`.
fn assistant_text(events: &[(String, serde_json::Value)]) -> String {
    let theirs: Vec<&serde_json::Value> = events
        .iter()
        .filter(|(_, v)| v["type"] == "TEXT_MESSAGE_START" && v["role"] == "assistant")
        .map(|(_, v)| &v["messageId"])
        .collect();
    events
        .iter()
        .filter(|(_, v)| v["type"] == "TEXT_MESSAGE_CONTENT" && theirs.contains(&&v["messageId"]))
        .map(|(_, v)| v["delta"].as_str().unwrap())
        .collect()
}

/// The `MESSAGES_SNAPSHOT` a request that asks for `thread` gets, once
/// the thread's run has been settled (until then it is busy).
fn thread_snapshot(addr: &str, thread: &str) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let (code, r) = rejoin(addr, thread, "");
        if code == 200 {
            let all = events(r);
            if let Some(s) = all.iter().find(|e| e["type"] == "MESSAGES_SNAPSHOT") {
                return s.clone();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the thread is not free"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_page_reloaded_mid_run_gets_the_rest_of_it() {
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    let said: String = common::values(&std::fs::read_to_string(&recording).unwrap())
        .iter()
        .filter(|r| r["delta"] == true)
        .map(|r| r["content"].as_str().unwrap().to_owned())
        .collect();
    let gate = tmp("reload-gate");
    let _ = std::fs::remove_file(&gate);
    let server = serve(
        "gemini",
        &["--rejoin-grace", "30s"],
        &[
            ("FAKE_REPLAY", &recording),
            ("FAKE_LINES", Path::new("4")),
            ("FAKE_GATE", &gate),
        ],
    );
    let (code, mut own) = post(&server.addr, &body("tr", "r1", "Hello"), None);
    assert_eq!(code, 200);
    // The page reads the start of the answer, then reloads: its
    // connection closes while the CLI is still writing.
    let seen = until_with_ids(&mut own, |e| {
        e["type"] == "TEXT_MESSAGE_CONTENT" && e["delta"].as_str().unwrap().contains("Héllo")
    });
    let last = seen.last().unwrap().0.clone();
    drop(own);
    std::thread::sleep(Duration::from_millis(500));
    // The reloaded page asks for the thread, saying where it was.
    let (code, back) = rejoin(&server.addr, "tr", &format!("Last-Event-ID: {last}\r\n"));
    assert_eq!(code, 200);
    std::fs::write(&gate, "").unwrap();
    let rest = events_with_ids(back);
    let n: u64 = last.rsplit_once(':').unwrap().1.parse().unwrap();
    assert_eq!(rest[0].0, format!("r1:{}", n + 1), "{rest:?}");
    let finished = |e: &[(String, serde_json::Value)]| {
        e.iter()
            .filter(|(_, v)| v["type"] == "RUN_FINISHED")
            .count()
    };
    assert_eq!(finished(&seen), 0);
    assert_eq!(finished(&rest), 1, "{rest:?}");
    let end = &rest.last().unwrap().1;
    assert_eq!(end["type"], "RUN_FINISHED", "{rest:?}");
    assert_eq!(end["runId"], "r1");
    assert!(
        end["outcome"].is_null() || end["outcome"]["type"] == "success",
        "{end}"
    );
    assert!(
        !rest.iter().any(|(_, v)| v["type"] == "RUN_ERROR"),
        "{rest:?}"
    );
    // Nothing lost, nothing twice.
    assert_eq!(assistant_text(&[seen, rest].concat()), said);
    // The whole run is in the thread's history.
    let snapshot = thread_snapshot(&server.addr, "tr");
    let answers: Vec<_> = snapshot["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 1, "{snapshot}");
    assert_eq!(answers[0]["content"], said.as_str());
}

#[test]
fn a_run_no_one_comes_back_to_ends_after_the_grace() {
    let pid_file = tmp("grace-pid");
    let _ = std::fs::remove_file(&pid_file);
    let server = hanging_after(&pid_file, "3", &["--rejoin-grace", "2s"]);
    let (code, mut own) = post(&server.addr, &body("tn", "r1", "Hello"), None);
    assert_eq!(code, 200);
    until(&mut own, "TEXT_MESSAGE_CONTENT");
    let pid = cli_pid(&pid_file);
    drop(own); // the page goes away while the CLI is quiet
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid), "the run ended before its grace");
    // A reader that comes back holds the run past the grace...
    let (code, mut reader) = rejoin(&server.addr, "tn", "");
    assert_eq!(code, 200);
    until(&mut reader, "TEXT_MESSAGE_CONTENT");
    std::thread::sleep(Duration::from_millis(3500));
    assert!(alive(pid), "the run ended while a reader read it");
    // ...and when it goes too, no one is left: the CLI is stopped once
    // the grace has passed.
    drop(reader);
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid), "the run ended before its grace");
    common::until(
        "the CLI ends after its grace",
        Duration::from_secs(20),
        || !alive(pid),
    );
    // The run was ended as any other: the thread is free, its words kept.
    let snapshot = thread_snapshot(&server.addr, "tn");
    assert!(snapshot.to_string().contains("Héllo wörld"), "{snapshot}");
    let (code, r) = post(&server.addr, &body("tn", "r3", "Again"), None);
    assert_eq!(code, 200);
    drop(r);
}

#[test]
fn a_new_message_ends_the_run_no_one_reads() {
    let pid_file = tmp("take-over-pid");
    let _ = std::fs::remove_file(&pid_file);
    let server = hanging_after(&pid_file, "3", &["--rejoin-grace", "60s"]);
    let (code, mut own) = post(&server.addr, &body("tt", "r1", "Hello"), None);
    assert_eq!(code, 200);
    until(&mut own, "RUN_STARTED");
    let pid = cli_pid(&pid_file);
    // While the run's client reads it, a new message is refused.
    assert_eq!(post(&server.addr, &body("tt", "r2", "Again"), None).0, 409);
    // The page stops the run (its connection closes) and sends a new
    // message: the run no one reads is ended for it, not kept for its grace.
    drop(own);
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid), "the run ended before its grace");
    let _ = std::fs::remove_file(&pid_file);
    let (code, mut next) = post(&server.addr, &body("tt", "r3", "Again"), None);
    assert_eq!(code, 200);
    assert!(!alive(pid), "the run no one read goes on");
    assert_eq!(until(&mut next, "RUN_STARTED")["runId"], "r3");
}

#[test]
fn a_rejoin_grace_is_a_duration_up_to_ten_minutes() {
    for (bad, says) in [
        ("11m", "at most 10m"),
        ("soon", "not a duration"),
        ("5x", "unit"),
    ] {
        let out = Command::new(BIN)
            .args([
                "serve",
                "claude",
                "--listen",
                "0.0.0.0:0",
                "--rejoin-grace",
                bad,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--rejoin-grace") && err.contains(says),
            "{bad}: {err}"
        );
    }
    for good in ["0", "0s", "500ms", "10m"] {
        // Accepted: the next mistake (no token beyond loopback) is the one told.
        let out = Command::new(BIN)
            .args([
                "serve",
                "claude",
                "--listen",
                "0.0.0.0:0",
                "--rejoin-grace",
                good,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("--rejoin-grace") && err.contains("--token"),
            "{good}: {err}"
        );
    }
}
