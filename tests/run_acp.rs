//! `run` over the Agent Client Protocol (ACP): `run gemini|opencode|copilot|qwen
//! --transport acp` (and `auto` with `--approval ask`) replaying the real
//! CLIs' recordings through a stand-in that plays the agent's side of each
//! transcript (`tests/fake/acp_agent.py`, ACP_REPLAY), and `run acp --
//! COMMAND` with the small ACP agent written for the tests (the same
//! script, scripted by the prompt's words).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn agent() -> PathBuf {
    root().join("tests/fake/acp_agent.py")
}

fn unique(prefix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("agui-acp-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{prefix}-{}", N.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_file(&file);
    file
}

fn read_values(file: &Path) -> Vec<Value> {
    common::values(&std::fs::read_to_string(file).unwrap_or_default())
}

fn transcript(cli: &str, scenario: &str) -> PathBuf {
    let dir = match cli {
        "gemini" => "gemini-0.61.0",
        "copilot" => "copilot-1.0.102",
        "qwen" => "qwen-0.24.4",
        _ => "opencode-1.18.33",
    };
    root()
        .join("testdata/acp")
        .join(dir)
        .join(format!("{scenario}.jsonl"))
}

/// The recorded prompt's text.
fn recorded_prompt(file: &Path) -> String {
    common::values(&std::fs::read_to_string(file).unwrap())
        .into_iter()
        .find(|m| m["method"] == "session/prompt")
        .unwrap()["params"]["prompt"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// What the client sent is what the recorded client sent; `initialize` and
/// `session/new` carry the client's own name and directory, so only their
/// method and id are compared, and a refusal (Qwen Code's
/// `craft/drainMidTurnQueue`) only its id and code, not its wording.
fn assert_sent_as_recorded(name: &str, sent: &Path, recorded: &Path) {
    let (sent, recorded) = (read_values(sent), read_values(recorded));
    assert_eq!(
        sent.len(),
        recorded.len(),
        "{name}: {sent:#?}\n{recorded:#?}"
    );
    for (s, r) in sent.iter().zip(&recorded) {
        match r["method"].as_str() {
            Some("initialize" | "session/new") => {
                assert_eq!((&s["id"], &s["method"]), (&r["id"], &r["method"]), "{name}")
            }
            _ if r.get("error").is_some() => assert_eq!(
                (&s["id"], &s["error"]["code"]),
                (&r["id"], &r["error"]["code"]),
                "{name}"
            ),
            _ => assert_eq!(s, r, "{name}"),
        }
    }
}

fn valid(text: &str) {
    agui_translate::check::check_bytes(text.as_bytes()).unwrap_or_else(|v| panic!("{v:?}\n{text}"));
}

/// The non-RAW events' types (RAW events hold the client's own setup).
fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] != "RAW")
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// Every recording without an approval, and the one allowed, replayed with
/// every request allowed as the recorder allowed it: the events are those
/// `--from acp` makes of the transcript, and the client sent what the
/// recorded client sent.
#[test]
fn the_real_recordings_replay_through_run_over_acp() {
    for cli in ["gemini", "opencode", "copilot", "qwen"] {
        for scenario in [
            "text",
            "shell",
            "files",
            "reasoning",
            "plan",
            "tool-errors",
            "http500",
            "approval-allow",
        ] {
            let file = transcript(cli, scenario);
            if !file.exists() {
                continue; // Copilot CLI has no to-do tool to make a plan with
            }
            let (sent, recorded) = (unique("sent"), unique("recorded"));
            let out = Command::new(BIN)
                .env("ACP_REPLAY", &file)
                .env("ACP_SENT", &sent)
                .env("ACP_RECORDED", &recorded)
                .args([
                    "run",
                    cli,
                    "--transport",
                    "acp",
                    "--approval",
                    "yolo",
                    "--cli",
                ])
                .arg(agent())
                .arg(recorded_prompt(&file))
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let name = format!("{cli} {scenario}");
            let text = String::from_utf8(out.stdout).unwrap();
            valid(&text);
            let golden = file.with_extension("expected.ndjson");
            let golden = common::values(&std::fs::read_to_string(golden).unwrap());
            assert_eq!(
                types(&common::values(&text)),
                types(&golden),
                "{name}\n{text}"
            );
            assert_sent_as_recorded(&name, &sent, &recorded);
            if scenario == "text" {
                // Over ACP, OpenCode's text comes in deltas (in one burst
                // when its part ends), not as one whole part.
                let deltas = common::values(&text)
                    .iter()
                    .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
                    .count();
                assert!(deltas > 2, "{name}: {deltas} deltas");
            }
        }
    }
}

/// `run CLI --approval ask` (auto: ACP) replaying `scenario`, the run's
/// interrupt answered by `status` and `payload`: the interrupted run, the
/// rest, and the files of what was sent and what the recorded client sent.
fn asked(
    cli: &str,
    scenario: &str,
    status: &str,
    payload: Value,
) -> (Vec<Value>, Vec<Value>, PathBuf, PathBuf) {
    let file = transcript(cli, scenario);
    let (sent, recorded) = (unique("sent"), unique("recorded"));
    let mut child = Command::new(BIN)
        .env("ACP_REPLAY", &file)
        .env("ACP_SENT", &sent)
        .env("ACP_RECORDED", &recorded)
        .args(["run", cli, "--approval", "ask", "--run-id", "r1", "--cli"])
        .arg(agent())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!(recorded_prompt(&file))).unwrap();
    let (first, mut out) = until_run_ends(child.stdout.take().unwrap());
    let id = first.last().unwrap()["outcome"]["interrupts"][0]["id"].clone();
    let resume = json!({"runId": "r2", "resume": [{"interruptId": id, "status": status, "payload": payload}]});
    writeln!(stdin, "{resume}").unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    drop(stdin);
    child.wait().unwrap();
    let all: String = first.iter().map(|e| format!("{e}\n")).collect::<String>() + &rest;
    valid(&all);
    (first, common::values(&rest), sent, recorded)
}

/// The events up to the first run's end, and the rest of the output.
fn until_run_ends(out: impl Read) -> (Vec<Value>, BufReader<impl Read>) {
    let mut out = BufReader::new(out);
    let mut first = Vec::new();
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "ended: {first:?}");
        let ev: Value = serde_json::from_str(&line).unwrap();
        let end = matches!(ev["type"].as_str(), Some("RUN_FINISHED" | "RUN_ERROR"));
        first.push(ev);
        if end {
            return (first, out);
        }
    }
}

/// The real permission requests of Gemini CLI, OpenCode, Copilot CLI and
/// Qwen Code are interrupts,
/// and an approve, a deny and a cancel reach them as the recorded client
/// answered (`proceed_once`/`once`, `cancel`/`reject`, `session/cancel`
/// and the `cancelled` outcome).
#[test]
fn approvals_reach_the_real_agents_as_the_recorded_client_answered() {
    for cli in ["gemini", "opencode", "copilot", "qwen"] {
        for (scenario, status, payload) in [
            ("approval-allow", "resolved", json!({"approved": true})),
            ("approval-deny", "resolved", json!({"approved": false})),
            ("approval-interrupt", "cancelled", Value::Null),
        ] {
            let name = format!("{cli} {scenario}");
            let (first, rest, sent, recorded) = asked(cli, scenario, status, payload);
            let int = &common::interrupts(&first)[0];
            assert_eq!(int["reason"], "tool_call", "{name}");
            let call = int["metadata"]["toolCall"]["toolCallId"].as_str().unwrap();
            assert_eq!(int["toolCallId"], call, "{name}");
            assert!(
                int["metadata"]["options"].as_array().unwrap().len() >= 2,
                "{name}"
            );
            assert!(int["responseSchema"]["properties"]
                .get("editedArgs")
                .is_none());
            assert_eq!(rest[0]["runId"], "r2", "{name}");
            let end = rest.last().unwrap();
            let want = if status == "cancelled" {
                json!("cancelled")
            } else {
                Value::Null
            };
            assert_eq!(end["type"], "RUN_FINISHED", "{name}: {end}");
            assert_eq!(end["outcome"]["type"], want, "{name}: {end}");
            assert_sent_as_recorded(&name, &sent, &recorded);
        }
    }
}

/// `run acp -- AGENT` with the test agent, scripted by the prompt.
fn run_agent(prompt: &str, args: &[&str], env: &[(&str, &str)]) -> (String, i32) {
    let mut c = Command::new(BIN);
    c.args(["run", "acp", prompt, "--thread-id", "t", "--run-id", "r"])
        .args(args)
        .arg("--")
        .arg("python3")
        .arg(agent())
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

/// Text, a streamed tool call and an allowed permission request from any
/// ACP agent: `check` and the official verifier accept the output.
#[test]
fn any_acp_agent_runs_and_its_output_is_valid_ag_ui() {
    let mut files = Vec::new();
    for (prompt, approval) in [
        ("say hello", "default"),
        ("use a tool", "default"),
        ("ask first", "yolo"),
        ("ask first", "default"),
    ] {
        let (text, code) = run_agent(prompt, &["--approval", approval], &[]);
        assert_eq!(code, 0, "{text}");
        valid(&text);
        let events = common::values(&text);
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{text}");
        let file = unique("out").with_extension("ndjson");
        std::fs::write(&file, &text).unwrap();
        files.push(file);
        if prompt == "use a tool" {
            let result = events
                .iter()
                .find(|e| e["type"] == "TOOL_CALL_RESULT")
                .unwrap();
            assert_eq!(result["content"], "one\ntwo");
        }
        if prompt == "ask first" {
            let answer = events
                .iter()
                .find(|e| e["name"] == "approval_response")
                .unwrap();
            assert_eq!(answer["value"]["approved"], approval == "yolo", "{text}");
        }
    }
    if std::env::var_os("AGUI_SKIP_CONFORMANCE").is_some_and(|v| v == "1") {
        return;
    }
    let out = Command::new("node")
        .arg(root().join("tests/conformance/verify.cjs"))
        .args(&files)
        .output()
        .expect("node runs the official verifier (AGUI_SKIP_CONFORMANCE=1 skips it)");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        said.lines().filter(|l| l.starts_with("OK")).count(),
        files.len(),
        "{said}"
    );
}

/// Every way the agent can fail ends the run with a RUN_ERROR that says
/// which, and an exit status that is not 0.
#[test]
fn every_failure_of_the_agent_is_a_run_error_that_names_it() {
    for (prompt, args, env, says) in [
        (
            "hi",
            &[][..],
            &[("ACP_MODE", "garbage")][..],
            "does not speak the Agent Client Protocol",
        ),
        (
            "hi",
            &[],
            &[("ACP_MODE", "refuse")],
            "refused session/new: no sessions today",
        ),
        ("hi", &["--resume", "sess-1"], &[("ACP_MODE", "noload")], "refused session/load: Internal error: No previous sessions found for this project. (error -32603)"),
        ("an error please", &[], &[], "the model is unavailable"),
        ("exit now", &[], &[], "exited with status 3"),
        (
            "noallow",
            &["--approval", "yolo"][..],
            &[],
            "with no allow_once option (it offered always (allow_always), no (reject_once))",
        ),
    ] {
        let (text, code) = run_agent(prompt, args, env);
        valid(&text);
        let events = common::values(&text);
        let end = events.last().unwrap();
        assert_eq!(end["type"], "RUN_ERROR", "{prompt}: {text}");
        // The agent's own status where it exited of itself (3), else 1:
        // never the 0 of an agent that outlived the failed run.
        let expected = if prompt == "exit now" { 3 } else { 1 };
        assert_eq!(code, expected, "{prompt}: {end}");
        assert!(
            end["message"].as_str().unwrap().contains(says),
            "{prompt}: {end}"
        );
    }
}

/// An agent that leaves `initialize`, `session/new` or `session/load`
/// unanswered ends the run with a RUN_ERROR that names the request, once
/// `--start-timeout` has passed (not only when `--timeout` does).
#[test]
fn an_agent_that_does_not_answer_the_start_is_a_run_error() {
    for (mode, args, says) in [
        ("mute", &[][..], "did not answer initialize within 3s"),
        ("mutenew", &[], "did not answer session/new within 3s"),
        (
            "mutenew",
            &["--resume", "sess-1"],
            "did not answer session/load within 3s",
        ),
    ] {
        let started = std::time::Instant::now();
        // Long enough for the stand-in to start on a busy machine.
        let mut all = vec!["--start-timeout", "3s"];
        all.extend_from_slice(args);
        let (text, _) = run_agent("hi", &all, &[("ACP_MODE", mode)]);
        let took = started.elapsed();
        valid(&text);
        let end = common::values(&text).pop().unwrap();
        assert_eq!(end["type"], "RUN_ERROR", "{mode}: {text}");
        let message = end["message"].as_str().unwrap();
        assert!(message.contains(says), "{mode}: {end}");
        assert!(message.contains("the ACP agent"), "{mode}: {end}");
        assert!(
            took < std::time::Duration::from_secs(20),
            "{mode}: {took:?}"
        );
    }
}

/// A permission request with no allow option, approved by the person:
/// the request is cancelled and the run says why.
#[test]
fn an_approval_with_no_option_to_choose_is_a_run_error() {
    let sent = unique("sent");
    let mut child = Command::new(BIN)
        .env("ACP_SENT", &sent)
        .args(["run", "acp", "--approval", "ask", "--", "python3"])
        .arg(agent())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "noallow").unwrap();
    let (first, mut out) = until_run_ends(child.stdout.take().unwrap());
    let int = &common::interrupts(&first)[0];
    writeln!(stdin, "{}", json!({"resume": [{"interruptId": int["id"], "status": "resolved", "payload": {"approved": true}}]})).unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    drop(stdin);
    child.wait().unwrap();
    let end = common::values(&rest).pop().unwrap();
    assert_eq!(end["type"], "RUN_ERROR", "{rest}");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("no allow_once option"),
        "{end}"
    );
    let sent = read_values(&sent);
    assert_eq!(
        sent[sent.len() - 1]["result"]["outcome"]["outcome"],
        "cancelled"
    );
    assert_eq!(sent[sent.len() - 2]["method"], "session/cancel");
}

/// SIGTERM cancels the turn over ACP (`session/cancel`), and the run ends
/// as cancelled.
#[test]
fn a_stop_cancels_the_turn() {
    let sent = unique("sent");
    let mut child = Command::new(BIN)
        .env("ACP_SENT", &sent)
        .args(["run", "acp", "hang on", "--", "python3"])
        .arg(agent())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    while !text.contains("Working") {
        assert!(out.read_line(&mut text).unwrap() > 0, "{text}");
    }
    // SAFETY: the run's own process id, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    out.read_to_string(&mut text).unwrap();
    child.wait().unwrap();
    valid(&text);
    let end = common::values(&text).pop().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{text}");
    assert_eq!(end["outcome"]["type"], "cancelled", "{text}");
    assert!(read_values(&sent)
        .iter()
        .any(|m| m["method"] == "session/cancel"));
}

/// How each CLI is started over ACP (Gemini CLI by the name its version
/// knows), and OpenCode told to ask when the run asks.
#[test]
fn each_cli_starts_in_its_acp_mode() {
    for (cli, version, want, permission) in [
        ("gemini", "0.61.0", "--acp", ""),
        ("gemini", "0.33.2", "--experimental-acp", ""),
        (
            "opencode",
            "1.18.33",
            "acp",
            r#"{"bash":"ask","edit":"ask"}"#,
        ),
        ("qwen", "0.24.4", "--acp\n--approval-mode\ndefault", ""),
        ("copilot", "1.0.102", "--acp", ""),
    ] {
        let (argv, env) = (unique("argv"), unique("env"));
        let out = Command::new(BIN)
            .env("FAKE_ACP", "1")
            .env("FAKE_VERSION", version)
            .env("ACP_ARGV", &argv)
            .env("ACP_ENV", &env)
            .env_remove("OPENCODE_PERMISSION")
            .args(["run", cli, "--approval", "ask", "--cli"])
            .arg(root().join("tests/fake/cli"))
            .arg("say hello")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("Hello from "), "{cli}: {text}");
        assert_eq!(
            std::fs::read_to_string(&argv).unwrap().trim_end(),
            want,
            "{cli}"
        );
        assert_eq!(std::fs::read_to_string(&env).unwrap(), permission, "{cli}");
    }
}

/// `run opencode` (`auto`) speaks ACP from OpenCode 1.18.33 on even when
/// the run does not ask, as its text comes in deltas there (its JSON mode
/// writes each part whole): the real recording replays so, a resumed
/// session is loaded. Its JSON mode stays for what only it takes
/// (`--attach`, arguments after `--`, each said on stderr), for
/// an older version, and with `--transport stream`.
#[test]
fn opencode_streams_over_acp_unless_the_run_needs_its_json_mode() {
    let (out, sent, recorded) = opencode_replay("text", &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    valid(&text);
    let events = common::values(&text);
    let deltas = events
        .iter()
        .filter(|e| {
            e["type"] == "TEXT_MESSAGE_CONTENT"
                && !e["messageId"].as_str().unwrap().ends_with("-user")
        })
        .count();
    assert!(deltas > 1, "{deltas} deltas: {text}");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{text}");
    assert_sent_as_recorded("opencode text (auto)", &sent, &recorded);

    // A resumed session: loaded over ACP.
    let (argv, sent) = (unique("argv"), unique("sent"));
    let out = Command::new(BIN)
        .env("FAKE_ACP", "1")
        .env("FAKE_VERSION", "1.18.33")
        .env("ACP_ARGV", &argv)
        .env("ACP_SENT", &sent)
        .args(["run", "opencode", "--resume", "ses_1", "--cli"])
        .arg(root().join("tests/fake/cli"))
        .arg("say hello")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Hello from "), "{text}");
    assert_eq!(std::fs::read_to_string(&argv).unwrap(), "acp\n");
    let load = read_values(&sent)
        .into_iter()
        .find(|m| m["method"] == "session/load")
        .unwrap();
    assert_eq!(load["params"]["sessionId"], "ses_1");

    let image = unique("image").with_extension("png");
    std::fs::write(&image, b"\x89PNG\r\n\x1a\n").unwrap();
    let image = image.to_str().unwrap();
    for (version, args, says) in [
        ("1.18.33", &["--attach", image][..], "--attach"),
        (
            "1.18.33",
            &["--", "--agent", "plan"],
            "arguments after `--`",
        ),
        ("1.18.33", &["--transport", "stream"], ""),
        ("1.17.0", &[], ""),
    ] {
        let argv = unique("argv");
        let mut c = Command::new(BIN);
        c.env("FAKE_VERSION", version)
            .env("FAKE_ARGV", &argv)
            .args(["run", "opencode", "--cli"])
            .arg(root().join("tests/fake/cli"));
        let (before, after) = match args.iter().position(|a| *a == "--") {
            Some(i) => (&args[..i], &args[i..]),
            None => (args, &[][..]),
        };
        let out = c
            .args(before)
            .arg("say hello")
            .args(after)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let got = std::fs::read_to_string(&argv).unwrap();
        assert!(
            got.starts_with("run\n--format\njson\n"),
            "{version} {args:?}: {got}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let noticed = stderr.contains("keeps opencode in its JSON mode");
        assert_eq!(noticed, !says.is_empty(), "{version} {args:?}: {stderr}");
        assert!(stderr.contains(says), "{version} {args:?}: {stderr}");
    }
}

/// `run opencode ARGS` (OpenCode 1.18.33, `auto`) replaying the recording
/// of `scenario`: its output, and the files of what the client sent and
/// what the recorded client sent.
fn opencode_replay(scenario: &str, args: &[&str]) -> (std::process::Output, PathBuf, PathBuf) {
    let file = transcript("opencode", scenario);
    let (sent, recorded) = (unique("sent"), unique("recorded"));
    let out = Command::new(BIN)
        .env("ACP_REPLAY", &file)
        .env("ACP_VERSION", "1.18.33")
        .env("ACP_SENT", &sent)
        .env("ACP_RECORDED", &recorded)
        .args(["run", "opencode"])
        .args(args)
        .arg("--cli")
        .arg(agent())
        .arg(recorded_prompt(&file))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out, sent, recorded)
}

/// `run opencode --model` (auto: ACP from 1.18.33 on): the model is chosen
/// in the session (`session/set_config_option`) before the prompt, as the
/// real recording did, and the scripted model says it was asked for that
/// model. An agent that refuses the model, or offers no choice of model,
/// ends the run in a RUN_ERROR that says so.
#[test]
fn opencode_chooses_its_model_over_acp() {
    let (out, sent, recorded) = opencode_replay("model", &["--model", "scripted/scripted-other"]);
    let text = String::from_utf8(out.stdout).unwrap();
    valid(&text);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("JSON mode"), "{stderr}");
    assert_sent_as_recorded("opencode model", &sent, &recorded);
    let said: String = common::values(&text)
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        said.ends_with("This answer came from scripted-other."),
        "{said}"
    );
    assert_eq!(
        common::values(&text).last().unwrap()["type"],
        "RUN_FINISHED"
    );

    for (mode, model, says) in [
        ("models", "a/two", None),
        (
            "models",
            "a/zzz",
            Some("refused the model a/zzz (session/set_config_option): Invalid params"),
        ),
        ("", "a/two", Some("offers no choice of model")),
    ] {
        let sent = unique("sent");
        let out = Command::new(BIN)
            .env("ACP_MODE", mode)
            .env("ACP_SENT", &sent)
            .args([
                "run",
                "opencode",
                "--transport",
                "acp",
                "--model",
                model,
                "--cli",
            ])
            .arg(agent())
            .arg("hello")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        valid(&text);
        let end = common::values(&text).pop().unwrap();
        match says {
            None => {
                assert_eq!(end["type"], "RUN_FINISHED", "{text}");
                let asked: Vec<(Value, Value)> = read_values(&sent)
                    .into_iter()
                    .filter(|m| m["method"].is_string())
                    .map(|m| (m["id"].clone(), m["method"].clone()))
                    .collect();
                assert_eq!(
                    asked[2..],
                    [
                        (json!(2), json!("session/set_config_option")),
                        (json!(3), json!("session/prompt"))
                    ],
                    "{asked:?}"
                );
            }
            Some(says) => {
                assert_eq!(end["type"], "RUN_ERROR", "{text}");
                let message = end["message"].as_str().unwrap();
                assert!(message.contains(says), "{message}");
                assert!(message.contains(model), "{message}");
            }
        }
    }
}

/// `run opencode --effort` (auto: ACP from 1.18.33 on): the effort is
/// chosen in the session (`session/set_config_option`, OpenCode's option
/// `effort`, of category `thought_level`) before the prompt, as the real
/// recording did, and the scripted model says the request asked for it.
/// With a model, the model is chosen first and the effort among the levels
/// the agent offers for that model; one it does not offer, or an agent that
/// offers no effort, ends the run in a RUN_ERROR that names the effort.
#[test]
fn opencode_chooses_its_effort_over_acp() {
    let (out, sent, recorded) = opencode_replay("effort", &["--effort", "high"]);
    let text = String::from_utf8(out.stdout).unwrap();
    valid(&text);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("JSON mode"), "{stderr}");
    assert_sent_as_recorded("opencode effort", &sent, &recorded);
    let said: String = common::values(&text)
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        said.ends_with("This answer was asked with the effort high."),
        "{said}"
    );

    for (mode, model, effort, says) in [
        ("models", "", "high", None),
        ("models", "a/two", "max", None),
        (
            "models",
            "a/two",
            "high",
            Some("offers the efforts low, max for its model, not high"),
        ),
        ("", "", "high", Some("offers no choice of effort")),
    ] {
        let sent = unique("sent");
        let mut c = Command::new(BIN);
        c.env("ACP_MODE", mode).env("ACP_SENT", &sent).args([
            "run",
            "opencode",
            "--transport",
            "acp",
            "--effort",
            effort,
        ]);
        if !model.is_empty() {
            c.args(["--model", model]);
        }
        let out = c
            .arg("--cli")
            .arg(agent())
            .arg("hello")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        valid(&text);
        let end = common::values(&text).pop().unwrap();
        let chosen: Vec<(Value, Value)> = read_values(&sent)
            .into_iter()
            .filter(|m| m["method"] == "session/set_config_option")
            .map(|m| {
                (
                    m["params"]["configId"].clone(),
                    m["params"]["value"].clone(),
                )
            })
            .collect();
        match says {
            None => {
                assert_eq!(end["type"], "RUN_FINISHED", "{text}");
                let mut want = vec![(json!("effort"), json!(effort))];
                if !model.is_empty() {
                    want.insert(0, (json!("model"), json!(model)));
                }
                assert_eq!(chosen, want);
                let prompt = read_values(&sent)
                    .into_iter()
                    .find(|m| m["method"] == "session/prompt")
                    .unwrap();
                assert_eq!(prompt["id"], json!(2 + want.len()), "{prompt}");
            }
            Some(says) => {
                assert_eq!(end["type"], "RUN_ERROR", "{text}");
                let message = end["message"].as_str().unwrap();
                assert!(message.contains(says), "{message}");
                assert!(message.contains(effort), "{message}");
                assert!(!chosen.iter().any(|(id, _)| id == "effort"), "{chosen:?}");
            }
        }
    }
}

/// `--effort` reaches each CLI that has a choice of effort as its own
/// option, and is refused, before anything starts, by those that have
/// none.
#[test]
fn the_effort_is_each_cli_s_own_option() {
    for (cli, transport, want) in [
        ("claude", "auto", "--effort\nhigh\n"),
        ("codex", "exec", "-c\nmodel_reasoning_effort=high\n"),
        ("codex", "app-server", "-c\nmodel_reasoning_effort=high\n"),
        ("copilot", "stream", "--reasoning-effort=high\n"),
        ("copilot", "acp", "--reasoning-effort=high\n"),
        ("opencode", "stream", "--variant=high\n"),
    ] {
        let argv = unique("argv");
        let out = Command::new(BIN)
            .env("FAKE_VERSION", "1.18.33")
            .env("FAKE_ARGV", &argv)
            .env("ACP_ARGV", &argv)
            .args(["run", cli, "--transport", transport, "--effort", "high"])
            .arg("--cli")
            .arg(if transport == "acp" {
                agent()
            } else {
                root().join("tests/fake/cli")
            })
            .arg("say hello")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let got = std::fs::read_to_string(&argv).unwrap_or_default();
        assert!(
            got.contains(want),
            "{cli} {transport}: {got}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (cli, transport) in [
        ("gemini", "stream"),
        ("gemini", "acp"),
        ("qwen", "stream"),
        ("qwen", "acp"),
    ] {
        let out = Command::new(BIN)
            .args(["run", cli, "--transport", transport, "--effort", "high"])
            .arg("--cli")
            .arg(root().join("tests/fake/cli"))
            .arg("say hello")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("has no choice of a reasoning effort"),
            "{cli} {transport}: {stderr}"
        );
    }
    let out = Command::new(BIN)
        .args(["run", "claude", "--effort=-x", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--effort \"-x\""), "{stderr}");
}
