//! `serve` gives a thread back when it kept none of its history: rebuilt
//! from the CLI's own transcript (real ones, recorded: see
//! `testdata/transcripts/`), or a request for the thread told why not. The
//! stand-in CLI of the `run` tests answers the turns.

use std::path::{Path, PathBuf};

mod common;
use common::{post_raw, root, serve, sse_events};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-serve-history-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_dir_all(&path);
    path
}

/// A RunAgentInput as the 1.0 HttpAgent sends it, with `messages`.
fn body(thread: &str, run: &str, messages: serde_json::Value) -> String {
    serde_json::json!({
        "threadId": thread, "runId": run, "protocolVersion": "1.0",
        "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": messages,
    })
    .to_string()
}

fn user(id: &str, text: &str) -> serde_json::Value {
    serde_json::json!({"id": id, "role": "user", "content": text})
}

/// The status and events of one request.
fn post(addr: &str, body: &str) -> (u16, Vec<serde_json::Value>) {
    let text = post_raw(addr, body);
    let code = text[9..12].parse().unwrap();
    (code, sse_events(&text))
}

fn types(events: &[serde_json::Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// The thread's history files in the state directory, removed.
fn forget_history(state: &Path, cli: &str) {
    let mut removed = 0;
    for entry in std::fs::read_dir(state.join(cli)).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".history.json") {
            std::fs::remove_file(path).unwrap();
            removed += 1;
        }
    }
    assert!(removed > 0, "no history was kept to remove");
}

/// Each message as `role: text`.
fn said(messages: &serde_json::Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| {
            Some(format!(
                "{}: {}",
                m["role"].as_str()?,
                m["content"].as_str()?
            ))
        })
        .collect()
}

/// The session id a recording reports (its `key`, e.g. `session_id`).
fn session_of(recording: &Path, key: &str) -> String {
    let text = std::fs::read_to_string(recording).unwrap();
    let at = text.find(&format!("\"{key}\":\"")).unwrap() + key.len() + 4;
    text[at..].split('"').next().unwrap().to_owned()
}

const TWO_TURNS: [&str; 4] = [
    "user: Remember the word 'teal'.",
    "assistant: I will remember teal.",
    "user: Which word did I ask you to remember?",
    "assistant: The word was teal.",
];

/// The thread `t` gets a first turn, its kept history is lost, and then
/// it is asked for with no message: rebuilt, both turns said.
fn asked_for_after_its_history_is_lost(addr: &str, state: &Path, cli: &str) {
    let (code, _) = post(
        addr,
        &body("t", "r1", serde_json::json!([user("m1", "Hi")])),
    );
    assert_eq!(code, 200);
    forget_history(state, cli);
    let (code, back) = post(addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(code, 200);
    assert_eq!(
        types(&back),
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(said(&back[1]["messages"]), TWO_TURNS);
}

#[test]
fn claude_code_s_session_file_gives_a_thread_back_whose_history_was_lost() {
    let state = tmp("claude-state");
    let config = tmp("claude-config");
    let argv = tmp("claude-argv");
    let recording = root().join("testdata/claude/2.1.332/text.jsonl");
    let session = session_of(&recording, "session_id");
    // Where Claude Code keeps it: a folder named after the working
    // directory (here another one's, found by the session's name).
    let folder = config.join("projects/-scratch-work");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        root().join("testdata/transcripts/claude-2.1.332/resume.transcript"),
        folder.join(format!("{session}.jsonl")),
    )
    .unwrap();
    let env: &[(&str, &Path)] = &[
        ("FAKE_REPLAY", &recording),
        ("FAKE_ARGV", &argv),
        ("CLAUDE_CONFIG_DIR", &config),
    ];
    let server = serve("claude", &["--state-dir", state.to_str().unwrap()], env);
    let (code, _) = post(
        &server.addr,
        &body("t", "r1", serde_json::json!([user("m1", "Hi")])),
    );
    assert_eq!(code, 200);
    forget_history(&state, "claude");

    // Asked for, with no message: rebuilt, and no CLI started.
    let _ = std::fs::remove_file(&argv);
    let (code, back) = post(&server.addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(code, 200);
    assert_eq!(
        types(&back),
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(said(&back[1]["messages"]), TWO_TURNS);
    assert!(!argv.exists(), "asking for the thread started a CLI");
    // Kept from then on: the same answer with the transcript gone.
    std::fs::remove_file(folder.join(format!("{session}.jsonl"))).unwrap();
    let (_, again) = post(&server.addr, &body("t", "r3", serde_json::json!([])));
    assert_eq!(again[1]["messages"], back[1]["messages"]);

    // A reloaded page's new message: the rebuilt turns first, then it.
    std::fs::copy(
        root().join("testdata/transcripts/claude-2.1.332/resume.transcript"),
        folder.join(format!("{session}.jsonl")),
    )
    .unwrap();
    forget_history(&state, "claude");
    let (_, reloaded) = post(
        &server.addr,
        &body("t", "r4", serde_json::json!([user("m4", "And?")])),
    );
    assert_eq!(
        types(&reloaded)[..3],
        ["RUN_STARTED", "MESSAGES_SNAPSHOT", "MESSAGES_SNAPSHOT"]
    );
    assert_eq!(said(&reloaded[1]["messages"]), TWO_TURNS);
    let with_new = said(&reloaded[2]["messages"]);
    assert_eq!(with_new[..4], TWO_TURNS);
    assert_eq!(with_new[4], "user: And?");
    assert_eq!(reloaded.last().unwrap()["type"], "RUN_FINISHED");
    // And the thread's history goes on from there.
    let (_, after) = post(&server.addr, &body("t", "r5", serde_json::json!([])));
    let after = said(&after[1]["messages"]);
    assert_eq!(after[..5], with_new[..]);

    // A page that sends the earlier turns (under its own ids) holds them:
    // no snapshot.
    forget_history(&state, "claude");
    let held = serde_json::json!([
        user("p1", "Remember the word 'teal'."),
        user("p2", "Which word?"),
        user("p3", "More?")
    ]);
    let (_, more) = post(&server.addr, &body("t", "r6", held));
    assert!(!types(&more).contains(&"MESSAGES_SNAPSHOT"), "{more:?}");
}

#[test]
fn copilot_cli_s_session_events_give_a_thread_back() {
    let state = tmp("copilot-state");
    let home = tmp("copilot-home");
    let recording = root().join("testdata/copilot/1.0.102/text.jsonl");
    let session = session_of(&recording, "sessionId");
    let folder = home.join("session-state").join(&session);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        root().join("testdata/transcripts/copilot-1.0.102/resume.transcript"),
        folder.join("events.jsonl"),
    )
    .unwrap();
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording), ("COPILOT_HOME", &home)];
    let server = serve("copilot", &["--state-dir", state.to_str().unwrap()], env);
    asked_for_after_its_history_is_lost(&server.addr, &state, "copilot");
}

#[test]
fn a_thread_that_cannot_be_rebuilt_is_told_why() {
    // Gemini CLI: its chats are in a format of its own.
    let state = tmp("gemini-state");
    let recording = root().join("testdata/gemini/0.61.0/resume.jsonl");
    let server = serve(
        "gemini",
        &["--state-dir", state.to_str().unwrap()],
        &[("FAKE_REPLAY", &recording)],
    );
    let (code, _) = post(
        &server.addr,
        &body("t", "r1", serde_json::json!([user("m1", "Hi")])),
    );
    assert_eq!(code, 200);
    forget_history(&state, "gemini");
    let (code, back) = post(&server.addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(code, 200);
    assert_eq!(types(&back), ["RUN_STARTED", "RUN_ERROR"]);
    assert_eq!(back[1]["code"], "history_unavailable");
    let why = back[1]["message"].as_str().unwrap();
    assert!(
        why.contains("not kept") && why.contains("Gemini CLI"),
        "{why}"
    );
    // A new message runs as before, without the turns it cannot give.
    let (_, run) = post(
        &server.addr,
        &body("t", "r3", serde_json::json!([user("m3", "And?")])),
    );
    assert!(!types(&run).contains(&"MESSAGES_SNAPSHOT"), "{run:?}");
    assert_eq!(run.last().unwrap()["type"], "RUN_FINISHED");
    // A thread the server does not know: 400, as before.
    let (code, _) = post(&server.addr, &body("other", "r4", serde_json::json!([])));
    assert_eq!(code, 400);

    // Claude Code's session file missing: said without the server's paths.
    let state = tmp("claude-missing-state");
    let config = tmp("claude-missing-config");
    std::fs::create_dir_all(config.join("projects")).unwrap();
    let recording = root().join("testdata/claude/2.1.332/text.jsonl");
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording), ("CLAUDE_CONFIG_DIR", &config)];
    let server = serve("claude", &["--state-dir", state.to_str().unwrap()], env);
    post(
        &server.addr,
        &body("t", "r1", serde_json::json!([user("m1", "Hi")])),
    );
    forget_history(&state, "claude");
    let (_, back) = post(&server.addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(types(&back), ["RUN_STARTED", "RUN_ERROR"]);
    let why = back[1]["message"].as_str().unwrap();
    assert!(why.contains("Claude Code's transcript"), "{why}");
    assert!(!why.contains('/'), "a path of the server's in {why}");
}

#[test]
fn a_message_with_files_comes_back_with_a_stand_in_for_each() {
    use base64::Engine as _;
    let b64 = |f: &str| {
        let bytes = std::fs::read(root().join("testdata/files").join(f)).unwrap();
        (
            base64::engine::general_purpose::STANDARD.encode(&bytes),
            bytes.len(),
        )
    };
    let ((png, png_len), (pdf, pdf_len)) = (b64("dot.png"), b64("dot.pdf"));
    let argv = tmp("files-argv");
    let recording = root().join("testdata/claude/2.1.332/text.jsonl");
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording), ("FAKE_ARGV", &argv)];
    let server = serve("claude", &[], env);
    let message = serde_json::json!([{"id": "m1", "role": "user", "content": [
        {"type": "text", "text": "What is on this page?"},
        {"type": "image", "source": {"type": "data", "value": png, "mimeType": "image/png"},
         "metadata": {"filename": "shot.png"}},
        {"type": "binary", "mimeType": "application/pdf", "data": pdf},
    ]}]);
    let (code, _) = post(&server.addr, &body("t", "r1", message.clone()));
    assert_eq!(code, 200);
    let (_, back) = post(&server.addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(
        types(&back),
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    let kept = &back[1]["messages"][0];
    assert_eq!(kept["id"], "m1");
    let expected = serde_json::json!([
        {"type": "text", "text": "What is on this page?"},
        {"type": "text", "text": format!(
            "[image \"shot.png\" (image/png, {png_len} bytes): not kept in the thread's history]")},
        {"type": "text", "text": format!(
            "[binary (application/pdf, {pdf_len} bytes): not kept in the thread's history]")},
    ]);
    assert_eq!(kept["content"], expected);
    // The page that sends the message again asks for the thread: it is
    // not run again.
    let _ = std::fs::remove_file(&argv);
    let (_, again) = post(&server.addr, &body("t", "r3", message));
    assert_eq!(
        types(&again),
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    assert!(
        !argv.exists(),
        "a message with files the thread holds ran again"
    );
}

#[test]
fn codex_s_app_server_reads_a_thread_back_whose_history_was_lost() {
    let state = tmp("codex-state");
    let sent = tmp("codex-sent");
    let recording = root().join("testdata/codex/0.169.0/resume.jsonl");
    // The real app-server's answer to `initialize` and `thread/read`.
    let server_side = root().join("testdata/transcripts/codex-0.169.0/thread-read.transcript");
    let env: &[(&str, &Path)] = &[
        ("FAKE_REPLAY", &recording),
        ("FAKE_SERVER", &server_side),
        ("FAKE_SENT", &sent),
    ];
    let server = serve("codex", &["--state-dir", state.to_str().unwrap()], env);
    asked_for_after_its_history_is_lost(&server.addr, &state, "codex");
    // It asked for the thread the run reported, with its turns.
    let asked = std::fs::read_to_string(&sent).unwrap();
    let read: serde_json::Value = asked
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["method"] == "thread/read")
        .unwrap();
    let session = session_of(&recording, "thread_id");
    assert_eq!(read["params"]["threadId"], session.as_str());
    assert_eq!(read["params"]["includeTurns"], true);
}

/// An ACP agent's session, loaded (`session/load`) in the run's directory
/// with no MCP server: what it replays before its answer is the thread's.
#[test]
fn an_acp_agent_loads_a_thread_back_whose_history_was_lost() {
    let state = tmp("acp-state");
    let sent = tmp("acp-sent");
    let env: &[(&str, &Path)] = &[("FAKE_ACP", Path::new("1")), ("ACP_SENT", &sent)];
    let server = common::serve_run("acp", &["--state-dir", state.to_str().unwrap()], &[], env);
    let (code, _) = post(
        &server.addr,
        &body("t", "r1", serde_json::json!([user("m1", "say hello")])),
    );
    assert_eq!(code, 200);
    forget_history(&state, "acp");
    let (code, back) = post(&server.addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(code, 200);
    assert_eq!(
        types(&back),
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    // The stand-in replays the session around its answer, as Gemini CLI
    // does (a last chunk after it): all of it is the session's.
    assert_eq!(
        said(&back[1]["messages"]),
        [
            "user: earlier",
            "assistant: Earlier answer.Earlier answer, replayed late."
        ]
    );
    let asked: Vec<serde_json::Value> = std::fs::read_to_string(&sent)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let session = asked
        .iter()
        .find(|l| l["method"] == "session/prompt")
        .unwrap()["params"]["sessionId"]
        .clone();
    let load = asked
        .iter()
        .find(|l| l["method"] == "session/load")
        .unwrap();
    assert_eq!(load["params"]["sessionId"], session);
    assert_eq!(load["params"]["mcpServers"], serde_json::json!([]));
    assert!(load["params"]["cwd"].as_str().unwrap().starts_with('/'));
    // The prompt was sent once: the thread given back started no turn.
    let prompts = asked.iter().filter(|l| l["method"] == "session/prompt");
    assert_eq!(prompts.count(), 1);
    // Asked again, the rebuilt history is kept: no second load.
    let (_, again) = post(&server.addr, &body("t", "r3", serde_json::json!([])));
    assert_eq!(said(&again[1]["messages"]).len(), 2);
    let loads = std::fs::read_to_string(&sent)
        .unwrap()
        .matches("session/load")
        .count();
    assert_eq!(loads, 1);

    // OpenCode 1.18.33 with `--transport auto`, which takes ACP by itself:
    // the thread's session is known to be one made over ACP, and is loaded
    // back so (the server's options alone do not say so).
    let state = tmp("opencode-auto-acp-state");
    let sent = tmp("opencode-auto-acp-sent");
    let env: &[(&str, &Path)] = &[
        ("FAKE_ACP", Path::new("1")),
        ("FAKE_VERSION", Path::new("1.18.33")),
        ("ACP_SENT", &sent),
    ];
    let server = common::serve_run(
        "opencode",
        &["--state-dir", state.to_str().unwrap()],
        &[],
        env,
    );
    let (_, first) = post(
        &server.addr,
        &body("t", "r1", serde_json::json!([user("m1", "say hello")])),
    );
    assert_eq!(first.last().unwrap()["type"], "RUN_FINISHED", "{first:?}");
    forget_history(&state, "opencode");
    let (_, back) = post(&server.addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(types(&back)[1], "MESSAGES_SNAPSHOT", "{back:?}");
    assert_eq!(
        said(&back[1]["messages"]),
        [
            "user: earlier",
            "assistant: Earlier answer.Earlier answer, replayed late."
        ]
    );
    let sent = std::fs::read_to_string(&sent).unwrap();
    assert_eq!(sent.matches("session/load").count(), 1);

    // An agent that cannot load sessions: told why.
    let state = tmp("acp-nocaps-state");
    let env: &[(&str, &Path)] = &[
        ("FAKE_ACP", Path::new("1")),
        ("ACP_MODE", Path::new("nocaps")),
    ];
    let server = common::serve_run("acp", &["--state-dir", state.to_str().unwrap()], &[], env);
    post(
        &server.addr,
        &body("t", "r1", serde_json::json!([user("m1", "say hello")])),
    );
    forget_history(&state, "acp");
    let (_, back) = post(&server.addr, &body("t", "r2", serde_json::json!([])));
    assert_eq!(types(&back), ["RUN_STARTED", "RUN_ERROR"]);
    assert_eq!(back[1]["code"], "history_unavailable");
    let why = back[1]["message"].as_str().unwrap();
    assert!(why.contains("no loadSession capability"), "{why}");
}
