//! `agui-translate serve claude -- --approval ask`: a run that ends in
//! interrupts is kept, its CLI alive, and the thread's next request resumes
//! it. The stand-in CLI (`tests/fake/cli`, FAKE_CONTROL) replays Claude
//! Code in control-protocol mode (FAKE_SERVER: the Codex app-server).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::{answer_for, interrupts};

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");
const ASK: &str = "3f1c2a4e-7b1d-4c55-9a0e-5d2b8c1e9f01";
const ASK_A: &str = "9a0b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c01";
const ASK_B: &str = "9a0b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c02";

use common::root;

fn tmp(name: &str) -> PathBuf {
    common::scratch("serve-ask", name)
}

/// `serve claude -- --approval ask` replaying `replay`; the CLI's stdin
/// lines go to `sent`.
fn server(replay: &str, sent: &Path, extra: &[&str]) -> common::Server {
    let replay = root().join("tests/ask").join(replay);
    let mut args = vec!["--approval", "ask"];
    args.extend(extra);
    serve_with(&args, &[("FAKE_CONTROL", &replay), ("FAKE_SENT", sent)])
}

/// `serve claude … -- --cli FAKE RUN_ARGS`.
fn serve_with(run_args: &[&str], env: &[(&str, &Path)]) -> common::Server {
    common::serve_run("claude", &[], run_args, env)
}

fn post(addr: &str, body: &Value) -> Vec<Value> {
    post_text(addr, &body.to_string())
}

fn post_text(addr: &str, body: &str) -> Vec<Value> {
    let text = common::post_raw(addr, body);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        !text.contains(": agui-translate"),
        "the marker is not sent: {text}"
    );
    common::sse_events(&text)
}

fn first(thread: &str, run: &str, v1: bool) -> Value {
    let mut b = json!({
        "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {},
        "messages": [{"id": format!("{run}-m"), "role": "user", "content": "list the files"}],
    });
    if v1 {
        b["protocolVersion"] = json!("1.0");
    }
    b
}

/// A resume as CopilotKit sends it: the same run id again, and a `tool`
/// message per answered tool-call interrupt.
fn resume(thread: &str, run: &str, answers: &[(&str, &str, Value)]) -> Value {
    let mut b = first(thread, run, true);
    for (_, _, payload) in answers {
        b["messages"].as_array_mut().unwrap().push(json!({
            "id": "t1", "role": "tool", "toolCallId": "toolu_m0000scripted",
            "content": payload.to_string(),
        }));
    }
    b["resume"] = answers
        .iter()
        .map(|(id, status, payload)| json!({"interruptId": id, "status": status, "payload": payload}))
        .collect();
    b
}

fn sent(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The responses together are valid AG-UI.
fn assert_valid(responses: &[&[Value]]) {
    let file = tmp(&format!("check-{}.ndjson", rand()));
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

fn rand() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[test]
fn an_approval_from_the_client_resumes_the_waiting_cli() {
    let sent_file = tmp("approve-sent");
    let argv = tmp("approve-argv");
    let replay = root().join("tests/ask/approve.jsonl");
    let s = serve_with(
        &["--approval", "ask"],
        &[
            ("FAKE_CONTROL", &replay),
            ("FAKE_SENT", &sent_file),
            ("FAKE_ARGV", &argv),
        ],
    );
    let one = post(&s.addr, &first("th", "r1", true));
    let its = interrupts(&one);
    assert_eq!(its[0]["id"], ASK);
    assert_eq!(its[0]["toolCallId"], "toolu_m0000scripted");
    // The metadata names no place on the server's machine.
    assert_eq!(its[0]["metadata"]["tool_name"], "Bash");
    assert!(its[0]["metadata"].get("permission_suggestions").is_none());
    assert_eq!(sent(&sent_file).len(), 1, "nothing answered yet");

    let two = post(
        &s.addr,
        &resume("th", "r1", &[(ASK, "resolved", json!({"approved": true}))]),
    );
    assert_eq!(two[0]["type"], "RUN_STARTED");
    assert_eq!(
        (&two[0]["threadId"], &two[0]["runId"]),
        (&json!("th"), &json!("r1"))
    );
    assert!(two
        .iter()
        .any(|e| e["type"] == "TOOL_CALL_RESULT" && e["toolCallId"] == "toolu_m0000scripted"));
    assert!(!two.iter().any(|e| e["type"] == "TOOL_CALL_START"));
    let end = two.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED");
    assert!(end.get("outcome").is_none(), "{end}");
    assert_eq!(
        answer_for(&sent(&sent_file), ASK)["updatedInput"]["command"],
        "echo hello from the shell"
    );
    assert_valid(&[&one, &two]);

    // The thread is free again, and nothing waits on it.
    let stale = post(
        &s.addr,
        &resume("th", "r3", &[(ASK, "resolved", json!({"approved": true}))]),
    );
    assert_eq!(stale[1]["code"], "invalid_resume", "{stale:?}");

    // A page that comes back gets the whole turn: the user's message, the
    // tool call it approved and the call's result, from the resumed run.
    let back = post(
        &s.addr,
        &json!({"threadId": "th", "runId": "r-back", "messages": []}),
    );
    let types: Vec<_> = back.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "RUN_STARTED",
            "MESSAGES_SNAPSHOT",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    // What the thread's last run used: the resumed one, with its usage.
    let info = &back[2]["snapshot"]["agui-translate"];
    assert_eq!(info["approval"], "ask", "{info}");
    assert_eq!(info["usage"], two.last().unwrap()["usage"], "{info}");
    let messages = back[1]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "list the files", "{messages:?}");
    assert!(
        messages
            .iter()
            .any(|m| m["toolCalls"][0]["id"] == "toolu_m0000scripted"),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "tool" && m["toolCallId"] == "toolu_m0000scripted"),
        "{messages:?}"
    );

    // The thread's next turn resumes the CLI's session.
    let three = post(&s.addr, &first("th", "r4", true));
    assert_eq!(three[0]["runId"], "r4");
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(
        args.contains("--resume\n93843959-9f32-421b-9dc1-f043925af9ca\n"),
        "{args}"
    );
}

#[test]
fn edits_denials_and_cancels_reach_the_cli() {
    for (replay, status, payload, want) in [
        (
            "approve.jsonl",
            "resolved",
            json!({"approved": true, "editedArgs": {"command": "ls -l"}}),
            json!({"behavior": "allow", "updatedInput": {"command": "ls -l"}}),
        ),
        (
            "deny.jsonl",
            "resolved",
            json!({"approved": false}),
            json!({"behavior": "deny", "message": "The user denied this tool call."}),
        ),
        (
            "deny.jsonl",
            "cancelled",
            Value::Null,
            json!({"behavior": "deny", "message": "The user cancelled this tool call.", "interrupt": true}),
        ),
    ] {
        let sent_file = tmp(&format!("decide-{}", rand()));
        let s = server(replay, &sent_file, &[]);
        let one = post(&s.addr, &first("th", "r1", true));
        interrupts(&one);
        let two = post(&s.addr, &resume("th", "r2", &[(ASK, status, payload)]));
        assert_eq!(two[0]["runId"], "r2");
        assert!(two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
        assert_eq!(answer_for(&sent(&sent_file), ASK), want);
        assert_valid(&[&one, &two]);
    }
}

#[test]
fn a_partial_resume_or_new_input_is_refused_and_the_run_still_waits() {
    let sent_file = tmp("partial-sent");
    let s = server("two.jsonl", &sent_file, &[]);
    let one = post(&s.addr, &first("th", "r1", true));
    assert_eq!(interrupts(&one).len(), 2);
    let partial = post(
        &s.addr,
        &resume(
            "th",
            "r2",
            &[(ASK_A, "resolved", json!({"approved": true}))],
        ),
    );
    assert_eq!(partial.len(), 2, "{partial:?}");
    assert_eq!(partial[1]["code"], "invalid_resume");
    let input = post(&s.addr, &first("th", "r3", true));
    assert_eq!(input[1]["code"], "invalid_resume", "{input:?}");
    assert_eq!(sent(&sent_file).len(), 1, "the CLI got nothing");
    let done = post(
        &s.addr,
        &resume(
            "th",
            "r4",
            &[
                (ASK_A, "resolved", json!({"approved": true})),
                (ASK_B, "cancelled", Value::Null),
            ],
        ),
    );
    assert_eq!(done[0]["runId"], "r4");
    let sent = sent(&sent_file);
    assert_eq!(answer_for(&sent, ASK_A)["behavior"], "allow");
    assert_eq!(answer_for(&sent, ASK_B)["interrupt"], true);
    assert_valid(&[&one, &partial, &input, &done]);
}

#[test]
fn a_resume_with_nothing_pending_starts_no_cli() {
    let argv = tmp("stale-argv");
    let s = serve_with(
        &["--approval", "ask"],
        &[
            ("FAKE_CONTROL", &root().join("tests/ask/approve.jsonl")),
            ("FAKE_ARGV", &argv),
        ],
    );
    let r = post(
        &s.addr,
        &resume(
            "fresh",
            "r1",
            &[(ASK, "resolved", json!({"approved": true}))],
        ),
    );
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(
        (&r[0]["type"], &r[0]["runId"]),
        (&json!("RUN_STARTED"), &json!("r1"))
    );
    assert_eq!(r[1]["code"], "invalid_resume");
    assert!(r[1]["message"].as_str().unwrap().contains("stale"));
    assert!(!argv.exists(), "no CLI was started");
    assert_valid(&[&r]);
}

/// The processes whose parent is `pid`, zombies too.
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // After the command's closing parenthesis: the state, then the parent.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            found.push(child);
        }
    }
    found
}

/// Waits until `cond` holds, for 10 seconds at most.
fn until(what: &str, cond: impl Fn() -> bool) {
    common::until(what, Duration::from_secs(10), cond);
}

#[test]
fn interrupts_that_expire_are_denied_and_the_thread_says_so() {
    let sent_file = tmp("expire-sent");
    let s = server(
        "approve.jsonl",
        &sent_file,
        &["--approval-timeout", "300ms"],
    );
    let one = post(&s.addr, &first("th", "r1", true));
    interrupts(&one);
    let waiting = children(s.child.id());
    assert_eq!(waiting.len(), 1, "the waiting run: {waiting:?}");
    until("denied", || {
        sent(&sent_file)
            .iter()
            .any(|l| l["type"] == "control_response")
    });
    assert_eq!(
        answer_for(&sent(&sent_file), ASK)["message"],
        "no decision within 300ms"
    );
    // The run that expired is waited for with no request to the thread: no
    // process (not even a zombie) is left of it.
    until("the expired run is reaped", || {
        !std::path::Path::new(&format!("/proc/{}", waiting[0])).exists()
    });
    assert_eq!(children(s.child.id()), [] as [u32; 0]);
    let late = post(
        &s.addr,
        &resume("th", "r2", &[(ASK, "resolved", json!({"approved": true}))]),
    );
    assert_eq!(late[1]["code"], "interrupt_expired", "{late:?}");
    let why = late[1]["message"].as_str().unwrap();
    assert!(
        why.contains("expired") && why.contains("cancelled"),
        "{why}"
    );
    // Told again, until the client lets go: a cancel finishes a run, and
    // the thread goes on.
    let again = post(
        &s.addr,
        &resume("th", "r3", &[(ASK, "resolved", json!({"approved": true}))]),
    );
    assert_eq!(again[1]["code"], "interrupt_expired", "{again:?}");
    let cancel = post(
        &s.addr,
        &resume("th", "r4", &[(ASK, "cancelled", Value::Null)]),
    );
    let types: Vec<_> = cancel.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["RUN_STARTED", "RUN_FINISHED"], "{cancel:?}");
    assert_eq!(cancel[1]["runId"], "r4");
    assert!(cancel[1].get("outcome").is_none(), "{cancel:?}");
    let stale = post(
        &s.addr,
        &resume("th", "r5", &[(ASK, "cancelled", Value::Null)]),
    );
    assert_eq!(stale[1]["code"], "invalid_resume", "{stale:?}");
    let next = post(&s.addr, &first("th", "r6", true));
    assert_eq!(next[0]["runId"], "r6");
    interrupts(&next);
    // (The stand-in replays the same ids: `next` is checked alone.)
    assert_valid(&[&one, &late, &again, &cancel, &stale]);
    assert_valid(&[&next]);
}

/// The run limit (32) counts the runs that wait for decisions: with 32
/// waiting, a new thread's run ends the one waiting longest, whose thread
/// is then told why; never more than 32 runs are alive.
#[test]
fn waiting_runs_hold_run_slots_and_the_longest_waiting_makes_room() {
    let sent_file = tmp("evict-sent");
    let s = server("approve.jsonl", &sent_file, &[]);
    for i in 0..32 {
        interrupts(&post(&s.addr, &first(&format!("w{i}"), "r1", true)));
    }
    assert_eq!(children(s.child.id()).len(), 32);
    // A 33rd thread: w0, waiting longest, makes room.
    let one = post(&s.addr, &first("w32", "r1", true));
    interrupts(&one);
    until("32 runs alive", || children(s.child.id()).len() == 32);
    let evicted = post(
        &s.addr,
        &resume("w0", "r2", &[(ASK, "resolved", json!({"approved": true}))]),
    );
    assert_eq!(evicted[1]["code"], "interrupt_evicted", "{evicted:?}");
    let why = evicted[1]["message"].as_str().unwrap();
    assert!(why.contains("make room") && why.contains("32"), "{why}");
    // The others still wait: w1 is resumed as asked.
    let two = post(
        &s.addr,
        &resume("w1", "r2", &[(ASK, "resolved", json!({"approved": true}))]),
    );
    assert!(
        two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "{two:?}"
    );
    // w0's owner lets go, and its thread goes on.
    let cancel = post(
        &s.addr,
        &resume("w0", "r3", &[(ASK, "cancelled", Value::Null)]),
    );
    assert_eq!(cancel.last().unwrap()["type"], "RUN_FINISHED", "{cancel:?}");
    assert_valid(&[&one, &evicted, &two, &cancel]);
}

#[test]
fn a_0_0_client_gets_the_interrupt_and_no_1_0_only_shapes() {
    let sent_file = tmp("v0-sent");
    let s = server("approve.jsonl", &sent_file, &[]);
    let one = post(&s.addr, &first("th", "r1", false));
    assert_eq!(interrupts(&one)[0]["id"], ASK);
    let mut again = resume("th", "r1", &[(ASK, "resolved", json!({"approved": true}))]);
    again.as_object_mut().unwrap().remove("protocolVersion");
    let two = post(&s.addr, &again);
    assert!(two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
    let text = format!("{one:?}{two:?}");
    assert!(!text.contains("pendingToolCallIds") && !text.contains("\"cancelled\""));
}

#[test]
fn serve_refuses_ask_for_a_cli_that_cannot() {
    let out = std::process::Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args([
            "serve",
            "gemini",
            "--listen",
            "127.0.0.1:0",
            "--",
            "--approval=ask",
            "--transport",
            "stream",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Gemini CLI cannot ask") && err.contains("--transport acp"),
        "{err}"
    );
}

#[test]
fn a_stopped_server_ends_its_waiting_runs() {
    let pid_file = tmp("stop-pid");
    let sent_file = tmp("stop-sent");
    let s = serve_with(
        &["--approval", "ask"],
        &[
            ("FAKE_CONTROL", &root().join("tests/ask/approve.jsonl")),
            ("FAKE_SENT", &sent_file),
            ("FAKE_PID", &pid_file),
        ],
    );
    interrupts(&post(&s.addr, &first("th", "r1", true)));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only checks that the process exists.
    assert!(unsafe { libc::kill(pid, 0) } == 0, "the CLI waits");
    drop(s);
    let start = Instant::now();
    // SAFETY: as above.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the CLI outlived the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn codex_over_its_app_server_asks_the_page_and_gets_the_answer() {
    let sent_file = tmp("codex-sent");
    let replay = root().join("testdata/codex-app-server/0.169.0/approval_shell.jsonl");
    let s = common::serve_run(
        "codex",
        &[],
        &["--codex-transport", "app-server", "--approval", "ask"],
        &[("FAKE_SERVER", &replay), ("FAKE_SENT", &sent_file)],
    );
    let one = post(&s.addr, &first("cx", "r1", true));
    let its = interrupts(&one);
    assert_eq!(its[0]["toolCallId"], "call_0001");
    assert_eq!(its[0]["reason"], "tool_call");
    assert_eq!(its[0]["metadata"]["itemId"], "call_0001");
    assert!(its[0]["metadata"].get("cwd").is_none(), "{}", its[0]);
    assert!(!its[0].to_string().contains("/scratch/"), "{}", its[0]);
    let id = its[0]["id"].as_str().unwrap().to_owned();
    let answered = |sent: &[Value]| {
        sent.iter()
            .find(|m| m["id"] == 0 && m.get("result").is_some())
            .map(|m| m["result"]["decision"].clone())
    };
    assert_eq!(answered(&sent(&sent_file)), None, "nothing answered yet");

    let two = post(
        &s.addr,
        &resume("cx", "r2", &[(&id, "resolved", json!({"approved": false}))]),
    );
    assert_eq!(two[0]["type"], "RUN_STARTED");
    assert!(two
        .iter()
        .any(|e| e["type"] == "TOOL_CALL_RESULT" && e["toolCallId"] == "call_0001"));
    assert_eq!(two.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(answered(&sent(&sent_file)), Some(json!("decline")));
    assert_valid(&[&one, &two]);
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
fn a_large_resume_costs_a_small_multiple_of_its_size() {
    let sent_file = tmp("large-resume-sent");
    let s = server("approve.jsonl", &sent_file, &[]);
    interrupts(&post(&s.addr, &first("th", "r1", true)));
    let before = peak_memory(s.child.id());
    // Nearly 16 MiB (the largest body) of tiny values in the payload: a
    // tree of them would be many times that.
    let mut body = resume(
        "th",
        "r2",
        &[(ASK, "resolved", json!({"approved": true, "note": []}))],
    )
    .to_string();
    let at = body.find("\"note\":[").unwrap() + "\"note\":[".len();
    let room = 16 * MIB as usize - body.len() - 1;
    let mut filler = "0,".repeat(room / 2);
    filler.pop();
    body.insert_str(at, &filler);
    let start = Instant::now();
    let two = post_text(&s.addr, &body);
    let took = start.elapsed();
    assert!(
        two.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "{two:?}"
    );
    assert_eq!(answer_for(&sent(&sent_file), ASK)["behavior"], "allow");
    let grew = peak_memory(s.child.id()) - before;
    eprintln!("a 16 MiB resume: serve grew {} MiB, {took:?}", grew / MIB);
    assert!(grew < 48 * MIB, "a 16 MiB resume took {} MiB", grew / MIB);
}
