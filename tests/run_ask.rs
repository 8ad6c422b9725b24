//! `agui-translate run claude --approval ask`: Claude Code's permission
//! requests as AG-UI interrupts, answered by resume lines on standard input.
//! The stand-in CLI (`tests/fake/cli`, FAKE_CONTROL) replays Claude Code's
//! output in control-protocol mode and waits for the answers.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

mod common;
use common::{answer_for, interrupts};

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");
const ASK: &str = "3f1c2a4e-7b1d-4c55-9a0e-5d2b8c1e9f01";
const ASK_A: &str = "9a0b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c01";
const ASK_B: &str = "9a0b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c02";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn unique(prefix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("agui-ask-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{prefix}-{}", N.fetch_add(1, Ordering::SeqCst)))
}

/// A `run` waiting on its stdin for decisions.
struct Asked {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    /// Every line of output so far.
    text: String,
    sent: PathBuf,
}

impl Asked {
    fn start(replay: &str, args: &[&str]) -> Asked {
        Asked::start_with(replay, args, "0")
    }

    /// With the stand-in exiting with `exit`.
    fn start_with(replay: &str, args: &[&str], exit: &str) -> Asked {
        let sent = unique("sent");
        let mut child = Command::new(BIN)
            .env_clear()
            .env("FAKE_EXIT", exit)
            .env("PATH", "/usr/bin:/bin")
            .env("FAKE_CONTROL", root().join("tests/ask").join(replay))
            .env("FAKE_SENT", &sent)
            .args(["run", "claude", "--cli"])
            .arg(root().join("tests/fake/cli"))
            .args(["--approval", "ask", "--thread-id", "t", "--run-id", "r1"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take();
        writeln!(stdin.as_mut().unwrap(), "list the files").unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Asked {
            child,
            stdin,
            out,
            text: String::new(),
            sent,
        }
    }

    /// The events up to the end of the next run (RUN_FINISHED or RUN_ERROR).
    fn run(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let mut line = String::new();
            assert!(
                self.out.read_line(&mut line).unwrap() > 0,
                "the output ended after {events:?}"
            );
            self.text.push_str(&line);
            let ev: Value = serde_json::from_str(&line).unwrap();
            let end = matches!(ev["type"].as_str(), Some("RUN_FINISHED" | "RUN_ERROR"));
            events.push(ev);
            if end {
                return events;
            }
        }
    }

    fn send(&mut self, line: &Value) {
        writeln!(self.stdin.as_mut().unwrap(), "{line}").unwrap();
    }

    /// The lines the CLI was sent.
    fn sent(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.sent)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The rest of the output, the exit status, and what the CLI was sent;
    /// the whole output is valid AG-UI.
    fn end(mut self) -> (Vec<Value>, i32, Vec<Value>) {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.out, &mut rest).unwrap();
        drop(self.stdin.take());
        let status = self.child.wait().unwrap().code().unwrap_or(-1);
        self.text.push_str(&rest);
        let file = unique("out.ndjson");
        std::fs::write(&file, &self.text).unwrap();
        let check = Command::new(BIN).arg("check").arg(&file).output().unwrap();
        assert!(
            check.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&check.stderr),
            self.text
        );
        let rest = rest
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (rest, status, self.sent())
    }
}

fn resume(run: &str, answers: &[(&str, &str, Value)]) -> Value {
    let resume: Vec<Value> = answers
        .iter()
        .map(|(id, status, payload)| json!({"interruptId": id, "status": status, "payload": payload}))
        .collect();
    json!({"threadId": "t", "runId": run, "resume": resume})
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn an_ask_becomes_an_interrupt_and_an_approval_runs_the_tool() {
    let mut a = Asked::start("approve.jsonl", &[]);
    let first = a.run();
    let its = interrupts(&first);
    assert_eq!(its.len(), 1);
    let it = &its[0];
    assert_eq!(it["id"], ASK);
    assert_eq!(it["reason"], "tool_call");
    assert_eq!(it["toolCallId"], "toolu_m0000scripted");
    assert_eq!(
        it["message"],
        "Claude Code wants to run Bash: echo hello from the shell"
    );
    assert_eq!(
        it["responseSchema"]["properties"]["editedArgs"]["type"],
        "object"
    );
    assert_eq!(it["metadata"]["tool_name"], "Bash");
    assert_eq!(
        it["metadata"]["input"]["command"],
        "echo hello from the shell"
    );
    // It says when it stops waiting: --approval-timeout (10m) from now.
    let expires = agui_translate::base::json::timestamp_ms(it["expiresAt"].as_str().unwrap())
        .expect("an RFC 3339 time");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let left = expires - now;
    assert!((590_000..=600_000).contains(&left), "{left} ms left");
    // The prompt went in on the CLI's stdin; nothing was answered yet.
    let sent = a.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["message"]["content"][0]["text"], "list the files");

    a.send(&resume(
        "r2",
        &[(ASK, "resolved", json!({"approved": true}))],
    ));
    let (rest, status, _) = a.end();
    assert_eq!(status, 0);
    assert_eq!(rest[0]["type"], "RUN_STARTED");
    assert_eq!(
        (&rest[0]["threadId"], &rest[0]["runId"]),
        (&json!("t"), &json!("r2"))
    );
    let result = rest
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .expect("a result");
    assert_eq!(result["toolCallId"], "toolu_m0000scripted");
    assert!(
        !types(&rest).contains(&"TOOL_CALL_START"),
        "the call is not repeated"
    );
    assert_eq!(rest.last().unwrap()["type"], "RUN_FINISHED");
    assert!(rest.last().unwrap().get("outcome").is_none());
}

#[test]
fn approved_input_is_the_original_or_the_edited_arguments() {
    let mut a = Asked::start("approve.jsonl", &[]);
    a.run();
    a.send(&resume(
        "r2",
        &[(ASK, "resolved", json!({"approved": true}))],
    ));
    let (_, status, sent) = a.end();
    assert_eq!(status, 0);
    assert_eq!(
        answer_for(&sent, ASK),
        json!({"behavior": "allow", "updatedInput": {"command": "echo hello from the shell", "description": "Run echo"}})
    );

    let mut a = Asked::start("approve.jsonl", &[]);
    a.run();
    let edit = json!({"command": "ls -l", "description": "List"});
    a.send(&resume(
        "r2",
        &[(
            ASK,
            "resolved",
            json!({"approved": true, "editedArgs": edit}),
        )],
    ));
    let (rest, status, sent) = a.end();
    assert_eq!(status, 0);
    assert_eq!(
        answer_for(&sent, ASK),
        json!({"behavior": "allow", "updatedInput": edit})
    );
    // The stream says which arguments ran, before the tool's result.
    let at = |ty: &str| rest.iter().position(|e| e["type"] == ty);
    let response = at("CUSTOM").expect("the decision is in the stream");
    assert_eq!(rest[response]["name"], "approval_response");
    assert_eq!(
        rest[response]["value"],
        json!({"interruptId": ASK, "toolCallId": "toolu_m0000scripted",
            "status": "approved", "editedArgs": edit})
    );
    assert!(response < at("TOOL_CALL_RESULT").unwrap(), "{rest:?}");
}

/// A command written to hide itself (a newline, a right-to-left override,
/// a long run of spaces) is shown with nothing hidden; the metadata keeps
/// it as the CLI asked.
#[test]
fn the_message_shows_a_hostile_command_with_nothing_hidden() {
    let command = format!("echo hi\u{202e}sl; rm -rf ~\n{}#", " ".repeat(60));
    let replay = std::fs::read_to_string(root().join("tests/ask/approve.jsonl")).unwrap();
    let hostile: Vec<String> = replay
        .lines()
        .map(|l| {
            if !l.starts_with(r#"{"type":"control_request""#) {
                return l.to_owned();
            }
            let was = r#""command":"echo hello from the shell""#;
            assert!(l.contains(was), "{l}");
            l.replace(was, &format!(r#""command":{}"#, json!(command)))
        })
        .collect();
    let file = unique("hostile.jsonl");
    std::fs::write(&file, hostile.join("\n") + "\n").unwrap();
    let mut a = Asked::start(file.to_str().unwrap(), &[]);
    let first = a.run();
    let it = &interrupts(&first)[0];
    assert_eq!(
        it["message"],
        "Claude Code wants to run Bash: echo hi\\u{202e}sl; rm -rf ~\\n [60 spaces] #"
    );
    assert_eq!(it["metadata"]["input"]["command"], json!(command));
    a.send(&resume(
        "r2",
        &[(ASK, "resolved", json!({"approved": false}))],
    ));
    a.end();
}

#[test]
fn a_denial_and_a_cancel_are_denials_and_a_cancel_ends_the_turn() {
    for (status, payload, want) in [
        (
            "resolved",
            json!({"approved": false}),
            json!({"behavior": "deny", "message": "The user denied this tool call."}),
        ),
        (
            "resolved",
            json!({"approved": false, "message": "not now"}),
            json!({"behavior": "deny", "message": "not now"}),
        ),
        (
            "cancelled",
            Value::Null,
            json!({"behavior": "deny", "message": "The user cancelled this tool call.", "interrupt": true}),
        ),
    ] {
        let mut a = Asked::start("deny.jsonl", &[]);
        a.run();
        a.send(&resume("r2", &[(ASK, status, payload)]));
        let (rest, code, sent) = a.end();
        assert_eq!(code, 0);
        let result = rest
            .iter()
            .find(|e| e["type"] == "TOOL_CALL_RESULT")
            .expect("a result");
        assert_eq!(result["toolCallId"], "toolu_m0000scripted");
        assert_eq!(answer_for(&sent, ASK), want);
    }
}

#[test]
fn asks_together_are_one_run_s_interrupts_and_a_partial_resume_is_refused() {
    let mut a = Asked::start("two.jsonl", &[]);
    let its = interrupts(&a.run());
    let ids: Vec<&str> = its.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [ASK_A, ASK_B]);
    assert_eq!(its[1]["toolCallId"], "toolu_m0001scripted");

    a.send(&resume(
        "r2",
        &[(ASK_A, "resolved", json!({"approved": true}))],
    ));
    let refused = a.run();
    assert_eq!(types(&refused), ["RUN_STARTED", "RUN_ERROR"]);
    assert_eq!(refused[0]["runId"], "r2");
    assert_eq!(refused[1]["code"], "invalid_resume");
    // It says how many are left, never which: the ids are what answers them.
    let msg = refused[1]["message"].as_str().unwrap();
    assert!(msg.contains("1 of the 2 interrupts"), "{msg}");
    assert!(!msg.contains(ASK_B), "{msg}");
    assert_eq!(a.sent().len(), 1, "the CLI got nothing");

    a.send(&resume(
        "r3",
        &[
            (ASK_B, "resolved", json!({"approved": false})),
            (ASK_A, "resolved", json!({"approved": true})),
        ],
    ));
    let (rest, status, sent) = a.end();
    assert_eq!(status, 0);
    assert_eq!(rest[0]["runId"], "r3");
    let results: Vec<&Value> = rest
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .map(|e| &e["toolCallId"])
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(answer_for(&sent, ASK_A)["behavior"], "allow");
    assert_eq!(answer_for(&sent, ASK_B)["behavior"], "deny");
}

#[test]
fn stale_unknown_and_new_input_are_refused_and_change_nothing() {
    let mut a = Asked::start("approve.jsonl", &[]);
    interrupts(&a.run());
    let wrong = [
        (
            resume(
                "x1",
                &[("no-such-id", "resolved", json!({"approved": true}))],
            ),
            "not pending",
        ),
        (
            json!({"threadId": "t", "runId": "x2", "messages": [{"id": "m", "role": "user", "content": "hello"}]}),
            "must resume them",
        ),
        (
            resume(
                "x3",
                &[
                    (ASK, "resolved", json!({"approved": true})),
                    (ASK, "resolved", json!({"approved": true})),
                ],
            ),
            "twice",
        ),
        (
            resume("x4", &[(ASK, "maybe", json!({"approved": true}))]),
            "neither",
        ),
        (
            resume(
                "x5",
                &[(
                    ASK,
                    "resolved",
                    json!({"approved": true, "editedArgs": "ls"}),
                )],
            ),
            "editedArgs must be an object",
        ),
        (json!("not an object"), "not a resume"),
    ];
    for (line, why) in wrong {
        a.send(&line);
        let run = a.run();
        assert_eq!(types(&run), ["RUN_STARTED", "RUN_ERROR"], "{line}");
        assert_eq!(run[0]["threadId"], "t");
        if let Some(r) = line.get("runId") {
            assert_eq!(&run[0]["runId"], r);
        }
        assert_eq!(run[1]["code"], "invalid_resume");
        let msg = run[1]["message"].as_str().unwrap();
        assert!(msg.contains(why), "{msg}");
        if !line.to_string().contains(ASK) {
            assert!(!msg.contains(ASK), "a pending id named: {msg}");
        }
        assert_eq!(a.sent().len(), 1, "the CLI got nothing after {line}");
    }
    a.send(&resume(
        "r2",
        &[(ASK, "resolved", json!({"approved": true}))],
    ));
    let (rest, status, _) = a.end();
    assert_eq!(status, 0);
    assert_eq!(rest[0]["runId"], "r2");
    assert!(rest.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"));
}

#[test]
fn no_decision_in_time_denies_and_stops_the_cli() {
    let mut a = Asked::start("approve.jsonl", &["--approval-timeout", "300ms"]);
    interrupts(&a.run());
    // Our stdin stays open: the timeout ends it.
    let stdin = a.stdin.take();
    let (rest, status, sent) = a.end();
    drop(stdin);
    assert_eq!(status, 3);
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(
        answer_for(&sent, ASK),
        json!({"behavior": "deny", "message": "no decision within 300ms", "interrupt": true})
    );
}

#[test]
fn the_end_of_the_input_denies_and_stops_the_cli() {
    let mut a = Asked::start("approve.jsonl", &[]);
    interrupts(&a.run());
    drop(a.stdin.take());
    let (rest, status, sent) = a.end();
    assert_eq!(status, 3);
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(
        answer_for(&sent, ASK)["message"],
        "the input ended with no decision"
    );
}

#[test]
fn an_ask_withdrawn_before_the_run_ends_is_not_asked() {
    let mut a = Asked::start("withdrawn.jsonl", &[]);
    let run = a.run();
    let end = run.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED");
    assert!(end.get("outcome").is_none(), "{end}");
    let (rest, status, sent) = a.end();
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(status, 0);
    assert_eq!(sent.len(), 1, "nothing answered: {sent:?}");
}

#[test]
fn the_json_modes_of_the_others_cannot_ask() {
    // They ask over ACP (tests/run_acp.rs); their stream modes cannot.
    for cli in ["gemini", "qwen", "copilot", "opencode"] {
        let out = Command::new(BIN)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["run", cli, "--transport", "stream", "--cli"])
            .arg(root().join("tests/fake/cli"))
            .args(["--approval", "ask", "hello"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cli}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--approval ask") && err.contains("--transport acp"),
            "{cli}: {err}"
        );
    }
}

#[test]
fn the_cli_is_started_in_control_protocol_mode_without_the_prompt() {
    let file = unique("argv2");
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("FAKE_ARGV", &file)
        .env("FAKE_CONTROL", root().join("tests/ask/approve.jsonl"))
        .args(["run", "claude", "--cli"])
        .arg(root().join("tests/fake/cli"))
        .args(["--approval", "ask", "a prompt"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let args = std::fs::read_to_string(file).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert!(
        args.windows(2)
            .any(|w| w == ["--input-format", "stream-json"])
            && args
                .windows(2)
                .any(|w| w == ["--permission-prompt-tool", "stdio"]),
        "{args:?}"
    );
    assert!(
        !args.contains(&"a prompt") && !args.contains(&"--"),
        "{args:?}"
    );
}

/// The recordings of the real Claude Code asking (testdata/claude/VERSION/
/// approval-*.jsonl, with `.client.txt`, every line its host wrote): each
/// replays through `run --approval ask`, its interrupts answered as that
/// host answered, and the CLI gets what the host sent, line for line.
#[test]
fn real_recordings_get_the_answers_their_host_gave() {
    let dir = root().join("testdata/claude/2.1.332");
    for name in [
        "approval-allow",
        "approval-edit",
        "approval-deny",
        "approval-two",
        "approval-reads",
        "approval-deny-stop",
    ] {
        let client: Vec<Value> = std::fs::read_to_string(dir.join(format!("{name}.client.txt")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let replay = dir.join(format!("{name}.jsonl"));
        let exit = std::fs::read_to_string(dir.join(format!("{name}.exit"))).unwrap();
        let mut a = Asked::start_with(replay.to_str().unwrap(), &[], exit.trim());
        let mut answered = 0;
        let mut run = 1;
        let last = loop {
            let events = a.run();
            let end = events.last().unwrap().clone();
            if end["outcome"]["type"] != "interrupt" {
                break end;
            }
            // The host's answers to these interrupts, as a resume.
            let answers: Vec<(String, &str, Value)> = end["outcome"]["interrupts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|it| {
                    let id = it["id"].as_str().unwrap();
                    let r = answer_for(&client, id);
                    let (status, payload) = match r["behavior"].as_str().unwrap() {
                        "allow" => (
                            "resolved",
                            json!({"approved": true, "editedArgs": r["updatedInput"]}),
                        ),
                        _ if r["interrupt"] == true => {
                            ("cancelled", json!({"message": r["message"]}))
                        }
                        _ => (
                            "resolved",
                            json!({"approved": false, "message": r["message"]}),
                        ),
                    };
                    (id.to_owned(), status, payload)
                })
                .collect();
            answered += answers.len();
            run += 1;
            let refs: Vec<(&str, &str, Value)> = answers
                .iter()
                .map(|(i, s, p)| (i.as_str(), *s, p.clone()))
                .collect();
            a.send(&resume(&format!("r{run}"), &refs));
        };
        // The turn ends as the CLI says: cancelled where the user cancelled.
        assert_eq!(last["type"], "RUN_FINISHED", "{name}: {last}");
        let cancelled = name == "approval-deny-stop";
        assert_eq!(
            last["outcome"]["type"] == "cancelled",
            cancelled,
            "{name}: {last}"
        );
        let (rest, status, sent) = a.end();
        assert!(rest.is_empty(), "{name}: {rest:?}");
        assert_eq!(
            answered,
            client.len() - 1,
            "{name}: every question was asked"
        );
        assert_eq!(sent[1..], client[1..], "{name}: the answers");
        let want: i32 = std::fs::read_to_string(dir.join(format!("{name}.exit")))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(status, want, "{name}");
    }
}
