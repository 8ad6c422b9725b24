//! The app-server client against a fake server that replays a recorded
//! session's stdout: what the client sends must be what the recording's
//! client sent (the same requests, ids, thread and turn ids, prompt and
//! answers), and what it writes must be well-formed AG-UI.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use agui_translate::agui::{Emitter, Format};
use agui_translate::converse::appserver::{End, Options, Session};
use agui_translate::dialect::request::Approval;
use agui_translate::dialect::{for_dialect, Dialect};
use serde_json::Value;

mod common;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/codex-app-server/0.169.0")
}

struct Replay {
    sent: Vec<Value>,
    recorded: Vec<Value>,
    end: End,
    events: Vec<Value>,
}

fn replay(name: &str, approval: Approval, stop: bool) -> Replay {
    let server = std::fs::read(dir().join(format!("{name}.jsonl"))).unwrap();
    let recorded =
        common::values(&std::fs::read_to_string(dir().join(format!("{name}.client.txt"))).unwrap());
    let prompt = recorded
        .iter()
        .find(|m| m["method"] == "turn/start")
        .map(|m| m["params"]["input"][0]["text"].as_str().unwrap().to_owned())
        .unwrap();
    let mut session = Session::new(Options {
        prompt: &prompt,
        attachments: &[],
        resume: None,
        cwd: Some("/project"),
        model: None,
        approval,
        ask: None,
        page: None,
    });
    let mut tr = for_dialect(Dialect::named("codex-app-server").unwrap()).unwrap();
    let mut em = Emitter::new(Format::Ndjson, None, None);
    let (mut to_server, mut out) = (Vec::new(), Vec::new());
    let end = session
        .run(
            &mut Cursor::new(server),
            &mut to_server,
            tr.as_mut(),
            &mut em,
            &mut out,
            &AtomicBool::new(stop),
        )
        .unwrap();
    tr.finish(&mut em);
    em.end_of_input(true);
    em.drain_to(&mut out).unwrap();
    agui_translate::check::check_bytes(&out).unwrap_or_else(|v| panic!("{name}: {v:?}"));
    Replay {
        sent: common::values(std::str::from_utf8(&to_server).unwrap()),
        recorded,
        end,
        events: common::values(std::str::from_utf8(&out).unwrap()),
    }
}

#[test]
fn sessions_send_what_the_recorded_client_sent() {
    for name in ["text", "shell", "patch", "reasoning", "mcp"] {
        let r = replay(name, Approval::Default, false);
        assert_eq!(r.end, End::TurnCompleted, "{name}");
        common::assert_same_messages(name, &r.sent, &r.recorded);
        assert!(
            r.events.iter().any(|e| e["type"] == "RUN_FINISHED"),
            "{name}"
        );
    }
}

#[test]
fn one_prompt_is_one_turn() {
    // The recorded client started a second turn; a session stops after one.
    let r = replay("two_turns", Approval::Default, false);
    assert_eq!(r.end, End::TurnCompleted);
    common::assert_same_messages("two_turns", &r.sent, &r.recorded[..4]);
    let runs = r
        .events
        .iter()
        .filter(|e| e["type"] == "RUN_STARTED")
        .count();
    assert_eq!(runs, 1);
}

#[test]
fn approvals_are_answered_by_policy() {
    let r = replay("approval_shell", Approval::Yolo, false);
    common::assert_same_messages("approval_shell", &r.sent, &r.recorded);
    let answer = r
        .events
        .iter()
        .find(|e| e["name"] == "approval_response")
        .unwrap();
    assert_eq!(answer["value"]["decision"], "accept");
    assert_eq!(answer["value"]["itemId"], "call_0001");

    for approval in [Approval::Default, Approval::AutoEdit] {
        let r = replay("approval_shell", approval, false);
        let last = r.sent.last().unwrap();
        assert_eq!(last["id"], 0);
        assert_eq!(last["result"]["decision"], "decline", "{approval:?}");
        let i = |pred: &dyn Fn(&Value) -> bool| r.events.iter().position(pred).unwrap();
        let request = i(&|e| e["name"] == "approval_request");
        let response = i(&|e| e["name"] == "approval_response");
        assert_eq!(response, request + 1, "{approval:?}: said in the stream");
        let said = &r.events[response]["value"];
        assert_eq!(said["decision"], "decline");
        assert_eq!(said["method"], "item/commandExecution/requestApproval");
        assert!(said["reason"].as_str().unwrap().contains("--approval"));
    }
}

#[test]
fn a_stop_interrupts_the_turn() {
    let r = replay("interrupt_stream", Approval::Default, true);
    assert_eq!(r.end, End::TurnCompleted);
    common::assert_same_messages("interrupt_stream", &r.sent, &r.recorded);
    let finished = r
        .events
        .iter()
        .find(|e| e["type"] == "RUN_FINISHED")
        .unwrap();
    assert_eq!(finished["outcome"]["type"], "cancelled");
}

#[test]
fn a_refused_request_ends_the_session() {
    let server = b"{\"id\":0,\"result\":{}}\n{\"id\":1,\"error\":{\"code\":-32600,\"message\":\"no such thread\"}}\n{\"method\":\"never\",\"params\":{}}\n";
    let mut session = Session::new(Options {
        prompt: "hi",
        attachments: &[],
        resume: Some("01a2-gone"),
        cwd: None,
        model: None,
        approval: Approval::Default,
        ask: None,
        page: None,
    });
    let mut tr = for_dialect(Dialect::named("codex-app-server").unwrap()).unwrap();
    let mut em = Emitter::new(Format::Ndjson, None, None);
    let (mut to_server, mut out) = (Vec::new(), Vec::new());
    let end = session
        .run(
            &mut Cursor::new(&server[..]),
            &mut to_server,
            tr.as_mut(),
            &mut em,
            &mut out,
            &AtomicBool::new(false),
        )
        .unwrap();
    assert_eq!(end, End::Refused);
    let sent = common::values(std::str::from_utf8(&to_server).unwrap());
    assert_eq!(sent[2]["method"], "thread/resume");
    assert_eq!(sent[2]["params"]["threadId"], "01a2-gone");
    assert_eq!(sent.len(), 3, "no turn/start after a refused resume");
}

#[test]
fn a_turn_completed_without_a_thread_id_ends_the_session() {
    // As older servers (0.63) write it: the turn, without `threadId`.
    let server = concat!(
        "{\"id\":0,\"result\":{}}\n",
        "{\"id\":1,\"result\":{\"thread\":{\"id\":\"th-1\"}}}\n",
        "{\"id\":2,\"result\":{\"turn\":{\"id\":\"0\",\"items\":[],\"status\":\"inProgress\"}}}\n",
        "{\"method\":\"turn/completed\",\"params\":{\"turn\":{\"id\":\"0\",\"items\":[],\"status\":\"completed\"}}}\n",
        "{\"method\":\"never\",\"params\":{}}\n",
    );
    let mut session = Session::new(Options {
        prompt: "hi",
        attachments: &[],
        resume: None,
        cwd: None,
        model: None,
        approval: Approval::Default,
        ask: None,
        page: None,
    });
    let mut tr = for_dialect(Dialect::named("codex-app-server").unwrap()).unwrap();
    let mut em = Emitter::new(Format::Ndjson, None, None);
    let (mut to_server, mut out) = (Vec::new(), Vec::new());
    let mut input = Cursor::new(server.as_bytes());
    let end = session
        .run(
            &mut input,
            &mut to_server,
            tr.as_mut(),
            &mut em,
            &mut out,
            &AtomicBool::new(false),
        )
        .unwrap();
    assert_eq!(end, End::TurnCompleted);
    assert!(input.position() < server.len() as u64, "read past the turn");
    // Another thread's turn does not end it.
    let other = server.replace(
        "\"params\":{\"turn\"",
        "\"params\":{\"threadId\":\"th-2\",\"turn\"",
    );
    let mut session = Session::new(Options {
        prompt: "hi",
        attachments: &[],
        resume: None,
        cwd: None,
        model: None,
        approval: Approval::Default,
        ask: None,
        page: None,
    });
    let end = session
        .run(
            &mut Cursor::new(other.as_bytes()),
            &mut Vec::new(),
            tr.as_mut(),
            &mut em,
            &mut Vec::new(),
            &AtomicBool::new(false),
        )
        .unwrap();
    assert_eq!(end, End::Eof);
}
