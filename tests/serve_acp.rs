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

/// With `--keep-idle 0`, a thread's next turn loads the agent's session
/// (`session/load`) in a new process and prompts it there; the history the
/// agent replays is not sent again. So for any ACP agent, and for OpenCode
/// 1.18.33 without `--approval ask` (`auto` speaks ACP with it, whose text
/// streams only there).
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
        let s = common::serve_run(cli, &["--keep-idle", "0"], &[], &env);
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

/// The test agent's process ids, one per process started.
fn starts(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(") ").next().map(|r| !r.starts_with('Z')))
        .unwrap_or(false)
}

/// A turn's response: one RUN_STARTED and one RUN_FINISHED, named by the
/// request's run, with the test agent's answer.
fn answered(run: &[Value], run_id: &str) {
    let of = |t: &str| run.iter().filter(|e| e["type"] == t).count();
    assert_eq!(of("RUN_STARTED"), 1, "{run:?}");
    assert_eq!(of("RUN_FINISHED") + of("RUN_ERROR"), 1, "{run:?}");
    assert_eq!(run[0]["runId"], run_id, "{run:?}");
    let end = run.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{run:?}");
    assert_eq!(end["runId"], run_id);
    let text = serde_json::to_string(run).unwrap();
    assert!(text.contains("Hello from "), "{text}");
    assert!(!text.contains("Earlier answer"), "{text}");
}

fn kept_env<'a>(sent: &'a Path, started: &'a Path, pid: &'a Path) -> Vec<(&'static str, &'a Path)> {
    vec![
        ("FAKE_ACP", Path::new("1")),
        ("ACP_SENT", sent),
        ("ACP_STARTS", started),
        ("ACP_PID", pid),
    ]
}

fn methods(sent: &[Value], method: &str) -> Vec<Value> {
    sent.iter()
        .filter(|m| m["method"] == method)
        .cloned()
        .collect()
}

/// A thread's turns go to one agent process, kept between them: the next
/// turn prompts the same session there, with no `session/load`; each turn
/// is its own run and is kept once in the thread's history.
#[test]
fn a_threads_turns_keep_one_agent() {
    let (sent_file, started, pid) = (tmp("keep-sent"), tmp("keep-starts"), tmp("keep-pid"));
    let s = common::serve_run("acp", &[], &[], &kept_env(&sent_file, &started, &pid));
    let one = post(&s.addr, &input("th", "r1", "say hello"));
    answered(&one, "r1");
    let mut next = input("th", "r2", "say hello again");
    next["messages"] = json!([
        {"id": "m1", "role": "user", "content": "say hello"},
        {"id": "a1", "role": "assistant", "content": "Hello from the test agent."},
        {"id": "m2", "role": "user", "content": "say hello again"},
    ]);
    let two = post(&s.addr, &next);
    answered(&two, "r2");
    assert_eq!(starts(&started).len(), 1, "one agent process");
    let sent = sent(&sent_file);
    assert!(methods(&sent, "session/load").is_empty(), "{sent:?}");
    let prompts = methods(&sent, "session/prompt");
    assert_eq!(prompts.len(), 2);
    assert_eq!(
        prompts[0]["params"]["sessionId"],
        prompts[1]["params"]["sessionId"]
    );
    assert_ne!(
        prompts[0]["id"], prompts[1]["id"],
        "each prompt its own request id"
    );
    assert_eq!(prompts[1]["params"]["prompt"][0]["text"], "say hello again");
    assert_valid(&[&one, &two]);

    // The thread's history holds each turn once.
    let mut back = input("th", "r3", "");
    back["messages"] = json!([]);
    let snapshot = post(&s.addr, &back);
    let messages = snapshot
        .iter()
        .find(|e| e["type"] == "MESSAGES_SNAPSHOT")
        .unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let users: Vec<_> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 2, "{messages:?}");
    let assistants = messages.iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(assistants, 2, "{messages:?}");
}

/// An agent idle past `--keep-idle` is ended; the thread's next turn loads
/// the session in a new process.
#[test]
fn an_idle_agent_is_ended_after_keep_idle() {
    let (sent_file, started, pid) = (tmp("idle-sent"), tmp("idle-starts"), tmp("idle-pid"));
    let s = common::serve_run(
        "acp",
        &["--keep-idle", "1s"],
        &[],
        &kept_env(&sent_file, &started, &pid),
    );
    answered(&post(&s.addr, &input("th", "r1", "say hello")), "r1");
    let first = starts(&started)[0];
    assert!(alive(first));
    common::until(
        "the idle agent ended",
        std::time::Duration::from_secs(15),
        || !alive(first),
    );
    answered(&post(&s.addr, &input("th", "r2", "say hello again")), "r2");
    assert_eq!(starts(&started).len(), 2);
    let sent = sent(&sent_file);
    let load = methods(&sent, "session/load");
    assert_eq!(load.len(), 1, "{sent:?}");
    let prompts = methods(&sent, "session/prompt");
    assert_eq!(
        load[0]["params"]["sessionId"],
        prompts[0]["params"]["sessionId"]
    );
}

/// A kept agent killed between turns: the next turn is a new process that
/// loads the session, and the page sees nothing of it.
#[test]
fn a_kept_agent_that_died_is_replaced() {
    let (sent_file, started, pid) = (tmp("died-sent"), tmp("died-starts"), tmp("died-pid"));
    let s = common::serve_run("acp", &[], &[], &kept_env(&sent_file, &started, &pid));
    answered(&post(&s.addr, &input("th", "r1", "say hello")), "r1");
    let first = starts(&started)[0];
    // SAFETY: the test agent's own process id, alive.
    unsafe { libc::kill(first as i32, libc::SIGKILL) };
    // Dead before the next turn comes (its output closed), not as it comes.
    common::until(
        "the kept agent dead",
        std::time::Duration::from_secs(10),
        || !alive(first),
    );
    let two = post(&s.addr, &input("th", "r2", "say hello again"));
    answered(&two, "r2");
    assert_eq!(starts(&started).len(), 2);
    assert_eq!(methods(&sent(&sent_file), "session/load").len(), 1);
}

/// Stopping the server ends its kept agents: none outlives it.
#[test]
fn stopping_the_server_ends_its_kept_agents() {
    let (sent_file, started, pid) = (tmp("stop-sent"), tmp("stop-starts"), tmp("stop-pid"));
    let mut s = common::serve_run("acp", &[], &[], &kept_env(&sent_file, &started, &pid));
    answered(&post(&s.addr, &input("a", "r1", "say hello")), "r1");
    answered(&post(&s.addr, &input("b", "r2", "say hello")), "r2");
    let agents = starts(&started);
    assert_eq!(agents.len(), 2);
    assert!(agents.iter().all(|p| alive(*p)));
    // SAFETY: the server's own process id, not yet waited for.
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    let _ = s.child.wait();
    common::until(
        "the kept agents ended",
        std::time::Duration::from_secs(15),
        || agents.iter().all(|p| !alive(*p)),
    );
}

/// Kept agents hold run slots: with every slot taken, a new thread's run
/// ends the agent idle longest, and that thread's next turn loads its
/// session in a new process.
#[test]
fn the_agent_idle_longest_makes_room() {
    let (sent_file, started, pid) = (tmp("room-sent"), tmp("room-starts"), tmp("room-pid"));
    let s = common::serve_run("acp", &[], &[], &kept_env(&sent_file, &started, &pid));
    // The server keeps at most 32 processes alive.
    for t in 0..32 {
        answered(
            &post(&s.addr, &input(&format!("t{t}"), "r1", "say hello")),
            "r1",
        );
    }
    let agents = starts(&started);
    assert!(agents.iter().all(|p| alive(*p)));
    answered(&post(&s.addr, &input("t32", "r1", "say hello")), "r1");
    common::until(
        "the oldest idle agent ended",
        std::time::Duration::from_secs(15),
        || !alive(agents[0]),
    );
    assert!(agents[1..].iter().all(|p| alive(*p)));
    answered(&post(&s.addr, &input("t0", "r2", "say hello again")), "r2");
    assert_eq!(methods(&sent(&sent_file), "session/load").len(), 1);
    assert!(
        !alive(agents[1]),
        "t1's agent, idle longest then, made room"
    );
}

/// A turn that waits for a decision (`--approval ask`) goes on in the same
/// process once decided, and the thread's next turn goes to that process
/// too, kept idle after it.
#[test]
fn a_decided_turn_keeps_its_agent_for_the_next() {
    let (sent_file, started, pid) = (tmp("ask-sent"), tmp("ask-starts"), tmp("ask-pid"));
    let s = common::serve_run(
        "acp",
        &[],
        &["--approval", "ask"],
        &kept_env(&sent_file, &started, &pid),
    );
    let one = post(&s.addr, &input("th", "r1", "ask first"));
    let its = common::interrupts(&one);
    let mut resume = input("th", "r2", "ask first");
    resume["resume"] =
        json!([{"interruptId": its[0]["id"], "status": "resolved", "payload": {"approved": true}}]);
    let two = post(&s.addr, &resume);
    assert_eq!(two.last().unwrap()["type"], "RUN_FINISHED", "{two:?}");
    let three = post(&s.addr, &input("th", "r3", "say hello"));
    answered(&three, "r3");
    assert_eq!(starts(&started).len(), 1, "one agent process");
    assert!(methods(&sent(&sent_file), "session/load").is_empty());
    assert_valid(&[&one, &two, &three]);
}

/// `--keep-idle` past its bound is refused at start, saying the bound.
#[test]
fn keep_idle_has_a_bound() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agui-translate"))
        .args(["serve", "acp", "--keep-idle", "2h", "--no-token"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--keep-idle") && err.contains("at most 1h"),
        "{err}"
    );
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

/// A page's `forwardedProps.effort` reaches OpenCode over ACP as the
/// effort chosen in the session before the prompt (its option `effort`),
/// as the real recording did; the scripted model says the request asked
/// for it, and the run's information in the page's state names it.
#[test]
fn a_page_chooses_opencode_s_effort_over_acp() {
    let sent_file = tmp("opencode-effort-sent");
    let replay = root().join("testdata/acp/opencode-1.18.33/effort.jsonl");
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
    let mut body = input("th", "r1", "How hard do you think?");
    body["forwardedProps"] = json!({"effort": "high", "threadMetadata": {"effort": "x"}});
    let one = post(&s.addr, &body);
    assert_eq!(one.last().unwrap()["type"], "RUN_FINISHED", "{one:?}");
    let chosen: Vec<Value> = sent(&sent_file)
        .into_iter()
        .filter(|m| m["method"] == "session/set_config_option")
        .collect();
    assert_eq!(chosen.len(), 1, "{chosen:?}");
    assert_eq!(chosen[0]["params"]["configId"], "effort");
    assert_eq!(chosen[0]["params"]["value"], "high");
    let said: String = one
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert!(
        said.ends_with("This answer was asked with the effort high."),
        "{said}"
    );
    let state = one.iter().find(|e| e["type"] == "STATE_SNAPSHOT").unwrap();
    assert_eq!(
        state["snapshot"]["agui-translate"]["effort"], "high",
        "{state}"
    );
    assert_valid(&[&one]);
}

const GEMINI_CALL: &str = "mcp_page_pick_branch__mcp_page_pick_branch_1795864073288_0";

/// `serve gemini` with `run_args`, the stand-in replaying Gemini CLI
/// 0.61.0's page-tool recording: the client's lines go to `sent`, the
/// answers its `tools/call` requests got to `page`.
fn gemini_with_tools(run_args: &[&str], sent: &Path, page: &Path) -> common::Server {
    with_recording("gemini", "gemini-0.61.0/page-tool", run_args, sent, page)
}

/// `serve CLI` with `run_args`, the stand-in replaying the ACP recording
/// `recording` (under testdata/acp): the client's lines go to `sent`, the
/// answers its `tools/call` requests got to `page`, its stderr's lines are
/// kept by the server.
fn with_recording(
    cli: &str,
    recording: &str,
    run_args: &[&str],
    sent: &Path,
    page: &Path,
) -> common::Server {
    let _ = std::fs::remove_file(sent);
    let _ = std::fs::remove_file(page);
    let replay = root().join(format!("testdata/acp/{recording}.jsonl"));
    let pid = page.with_extension("pid");
    common::serve_run(
        cli,
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

/// The client's `session/new` (its lines in `sent`) names the page's MCP
/// server, over HTTP on the loopback address.
fn page_server_given(sent_file: &Path) {
    let session_new = sent(sent_file)
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
}

fn with_tools(mut input: Value) -> Value {
    input["tools"] = json!([{"name": "pick_branch", "description": "Pick a branch.",
        "parameters": {"type": "object", "properties": {"branches": {"type": "array"}}}}]);
    input
}

/// The follow-up that answers Gemini CLI's call.
fn answer_body(thread: &str, run: &str) -> Value {
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
    page_server_given(&sent_file);
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

    let two = post(&s.addr, &answer_body("tp", "r2"));
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
    let late = post(&s.addr, &answer_body("tl", "r2"));
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
/// over HTTP cannot take the page's tools (Gemini CLI, or any agent of
/// `serve acp`): the run ends in an error that says so in one line, and no
/// prompt is sent.
#[test]
fn an_agent_without_mcp_over_http_cannot_take_the_page_s_tools() {
    for (cli, who) in [("gemini", "Gemini CLI"), ("acp", "the ACP agent")] {
        let sent_file = tmp(&format!("{cli}-nohttp-sent"));
        let _ = std::fs::remove_file(&sent_file);
        let s = common::serve_run(
            cli,
            &[],
            &[],
            &[("FAKE_ACP", Path::new("1")), ("ACP_SENT", &sent_file)],
        );
        let one = post(&s.addr, &with_tools(input("tn", "r1", "say hello")));
        let end = one.last().unwrap();
        assert_eq!(end["type"], "RUN_ERROR", "{one:?}");
        let message = end["message"].as_str().unwrap();
        assert!(
            message.starts_with(who)
                && message.contains(" cannot reach the page's tools (its initialize answer has no mcpCapabilities.http): the run was not started")
                && !message.contains('\n'),
            "{end}"
        );
        assert!(!sent(&sent_file)
            .iter()
            .any(|m| m["method"] == "session/prompt"));
    }
}

/// The id Qwen Code 0.24.4 gives its call of the page's tool (through its
/// `tool_call` bridge) in its page-tool recording over ACP.
const QWEN_CALL: &str = "call_m0000scripted";

/// The follow-up that answers `call`, named `pick_branch`.
fn answer_call(thread: &str, run: &str, call: &str) -> Value {
    let mut next = answer_body(thread, run);
    next["messages"][1]["toolCalls"][0]["id"] = json!(call);
    next["messages"][2]["toolCallId"] = json!(call);
    next
}

/// Qwen Code over ACP (`--transport acp`) is given the page's MCP server
/// over HTTP in `session/new`, as Gemini CLI is (the real Qwen Code
/// 0.24.4's page-tool recording): its call through its `tool_call` bridge
/// is shown once it names the page's tool, its permission request for it
/// is granted by the run with no interrupt, the run ends with the call
/// pending, and the page's answer is the call's result inside Qwen Code.
#[test]
fn qwen_over_acp_takes_the_page_s_tools_over_http() {
    takes_the_page_s_tools_over_http("qwen", &["--transport", "acp"], "tq");
}

/// Any agent of `serve acp` whose `initialize` answer says it reaches MCP
/// servers over HTTP is given the page's tools the same way; its names for
/// them, not known to serve, are read as the known agents spell them (here
/// the real Qwen Code's `mcp__page__pick_branch`).
#[test]
fn an_acp_agent_that_reaches_mcp_over_http_takes_the_page_s_tools() {
    takes_the_page_s_tools_over_http("acp", &[], "ta");
}

/// `serve CLI` with `run_args`, the stand-in replaying Qwen Code 0.24.4's
/// page-tool recording over ACP, through a call of the page's tool answered
/// by the page on `thread`.
fn takes_the_page_s_tools_over_http(cli: &str, run_args: &[&str], thread: &str) {
    let (sent_file, page) = (
        tmp(&format!("{cli}-page-sent")),
        tmp(&format!("{cli}-page-results")),
    );
    let s = with_recording(cli, "qwen-0.24.4/page-tool", run_args, &sent_file, &page);
    let one = post(
        &s.addr,
        &with_tools(input(thread, "r1", "Which branch should I work on?")),
    );
    let end = one.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{one:?}");
    assert_eq!(end["outcome"]["pendingToolCallIds"], json!([QWEN_CALL]));
    let names: Vec<&str> = one
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tool_search", "pick_branch"]);
    assert!(
        !one.iter().any(|e| e["type"] == "CUSTOM"),
        "the page is asked no approval: {one:?}"
    );
    page_server_given(&sent_file);
    let granted = sent(&sent_file)
        .into_iter()
        .find(|m| m["id"] == 1 && m["result"].is_object())
        .unwrap();
    assert_eq!(
        granted["result"]["outcome"],
        json!({"outcome": "selected", "optionId": "proceed_once"})
    );
    assert_eq!(sent(&page).len(), 1, "listed, not answered yet");

    let two = post(&s.addr, &answer_call(thread, "r2", QWEN_CALL));
    let end = two.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{two:?}");
    assert!(end["outcome"]["pendingToolCallIds"].is_null(), "{end}");
    let results = sent(&page);
    assert_eq!(results[1]["content"][0]["text"], "dev", "{results:?}");
    assert_valid(&[&one, &two]);
}
