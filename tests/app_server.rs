//! What the Codex app-server translation must not lose, checked against
//! the input itself for every app-server recording in `testdata/`: each
//! message's full text, delta by delta as it streamed; each reasoning
//! summary part; each command's output; each turn's outcome and usage;
//! every server request; and the same bytes whether the dialect is named
//! or told by `--from auto`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agui_translate::dialect::FromCli;
use agui_translate::run::translate_bytes;
use serde_json::Value;

mod common;

fn recordings() -> Vec<PathBuf> {
    let found = common::jsonl_under(&common::testdata().join("codex-app-server"));
    assert!(found.len() >= 8, "{found:?}");
    found
}

fn lines(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// What the input says must arrive.
#[derive(Default)]
struct Expected {
    /// agentMessage id → (its text: the deltas joined where it streamed,
    /// else the completed text; the number of non-empty deltas).
    messages: Vec<(String, String, usize)>,
    /// reasoning id → summary parts, when they streamed.
    summaries: Vec<(String, Vec<String>)>,
    /// commandExecution id → aggregatedOutput.
    outputs: Vec<(String, String)>,
    /// turn id → (status, the thread's last total tokens).
    turns: Vec<(String, String, Option<u64>)>,
    /// Turns of other threads (subagents): thread id → status.
    subagent_turns: Vec<(String, String)>,
    /// Server request ids and methods.
    requests: Vec<(Value, String)>,
}

fn expected(input: &[Value]) -> Expected {
    let mut e = Expected::default();
    let mut deltas: HashMap<String, (String, usize)> = HashMap::new();
    let mut summary_deltas: HashMap<String, usize> = HashMap::new();
    let mut totals: HashMap<String, u64> = HashMap::new();
    let mut main: Option<String> = None;
    for rec in input {
        let p = &rec["params"];
        if main.is_none() {
            let thread = rec["result"]["thread"]["id"]
                .as_str()
                .or(p["thread"]["id"].as_str());
            main = thread.map(str::to_owned);
        }
        match s(&rec["method"]) {
            "item/agentMessage/delta" if !s(&p["delta"]).is_empty() => {
                let d = deltas.entry(s(&p["itemId"]).into()).or_default();
                d.0.push_str(s(&p["delta"]));
                d.1 += 1;
            }
            "item/reasoning/summaryTextDelta" => {
                *summary_deltas.entry(s(&p["itemId"]).into()).or_default() += 1;
            }
            "thread/tokenUsage/updated" => {
                let total = p["tokenUsage"]["total"]["totalTokens"].as_u64().unwrap();
                totals.insert(s(&p["turnId"]).into(), total);
            }
            "item/completed" => {
                let it = &p["item"];
                let id = s(&it["id"]).to_owned();
                match s(&it["type"]) {
                    "agentMessage" => {
                        let (text, n) = deltas
                            .remove(&id)
                            .unwrap_or_else(|| (s(&it["text"]).into(), 0));
                        e.messages.push((id, text, n));
                    }
                    "reasoning" if summary_deltas.contains_key(&id) => {
                        let parts = it["summary"].as_array().unwrap();
                        e.summaries
                            .push((id, parts.iter().map(|p| s(p).to_owned()).collect()));
                    }
                    "commandExecution" if it["aggregatedOutput"].is_string() => {
                        e.outputs.push((id, s(&it["aggregatedOutput"]).into()));
                    }
                    _ => {}
                }
            }
            "turn/completed" if main.as_deref().is_some_and(|m| p["threadId"] != m) => {
                let status = s(&p["turn"]["status"]).into();
                e.subagent_turns.push((s(&p["threadId"]).into(), status));
            }
            "turn/completed" => {
                let id = s(&p["turn"]["id"]).to_owned();
                let total = totals.get(&id).copied();
                e.turns.push((id, s(&p["turn"]["status"]).into(), total));
            }
            m if rec.get("id").is_some() && !m.is_empty() => {
                e.requests.push((rec["id"].clone(), m.to_owned()));
            }
            _ => {}
        }
    }
    e
}

#[test]
fn nothing_is_lost() {
    for path in recordings() {
        let name = path.display();
        let input = std::fs::read(&path).unwrap();
        let out = translate_bytes(FromCli::named("codex-app-server").unwrap(), &input);
        assert_eq!(
            out,
            translate_bytes(FromCli::Auto, &input),
            "{name}: --from auto differs from --from codex-app-server"
        );
        let events = lines(&out);
        let want = expected(&lines(&input));
        let by = |kind: &str, key: &str, id: &str| -> Vec<&Value> {
            events
                .iter()
                .filter(|e| e["type"] == kind && e[key] == id)
                .collect()
        };

        for (id, text, streamed) in &want.messages {
            let contents = by("TEXT_MESSAGE_CONTENT", "messageId", id);
            let joined: String = contents.iter().map(|e| s(&e["delta"])).collect();
            assert_eq!(&joined, text, "{name}: message {id}");
            if *streamed > 0 {
                assert_eq!(contents.len(), *streamed, "{name}: message {id} deltas");
            }
        }
        for (id, parts) in &want.summaries {
            for (i, part) in parts.iter().enumerate() {
                let msg_id = if i == 0 {
                    id.clone()
                } else {
                    format!("{id}-{i}")
                };
                let joined: String = by("REASONING_MESSAGE_CONTENT", "messageId", &msg_id)
                    .iter()
                    .map(|e| s(&e["delta"]))
                    .collect();
                assert_eq!(&joined, part, "{name}: reasoning {msg_id}");
            }
        }
        for (id, output) in &want.outputs {
            let results = by("TOOL_CALL_RESULT", "toolCallId", id);
            assert_eq!(results.len(), 1, "{name}: command {id}");
            assert_eq!(s(&results[0]["content"]), output, "{name}: command {id}");
        }
        // Each run's terminal event, by the run it ends.
        let mut ends: HashMap<&str, &Value> = HashMap::new();
        let mut runs = Vec::new();
        let mut run = "";
        for e in &events {
            match s(&e["type"]) {
                "RUN_STARTED" => {
                    run = s(&e["runId"]);
                    runs.push(run);
                }
                "RUN_FINISHED" | "RUN_ERROR" => assert!(
                    ends.insert(run, e).is_none(),
                    "{name}: run {run} ended twice"
                ),
                _ => {}
            }
        }
        if path.parent().unwrap().ends_with("0.169.0") {
            assert!(!want.turns.is_empty(), "{name}: no turn");
        }
        for (i, (id, status, total)) in want.turns.iter().enumerate() {
            // A turn id is the run id, unless the server counts its turns
            // (`"0"`): then the turns are the runs, in order.
            let counted = id.bytes().all(|b| b.is_ascii_digit());
            let key = if counted { runs[i] } else { id.as_str() };
            let end = ends.get(key).unwrap_or_else(|| panic!("{name}: turn {id}"));
            match status.as_str() {
                "completed" => {
                    assert_eq!(end["type"], "RUN_FINISHED", "{name}: turn {id}");
                    assert!(end.get("outcome").is_none(), "{name}: turn {id}");
                }
                "interrupted" => {
                    assert_eq!(end["outcome"]["type"], "cancelled", "{name}: turn {id}")
                }
                _ => assert_eq!(end["type"], "RUN_ERROR", "{name}: turn {id}"),
            }
            let usage = end["usage"][0]["totalTokens"].as_u64();
            assert_eq!(usage, *total, "{name}: turn {id} usage");
        }
        for (thread, status) in &want.subagent_turns {
            let kind = if status == "failed" {
                "SUBAGENT_ERROR"
            } else {
                "SUBAGENT_FINISHED"
            };
            assert!(
                !by(kind, "subagentRunId", thread).is_empty(),
                "{name}: subagent {thread}"
            );
        }
        for (id, method) in &want.requests {
            assert!(
                events.iter().any(|e| e["type"] == "CUSTOM"
                    && e["value"]["id"] == *id
                    && e["value"]["method"] == method.as_str()),
                "{name}: request {id} {method}"
            );
        }
    }
}

/// Every recorded approval request reaches the stream with what a client
/// needs to answer it: the method, the request and item ids, the command
/// or the reason.
#[test]
fn approval_requests_keep_what_a_client_needs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/codex-app-server/0.169.0/approval_shell.jsonl");
    let out = translate_bytes(
        FromCli::named("codex-app-server").unwrap(),
        &std::fs::read(path).unwrap(),
    );
    let events = lines(&out);
    let req = events
        .iter()
        .find(|e| e["type"] == "CUSTOM" && e["name"] == "approval_request")
        .expect("the approval request");
    let v = &req["value"];
    assert_eq!(v["method"], "item/commandExecution/requestApproval");
    assert_eq!(v["id"], 0);
    assert_eq!(v["params"]["itemId"], "call_0001");
    assert_eq!(v["params"]["command"], "/bin/bash -lc 'echo hello; ls'");
    // Between the call's start and its result.
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let start = at(&|e| e["type"] == "TOOL_CALL_START" && e["toolCallId"] == "call_0001");
    let request = at(&|e| e["name"] == "approval_request");
    let result = at(&|e| e["type"] == "TOOL_CALL_RESULT" && e["toolCallId"] == "call_0001");
    assert!(
        start < request && request < result,
        "{start} {request} {result}"
    );
}
