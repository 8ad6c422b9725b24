//! `agui-translate run codex` over `codex app-server`, with the stand-in CLI
//! (`tests/fake/cli`) replaying recorded server sessions
//! (`testdata/codex-app-server/0.169.0/`), paced by what the client sends:
//! what we send is checked against what the recording's client sent.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fake() -> PathBuf {
    root().join("tests/fake/cli")
}

fn session(name: &str, ext: &str) -> PathBuf {
    root()
        .join("testdata/codex-app-server/0.169.0")
        .join(format!("{name}.{ext}"))
}

/// A file of its own for each use (tests run in parallel).
fn unique(prefix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("agui-run-app-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{prefix}-{}", N.fetch_add(1, Ordering::SeqCst)))
}

/// What the recording's client sent.
fn recorded(name: &str) -> Vec<Value> {
    common::values(&std::fs::read_to_string(session(name, "client.txt")).unwrap())
}

/// The prompt of a recorded session.
fn prompt_of(name: &str) -> String {
    recorded(name)
        .iter()
        .find(|m| m["method"] == "turn/start")
        .and_then(|m| m["params"]["input"][0]["text"].as_str())
        .unwrap()
        .to_owned()
}

/// `run codex` over the app-server against the recorded session `name`;
/// `FAKE_SENT` is the returned file.
fn run(name: &str) -> (Command, PathBuf) {
    let sent = unique(&format!("sent-{name}"));
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "codex", "--codex-transport", "app-server", "--cli"])
        .arg(fake())
        .env("FAKE_SERVER", session(name, "jsonl"))
        .env("FAKE_SENT", &sent)
        .timeout(Duration::from_secs(60));
    (c, sent)
}

fn sent(file: &Path) -> Vec<Value> {
    common::values(&std::fs::read_to_string(file).unwrap_or_default())
}

fn valid(stdout: &[u8]) -> Vec<Value> {
    agui_translate::check::check_bytes(stdout).unwrap_or_else(|v| panic!("{v:?}"));
    common::values(std::str::from_utf8(stdout).unwrap())
}

/// Whether a run's output is the filter's `expected` output of its stream,
/// but for the run id: the filter takes the server's turn id, a live run has
/// a fresh UUID v7 of its own.
fn same_but_the_run_id(stdout: &[u8], expected: &[u8]) -> bool {
    let run_id = |text: &[u8]| {
        let first: Value =
            serde_json::from_slice(text.split(|&b| b == b'\n').next().unwrap()).unwrap();
        first["runId"].as_str().unwrap().to_owned()
    };
    let (have, want) = (run_id(stdout), run_id(expected));
    let fresh = have.len() == 36 && &have[14..15] == "7" && have != want;
    let expected = String::from_utf8_lossy(expected).replace(
        &format!(r#""runId":"{want}""#),
        &format!(r#""runId":"{have}""#),
    );
    fresh && stdout == expected.as_bytes()
}

#[test]
fn recorded_sessions_run_as_they_were_recorded() {
    for name in ["text", "shell", "patch", "reasoning", "mcp"] {
        let (mut cmd, file) = run(name);
        let out = cmd.arg(prompt_of(name)).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
        common::assert_same_messages(name, &sent(&file), &recorded(name));
        // The stream is what the filter makes of the server's stdout.
        let expected = std::fs::read(session(name, "expected.ndjson")).unwrap();
        assert!(
            same_but_the_run_id(&out.stdout, &expected),
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn one_prompt_is_one_turn_and_then_stdin_closes() {
    let (mut cmd, file) = run("two_turns");
    let out = cmd.arg(prompt_of("two_turns")).output().unwrap();
    // The server exits when its stdin closes after the first turn.
    assert_eq!(out.status.code(), Some(0));
    common::assert_same_messages("two_turns", &sent(&file), &recorded("two_turns")[..4]);
    let evs = valid(&out.stdout);
    let runs = evs.iter().filter(|e| e["type"] == "RUN_STARTED").count();
    assert_eq!(runs, 1);
    assert_eq!(evs.last().unwrap()["type"], "RUN_FINISHED");
}

#[test]
fn options_reach_the_thread_request() {
    let dir = unique("cwd");
    std::fs::create_dir_all(&dir).unwrap();
    let argv = unique("argv");
    let (mut cmd, file) = run("text");
    cmd.args(["--model", "gpt-test", "--approval", "auto-edit", "--cwd"])
        .arg(&dir)
        .env("FAKE_ARGV", &argv)
        .args(["hi", "--", "-c", "model_reasoning_effort=low"])
        .assert()
        .success();
    let sent = sent(&file);
    assert_eq!(sent[2]["method"], "thread/start");
    assert_eq!(
        sent[2]["params"],
        serde_json::json!({
            "cwd": dir.to_str().unwrap(),
            "model": "gpt-test",
            "approvalPolicy": "on-request",
            "sandbox": "workspace-write",
        })
    );
    assert_eq!(sent[3]["params"]["input"][0]["text"], "hi");
    let argv = std::fs::read_to_string(&argv).unwrap();
    assert_eq!(argv, "app-server\n-c\nmodel_reasoning_effort=low\n");
}

#[test]
fn what_the_app_server_cannot_express_is_refused() {
    for args in [
        &["--max-turns", "3", "hi"][..],
        &["--allow-tool", "shell", "hi"],
        &["--deny-tool", "shell", "hi"],
    ] {
        let (mut cmd, file) = run("text");
        cmd.args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("codex"));
        assert!(sent(&file).is_empty(), "{args:?}: the server was started");
    }
}

#[test]
fn resume_continues_the_thread() {
    let (mut cmd, file) = run("text");
    cmd.args(["--resume", "0199-thread", "hi"])
        .assert()
        .success();
    let sent = sent(&file);
    assert_eq!(sent[2]["method"], "thread/resume");
    assert_eq!(sent[2]["params"]["threadId"], "0199-thread");
    assert_eq!(sent[3]["method"], "turn/start");
}

#[test]
fn approvals_are_answered_by_policy_and_said_in_the_stream() {
    for (approval, decision) in [
        ("default", "decline"),
        ("auto-edit", "decline"),
        ("yolo", "accept"),
    ] {
        let (mut cmd, file) = run("approval_shell");
        let out = cmd
            .args(["--approval", approval])
            .arg(prompt_of("approval_shell"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{approval}");
        let answer = sent(&file)
            .into_iter()
            .find(|m| m["id"] == 0 && m.get("result").is_some())
            .expect("the request was answered");
        assert_eq!(answer["result"]["decision"], decision, "{approval}");
        let evs = valid(&out.stdout);
        let said = evs
            .iter()
            .find(|e| e["type"] == "CUSTOM" && e["name"] == "approval_response")
            .expect("the answer is in the stream");
        assert_eq!(said["value"]["decision"], decision);
        assert_eq!(
            said["value"]["method"],
            "item/commandExecution/requestApproval"
        );
    }
}

/// The slow stream, stopped by `stop` (a signal, or `--timeout` when `None`).
fn interrupted(sig: Option<i32>) -> (Option<i32>, Vec<Value>, Vec<Value>, Duration) {
    let name = "interrupt_stream";
    let file = unique("sent-interrupt");
    let mut cmd = StdCommand::new(BIN);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "codex", "--codex-transport", "app-server", "--cli"])
        .arg(fake())
        .env("FAKE_SERVER", session(name, "jsonl"))
        .env("FAKE_SENT", &file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if sig.is_none() {
        cmd.args(["--timeout", "1s"]);
    }
    let mut child = cmd.arg(prompt_of(name)).spawn().unwrap();
    let start = Instant::now();
    if let Some(sig) = sig {
        // Once the text is streaming (the server now waits for the
        // interrupt).
        let mut stdout = child.stdout.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0; 4096];
        while !String::from_utf8_lossy(&seen).contains("TEXT_MESSAGE_CONTENT") {
            let n = stdout.read(&mut buf).unwrap();
            assert!(n > 0 && start.elapsed() < Duration::from_secs(20));
            seen.extend_from_slice(&buf[..n]);
        }
        // SAFETY: signalling the child we spawned.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        stdout.read_to_end(&mut seen).unwrap();
        let status = child.wait().unwrap();
        let took = start.elapsed();
        return (status.code(), valid(&seen), sent(&file), took);
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        valid(&out.stdout),
        sent(&file),
        start.elapsed(),
    )
}

fn assert_interrupted(evs: &[Value], sent: &[Value]) {
    let recorded = recorded("interrupt_stream");
    // The interrupt names the thread and turn, as the recorded one did.
    common::assert_same_messages("interrupt_stream", sent, &recorded);
    assert_eq!(sent[4]["method"], "turn/interrupt");
    let end = evs.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED");
    assert_eq!(end["outcome"]["type"], "cancelled");
    assert!(evs.iter().any(|e| e["type"] == "TEXT_MESSAGE_CONTENT"));
}

#[test]
fn sigint_and_sigterm_interrupt_the_turn() {
    for (sig, status) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let (code, evs, sent, took) = interrupted(Some(sig));
        assert_eq!(code, Some(status));
        assert_interrupted(&evs, &sent);
        assert!(took < Duration::from_secs(10), "took {took:?}");
    }
}

#[test]
fn a_timeout_interrupts_the_turn() {
    let (code, evs, sent, took) = interrupted(None);
    assert_eq!(code, Some(124));
    assert_interrupted(&evs, &sent);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_server_that_dies_mid_turn_ends_in_run_error() {
    // The text session's server stops after the first deltas.
    let (mut cmd, _) = run("text");
    let out = cmd
        .env("FAKE_LINES", "14")
        .env("FAKE_EXIT", "3")
        .env("FAKE_STDERR", "thread panicked: out of cheese")
        .arg(prompt_of("text"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let evs = valid(&out.stdout);
    let end = evs.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR");
    let msg = end["message"].as_str().unwrap();
    assert!(msg.contains("exited with status 3"), "{msg}");
    assert!(msg.contains("out of cheese"), "{msg}");
    // What streamed before is there, closed.
    assert!(evs.iter().any(|e| e["type"] == "TEXT_MESSAGE_CONTENT"));

    // Exit status 0, but no end of the turn: the run failed, so 1.
    let (mut cmd, _) = run("text");
    let out = cmd
        .env("FAKE_LINES", "14")
        .arg(prompt_of("text"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let end = valid(&out.stdout).pop().unwrap();
    assert_eq!(end["type"], "RUN_ERROR");
    let msg = end["message"].as_str().unwrap();
    assert!(msg.contains("before the turn completed"), "{msg}");
}

/// The arguments `run codex` starts the CLI with, by transport option and
/// installed version.
fn first_arg(transport: &[&str], version: &str) -> String {
    first_arg_with(transport, version, &[])
}

/// [`first_arg`] with arguments for the CLI after `--`.
fn first_arg_with(transport: &[&str], version: &str, extra: &[&str]) -> String {
    let argv = unique("argv-transport");
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "codex", "--cli"])
        .arg(fake())
        .args(transport)
        .env("FAKE_VERSION", version)
        .env("FAKE_ARGV", &argv)
        .arg("hi")
        .arg("--")
        .args(extra)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let argv = std::fs::read_to_string(&argv).unwrap();
    argv.lines().next().unwrap().to_owned()
}

#[test]
fn the_transport_follows_the_option_and_the_version() {
    assert_eq!(first_arg(&[], "codex-cli 0.169.0"), "app-server");
    assert_eq!(first_arg(&[], "codex-cli 1.0.0"), "app-server");
    assert_eq!(first_arg(&[], "codex-cli 0.168.2"), "exec");
    assert_eq!(first_arg(&[], "something else"), "exec");
    // Another program's version says nothing about codex.
    assert_eq!(first_arg(&[], "fake-cli 1.2.3"), "exec");
    let auto = ["--codex-transport", "auto"];
    assert_eq!(first_arg(&auto, "codex-cli 0.170.0-alpha.1"), "app-server");
    let exec = ["--codex-transport", "exec"];
    assert_eq!(first_arg(&exec, "codex-cli 0.169.0"), "exec");
    let server = ["--codex-transport", "app-server"];
    assert_eq!(first_arg(&server, "codex-cli 0.1.0"), "app-server");
    // Config overrides are the server's as well as exec's.
    let overrides = ["-c", "model_reasoning_effort=low", "--enable", "web_search"];
    assert_eq!(
        first_arg_with(&[], "codex-cli 0.169.0", &overrides),
        "app-server"
    );
    // An option only `codex exec` takes keeps the command line.
    let sandbox = ["--sandbox", "workspace-write"];
    assert_eq!(first_arg_with(&[], "codex-cli 0.169.0", &sandbox), "exec");
}

/// `run codex PROMPT -- --dangerously-bypass-approvals-and-sandbox` (the way
/// to run Codex unattended) on a Codex that has the app-server, whose
/// `app-server` refuses that option (the stand-in refuses it as codex
/// 0.169.0 does): `auto` keeps `codex exec`, the recorded real run is
/// translated as the filter translates it, and one line on stderr says how to
/// get live text.
#[test]
fn auto_keeps_exec_for_exec_options() {
    let argv = unique("argv-exec-options");
    let recording = root().join("testdata/codex/0.169.0/shell.jsonl");
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "codex", "--cli"])
        .arg(fake())
        .env("FAKE_VERSION", "codex-cli 0.169.0")
        .env("FAKE_ARGV", &argv)
        .env("FAKE_REPLAY", &recording)
        .args(["list the files", "--"])
        .arg("--dangerously-bypass-approvals-and-sandbox")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let argv = std::fs::read_to_string(&argv).unwrap();
    let argv: Vec<&str> = argv.lines().collect();
    assert_eq!(argv[0], "exec", "{argv:?}");
    assert!(argv.contains(&"--dangerously-bypass-approvals-and-sandbox"));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--dangerously-bypass-approvals-and-sandbox is an option of `codex exec`")
            && stderr.contains("for live text, give --approval yolo instead"),
        "{stderr}"
    );
    let types = |evs: &[Value]| -> Vec<String> {
        evs.iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let golden = std::fs::read_to_string(recording.with_extension("expected.ndjson")).unwrap();
    assert_eq!(types(&valid(&out.stdout)), types(&common::values(&golden)));
}

#[test]
fn a_transport_is_one_the_cli_has() {
    for (cli, transport) in [
        ("gemini", "app-server"),
        ("claude", "acp"),
        ("codex", "acp"),
    ] {
        Command::new(BIN)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["run", cli, "--transport", transport, "--cli"])
            .arg(fake())
            .arg("hi")
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--transport"));
    }
    // The server's dialect is not a CLI of its own for run.
    Command::new(BIN)
        .args(["run", "codex-app-server", "hi"])
        .assert()
        .code(2);
}

#[test]
fn check_lists_codex_once() {
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("AGUI_CODEX_CLI", fake())
        .args(["run", "--check"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let codex: Vec<&str> = text.lines().filter(|l| l.starts_with("codex")).collect();
    assert_eq!(codex.len(), 1, "{text}");
    assert!(codex[0].starts_with("codex   fake-cli 1.2.3 ("), "{text}");
}

#[test]
fn a_server_that_outstays_the_session_is_stopped_without_failing_the_run() {
    // After the turn, the server does not exit when its stdin closes.
    let (mut cmd, file) = run("text");
    let start = Instant::now();
    let out = cmd
        .env("FAKE_HANG", "60")
        .arg(prompt_of("text"))
        .output()
        .unwrap();
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(sent(&file).len(), 4);
    let expected = std::fs::read(session("text", "expected.ndjson")).unwrap();
    assert!(
        same_but_the_run_id(&out.stdout, &expected),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(20),
        "took {took:?}"
    );
}

#[test]
fn a_server_that_ignores_the_interrupt_is_stopped() {
    // The server never answers turn/interrupt: SIGTERM after the grace.
    let mut cmd = StdCommand::new(BIN);
    let start = Instant::now();
    let out = cmd
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "codex", "--codex-transport", "app-server", "--cli"])
        .arg(fake())
        .env("FAKE_SERVER", session("interrupt_stream", "jsonl"))
        // Up to the last delta before the interrupt's answer.
        .env("FAKE_LINES", "16")
        .env("FAKE_HANG", "60")
        .args(["--timeout", "500ms", "hi"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(124));
    let end = valid(&out.stdout).pop().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED");
    assert_eq!(end["outcome"]["type"], "cancelled");
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(20),
        "took {took:?}"
    );
}
