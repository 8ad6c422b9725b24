//! Tools from the page: `agui-translate serve claude` offers a request's
//! `tools` to Claude Code, a call of one ends the run with the call pending
//! and the CLI alive, and the thread's next request answers it. The
//! stand-in CLI (`tests/fake/cli`, FAKE_CONTROL) replays the real Claude
//! Code 2.1.332 calling a page's tool (`scripts/record`, scenarios
//! page-tool and page-tools-two), and waits for each answer.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");
const CALL_A: &str = "toolu_m0000scripted";
const CALL_B: &str = "toolu_m0001scripted";

use common::root;

fn tmp(name: &str) -> PathBuf {
    common::scratch("serve-tools", name)
}

/// `serve claude` replaying the recording `scenario`; the CLI's stdin
/// lines go to `sent`, its arguments to `argv`.
fn server(scenario: &str, sent: &Path, argv: &Path, run_args: &[&str]) -> common::Server {
    let replay = root()
        .join("testdata/claude/2.1.332")
        .join(format!("{scenario}.jsonl"));
    common::serve_run(
        "claude",
        &[],
        run_args,
        &[
            ("FAKE_CONTROL", &replay),
            ("FAKE_SENT", sent),
            ("FAKE_ARGV", argv),
        ],
    )
}

/// The status line and the events of one POST.
fn post(addr: &str, body: &Value) -> (String, Vec<Value>) {
    let text = common::post_raw(addr, &body.to_string());
    assert!(
        !text.contains(": agui-translate"),
        "the marker is not sent: {text}"
    );
    let status = text.lines().next().unwrap_or_default().to_owned();
    (status, common::sse_events(&text))
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The page's {name}."),
           "parameters": {"type": "object", "properties": {}}})
}

/// A first request as `HttpAgent` 1.0 sends it, with the page's tools.
fn first(thread: &str, tools: &[&str]) -> Value {
    json!({
        "threadId": thread, "runId": "r1", "protocolVersion": "1.0.0",
        "state": {}, "context": [], "forwardedProps": {},
        "tools": tools.iter().map(|t| tool(t)).collect::<Vec<_>>(),
        "messages": [{"id": "m1", "role": "user", "content": "Which branch?"}],
    })
}

/// The follow-up: all messages so far, the assistant's calls and the
/// page's answers to them.
fn follow_up(thread: &str, run: &str, tools: &[&str], answers: &[(&str, &str)]) -> Value {
    let mut b = first(thread, tools);
    b["runId"] = json!(run);
    let msgs = b["messages"].as_array_mut().unwrap();
    msgs.push(json!({"id": "a1", "role": "assistant", "toolCalls": answers.iter().map(|(id, _)| json!({
        "id": id, "type": "function", "function": {"name": "pick_branch", "arguments": "{}"}})).collect::<Vec<_>>()}));
    for (i, (id, text)) in answers.iter().enumerate() {
        msgs.push(
            json!({"id": format!("t{i}"), "role": "tool", "toolCallId": id, "content": text}),
        );
    }
    b
}

fn sent(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `tools/call` results the CLI was sent.
/// The follow-up that answers both `calls` ("main", then "shown: 3
/// hunks"): its run finishes, and the CLI got both answers, in order.
fn both_answered(
    addr: &str,
    (thread, run): (&str, &str),
    tools: &[&str],
    calls: [&str; 2],
    sent_file: &Path,
) -> Vec<Value> {
    let answers = [(calls[0], "main"), (calls[1], "shown: 3 hunks")];
    let (_, two) = post(addr, &follow_up(thread, run, tools, &answers));
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    let got: Vec<Value> = results(sent_file)
        .iter()
        .map(|r| r["content"][0]["text"].clone())
        .collect();
    assert_eq!(got, [json!("main"), json!("shown: 3 hunks")]);
    two
}

fn results(file: &Path) -> Vec<Value> {
    sent(file)
        .into_iter()
        .filter_map(|l| {
            let r = &l["response"]["response"]["mcp_response"]["result"];
            r.get("content").is_some().then(|| r.clone())
        })
        .collect()
}

/// The tools the page's server listed to the CLI (its `tools/list`
/// result).
fn listed(file: &Path) -> Value {
    sent(file)
        .into_iter()
        .find_map(|l| {
            l["response"]["response"]["mcp_response"]["result"]
                .get("tools")
                .cloned()
        })
        .expect("tools/list answered")
}

fn last(events: &[Value]) -> &Value {
    events.last().expect("events")
}

/// The responses together are valid AG-UI.
fn assert_valid(responses: &[&[Value]]) {
    let file = tmp(&format!("check-{}.ndjson", responses.len()));
    let text: String = responses
        .iter()
        .flat_map(|r| r.iter())
        .map(|e| format!("{e}\n"))
        .collect();
    std::fs::write(&file, &text).unwrap();
    let out = std::process::Command::new(BIN)
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_call_of_the_page_s_tool_waits_for_the_page_and_its_answer_reaches_the_cli() {
    let (sent_file, argv) = (tmp("one-sent"), tmp("one-argv"));
    let s = server("page-tool", &sent_file, &argv, &[]);
    let (status, one) = post(&s.addr, &first("t1", &["pick_branch"]));
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let start = one
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .expect("a call");
    assert_eq!(start["toolCallName"], "pick_branch", "the page's own name");
    assert_eq!(start["toolCallId"], CALL_A);
    assert!(one.iter().any(|e| e["type"] == "TOOL_CALL_END"));
    assert!(
        !one.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "{one:?}"
    );
    assert_eq!(
        last(&one)["outcome"],
        json!({"type": "success", "pendingToolCallIds": [CALL_A]})
    );
    // The CLI was offered the tools through the page's server.
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(
        args.contains(r#"{"mcpServers":{"page":{"type":"sdk","name":"page"}}}"#),
        "{args}"
    );
    assert!(args.contains("mcp__page"), "{args}");
    let list = listed(&sent_file);
    assert_eq!(list[0]["name"], "pick_branch");
    assert!(results(&sent_file).is_empty(), "nothing answered yet");

    let (_, two) = post(
        &s.addr,
        &follow_up("t1", "r2", &["pick_branch"], &[(CALL_A, "dev")]),
    );
    assert_eq!(two[0]["type"], "RUN_STARTED");
    assert_eq!(two[0]["runId"], "r2");
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    assert!(
        !two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "the page holds the result"
    );
    let text: String = two
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The page answered: dev");
    assert_eq!(
        results(&sent_file),
        [json!({"content": [{"type": "text", "text": "dev"}], "isError": false})]
    );
    assert_valid(&[&one, &two]);
}

/// The real Qwen Code 0.24.4 calling the page's tools
/// (`testdata/qwen/0.24.4`, the same scenarios): its call ids.
const QWEN_CALL_A: &str = "call_m0000scripted";
const QWEN_CALL_B: &str = "call_m0001scripted";

/// `serve qwen` replaying Qwen Code's recording `scenario`.
fn qwen_server(scenario: &str, sent: &Path, argv: &Path, run_args: &[&str]) -> common::Server {
    let replay = root()
        .join("testdata/qwen/0.24.4")
        .join(format!("{scenario}.jsonl"));
    common::serve_run(
        "qwen",
        &[],
        run_args,
        &[
            ("FAKE_CONTROL", &replay),
            ("FAKE_SENT", sent),
            ("FAKE_ARGV", argv),
        ],
    )
}

/// The names of the calls a response starts.
fn started(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect()
}

/// Qwen Code takes the page's server from the host's `initialize`
/// (`sdkMcpServers`), sent before the prompt on its stdin, and reaches MCP
/// tools through `tool_search` and its `tool_call` bridge: the call is
/// still named by the page's tool, with the arguments given to it.
#[test]
fn qwen_gets_the_page_s_tools_as_an_sdk_server_declared_in_initialize() {
    let (sent_file, argv) = (tmp("qwen-sent"), tmp("qwen-argv"));
    let s = qwen_server("page-tool", &sent_file, &argv, &[]);
    let (status, one) = post(&s.addr, &first("q1", &["pick_branch"]));
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(started(&one), ["tool_search", "pick_branch"], "{one:?}");
    let args: String = one
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_ARGS" && e["toolCallId"] == QWEN_CALL_A)
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, r#"{"branches":["main","dev"]}"#);
    assert!(
        !one.iter()
            .any(|e| e["type"] == "TOOL_CALL_RESULT" && e["toolCallId"] == QWEN_CALL_A),
        "{one:?}"
    );
    assert_eq!(
        last(&one)["outcome"],
        json!({"type": "success", "pendingToolCallIds": [QWEN_CALL_A]})
    );
    // The prompt goes in on stdin, after the `initialize` that declares
    // the page's server.
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(args.contains("--input-format\nstream-json\n"), "{args}");
    assert!(!args.lines().any(|l| l == "-p"), "{args}");
    let lines = sent(&sent_file);
    assert_eq!(
        lines[0]["request"],
        json!({"subtype": "initialize", "sdkMcpServers": {"page": {"name": "page"}}})
    );
    assert_eq!(lines[1]["type"], "user", "{lines:?}");
    assert!(results(&sent_file).is_empty(), "nothing answered yet");

    let (_, two) = post(
        &s.addr,
        &follow_up("q1", "r2", &["pick_branch"], &[(QWEN_CALL_A, "dev")]),
    );
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    let text: String = two
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The page answered: dev");
    assert_eq!(
        results(&sent_file),
        [json!({"content": [{"type": "text", "text": "dev"}], "isError": false})]
    );
    assert_valid(&[&one, &two]);
}

#[test]
fn qwen_s_two_calls_are_answered_together() {
    let (sent_file, argv) = (tmp("qwen-two-sent"), tmp("qwen-two-argv"));
    let s = qwen_server("page-tools-two", &sent_file, &argv, &[]);
    let tools = ["pick_branch", "show_diff"];
    let (_, one) = post(&s.addr, &first("q2", &tools));
    assert_eq!(started(&one), ["tool_search", "pick_branch", "show_diff"]);
    assert_eq!(
        last(&one)["outcome"]["pendingToolCallIds"],
        json!([QWEN_CALL_A, QWEN_CALL_B])
    );
    let two = both_answered(
        &s.addr,
        ("q2", "r2"),
        &tools,
        [QWEN_CALL_A, QWEN_CALL_B],
        &sent_file,
    );
    assert_valid(&[&one, &two]);
}

/// A request without tools starts Qwen Code as it always has: the prompt
/// with `-p`, no control layer, its stdin closed.
#[test]
fn qwen_without_the_page_s_tools_runs_as_before() {
    let argv = tmp("qwen-plain-argv");
    let replay = root().join("testdata/qwen/0.24.4/text.jsonl");
    let s = common::serve_run(
        "qwen",
        &[],
        &[],
        &[("FAKE_REPLAY", &replay), ("FAKE_ARGV", &argv)],
    );
    let (status, events) = post(&s.addr, &first("q3", &[]));
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(last(&events)["type"], "RUN_FINISHED", "{events:?}");
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(args.starts_with("-p\nWhich branch?\n"), "{args}");
    assert!(!args.contains("--input-format"), "{args}");
    assert_valid(&[&events]);
}

/// Over ACP, Qwen Code takes the page's tools (by the HTTP server given in
/// `session/new`) but not the state's tool, which comes only by its
/// control layer's route: `--state-file` is refused, saying so.
#[test]
fn qwen_takes_the_state_s_tool_on_its_control_layer_only() {
    let state = tmp("qwen-acp-state.json");
    let out = std::process::Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "qwen", "--transport", "acp", "--cli"])
        .arg(root().join("tests/fake/cli"))
        .arg("--state-file")
        .arg(&state)
        .arg("hello")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("--state-file: qwen takes the state's tool on its stream-json control layer only, not over ACP (--transport acp, --approval ask)"),
        "{err}"
    );
}

#[test]
fn two_calls_are_answered_together() {
    let (sent_file, argv) = (tmp("two-sent"), tmp("two-argv"));
    let s = server("page-tools-two", &sent_file, &argv, &[]);
    let tools = ["pick_branch", "show_diff"];
    let (_, one) = post(&s.addr, &first("t2", &tools));
    let names: Vec<&str> = one
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect();
    assert_eq!(names, tools);
    assert_eq!(
        last(&one)["outcome"]["pendingToolCallIds"],
        json!([CALL_A, CALL_B])
    );
    // Answering one of two is refused, and changes nothing.
    let (_, partial) = post(&s.addr, &follow_up("t2", "r2", &tools, &[(CALL_A, "main")]));
    assert_eq!(last(&partial)["type"], "RUN_ERROR");
    assert_eq!(last(&partial)["code"], "invalid_tool_result");
    assert!(results(&sent_file).is_empty());
    let two = both_answered(&s.addr, ("t2", "r3"), &tools, [CALL_A, CALL_B], &sent_file);
    assert_valid(&[&one, &partial, &two]);
}

#[test]
fn a_stale_answer_or_a_new_message_while_a_call_waits_is_refused() {
    let (sent_file, argv) = (tmp("stale-sent"), tmp("stale-argv"));
    let s = server("page-tool", &sent_file, &argv, &[]);
    let (_, one) = post(&s.addr, &first("t3", &["pick_branch"]));
    assert_eq!(last(&one)["outcome"]["pendingToolCallIds"], json!([CALL_A]));
    let (_, unknown) = post(
        &s.addr,
        &follow_up("t3", "r2", &["pick_branch"], &[("toolu_other", "x")]),
    );
    assert_eq!(last(&unknown)["code"], "invalid_tool_result");
    assert!(last(&unknown)["message"]
        .as_str()
        .unwrap()
        .contains("is not pending"));
    let mut new_user = first("t3", &["pick_branch"]);
    new_user["runId"] = json!("r3");
    new_user["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "m2", "role": "user", "content": "Never mind"}));
    let (_, refused) = post(&s.addr, &new_user);
    assert!(last(&refused)["message"]
        .as_str()
        .unwrap()
        .contains("a new user message is refused"));
    assert!(results(&sent_file).is_empty(), "nothing reached the CLI");
    // The call still waits, and is answered.
    let (_, two) = post(
        &s.addr,
        &follow_up("t3", "r4", &["pick_branch"], &[(CALL_A, "dev")]),
    );
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    assert_eq!(results(&sent_file).len(), 1);
    // Nothing waits any more: answers again are stale, and start no CLI.
    let (_, again) = post(
        &s.addr,
        &follow_up("t3", "r5", &["pick_branch"], &[(CALL_A, "dev")]),
    );
    assert_eq!(last(&again)["code"], "invalid_tool_result");
    assert_eq!(again.len(), 2, "{again:?}");
}

#[test]
fn a_call_the_page_does_not_answer_in_time_gets_an_error_the_model_reads() {
    let (sent_file, argv) = (tmp("late-sent"), tmp("late-argv"));
    let s = server("page-tool", &sent_file, &argv, &["--tool-timeout", "1s"]);
    let (_, one) = post(&s.addr, &first("t4", &["pick_branch"]));
    assert_eq!(last(&one)["outcome"]["pendingToolCallIds"], json!([CALL_A]));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while results(&sent_file).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let r = results(&sent_file);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["isError"], true);
    assert!(r[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("did not answer this tool call within 1s"));
    let (_, late) = post(
        &s.addr,
        &follow_up("t4", "r2", &["pick_branch"], &[(CALL_A, "dev")]),
    );
    assert_eq!(last(&late)["type"], "RUN_ERROR", "{late:?}");
    assert!(
        last(&late)["message"]
            .as_str()
            .unwrap()
            .contains("no answer came within the tool timeout"),
        "{late:?}"
    );
}

#[test]
fn a_0_0_client_gets_a_plain_success() {
    let (sent_file, argv) = (tmp("v0-sent"), tmp("v0-argv"));
    let s = server("page-tool", &sent_file, &argv, &[]);
    let mut b = first("t5", &["pick_branch"]);
    b.as_object_mut().unwrap().remove("protocolVersion");
    let (_, one) = post(&s.addr, &b);
    let end = last(&one);
    assert_eq!(end["type"], "RUN_FINISHED");
    assert!(
        end.get("outcome")
            .is_none_or(|o| o.get("pendingToolCallIds").is_none()),
        "{end}"
    );
    assert!(one
        .iter()
        .any(|e| e["type"] == "TOOL_CALL_START" && e["toolCallName"] == "pick_branch"));
}

#[test]
fn each_field_from_the_page_has_its_limit_and_a_clear_refusal() {
    let (sent_file, argv) = (tmp("limits-sent"), tmp("limits-argv"));
    let s = server("page-tool", &sent_file, &argv, &[]);
    let refused = |body: Value, want: &str| {
        let (status, events) = post(&s.addr, &body);
        assert!(status.starts_with("HTTP/1.1 400"), "{status} for {want}");
        assert!(events.is_empty());
        let _ = want;
    };
    let with = |field: &str, v: Value| {
        let mut b = first("t6", &["pick_branch"]);
        b[field] = v;
        b
    };
    refused(
        with("tools", json!([{"name": "pick branch"}])),
        "a name with a space",
    );
    refused(
        with("tools", json!([{"name": "x".repeat(65)}])),
        "a long name",
    );
    refused(
        with("tools", json!([{"name": "Bash"}])),
        "Claude's own tool",
    );
    refused(
        with("tools", json!([{"name": "mcp__page__x"}])),
        "an MCP name",
    );
    refused(
        with(
            "tools",
            json!((0..129)
                .map(|i| json!({"name": format!("t{i}")}))
                .collect::<Vec<_>>()),
        ),
        "129 tools",
    );
    refused(
        with(
            "tools",
            json!([{"name": "x", "parameters": {"d": "a".repeat(64 * 1024)}}]),
        ),
        "a large schema",
    );
    refused(
        with(
            "context",
            json!([{"description": "d", "value": "a".repeat(64 * 1024 + 1)}]),
        ),
        "a large context",
    );
    refused(with("context", json!("text")), "a context that is no list");
    refused(
        with("state", json!({"a": "a".repeat(64 * 1024)})),
        "a large state",
    );
    let mut answer = follow_up("t6", "r2", &["pick_branch"], &[(CALL_A, "x")]);
    answer["messages"][2]["content"] = json!("a".repeat(1024 * 1024 + 1));
    refused(answer, "a large answer");
    // The refusal names the field and the reason.
    let body = with("tools", json!([{"name": "ok"}, {"name": "Bash"}])).to_string();
    let mut conn = TcpStream::connect(&s.addr).unwrap();
    write!(
        conn,
        "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        s.addr,
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    BufReader::new(conn).read_to_string(&mut text).unwrap();
    assert!(
        text.contains("tools[1].name \\\"Bash\\\": the CLI has a tool of that name")
            || text.contains("tools[1].name \"Bash\": the CLI has a tool of that name"),
        "{text}"
    );
    // No CLI was started for any of them.
    assert!(sent(&sent_file).is_empty());
}

#[test]
fn context_and_state_reach_the_model_before_the_prompt() {
    let (sent_file, argv) = (tmp("context-sent"), tmp("context-argv"));
    let s = server("page-tool", &sent_file, &argv, &[]);
    let mut b = first("t7", &["pick_branch"]);
    b["context"] = json!([{"description": "The user's name", "value": "Ada"}]);
    b["state"] = json!({"branch": "dev"});
    let _ = post(&s.addr, &b);
    let prompt = sent(&sent_file)[0]["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        prompt,
        "<context from the application>\nThe user's name: Ada\nThe application's state (JSON): {\"branch\":\"dev\"}\n</context from the application>\n\nWhich branch?"
    );
}

/// `run claude --page-tools FILE` with the stand-in replaying `scenario`:
/// the prompt is the first input line, the answers the next ones.
fn run_with_tools(
    scenario: &str,
    tools: &Value,
    lines: &[&str],
    sent_file: &Path,
) -> (i32, Vec<Value>, String) {
    run_cli_with_tools("claude", "2.1.332", scenario, tools, lines, sent_file)
}

/// [`run_with_tools`] with `cli`'s recording of `version`.
fn run_cli_with_tools(
    cli: &str,
    version: &str,
    scenario: &str,
    tools: &Value,
    lines: &[&str],
    sent_file: &Path,
) -> (i32, Vec<Value>, String) {
    let file = tmp(&format!("{cli}-{scenario}-tools.json"));
    std::fs::write(&file, tools.to_string()).unwrap();
    let replay = root()
        .join("testdata")
        .join(cli)
        .join(version)
        .join(format!("{scenario}.jsonl"));
    let mut child = std::process::Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("FAKE_CONTROL", &replay)
        .env("FAKE_SENT", sent_file)
        .args(["run", cli, "--cli"])
        .arg(root().join("tests/fake/cli"))
        .arg("--page-tools")
        .arg(&file)
        .args(["--thread-id", "t", "--run-id", "r1", "--tool-timeout", "5s"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "Which branch?").unwrap();
    let mut events = Vec::new();
    let mut answers = lines.iter();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut out, &mut line).unwrap() == 0 {
            break;
        }
        let ev: Value = serde_json::from_str(&line).unwrap();
        let ended = matches!(ev["type"].as_str(), Some("RUN_FINISHED" | "RUN_ERROR"));
        events.push(ev);
        if ended {
            match answers.next() {
                Some(a) => writeln!(stdin, "{a}").unwrap(),
                None => break,
            }
        }
    }
    drop(stdin);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap().code().unwrap_or(-1);
    (status, events, err)
}

#[test]
fn run_takes_the_answers_as_input_lines_and_refuses_what_is_not_pending() {
    let sent_file = tmp("run-sent");
    let tools = json!([tool("pick_branch")]);
    let (status, events, err) = run_with_tools(
        "page-tool",
        &tools,
        &[
            "not json",
            r#"{"runId":"r2","toolResults":[{"toolCallId":"nope","content":"x"}]}"#,
            r#"{"runId":"r3","toolResults":[{"toolCallId":"toolu_m0000scripted","content":[{"type":"text","text":"dev"}]}]}"#,
        ],
        &sent_file,
    );
    assert_eq!(status, 0, "{err}");
    let ends: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| matches!(e["type"].as_str(), Some("RUN_FINISHED" | "RUN_ERROR")))
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["code"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("RUN_FINISHED", ""),
            ("RUN_ERROR", "invalid_tool_result"),
            ("RUN_ERROR", "invalid_tool_result"),
            ("RUN_FINISHED", ""),
        ]
    );
    assert_eq!(
        results(&sent_file),
        [json!({"content": [{"type": "text", "text": "dev"}], "isError": false})]
    );
}

#[test]
fn run_answers_with_an_error_when_its_input_ends() {
    let sent_file = tmp("run-eof-sent");
    let (status, events, err) =
        run_with_tools("page-tool", &json!([tool("pick_branch")]), &[], &sent_file);
    assert_eq!(status, 3, "{err}");
    assert_eq!(
        last(&events)["outcome"]["pendingToolCallIds"],
        json!([CALL_A])
    );
    let r = results(&sent_file);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["isError"], true);
    assert!(
        err.contains("the input ended with no answer from the page"),
        "{err}"
    );
}

#[test]
fn a_cli_without_a_route_for_the_page_s_tools_says_so() {
    // `run`: refused. Gemini CLI takes them over ACP only.
    let file = tmp("gemini-tools.json");
    std::fs::write(&file, json!([tool("pick_branch")]).to_string()).unwrap();
    let refused = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["run", "gemini", "--cli"])
            .arg(root().join("tests/fake/cli"))
            .args(args)
            .arg("hello")
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let tools = file.to_str().unwrap();
    let err = refused(&["--page-tools", tools, "--transport", "stream"]);
    assert!(
        err.contains(
            "--page-tools: gemini takes tools from the page over ACP only, not with --transport stream"
        ),
        "{err}"
    );
    let state = tmp("gemini-state.json");
    let err = refused(&[
        "--state-file",
        state.to_str().unwrap(),
        "--transport",
        "stream",
    ]);
    assert!(
        err.contains(
            "--state-file: gemini takes the state's tool over ACP only, not with --transport stream"
        ),
        "{err}"
    );
    // `serve`: the run goes on without them, and the server's stderr says so.
    let recording = root().join("testdata/gemini/0.61.0/text.jsonl");
    serve_says_without_tools(
        "gemini",
        &[("FAKE_REPLAY", &recording)],
        &["--transport", "stream"],
        &first("t8", &["pick_branch", "show_diff"]),
        "serve: gemini takes the page's tools over ACP only, not with --transport stream: the run goes on without its 2 tools",
    );
    // A state is told the model, which is not offered the state's tool.
    serve_says_without_tools(
        "gemini",
        &[("FAKE_REPLAY", &recording)],
        &["--transport", "stream"],
        &with_state("t9", "r1", json!({"branch": "main"}), "Hi"),
        "serve: gemini takes the state's tool over ACP only, not with --transport stream: the model is told the state but cannot change it",
    );
}

/// Qwen Code over ACP has no route for the state's tool either: `run`
/// refuses `--state-file` in one line, and `serve` tells the model the
/// state without the tool, its stderr saying why.
#[test]
fn qwen_over_acp_is_told_the_state_and_offered_no_tool() {
    let state = tmp("qwen-acp-state.json");
    let out = std::process::Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "qwen", "--transport", "acp", "--cli"])
        .arg(root().join("tests/fake/cli"))
        .arg("--state-file")
        .arg(&state)
        .arg("hello")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        "agui-translate: --state-file: qwen takes the state's tool on its stream-json control layer only, not over ACP (--transport acp, --approval ask)"
    );
    serve_says_without_tools(
        "qwen",
        &[("FAKE_ACP", Path::new("1"))],
        &["--approval", "ask"],
        &with_state("q9", "r1", json!({"branch": "main"}), "Hi"),
        "serve: qwen takes the state's tool on its stream-json control layer only, not over ACP (--transport acp, --approval ask): the model is told the state but cannot change it",
    );
}

/// `serve CLI` with `run_args` and the stand-in's `env`: the request
/// `body` finishes its run, and the server's stderr holds `want`.
fn serve_says_without_tools(
    cli: &str,
    env: &[(&str, &Path)],
    run_args: &[&str],
    body: &Value,
    want: &str,
) {
    let mut server = std::process::Command::new(BIN);
    server.env_clear().env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        server.env(k, v);
    }
    let mut server = server
        .args([
            "serve",
            cli,
            "--listen",
            "127.0.0.1:0",
            "--no-token",
            "--state-dir",
        ])
        .arg(tmp(&format!("{cli}-state")))
        .args(["--", "--cli"])
        .arg(root().join("tests/fake/cli"))
        .args(run_args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0
        && !line.contains(" on http://")
    {
        line.clear();
    }
    let addr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .trim()
        .trim_end_matches('/')
        .to_owned();
    let (status, events) = post(&addr, body);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(last(&events)["type"], "RUN_FINISHED", "{events:?}");
    // The next lines of its stderr: a warning (--no-token), then the notice.
    line.clear();
    while !line.contains(want) && std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0 {}
    assert!(line.contains(want), "{line}");
    // SAFETY: the server's own process id, not yet waited for.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let _ = server.wait();
}

/// `serve codex` replaying the app-server recording `scenario`.
fn codex_server(scenario: &str, sent: &Path) -> common::Server {
    let replay = root()
        .join("testdata/codex-app-server/0.169.0")
        .join(format!("{scenario}.jsonl"));
    common::serve_run(
        "codex",
        &[],
        &[],
        &[("FAKE_SERVER", &replay), ("FAKE_SENT", sent)],
    )
}

#[test]
fn codex_gets_the_page_s_tools_as_dynamic_tools_and_the_answers_as_their_results() {
    let sent_file = tmp("codex-sent");
    let s = codex_server("page-tools-two", &sent_file);
    let tools = ["pick_branch", "show_diff"];
    let (_, one) = post(&s.addr, &first("c1", &tools));
    let names: Vec<&str> = one
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect();
    assert_eq!(names, tools);
    assert_eq!(
        last(&one)["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["call_m0_0", "call_m0_1"]})
    );
    let sent_now = sent(&sent_file);
    assert_eq!(
        sent_now[0]["params"]["capabilities"]["experimentalApi"],
        true
    );
    let start = sent_now
        .iter()
        .find(|l| l["method"] == "thread/start")
        .unwrap();
    assert_eq!(start["params"]["dynamicTools"][1]["name"], "show_diff");
    assert_eq!(
        start["params"]["dynamicTools"][1]["inputSchema"]["type"],
        "object"
    );
    let (_, two) = post(
        &s.addr,
        &follow_up(
            "c1",
            "r2",
            &tools,
            &[("call_m0_0", "main"), ("call_m0_1", "shown: 3 hunks")],
        ),
    );
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    assert!(
        !two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "the page holds the results"
    );
    let text: String = two
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The page answered: main; shown: 3 hunks");
    let answers: Vec<Value> = sent(&sent_file)
        .into_iter()
        .filter(|l| l["result"]["contentItems"].is_array())
        .collect();
    assert_eq!(
        answers,
        [
            json!({"id": 0, "result": {"contentItems": [{"type": "inputText", "text": "main"}], "success": true}}),
            json!({"id": 1, "result": {"contentItems": [{"type": "inputText", "text": "shown: 3 hunks"}], "success": true}}),
        ]
    );
    assert_valid(&[&one, &two]);
}

#[test]
fn codex_refuses_answers_that_are_not_the_pending_ones() {
    let sent_file = tmp("codex-stale-sent");
    let s = codex_server("page-tool", &sent_file);
    let (_, one) = post(&s.addr, &first("c2", &["pick_branch"]));
    assert_eq!(
        last(&one)["outcome"]["pendingToolCallIds"],
        json!(["call_m0_0"])
    );
    let (_, stale) = post(
        &s.addr,
        &follow_up("c2", "r2", &["pick_branch"], &[("call_other", "x")]),
    );
    assert_eq!(last(&stale)["code"], "invalid_tool_result");
    let (_, two) = post(
        &s.addr,
        &follow_up("c2", "r3", &["pick_branch"], &[("call_m0_0", "dev")]),
    );
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    let text: String = two
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The page answered: dev");
}

/// The state the model gives in the recordings of the five CLIs calling
/// the state's tool (`testdata/*/*/state-update.jsonl`).
fn model_state() -> Value {
    json!({"branch": "dev", "files": ["src/lib.rs", "a/b~c.rs"], "view": {"pane": "diff", "a/b": 1}})
}

/// The recording of `cli` calling the state's tool.
fn state_recording(cli: &str) -> PathBuf {
    let dir = match cli {
        "claude" => "claude/2.1.332",
        "codex" => "codex-app-server/0.169.0",
        "copilot" => "copilot/1.0.102",
        "opencode" => "opencode/1.18.33",
        _ => "qwen/0.24.4",
    };
    root().join(format!("testdata/{dir}/state-update.jsonl"))
}

/// `serve claude` in `state_dir`, the stand-in replaying the real Claude
/// Code 2.1.332 calling the state's tool.
fn state_server(state_dir: &Path, sent: &Path, argv: &Path) -> common::Server {
    let replay = state_recording("claude");
    common::serve_run(
        "claude",
        &["--state-dir", state_dir.to_str().unwrap()],
        &[],
        &[
            ("FAKE_CONTROL", &replay),
            ("FAKE_SENT", sent),
            ("FAKE_ARGV", argv),
        ],
    )
}

/// A request as `HttpAgent` 1.0 sends it, with the page's `state` and no
/// tools.
fn with_state(thread: &str, run: &str, state: Value, prompt: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "protocolVersion": "1.0.0",
        "state": state, "context": [], "forwardedProps": {}, "tools": [],
        "messages": [{"id": format!("m-{run}"), "role": "user", "content": prompt}],
    })
}

/// The key of the page's state that holds what the run used.
const RUN_INFO: &str = "agui-translate";

/// The STATE_SNAPSHOTs of a run (their place among its events, and their
/// state without the run's information), each checked to hold what the
/// run used.
fn page_states(run: &[Value]) -> Vec<(usize, Value)> {
    run.iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "STATE_SNAPSHOT")
        .map(|(i, e)| {
            let mut state = e["snapshot"].clone();
            let info = state
                .as_object_mut()
                .and_then(|o| o.remove(RUN_INFO))
                .unwrap_or_else(|| panic!("no run information: {e}"));
            assert_eq!(info["approval"], "default", "{info}");
            assert!(
                info["cwd"].is_string() && !info["cwd"].as_str().unwrap().contains('/'),
                "{info}"
            );
            (i, state)
        })
        .collect()
}

/// The prompt the CLI was sent (its first stdin line, a user message).
fn prompt_sent(file: &Path) -> String {
    sent(file)[0]["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_model_changes_the_page_s_state_and_the_thread_keeps_it_across_a_restart() {
    const STATE_CALL: &str = "toolu_m0000scripted";
    let dir = tmp("state-dir");
    let _ = std::fs::remove_dir_all(&dir);
    let (sent_file, argv) = (tmp("state-sent"), tmp("state-argv"));
    let s = state_server(&dir, &sent_file, &argv);
    let (status, one) = post(
        &s.addr,
        &with_state("ts", "r1", json!({"branch": "main"}), "Use dev."),
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let prompt = prompt_sent(&sent_file);
    assert!(
        prompt.contains(r#"The application's state (JSON): {"branch":"main"}"#),
        "{prompt}"
    );
    // The state's tool was offered through the page's server, though the
    // page has no tools of its own.
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(args.contains(r#""type":"sdk""#), "{args}");
    let list = listed(&sent_file);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["name"], "ag_ui_update_state");
    // The call is answered at once, by serve: shown with its result, never
    // pending, and the new state streamed before the run ends.
    let start = one
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .expect("the call is shown");
    assert_eq!(start["toolCallName"], "ag_ui_update_state");
    let result = one
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .expect("with its result");
    assert_eq!(result["toolCallId"], STATE_CALL);
    let at = |t: &str| one.iter().position(|e| e["type"] == t).unwrap();
    // The page's state with what the run used after RUN_STARTED, the
    // model's after its call; what the run used again, with the run's
    // usage, just before RUN_FINISHED (a delta of that key alone).
    let states = page_states(&one);
    let page: Vec<&Value> = states.iter().map(|(_, s)| s).collect();
    assert_eq!(
        page,
        [&json!({"branch": "main"}), &model_state()],
        "{one:?}"
    );
    assert_eq!(states[0].0, 1, "after RUN_STARTED: {one:?}");
    assert!(at("TOOL_CALL_END") < states[1].0);
    let delta = &one[one.len() - 2];
    assert_eq!(delta["type"], "STATE_DELTA", "before RUN_FINISHED: {one:?}");
    assert_eq!(delta["delta"].as_array().unwrap().len(), 1, "{delta}");
    assert_eq!(delta["delta"][0]["op"], "add", "{delta}");
    assert_eq!(delta["delta"][0]["path"], format!("/{RUN_INFO}"), "{delta}");
    let usage = &delta["delta"][0]["value"]["usage"];
    assert_eq!(usage, &last(&one)["usage"], "{one:?}");
    assert!(!usage.as_array().unwrap().is_empty(), "{one:?}");
    assert_eq!(one[1]["snapshot"][RUN_INFO]["usage"], json!([]));
    // The thread keeps the page's state alone.
    let kept = dir.join("claude").join("7473.state.json");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    assert_eq!(kept, model_state());
    assert_eq!(last(&one)["type"], "RUN_FINISHED", "{one:?}");
    assert!(
        last(&one)["outcome"].get("pendingToolCallIds").is_none(),
        "nothing pending: {one:?}"
    );
    assert_eq!(
        results(&sent_file),
        [
            json!({"content": [{"type": "text", "text": "The application's state is now the one given."}], "isError": false})
        ]
    );
    assert_valid(&[&one]);

    // A restart: the thread's next run, with no state of the page's, is
    // told the state the model left, and may change it again.
    drop(s);
    let _ = std::fs::remove_file(&sent_file);
    let _ = std::fs::remove_file(&argv);
    let s = state_server(&dir, &sent_file, &argv);
    let (_, two) = post(&s.addr, &with_state("ts", "r2", json!({}), "And now?"));
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    let prompt = prompt_sent(&sent_file);
    assert!(
        prompt.contains(r#"The application's state (JSON): {"branch":"dev","files":["src/lib.rs","a/b~c.rs"],"view":{"a/b":1,"pane":"diff"}}"#),
        "{prompt}"
    );
    // The page, which gave none, is told the thread's state as the run
    // starts, then the model's new one.
    let states = page_states(&two);
    assert_eq!(states.len(), 2, "{two:?}");
    assert_eq!(states[0].1, model_state());
    let said = two
        .iter()
        .position(|e| e["type"] == "TEXT_MESSAGE_START")
        .unwrap();
    assert!(states[0].0 < said, "at the start: {two:?}");
    assert_valid(&[&two]);
    // A state the page gives replaces the kept one.
    drop(s);
    let _ = std::fs::remove_file(&sent_file);
    let s = state_server(&dir, &sent_file, &argv);
    let (_, three) = post(
        &s.addr,
        &with_state("ts", "r3", json!({"branch": "qa"}), "Hm?"),
    );
    let prompt = prompt_sent(&sent_file);
    assert!(prompt.contains(r#"{"branch":"qa"}"#), "{prompt}");
    let told = page_states(&three);
    assert_eq!(told[0].1, json!({"branch": "qa"}), "{three:?}");
    assert_eq!(told.len(), 2, "{three:?}");
    // A page that sends back the state it was told, what the run used in
    // it, gives no state of its own: the kept one stays, and the model is
    // not told the run's information as the page's.
    let told_back = three[told[1].0]["snapshot"].clone();
    assert!(told_back.get(RUN_INFO).is_some());
    let _ = std::fs::remove_file(&sent_file);
    let back = json!({RUN_INFO: told_back[RUN_INFO].clone()});
    post(&s.addr, &with_state("ts", "r5", back, "Again."));
    let prompt = prompt_sent(&sent_file);
    assert!(
        prompt.contains(r#"(JSON): {"branch":"dev","files""#),
        "{prompt}"
    );
    assert!(!prompt.contains(RUN_INFO), "{prompt}");
    let kept = std::fs::read_to_string(dir.join("claude").join("7473.state.json")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&kept).unwrap(), model_state());
    // A thread with no state is offered no such tool.
    drop(s);
    let _ = std::fs::remove_file(&argv);
    let s = state_server(&dir, &sent_file, &argv);
    post(&s.addr, &with_state("other", "r4", json!({}), "Hi"));
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(!args.contains("mcp__page"), "{args}");
}

/// `serve codex`: the state's tool is one of the thread's dynamic tools,
/// and its call (`item/tool/call`) is answered at once, the new state
/// streamed. The stand-in replays the real Codex 0.169.0 calling it.
#[test]
fn codex_changes_the_state_through_a_dynamic_tool_answered_at_once() {
    let sent_file = tmp("codex-state-sent");
    let replay = state_recording("codex");
    let s = common::serve_run(
        "codex",
        &[],
        &[],
        &[("FAKE_SERVER", &replay), ("FAKE_SENT", &sent_file)],
    );
    let (_, one) = post(
        &s.addr,
        &with_state("cs", "r1", json!({"branch": "main"}), "Use dev."),
    );
    let start = sent(&sent_file)
        .into_iter()
        .find(|l| l["method"] == "thread/start")
        .unwrap();
    let tools = start["params"]["dynamicTools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["name"], "ag_ui_update_state");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["state"]));
    let states: Vec<Value> = page_states(&one).into_iter().map(|(_, s)| s).collect();
    assert_eq!(
        states,
        [json!({"branch": "main"}), model_state()],
        "the new state is streamed: {one:?}"
    );
    assert_eq!(last(&one)["type"], "RUN_FINISHED", "{one:?}");
    assert!(last(&one)["outcome"].get("pendingToolCallIds").is_none());
    let answer = sent(&sent_file)
        .into_iter()
        .find(|l| l["id"] == 0 && l.get("result").is_some())
        .expect("the call answered");
    assert_eq!(answer["result"]["success"], true);
    let text: String = one
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(
        text.ends_with(
            "I will change the state.The application answered: The application's state is now the one given."
        ),
        "{text}"
    );
    assert_valid(&[&one]);
}

/// `serve copilot`, `serve opencode` and `serve qwen` offer the state's
/// tool by the page's tools' route (the loopback MCP server, started for
/// the state alone; Qwen Code's SDK server), each stand-in replaying the
/// real CLI calling it: the call is answered at once (never pending, never
/// to the page), shown by the tool's own name with the result the CLI got,
/// and the new state streamed before the run ends.
#[test]
fn copilot_opencode_and_qwen_change_the_state_by_the_page_s_route() {
    for cli in ["copilot", "opencode", "qwen"] {
        let (sent_file, argv) = (
            tmp(&format!("{cli}-state-sent")),
            tmp(&format!("{cli}-state-argv")),
        );
        let var = if cli == "qwen" {
            "FAKE_CONTROL"
        } else {
            "FAKE_MCP_HTTP"
        };
        let replay = state_recording(cli);
        let s = common::serve_run(
            cli,
            &[],
            &[],
            &[
                (var, &replay),
                ("FAKE_SENT", &sent_file),
                ("FAKE_ARGV", &argv),
            ],
        );
        let (status, one) = post(
            &s.addr,
            &with_state(
                &format!("{cli}-s"),
                "r1",
                json!({"branch": "main"}),
                "Use dev.",
            ),
        );
        assert!(status.starts_with("HTTP/1.1 200"), "{cli}: {status}");
        let tools = match cli {
            "qwen" => listed(&sent_file),
            _ => sent(&sent_file)[0]["tools"].clone(),
        };
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ag_ui_update_state"], "{cli}");
        let started: Vec<&Value> = one
            .iter()
            .filter(|e| e["type"] == "TOOL_CALL_START" && e["toolCallName"] != "tool_search")
            .collect();
        assert_eq!(started.len(), 1, "{cli}: {one:?}");
        assert_eq!(started[0]["toolCallName"], "ag_ui_update_state", "{cli}");
        let id = &started[0]["toolCallId"];
        let result = one
            .iter()
            .find(|e| e["type"] == "TOOL_CALL_RESULT" && e["toolCallId"] == *id)
            .unwrap_or_else(|| panic!("{cli}: the call's result is shown: {one:?}"));
        assert!(
            result["content"]
                .to_string()
                .contains("The application's state is now the one given."),
            "{cli}: {result}"
        );
        // The page's state as the run starts, then the model's.
        let states = page_states(&one);
        assert_eq!(states.len(), 2, "{cli}: {one:?}");
        assert_eq!(states[1].1, model_state(), "{cli}");
        assert_eq!(last(&one)["type"], "RUN_FINISHED", "{cli}: {one:?}");
        assert!(
            last(&one)["outcome"].get("pendingToolCallIds").is_none(),
            "{cli}: nothing pending: {one:?}"
        );
        assert_valid(&[&one]);
    }
}

/// The ACP recordings of Gemini CLI 0.61.0, Copilot CLI 1.0.102 and
/// OpenCode 1.18.33 calling the state's tool, each with the run options
/// that have `serve` speak ACP with it (Gemini CLI: none, `auto` picks ACP
/// for the page's route), and the version its stand-in says it is.
const ACP_STATE: [(&str, &str, &[&str]); 3] = [
    ("gemini", "0.61.0", &[]),
    ("copilot", "1.0.102", &["--transport", "acp"]),
    ("opencode", "1.18.33", &["--transport", "acp"]),
];

/// `serve gemini`, and `serve copilot` and `serve opencode` over ACP, offer
/// the state's tool by the page's route there (the loopback MCP server in
/// `session/new`, started for the state alone), each stand-in replaying
/// the real CLI calling it over ACP: Gemini CLI's permission request for it
/// is granted by the run though the policy is the default (no
/// approval_request), the call is shown by the tool's own name with the
/// input it reached the server with and the result the CLI got, answered
/// at once (never pending), and the new state streamed before the result
/// and the run's end.
#[test]
fn gemini_copilot_and_opencode_change_the_state_over_acp() {
    for (cli, version, run_args) in ACP_STATE {
        let (sent_file, page) = (
            tmp(&format!("{cli}-acp-state-sent")),
            tmp(&format!("{cli}-acp-state-page")),
        );
        let _ = std::fs::remove_file(&page);
        let replay = root().join(format!("testdata/acp/{cli}-{version}/state-update.jsonl"));
        let s = common::serve_run(
            cli,
            &[],
            run_args,
            &[
                ("FAKE_ACP", Path::new("1")),
                ("ACP_VERSION", Path::new(version)),
                ("ACP_REPLAY", &replay),
                ("ACP_SENT", &sent_file),
                ("ACP_PAGE_SENT", &page),
            ],
        );
        let (status, one) = post(
            &s.addr,
            &with_state(
                &format!("{cli}-as"),
                "r1",
                json!({"branch": "main"}),
                "Use dev.",
            ),
        );
        assert!(status.starts_with("HTTP/1.1 200"), "{cli}: {status}");
        let opened = sent(&sent_file)
            .into_iter()
            .find(|m| m["method"] == "session/new")
            .unwrap_or_else(|| panic!("{cli}: no session/new"));
        assert_eq!(opened["params"]["mcpServers"][0]["name"], "page", "{cli}");
        // The server listed the state's tool alone, and answered its call.
        let page = sent(&page);
        let names: Vec<&Value> = page[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["name"])
            .collect();
        assert_eq!(names, [&json!("ag_ui_update_state")], "{cli}");
        assert_eq!(page[1]["tool"], "ag_ui_update_state", "{cli}: {page:?}");
        assert_eq!(
            page[1]["content"][0]["text"], "The application's state is now the one given.",
            "{cli}: {page:?}"
        );
        assert!(
            !one.iter().any(|e| e["type"] == "CUSTOM"),
            "{cli}: the page is asked no approval: {one:?}"
        );
        let at = |t: &str| one.iter().position(|e| e["type"] == t).unwrap();
        let start = &one[at("TOOL_CALL_START")];
        assert_eq!(start["toolCallName"], "ag_ui_update_state", "{cli}");
        let args = &one[at("TOOL_CALL_ARGS")]["delta"];
        let args: Value = serde_json::from_str(args.as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"state": model_state()}), "{cli}: {one:?}");
        let result = &one[at("TOOL_CALL_RESULT")];
        assert_eq!(result["toolCallId"], start["toolCallId"], "{cli}");
        assert_eq!(
            result["content"], "The application's state is now the one given.",
            "{cli}"
        );
        // The page's state as the run starts, then the model's.
        let states = page_states(&one);
        let page_s: Vec<&Value> = states.iter().map(|(_, s)| s).collect();
        assert_eq!(
            page_s,
            [&json!({"branch": "main"}), &model_state()],
            "{cli}: {one:?}"
        );
        // Gemini CLI calls the tool only once the run has granted it, so
        // its call is shown first; Copilot CLI and OpenCode ask nothing,
        // and their call may reach the server before the line that shows
        // it is read: their state comes before the call's result all the
        // same.
        if cli == "gemini" {
            assert!(at("TOOL_CALL_END") < states[1].0, "{cli}: {one:?}");
        }
        assert!(states[1].0 < at("TOOL_CALL_RESULT"), "{cli}: {one:?}");
        assert_eq!(last(&one)["type"], "RUN_FINISHED", "{cli}: {one:?}");
        assert!(
            last(&one)["outcome"].get("pendingToolCallIds").is_none(),
            "{cli}: nothing pending: {one:?}"
        );
        if cli == "gemini" {
            let granted = sent(&sent_file)
                .into_iter()
                .find(|m| m["id"] == 0 && m["result"].is_object())
                .expect("the permission answered");
            assert_eq!(
                granted["result"]["outcome"],
                json!({"outcome": "selected", "optionId": "proceed_once"})
            );
        }
        let text: String = one
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert!(
            text.ends_with(
                "I will change the state.The application answered: The application's state is now the one given."
            ),
            "{cli}: {text}"
        );
        assert_valid(&[&one]);
    }
}

/// `run qwen --page-tools --tool-timeout TIMEOUT` with the stand-in
/// replaying Qwen Code's call, the page never answering (its input kept
/// open): the exit status, how long the call waited, the run's stderr and
/// the results the CLI was sent.
fn qwen_unanswered(timeout: &str) -> (i32, std::time::Duration, String, Vec<Value>) {
    let sent_file = tmp(&format!("qwen-late-{timeout}-sent"));
    let replay = root().join("testdata/qwen/0.24.4/page-tool.jsonl");
    let (status, waited, err) = unanswered(
        "qwen",
        &[("FAKE_CONTROL", &replay), ("FAKE_SENT", &sent_file)],
        &["--tool-timeout", timeout],
        false,
    );
    (status, waited, err, results(&sent_file))
}

/// `run CLI --page-tools` (one tool) with `args` and the stand-in's `env`,
/// the page never answering: with `close`, its input ends once the call is
/// pending, else it is kept open until the run ends. The exit status, how
/// long the run went on once the call was pending, and its stderr.
fn unanswered(
    cli: &str,
    env: &[(&str, &Path)],
    args: &[&str],
    close: bool,
) -> (i32, std::time::Duration, String) {
    let file = tmp(&format!("{cli}-unanswered-{}.json", args.join("")));
    std::fs::write(&file, json!([tool("pick_branch")]).to_string()).unwrap();
    let mut c = std::process::Command::new(BIN);
    c.env_clear().env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c
        .args(["run", cli, "--cli"])
        .arg(root().join("tests/fake/cli"))
        .arg("--page-tools")
        .arg(&file)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = Some(child.stdin.take().unwrap());
    writeln!(stdin.as_mut().unwrap(), "Which branch?").unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("pendingToolCallIds") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0);
    }
    if close {
        stdin = None;
    }
    let pending = std::time::Instant::now();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let waited = pending.elapsed();
    drop(stdin);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap().code().unwrap_or(-1);
    (status, waited, err)
}

/// Qwen Code gives up on a call of an SDK MCP server after 30 s (measured
/// with Qwen Code 0.24.4: `page-tool-late`, where it asks again and reads
/// only the answer to its last request): a call waits at most 25 s for the
/// page, so that the model reads why and a late page is told the call
/// expired. A longer `--tool-timeout` says so in one line.
#[test]
fn qwen_s_calls_wait_at_most_25_s_for_the_page() {
    let (status, waited, err, sent) = qwen_unanswered("2s");
    assert_eq!(status, 3, "{err}");
    assert!(!err.contains("--tool-timeout"), "{err}");
    assert!(waited < std::time::Duration::from_secs(10), "{waited:?}");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("did not answer this tool call within 2s"));

    let (status, waited, err, sent) = qwen_unanswered("1m");
    assert_eq!(status, 3, "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("--tool-timeout"))
        .collect();
    assert_eq!(
        said,
        ["agui-translate: --tool-timeout 1m: qwen gives up on a call of the page's tools after 30s, so its calls wait 25s for the page"]
    );
    assert!(
        waited >= std::time::Duration::from_secs(24) && waited < std::time::Duration::from_secs(30),
        "{waited:?}"
    );
    assert_eq!(sent[0]["isError"], true);
    assert!(sent[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("did not answer this tool call within 25s"));
}

/// `run CLI --page-tools` over ACP (with `args`), the stand-in replaying
/// the ACP recording `recording` (under testdata/acp): the run's stderr
/// once the call is pending and the input has ended.
fn acp_run_stderr(cli: &str, recording: &str, args: &[&str]) -> String {
    let replay = root().join(format!("testdata/acp/{recording}.jsonl"));
    let env = [("FAKE_ACP", Path::new("1")), ("ACP_REPLAY", &replay)];
    unanswered(cli, &env, args, true).2
}

/// `run acp --page-tools FILE -- COMMAND`: an agent whose `initialize`
/// answer says it reaches MCP servers over HTTP (the stand-in replaying
/// the real Qwen Code over ACP) is given the page's server in
/// `session/new`; the call ends the run pending and the answer line is
/// its result inside the agent. An agent that does not say so gets no
/// prompt, and the run's error says why in one line.
#[test]
fn run_acp_offers_the_page_s_tools_to_an_agent_that_reaches_mcp_over_http() {
    let file = tmp("run-acp-tools.json");
    std::fs::write(&file, json!([tool("pick_branch")]).to_string()).unwrap();
    let page = tmp("run-acp-page");
    let _ = std::fs::remove_file(&page);
    let run = |env: &[(&str, &Path)], lines: &str| {
        let mut c = std::process::Command::new(BIN);
        c.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("FAKE_ACP", "1");
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c
            .args(["run", "acp", "--run-id", "r1", "--page-tools"])
            .arg(&file)
            .arg("--")
            .arg(root().join("tests/fake/cli"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        writeln!(stdin, "Which branch?").unwrap();
        let mut events = Vec::new();
        let mut line = String::new();
        while std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0 {
            let ev: Value = serde_json::from_str(&line).unwrap();
            line.clear();
            if ev["type"] == "RUN_FINISHED" && ev["outcome"]["pendingToolCallIds"].is_array() {
                writeln!(stdin, "{lines}").unwrap();
            }
            events.push(ev);
        }
        drop(stdin);
        let status = child.wait().unwrap().code();
        (status, events)
    };
    let replay = root().join("testdata/acp/qwen-0.24.4/page-tool.jsonl");
    let answer = json!({"runId": "r2", "toolResults": [
        {"toolCallId": "call_m0000scripted", "content": "dev"}]})
    .to_string();
    let (status, events) = run(
        &[("ACP_REPLAY", &replay), ("ACP_PAGE_SENT", &page)],
        &answer,
    );
    assert_eq!(status, Some(0), "{events:?}");
    assert_eq!(started(&events), ["tool_search", "pick_branch"]);
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "RUN_FINISHED")
        .collect();
    assert_eq!(
        ends[0]["outcome"]["pendingToolCallIds"],
        json!(["call_m0000scripted"])
    );
    assert_eq!(ends.last().unwrap()["runId"], "r2");
    assert_eq!(sent(&page)[1]["content"][0]["text"], "dev");

    let agent_sent = tmp("run-acp-nohttp-sent");
    let _ = std::fs::remove_file(&agent_sent);
    let (_, events) = run(&[("ACP_SENT", &agent_sent)], &answer);
    assert!(!sent(&agent_sent)
        .iter()
        .any(|m| m["method"] == "session/prompt"));
    let end = last(&events);
    assert_eq!(end["type"], "RUN_ERROR", "{events:?}");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.contains("cannot reach the page's tools (its initialize answer has no mcpCapabilities.http): the run was not started")
            && !message.contains('\n'),
        "{message}"
    );
}

/// Gemini CLI gives up on a call of an MCP server after 10m (its
/// `MCP_DEFAULT_TIMEOUT_MSEC`; an ACP `mcpServers` entry sets no `timeout`,
/// and a settings entry of the same name is replaced by it), as Qwen Code
/// over ACP does (the same code): a call waits at most 9m for the page, so
/// that a page that answers late finds it expired rather than lost inside
/// the CLI. The default `--tool-timeout` (10m) and a longer one are cut, in
/// one line; a shorter one is kept, silently.
#[test]
fn gemini_and_qwen_over_acp_wait_at_most_9m_for_the_page() {
    for (cli, recording, args) in [
        ("gemini", "gemini-0.61.0/page-tool", &[][..]),
        ("qwen", "qwen-0.24.4/page-tool", &["--transport", "acp"][..]),
    ] {
        let err = acp_run_stderr(cli, recording, args);
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("--tool-timeout"))
            .collect();
        assert_eq!(
            said,
            [format!("agui-translate: --tool-timeout 10m: {cli} gives up on a call of the page's tools after 10m, so its calls wait 9m for the page")]
        );
        let err = acp_run_stderr(cli, recording, &[args, &["--tool-timeout", "20m"]].concat());
        assert!(
            err.contains(&format!("--tool-timeout 20m: {cli} gives up")),
            "{err}"
        );
        let err = acp_run_stderr(cli, recording, &[args, &["--tool-timeout", "9m"]].concat());
        assert!(!err.contains("--tool-timeout"), "{err}");
    }
}

/// `run qwen --page-tools` with the real Qwen Code's call: the answer line
/// a page's history makes carries the result of Qwen Code's own
/// `tool_search` too, which is history, not an answer; the page's answer
/// reaches the CLI and the turn goes on.
#[test]
fn run_qwen_takes_the_page_s_answer_beside_its_own_tool_s_result() {
    let sent_file = tmp("run-qwen-sent");
    let answer = json!({"runId": "r2", "toolResults": [
        {"toolCallId": "call_q0000scripted", "content": "Reviewed 1 tool(s)"},
        {"toolCallId": QWEN_CALL_A, "content": "dev"},
    ]})
    .to_string();
    let (status, events, err) = run_cli_with_tools(
        "qwen",
        "0.24.4",
        "page-tool",
        &json!([tool("pick_branch")]),
        &[&answer],
        &sent_file,
    );
    assert_eq!(status, 0, "{err}");
    assert_eq!(started(&events), ["tool_search", "pick_branch"]);
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "RUN_FINISHED" || e["type"] == "RUN_ERROR")
        .collect();
    assert_eq!(ends.len(), 2, "{events:?}");
    assert_eq!(
        ends[0]["outcome"]["pendingToolCallIds"],
        json!([QWEN_CALL_A])
    );
    assert_eq!(ends[1]["type"], "RUN_FINISHED", "{events:?}");
    assert_eq!(ends[1]["runId"], "r2");
    assert_eq!(
        results(&sent_file),
        [json!({"content": [{"type": "text", "text": "dev"}], "isError": false})]
    );
}

/// On its control layer Qwen Code asks its host about its own tools where
/// `-p` denies them itself (the real Qwen Code 0.24.4, `page-tool-shell`):
/// without `--approval ask` the run asks the page nothing, and denies the
/// shell command at once, as before; the page's call then waits as usual.
#[test]
fn qwen_s_own_tools_are_denied_not_asked_when_it_has_the_page_s_tools() {
    let (sent_file, argv) = (tmp("qwen-shell-sent"), tmp("qwen-shell-argv"));
    let s = qwen_server("page-tool-shell", &sent_file, &argv, &[]);
    let (_, one) = post(&s.addr, &first("q4", &["pick_branch"]));
    // The question is shown (CUSTOM approval_request, as the stream has
    // it), but the run does not end on it.
    let ends: Vec<&Value> = one
        .iter()
        .filter(|e| e["type"] == "RUN_FINISHED" || e["type"] == "RUN_ERROR")
        .collect();
    assert_eq!(ends.len(), 1, "no approval is asked: {one:?}");
    assert_eq!(
        started(&one),
        ["run_shell_command", "tool_search", "pick_branch"]
    );
    assert_eq!(
        last(&one)["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["call_m0100scripted"]})
    );
    let denied = sent(&sent_file)
        .into_iter()
        .find(|l| l["response"]["response"]["behavior"] == "deny")
        .expect("the shell command denied");
    assert!(denied["response"]["response"]["message"]
        .as_str()
        .unwrap()
        .starts_with("this run asks no approvals"));
    let (_, two) = post(
        &s.addr,
        &follow_up(
            "q4",
            "r2",
            &["pick_branch"],
            &[("call_m0100scripted", "dev")],
        ),
    );
    assert_eq!(last(&two)["type"], "RUN_FINISHED", "{two:?}");
    assert_valid(&[&one, &two]);
}
