//! `serve` over the Agent Client Protocol: `serve gemini -- --approval ask`
//! replaying Gemini CLI's real permission request (the stand-in
//! `tests/fake/acp_agent.py`, reached through `tests/fake/cli` with
//! FAKE_ACP), and a thread's second turn loading the agent's session.
//! (`tests/conformance.rs` drives the same with the official HttpAgent.)

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

mod common;

use common::root;

fn tmp(name: &str) -> PathBuf {
    common::scratch("serve-acp", name)
}

fn post(addr: &str, body: &Value) -> Vec<Value> {
    let text = common::post_raw(addr, &body.to_string());
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    common::sse_events(&text)
}

fn input(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "protocolVersion": "1.0.0",
        "messages": [{"id": "m1", "role": "user", "content": text}],
    })
}

fn sent(file: &Path) -> Vec<Value> {
    common::values(&std::fs::read_to_string(file).unwrap_or_default())
}

fn assert_valid(runs: &[&[Value]]) {
    let text: String = runs
        .iter()
        .flat_map(|r| r.iter())
        .map(|e| format!("{e}\n"))
        .collect();
    agui_translate::check::check_bytes(text.as_bytes()).unwrap_or_else(|v| panic!("{v:?}\n{text}"));
}

/// Gemini CLI's real permission request reaches the page as an interrupt,
/// and the page's approval reaches Gemini CLI as its `proceed_once` option.
#[test]
fn a_page_approves_gemini_over_acp() {
    let sent_file = tmp("gemini-sent");
    let replay = root().join("testdata/acp/gemini-0.61.0/approval-allow.jsonl");
    let s = common::serve_run(
        "gemini",
        &[],
        &["--approval", "ask"],
        &[
            ("FAKE_ACP", Path::new("1")),
            ("ACP_REPLAY", &replay),
            ("ACP_SENT", &sent_file),
        ],
    );
    let one = post(&s.addr, &input("th", "r1", "Run echo in the shell."));
    let its = common::interrupts(&one);
    assert_eq!(its[0]["reason"], "tool_call");
    assert_eq!(
        its[0]["toolCallId"],
        "run_shell_command__run_shell_command_1795833764525_0"
    );
    let answered = |sent: &[Value]| {
        sent.iter()
            .find(|m| m["id"] == 0 && m["result"]["outcome"].is_object())
            .map(|m| m["result"]["outcome"].clone())
    };
    assert_eq!(answered(&sent(&sent_file)), None, "nothing answered yet");

    let mut resume = input("th", "r2", "Run echo in the shell.");
    resume["resume"] =
        json!([{"interruptId": its[0]["id"], "status": "resolved", "payload": {"approved": true}}]);
    let two = post(&s.addr, &resume);
    assert_eq!(two[0]["type"], "RUN_STARTED");
    assert!(two
        .iter()
        .any(|e| e["type"] == "TOOL_CALL_RESULT" && e["toolCallId"] == its[0]["toolCallId"]));
    assert_eq!(two.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(
        answered(&sent(&sent_file)),
        Some(json!({"outcome": "selected", "optionId": "proceed_once"}))
    );
    assert_valid(&[&one, &two]);
}

/// A thread's next turn loads the agent's session (`session/load`) and
/// prompts it there; the history the agent replays is not sent again. So
/// for any ACP agent, and for OpenCode 1.18.33 without `--approval ask`
/// (`auto` speaks ACP with it, whose text streams only there).
#[test]
fn a_second_turn_loads_the_agents_session() {
    for (cli, version) in [("acp", None), ("opencode", Some("1.18.33"))] {
        let sent_file = tmp(&format!("{cli}-load-sent"));
        let mut env = vec![
            ("FAKE_ACP", Path::new("1")),
            ("ACP_SENT", sent_file.as_path()),
        ];
        if let Some(v) = version {
            env.push(("FAKE_VERSION", Path::new(v)));
        }
        // `--cli` (the stand-in, here running the test agent) names the agent.
        let s = common::serve_run(cli, &[], &[], &env);
        let one = post(&s.addr, &input("th", "r1", "say hello"));
        assert_eq!(
            one.last().unwrap()["type"],
            "RUN_FINISHED",
            "{cli}: {one:?}"
        );
        let session = sent(&sent_file)
            .iter()
            .find(|m| m["method"] == "session/prompt")
            .unwrap()["params"]["sessionId"]
            .clone();
        std::fs::remove_file(&sent_file).unwrap();

        let two = post(&s.addr, &input("th", "r2", "say hello again"));
        assert_eq!(
            two.last().unwrap()["type"],
            "RUN_FINISHED",
            "{cli}: {two:?}"
        );
        let sent = sent(&sent_file);
        let load = sent.iter().find(|m| m["method"] == "session/load").unwrap();
        assert_eq!(load["params"]["sessionId"], session, "{cli}");
        let prompt = sent
            .iter()
            .find(|m| m["method"] == "session/prompt")
            .unwrap();
        assert_eq!(prompt["params"]["sessionId"], session, "{cli}");
        let text = serde_json::to_string(&two).unwrap();
        assert!(!text.contains("Earlier answer"), "{cli}: {text}");
        assert!(text.contains("Hello from "), "{cli}: {text}");
        assert_valid(&[&one, &two]);
    }
}

/// A page's `forwardedProps.model` reaches OpenCode over ACP (`auto` speaks
/// it from 1.18.33 on) as the model chosen in the session before the
/// prompt, as the real recording did; the scripted model says it was asked
/// for that model.
#[test]
fn a_page_chooses_opencode_s_model_over_acp() {
    let sent_file = tmp("opencode-model-sent");
    let replay = root().join("testdata/acp/opencode-1.18.33/model.jsonl");
    let s = common::serve_run(
        "opencode",
        &[],
        &[],
        &[
            ("FAKE_ACP", Path::new("1")),
            ("FAKE_VERSION", Path::new("1.18.33")),
            ("ACP_REPLAY", &replay),
            ("ACP_SENT", &sent_file),
        ],
    );
    let mut body = input("th", "r1", "Which model answers?");
    body["forwardedProps"] = json!({"model": "scripted/scripted-other"});
    let one = post(&s.addr, &body);
    assert_eq!(one.last().unwrap()["type"], "RUN_FINISHED", "{one:?}");
    let chosen = sent(&sent_file)
        .into_iter()
        .find(|m| m["method"] == "session/set_config_option")
        .unwrap();
    assert_eq!(chosen["params"]["configId"], "model");
    assert_eq!(chosen["params"]["value"], "scripted/scripted-other");
    let said: String = one
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert!(
        said.ends_with("This answer came from scripted-other."),
        "{said}"
    );
    assert_valid(&[&one]);
}
