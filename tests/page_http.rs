//! Tools from the page for Copilot CLI and OpenCode: `run` answers the
//! page's MCP server itself over streamable HTTP on the loopback address
//! and hands it to the CLI (`--additional-mcp-config`,
//! `OPENCODE_CONFIG_CONTENT`). The stand-in CLI (`tests/fake/cli`,
//! FAKE_MCP_HTTP) replays the real Copilot CLI 1.0.102 and OpenCode
//! 1.18.33 calling a page's tool (`scripts/record`, scenarios page-tool and
//! page-tools-two) and calls the tool over HTTP where the recording does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::{json, Value};

mod common;

use common::root;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn tmp(name: &str) -> PathBuf {
    common::scratch("page-http", name)
}

fn recording(cli: &str, scenario: &str) -> PathBuf {
    let version = if cli == "copilot" {
        "1.0.102"
    } else {
        "1.18.33"
    };
    root()
        .join("testdata")
        .join(cli)
        .join(version)
        .join(format!("{scenario}.jsonl"))
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The page's {name}."),
           "parameters": {"type": "object", "properties": {}}})
}

/// The lines the stand-in wrote to FAKE_SENT: the tools listed, then each
/// `tools/call` result.
fn sent(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn texts(results: &[Value]) -> Vec<(String, bool)> {
    results
        .iter()
        .filter(|r| r.get("content").is_some())
        .map(|r| {
            (
                r["content"][0]["text"].as_str().unwrap().to_owned(),
                r["isError"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// `run CLI --page-tools` with the stand-in replaying `scenario`.
struct Run {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<std::process::ChildStdout>,
    sent: PathBuf,
    url: PathBuf,
    argv: PathBuf,
}

impl Run {
    fn start(cli: &str, scenario: &str, tools: &[&str], extra: &[&str]) -> Run {
        let name = format!("{cli}-{scenario}-{}", extra.join(""));
        let file = tmp(&format!("{name}-tools.json"));
        let tools: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
        std::fs::write(&file, json!(tools).to_string()).unwrap();
        let (sent, url, argv) = (
            tmp(&format!("{name}-sent")),
            tmp(&format!("{name}-url")),
            tmp(&format!("{name}-argv")),
        );
        let mut child = Command::new(BIN)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("FAKE_MCP_HTTP", recording(cli, scenario))
            .env("FAKE_SENT", &sent)
            .env("FAKE_MCP_URL", &url)
            .env("FAKE_ARGV", &argv)
            // The versions recorded (OpenCode's would speak ACP by itself).
            .env(
                "FAKE_VERSION",
                recording(cli, scenario)
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap(),
            )
            .args(["run", cli, "--cli"])
            .arg(root().join("tests/fake/cli"))
            .arg("--page-tools")
            .arg(&file)
            .args(["--thread-id", "t", "--run-id", "r1"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "Which branch?").unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Run {
            child,
            stdin: Some(stdin),
            out,
            sent,
            url,
            argv,
        }
    }

    /// The events up to the end of the next run.
    fn run(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let mut line = String::new();
            if self.out.read_line(&mut line).unwrap() == 0 {
                return events;
            }
            let ev: Value = serde_json::from_str(&line).unwrap();
            let end = matches!(ev["type"].as_str(), Some("RUN_FINISHED" | "RUN_ERROR"));
            events.push(ev);
            if end {
                return events;
            }
        }
    }

    fn answer(&mut self, run: &str, answers: &[(&str, &str)]) {
        let results: Vec<Value> = answers
            .iter()
            .map(|(id, text)| json!({"toolCallId": id, "content": text}))
            .collect();
        let line = json!({"runId": run, "toolResults": results, "lastRole": "tool"});
        writeln!(self.stdin.as_mut().unwrap(), "{line}").unwrap();
    }

    fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        self.wait()
    }

    /// The rest of the output read with the input still open, then the
    /// exit status.
    fn wait(mut self) -> i32 {
        let mut rest = String::new();
        self.out.read_to_string(&mut rest).unwrap();
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

fn starts(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| {
            (
                e["toolCallId"].as_str().unwrap().to_owned(),
                e["toolCallName"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// One request on a new connection to `url`'s host: the status line.
fn request(url: &str, method: &str, path: &str, headers: &str, body: &str) -> String {
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut conn = TcpStream::connect(host).unwrap();
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    BufReader::new(conn).read_to_string(&mut text).unwrap();
    text
}

#[test]
fn copilot_s_call_waits_for_the_page_and_its_answer_reaches_the_cli() {
    let mut r = Run::start("copilot", "page-tool", &["pick_branch"], &[]);
    let one = r.run();
    assert_eq!(
        starts(&one),
        [("call_m0000scripted".into(), "pick_branch".into())],
        "the page's own name"
    );
    assert!(!one.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    assert_eq!(
        one.last().unwrap()["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["call_m0000scripted"]})
    );
    // Handed over in a file of its own, and allowed.
    let argv = std::fs::read_to_string(&r.argv).unwrap();
    assert!(argv.contains("--additional-mcp-config=@"), "{argv}");
    assert!(argv.lines().any(|l| l == "--allow-tool=page"), "{argv}");
    assert!(!argv.contains("127.0.0.1"), "no secret on the command line");
    let listed = sent(&r.sent);
    assert_eq!(listed[0]["tools"][0]["name"], "pick_branch");
    assert!(texts(&listed).is_empty(), "nothing answered yet");

    r.answer("r2", &[("call_m0000scripted", "dev")]);
    let two = r.run();
    assert_eq!(two[0]["runId"], "r2");
    assert_eq!(two.last().unwrap()["type"], "RUN_FINISHED");
    assert!(!two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    assert_eq!(text(&two), "The page answered: dev");
    let sent_file = r.sent.clone();
    assert_eq!(r.finish(), 0);
    assert_eq!(texts(&sent(&sent_file)), [("dev".into(), false)]);
}

#[test]
fn opencode_s_calls_are_shown_by_the_run_and_answered_together() {
    let mut r = Run::start(
        "opencode",
        "page-tools-two",
        &["pick_branch", "show_diff"],
        &[],
    );
    let one = r.run();
    // OpenCode sends a turn's calls at once: they are shown, and pending,
    // in the order their requests came, which is not always the same.
    let shown = starts(&one);
    let shown_ids: Vec<&str> = shown.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(
        one.last().unwrap()["outcome"]["pendingToolCallIds"],
        json!(shown_ids)
    );
    let mut calls = shown.clone();
    calls.sort_by(|a, b| a.1.cmp(&b.1));
    let names: Vec<&str> = calls.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["pick_branch", "show_diff"]);
    let ids: Vec<&str> = calls.iter().map(|(i, _)| i.as_str()).collect();
    let args: Vec<&str> = ids
        .iter()
        .map(|id| {
            one.iter()
                .find(|e| e["type"] == "TOOL_CALL_ARGS" && e["toolCallId"] == *id)
                .and_then(|e| e["delta"].as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(
        args,
        [
            r#"{"branches": ["main", "dev"]}"#,
            r#"{"path": "src/lib.rs"}"#
        ]
    );
    r.answer("r2", &[(ids[1], "shown: 3 hunks"), (ids[0], "main")]);
    let two = r.run();
    assert!(
        starts(&two).is_empty(),
        "the calls OpenCode shows with their results are the ones shown: {two:?}"
    );
    assert!(!two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    assert_eq!(text(&two), "The page answered: main; shown: 3 hunks");
    let sent_file = r.sent.clone();
    assert_eq!(r.finish(), 0);
    let mut got = texts(&sent(&sent_file));
    got.sort();
    assert_eq!(
        got,
        [("main".into(), false), ("shown: 3 hunks".into(), false)]
    );
}

#[test]
fn the_endpoint_answers_only_the_secret_path_without_an_origin_and_goes_with_the_run() {
    let mut r = Run::start("opencode", "page-tool", &["pick_branch"], &[]);
    let one = r.run();
    assert_eq!(one.last().unwrap()["type"], "RUN_FINISHED");
    let url = std::fs::read_to_string(&r.url).unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let path = &url[url.find("/").map(|i| i + 2).unwrap()..];
    let path = &path[path.find('/').unwrap()..];
    assert!(path.len() > 40, "a secret in the path: {path}");
    let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
    assert!(request(&url, "POST", path, "", ping).starts_with("HTTP/1.1 200"));
    let other = request(&url, "POST", "/mcp", "", ping);
    assert!(other.starts_with("HTTP/1.1 404"), "{other}");
    let near = format!("{}x", &path[..path.len() - 1]);
    assert!(request(&url, "POST", &near, "", ping).starts_with("HTTP/1.1 404"));
    let origin = request(&url, "POST", path, "Origin: http://127.0.0.1\r\n", ping);
    assert!(origin.starts_with("HTTP/1.1 403"), "{origin}");
    // A refusal told by the head still reaches the client whole: the body
    // (more than the head's read takes) is read and dropped, not answered
    // with a reset.
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut big = TcpStream::connect(host).unwrap();
    let body = vec![b' '; 256 * 1024];
    let mut sent = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    sent.extend_from_slice(&body);
    big.write_all(&sent).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut refusal = String::new();
    BufReader::new(big).read_to_string(&mut refusal).unwrap();
    assert!(refusal.starts_with("HTTP/1.1 404"), "{refusal}");
    let get = request(&url, "GET", path, "", "");
    assert!(get.starts_with("HTTP/1.1 405"), "{get}");
    let note = request(
        &url,
        "POST",
        path,
        "",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(note.starts_with("HTTP/1.1 202"), "{note}");

    r.answer(
        "r2",
        &[(
            one.last().unwrap()["outcome"]["pendingToolCallIds"][0]
                .as_str()
                .unwrap(),
            "dev",
        )],
    );
    let two = r.run();
    assert_eq!(text(&two), "The page answered: dev");
    assert_eq!(r.finish(), 0);
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    assert!(TcpStream::connect(host).is_err(), "gone with the run");
}

/// What `bytes`, sent on a new connection to `url`'s host a piece at a
/// time (`piece` bytes each), is answered: the whole answer.
fn send_raw(url: &str, bytes: &[u8], piece: usize) -> String {
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut conn = TcpStream::connect(host).unwrap();
    for part in bytes.chunks(piece) {
        if conn.write_all(part).is_err() {
            break;
        }
    }
    let mut text = String::new();
    let _ = BufReader::new(conn).read_to_string(&mut text);
    text
}

/// The endpoint's request heads are parsed by `httparse`: a malformed or
/// ambiguous head is `400` (a bare LF for a line end, a `Content-Length`
/// with a sign or sent twice, a space in a header's name), one over 16 KiB
/// `431`, and a good head is read the same whether it comes at once or a
/// byte at a time.
#[test]
fn a_malformed_request_head_is_refused() {
    let mut r = Run::start(
        "opencode",
        "page-tool",
        &["pick_branch"],
        &["--timeout", "60"],
    );
    let one = r.run();
    assert_eq!(one.last().unwrap()["type"], "RUN_FINISHED");
    let url = std::fs::read_to_string(&r.url).unwrap();
    let path = &url[url.find("/").map(|i| i + 2).unwrap()..];
    let path = path[path.find('/').unwrap()..].to_owned();
    let ping = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
    let good = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{ping}",
        ping.len()
    );
    assert!(send_raw(&url, good.as_bytes(), 1).starts_with("HTTP/1.1 200"));
    let long = format!(
        "POST {path} HTTP/1.1\r\nX-Long: {}\r\n\r\n",
        "a".repeat(17 * 1024)
    );
    for (head, status) in [
        (
            format!(
                "POST {path} HTTP/1.1\nContent-Length: {}\n\n{ping}",
                ping.len()
            ),
            "400",
        ),
        (
            format!(
                "POST {path} HTTP/1.1\r\nContent-Length: +{}\r\n\r\n{ping}",
                ping.len()
            ),
            "400",
        ),
        (
            format!(
                "POST {path} HTTP/1.1\r\nContent-Length: {0}\r\nContent-Length: {0}\r\n\r\n{ping}",
                ping.len()
            ),
            "400",
        ),
        (
            format!("POST {path} HTTP/1.1\r\nContent Length: 2\r\n\r\n{{}}"),
            "400",
        ),
        ("\x16\x03\x01\x02\x00\x01\x00\x01\r\n\r\n".to_owned(), "400"),
        (long, "431"),
    ] {
        let answer = send_raw(&url, head.as_bytes(), 4096);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{head:.80?}: {answer}"
        );
    }
    r.answer(
        "r2",
        &[(
            one.last().unwrap()["outcome"]["pendingToolCallIds"][0]
                .as_str()
                .unwrap(),
            "dev",
        )],
    );
    let two = r.run();
    assert_eq!(text(&two), "The page answered: dev");
    assert_eq!(r.finish(), 0);
}

#[test]
fn no_answer_within_the_tool_timeout_is_an_error_the_model_reads() {
    let mut r = Run::start(
        "copilot",
        "page-tool",
        &["pick_branch"],
        &["--tool-timeout", "1s"],
    );
    let one = r.run();
    assert_eq!(
        one.last().unwrap()["outcome"]["pendingToolCallIds"],
        json!(["call_m0000scripted"])
    );
    let sent_file = r.sent.clone();
    assert_eq!(r.wait(), 3);
    let got = texts(&sent(&sent_file));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].1, "an error");
    assert!(
        got[0]
            .0
            .contains("the page did not answer this tool call within 1s"),
        "{got:?}"
    );
}

/// `run CLI --page-tools FILE ARGS…` refused: its stderr.
fn refused(cli: &str, tools: &Value, args: &[&str]) -> String {
    let file = tmp(&format!("refused-{cli}-{}.json", args.join("")));
    std::fs::write(&file, tools.to_string()).unwrap();
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", cli, "--cli"])
        .arg(root().join("tests/fake/cli"))
        .arg("--page-tools")
        .arg(&file)
        .args(args)
        .arg("hello")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn what_the_http_route_cannot_take_is_refused_clearly() {
    let long = json!([tool(&"a".repeat(60))]);
    let err = refused("copilot", &long, &[]);
    assert!(
        err.contains("copilot names it page-aaaa") && err.contains("in at most 59 bytes"),
        "{err}"
    );
    let err = refused("opencode", &json!([tool("bash")]), &[]);
    assert!(err.contains("the CLI has a tool of that name"), "{err}");
}

/// The events of one POST to `serve`.
fn post(addr: &str, body: &Value) -> Vec<Value> {
    common::sse_events(&common::post_raw(addr, &body.to_string()))
}

#[test]
fn serve_hands_copilot_the_page_s_tools_and_the_follow_up_answers_the_call() {
    let sent_file = tmp("serve-copilot-sent");
    let replay = recording("copilot", "page-tool");
    let s = common::serve_run(
        "copilot",
        &[],
        &[],
        &[("FAKE_MCP_HTTP", &replay), ("FAKE_SENT", &sent_file)],
    );
    let mut body = json!({
        "threadId": "t1", "runId": "r1", "protocolVersion": "1.0.0",
        "state": {}, "context": [], "forwardedProps": {},
        "tools": [tool("pick_branch")],
        "messages": [{"id": "m1", "role": "user", "content": "Which branch?"}],
    });
    let one = post(&s.addr, &body);
    assert_eq!(
        starts(&one),
        [("call_m0000scripted".into(), "pick_branch".into())]
    );
    assert_eq!(
        one.last().unwrap()["outcome"]["pendingToolCallIds"],
        json!(["call_m0000scripted"])
    );
    body["runId"] = json!("r2");
    let msgs = body["messages"].as_array_mut().unwrap();
    msgs.push(
        json!({"id": "a1", "role": "assistant", "toolCalls": [{"id": "call_m0000scripted",
        "type": "function", "function": {"name": "pick_branch", "arguments": "{}"}}]}),
    );
    msgs.push(
        json!({"id": "t1", "role": "tool", "toolCallId": "call_m0000scripted", "content": "dev"}),
    );
    let two = post(&s.addr, &body);
    assert_eq!(two[0]["runId"], "r2");
    assert_eq!(text(&two), "The page answered: dev");
    assert_eq!(two.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(texts(&sent(&sent_file)), [("dev".into(), false)]);
}
