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

const GEMINI_CALL: &str = "mcp_page_pick_branch__mcp_page_pick_branch_1795864073288_0";

/// `serve gemini` with `run_args`, the stand-in replaying Gemini CLI
/// 0.61.0's page-tool recording: the client's lines go to `sent`, the
/// answers its `tools/call` requests got to `page`.
fn gemini_with_tools(run_args: &[&str], sent: &Path, page: &Path) -> common::Server {
    let _ = std::fs::remove_file(sent);
    let _ = std::fs::remove_file(page);
    let replay = root().join("testdata/acp/gemini-0.61.0/page-tool.jsonl");
    let pid = page.with_extension("pid");
    common::serve_run(
        "gemini",
        &[],
        run_args,
        &[
            ("FAKE_ACP", Path::new("1")),
            ("ACP_REPLAY", &replay),
            ("ACP_SENT", sent),
            ("ACP_PAGE_SENT", page),
            ("ACP_PID", &pid),
        ],
    )
}

fn with_tools(mut input: Value) -> Value {
    input["tools"] = json!([{"name": "pick_branch", "description": "Pick a branch.",
        "parameters": {"type": "object", "properties": {"branches": {"type": "array"}}}}]);
    input
}

/// The follow-up that answers Gemini CLI's call.
fn answered(thread: &str, run: &str) -> Value {
    let mut next = with_tools(input(thread, run, "Which branch should I work on?"));
    next["messages"] = json!([
        {"id": "m1", "role": "user", "content": "Which branch should I work on?"},
        {"id": "a1", "role": "assistant", "toolCalls": [{"id": GEMINI_CALL, "type": "function",
            "function": {"name": "pick_branch", "arguments": "{\"branches\":[\"main\",\"dev\"]}"}}]},
        {"id": "t1", "role": "tool", "toolCallId": GEMINI_CALL, "content": "dev"},
    ]);
    next
}

/// With `--approval ask`, Gemini CLI's permission request for a call of the
/// page's tool is granted by the run (`proceed_once`), not made an
/// interrupt: the run ends with the call pending, named by the page's tool
/// with the arguments it reached the page's server with, and the page's
/// answer is the call's result inside Gemini CLI.
#[test]
fn gemini_s_permission_for_the_page_s_tool_is_granted_without_an_interrupt() {
    let (sent_file, page) = (tmp("gemini-page-sent"), tmp("gemini-page-results"));
    let s = gemini_with_tools(&["--approval", "ask"], &sent_file, &page);
    let one = post(
        &s.addr,
        &with_tools(input("tp", "r1", "Which branch should I work on?")),
    );
    let end = one.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{one:?}");
    assert_eq!(end["outcome"]["type"], "success", "{end}");
    assert_eq!(end["outcome"]["pendingToolCallIds"], json!([GEMINI_CALL]));
    assert!(
        !one.iter().any(|e| e["type"] == "CUSTOM"),
        "the page is asked no approval: {one:?}"
    );
    let start = one.iter().find(|e| e["type"] == "TOOL_CALL_START").unwrap();
    assert_eq!(start["toolCallName"], "pick_branch");
    let args = one.iter().find(|e| e["type"] == "TOOL_CALL_ARGS").unwrap();
    let args: Value = serde_json::from_str(args["delta"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"branches": ["main", "dev"]}));
    let session_new = sent(&sent_file)
        .into_iter()
        .find(|m| m["method"] == "session/new")
        .unwrap();
    let server = &session_new["params"]["mcpServers"][0];
    assert_eq!(
        (&server["type"], &server["name"]),
        (&json!("http"), &json!("page"))
    );
    assert!(server["url"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    let granted = sent(&sent_file)
        .into_iter()
        .find(|m| m["id"] == 0 && m["result"].is_object())
        .unwrap();
    assert_eq!(
        granted["result"]["outcome"],
        json!({"outcome": "selected", "optionId": "proceed_once"})
    );
    // Listed, and not answered before the follow-up.
    assert_eq!(sent(&page).len(), 1, "{:?}", sent(&page));

    let two = post(&s.addr, &answered("tp", "r2"));
    assert_eq!(two[0]["runId"], "r2");
    let end = two.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{two:?}");
    assert!(end["outcome"]["pendingToolCallIds"].is_null(), "{end}");
    assert!(
        !two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "{two:?}"
    );
    let results = sent(&page);
    assert_eq!(results[1]["content"][0]["text"], "dev", "{results:?}");
    assert_eq!(results[1]["isError"], false);
    assert_valid(&[&one, &two]);
}

/// No answer within `--tool-timeout`: Gemini CLI's call gets an error its
/// model reads, and an answer after that is refused.
#[test]
fn gemini_s_call_the_page_does_not_answer_in_time_gets_an_error() {
    let (sent_file, page) = (tmp("gemini-late-sent"), tmp("gemini-late-results"));
    let s = gemini_with_tools(&["--tool-timeout", "1s"], &sent_file, &page);
    let one = post(
        &s.addr,
        &with_tools(input("tl", "r1", "Which branch should I work on?")),
    );
    assert_eq!(
        one.last().unwrap()["outcome"]["pendingToolCallIds"],
        json!([GEMINI_CALL])
    );
    common::until(
        "the call's error",
        std::time::Duration::from_secs(10),
        || sent(&page).len() == 2,
    );
    let r = &sent(&page)[1];
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not answer this tool call within 1s"),
        "{r}"
    );
    // The agent is stopped, and its run ends.
    let pid = std::fs::read_to_string(page.with_extension("pid")).unwrap();
    common::until(
        "the agent's end",
        std::time::Duration::from_secs(10),
        || !Path::new(&format!("/proc/{}", pid.trim())).exists(),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let late = post(&s.addr, &answered("tl", "r2"));
    let end = late.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR", "{late:?}");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("no answer came within the tool timeout"),
        "{end}"
    );
}

/// An agent whose `initialize` answer does not say it reaches MCP servers
/// over HTTP cannot take the page's tools: the run ends in an error that
/// says so, and no prompt is sent.
#[test]
fn an_agent_without_mcp_over_http_cannot_take_the_page_s_tools() {
    let sent_file = tmp("nohttp-sent");
    let _ = std::fs::remove_file(&sent_file);
    let s = common::serve_run(
        "gemini",
        &[],
        &[],
        &[("FAKE_ACP", Path::new("1")), ("ACP_SENT", &sent_file)],
    );
    let one = post(&s.addr, &with_tools(input("tn", "r1", "say hello")));
    let end = one.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR", "{one:?}");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("Gemini CLI cannot reach the page's tools (its initialize answer has no mcpCapabilities.http)"),
        "{end}"
    );
    assert!(!sent(&sent_file)
        .iter()
        .any(|m| m["method"] == "session/prompt"));
}
