//! `agui-translate run codex --approval ask` over `codex app-server`: the
//! server's approval requests as AG-UI interrupts, answered by resume lines
//! on standard input. The stand-in CLI (`tests/fake/cli`, FAKE_SERVER)
//! replays the real server's session and waits for the answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn unique(prefix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("agui-cask-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{prefix}-{}", N.fetch_add(1, Ordering::SeqCst)))
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The recorded shell command that asks for approval, answered by `status`
/// and `payload`: the interrupted run, the rest of the output, the exit
/// status and what the server was sent. The whole output is valid AG-UI.
fn asked(
    transport: &str,
    status: &str,
    payload: Value,
) -> (Vec<Value>, Vec<Value>, i32, Vec<Value>) {
    asked_in_turn(transport, &[(status, payload)])
}

/// [`asked`] with several resume lines, one after the other (runs `r2`,
/// `r3`, …).
fn asked_in_turn(
    transport: &str,
    resumes: &[(&str, Value)],
) -> (Vec<Value>, Vec<Value>, i32, Vec<Value>) {
    let sent = unique("sent");
    let mut child = Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env(
            "FAKE_SERVER",
            root().join("testdata/codex-app-server/0.169.0/approval_shell.jsonl"),
        )
        .env("FAKE_SENT", &sent)
        .env("FAKE_VERSION", "codex-cli 0.169.0")
        .args(["run", "codex", "--codex-transport", transport, "--cli"])
        .arg(root().join("tests/fake/cli"))
        .args(["--approval", "ask", "--thread-id", "t", "--run-id", "r1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "Run `echo hello; ls` (approval required).").unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    let mut first = Vec::new();
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "ended: {text}");
        text.push_str(&line);
        let ev: Value = serde_json::from_str(&line).unwrap();
        let end = matches!(ev["type"].as_str(), Some("RUN_FINISHED" | "RUN_ERROR"));
        first.push(ev);
        if end {
            break;
        }
    }
    // Nothing is answered before the resume.
    let before = lines(&std::fs::read_to_string(&sent).unwrap_or_default());
    assert!(
        !before.iter().any(|m| m.get("result").is_some()),
        "{before:?}"
    );
    let id = first.last().unwrap()["outcome"]["interrupts"][0]["id"].clone();
    for (n, (status, payload)) in resumes.iter().enumerate() {
        let resume = json!({"threadId": "t", "runId": format!("r{}", n + 2),
            "resume": [{"interruptId": id, "status": status, "payload": payload}]});
        writeln!(stdin, "{resume}").unwrap();
    }
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    drop(stdin);
    let code = child.wait().unwrap().code().unwrap_or(-1);
    text.push_str(&rest);
    agui_translate::check::check_bytes(text.as_bytes()).unwrap_or_else(|v| panic!("{v:?}\n{text}"));
    let sent = lines(&std::fs::read_to_string(&sent).unwrap_or_default());
    (first, lines(&rest), code, sent)
}

/// The server's answer to its approval request (JSON-RPC id 0).
fn decision(sent: &[Value]) -> Value {
    sent.iter()
        .find(|m| m["id"] == 0 && m.get("result").is_some())
        .expect("the request was answered")["result"]["decision"]
        .clone()
}

#[test]
fn an_approval_request_is_an_interrupt_and_the_resume_answers_it() {
    for (status, payload, answer) in [
        ("resolved", json!({"approved": true}), "accept"),
        ("resolved", json!({"approved": false}), "decline"),
        ("cancelled", Value::Null, "cancel"),
    ] {
        let (first, rest, code, sent) = asked("app-server", status, payload);
        let end = first.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED", "{first:?}");
        assert_eq!(end["outcome"]["type"], "interrupt");
        let int = &end["outcome"]["interrupts"][0];
        assert_eq!(int["reason"], "tool_call");
        assert_eq!(int["toolCallId"], "call_0001");
        assert!(
            int["message"].as_str().unwrap().contains("echo hello; ls"),
            "{int}"
        );
        assert_eq!(int["metadata"]["itemId"], "call_0001");
        assert!(int["responseSchema"].is_object());
        assert_eq!(decision(&sent), answer, "{status}");
        assert_eq!(rest[0]["type"], "RUN_STARTED");
        assert_eq!(rest[0]["runId"], "r2");
        let result = rest
            .iter()
            .find(|e| e["type"] == "TOOL_CALL_RESULT")
            .expect("the resumed run has the tool's result");
        assert_eq!(result["toolCallId"], "call_0001");
        assert!(!rest.iter().any(|e| e["type"] == "TOOL_CALL_START"));
        assert_eq!(rest.last().unwrap()["type"], "RUN_FINISHED");
        assert_eq!(code, 0, "{status}");
    }
}

#[test]
fn auto_picks_the_app_server_to_ask_and_exec_cannot() {
    let (first, _, _, sent) = asked("auto", "resolved", json!({"approved": true}));
    assert_eq!(first.last().unwrap()["outcome"]["type"], "interrupt");
    assert_eq!(decision(&sent), "accept");
    let out = Command::new(BIN)
        .args([
            "run",
            "codex",
            "--codex-transport",
            "exec",
            "--approval",
            "ask",
            "--cli",
        ])
        .arg(root().join("tests/fake/cli"))
        .arg("hi")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--transport exec"), "{err}");
}

/// Codex runs a command only as it asked: the interrupt offers no edit, a
/// resume with `editedArgs` is refused and nothing reaches the server, and
/// the next resume still decides.
#[test]
fn an_edit_codex_cannot_run_is_refused_not_approved_as_asked() {
    let edit = json!({"approved": true, "editedArgs": {"command": "echo edited"}});
    let (first, rest, code, sent) = asked_in_turn(
        "app-server",
        &[("resolved", edit), ("resolved", json!({"approved": true}))],
    );
    let schema = &first.last().unwrap()["outcome"]["interrupts"][0]["responseSchema"];
    assert!(schema["properties"]["approved"].is_object(), "{schema}");
    assert!(schema["properties"].get("editedArgs").is_none(), "{schema}");
    // The edit: a run that fails and changes nothing.
    assert_eq!(rest[0]["type"], "RUN_STARTED");
    assert_eq!(rest[0]["runId"], "r2");
    assert_eq!(rest[1]["type"], "RUN_ERROR", "{rest:?}");
    assert_eq!(rest[1]["code"], "invalid_resume");
    assert!(
        rest[1]["message"].as_str().unwrap().contains("editedArgs"),
        "{}",
        rest[1]
    );
    // The plain approval that followed: the command as asked.
    assert_eq!(rest[2]["type"], "RUN_STARTED");
    assert_eq!(rest[2]["runId"], "r3");
    let answers: Vec<&Value> = sent.iter().filter(|m| m.get("result").is_some()).collect();
    assert_eq!(answers.len(), 1, "{sent:?}");
    assert_eq!(decision(&sent), "accept");
    assert!(!sent.iter().any(|m| m.to_string().contains("echo edited")));
    let response = rest
        .iter()
        .find(|e| e["type"] == "CUSTOM" && e["name"] == "approval_response")
        .expect("the decision is in the stream");
    assert_eq!(response["value"]["status"], "approved");
    assert_eq!(response["value"]["toolCallId"], "call_0001");
    assert!(response["value"].get("editedArgs").is_none());
    assert_eq!(code, 0);
}
