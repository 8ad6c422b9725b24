//! The hot path (streamed text deltas) allocates nothing per line: measured
//! with a counting allocator around a translator fed one delta at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use agui_translate::agui::{Emitter, Format};
use agui_translate::dialect::{for_dialect, Dialect};

struct Counting;

thread_local! {
    /// Allocations made by this thread (tests run on several at once).
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: a thread being torn down still allocates.
    let _ = COUNT.try_with(|c| c.set(c.get() + 1));
}

fn allocations_so_far() -> u64 {
    COUNT.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made while translating `deltas` after `setup`.
fn allocations(dialect: Dialect, setup: &[&str], deltas: &[String]) -> u64 {
    let mut em = Emitter::new(Format::Ndjson, None, None);
    let mut tr = for_dialect(dialect).unwrap();
    let mut sink = std::io::sink();
    for line in setup {
        tr.line(&mut line.as_bytes().to_vec(), &mut em).unwrap();
    }
    em.drain_to(&mut sink).unwrap();
    let mut lines: Vec<Vec<u8>> = deltas.iter().map(|d| d.as_bytes().to_vec()).collect();
    // Warm up: the first delta may size buffers once.
    tr.line(&mut lines[0], &mut em).unwrap();
    em.drain_to(&mut sink).unwrap();
    let before = allocations_so_far();
    for line in &mut lines[1..] {
        tr.line(line, &mut em).unwrap();
        em.drain_to(&mut sink).unwrap();
    }
    allocations_so_far() - before
}

#[test]
fn claude_text_deltas_allocate_nothing() {
    let setup = [
        r#"{"type":"system","subtype":"init","session_id":"s","model":"m","uuid":"u"}"#,
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","content":[]}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}"#,
    ];
    let deltas: Vec<String> = (0..500)
        .map(|i| {
            format!(
                r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"word {i} with \"quotes\" and \n"}}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u-{i}"}}"#
            )
        })
        .collect();
    assert_eq!(
        allocations(Dialect::named("claude").unwrap(), &setup, &deltas),
        0
    );
}

#[test]
fn claude_thinking_and_argument_deltas_allocate_nothing_per_delta() {
    let start = |block: &str| {
        format!(
            r#"{{"type":"stream_event","event":{{"type":"content_block_start","index":0,"content_block":{block}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}}"#
        )
    };
    let delta = |delta: String| {
        format!(
            r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{delta}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}}"#
        )
    };
    let init = r#"{"type":"system","subtype":"init","session_id":"s","model":"m","uuid":"u"}"#;
    let message = r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","content":[]}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}"#;
    let thinking = start(r#"{"type":"thinking","thinking":""}"#);
    let tool = start(r#"{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}"#);
    let thoughts: Vec<String> = (0..500)
        .map(|i| {
            delta(format!(
                r#"{{"type":"thinking_delta","thinking":"step {i}: \"why\"\n"}}"#
            ))
        })
        .collect();
    let mut args = vec![delta(
        r#"{"type":"input_json_delta","partial_json":"{\"command\": \""}"#.to_owned(),
    )];
    args.extend((0..500).map(|i| {
        delta(format!(
            r#"{{"type":"input_json_delta","partial_json":"echo \\\"{i}\\\" "}}"#
        ))
    }));
    let claude = Dialect::named("claude").unwrap();
    assert_eq!(
        allocations(claude, &[init, message, &thinking], &thoughts),
        0
    );
    // The arguments' closing state (src/base/closer.rs) may grow once.
    let n = allocations(claude, &[init, message, &tool], &args);
    assert!(n <= 1, "{n} allocations for {} argument deltas", args.len());
}

/// A Gemini text delta as the CLI streams it (with escapes in the text).
fn gemini_delta(i: usize) -> String {
    format!(
        r#"{{"type":"message","timestamp":"2026-11-22T10:35:42.{:03}Z","role":"assistant","content":"word {i} with \"quotes\" and \n","delta":true}}"#,
        i % 1000
    )
}

#[test]
fn gemini_text_deltas_allocate_nothing() {
    let setup = [
        r#"{"type":"init","timestamp":"2026-11-22T10:35:42.152Z","session_id":"s","model":"auto"}"#,
        r#"{"type":"message","timestamp":"2026-11-22T10:35:42.160Z","role":"user","content":"Say hello."}"#,
    ];
    let deltas: Vec<String> = (0..500).map(gemini_delta).collect();
    assert_eq!(
        allocations(Dialect::named("gemini").unwrap(), &setup, &deltas),
        0
    );
}

#[test]
fn codex_text_deltas_allocate_nothing() {
    // The current format streams a plan's text as deltas; the legacy one
    // streams the answer.
    let setup = [
        r#"{"type":"thread.started","thread_id":"t"}"#,
        r#"{"type":"turn.started"}"#,
    ];
    let deltas: Vec<String> = (0..500)
        .map(|i| {
            format!(
                r#"{{"type":"item.plan.delta","item_id":"item_1","delta":"step {i} with \"quotes\" and \n"}}"#
            )
        })
        .collect();
    assert_eq!(
        allocations(Dialect::named("codex").unwrap(), &setup, &deltas),
        0
    );

    let setup = [
        r#"{"model":"gpt-5-codex","provider":"openai"}"#,
        r#"{"prompt":"Say hello."}"#,
        r#"{"id":"0","msg":{"type":"task_started","model_context_window":272000}}"#,
    ];
    let deltas: Vec<String> = (0..500)
        .map(|i| {
            format!(
                r#"{{"id":"0","msg":{{"type":"agent_message_delta","delta":"word {i} with \"quotes\" and \n"}}}}"#
            )
        })
        .collect();
    assert_eq!(
        allocations(Dialect::named("codex").unwrap(), &setup, &deltas),
        0
    );

    // Reasoning deltas (legacy) too: the open reasoning's id is not copied
    // for each.
    let thoughts: Vec<String> = (0..500)
        .map(|i| {
            format!(
                r#"{{"id":"0","msg":{{"type":"agent_reasoning_delta","delta":"step {i}: \"why\"\n"}}}}"#
            )
        })
        .collect();
    assert_eq!(
        allocations(Dialect::named("codex").unwrap(), &setup, &thoughts),
        0
    );
}

#[test]
fn app_server_text_and_reasoning_deltas_allocate_nothing() {
    let thread = "01a20a16-e614-7d62-9115-0130197b6c85";
    let turn = "01a20a16-e63b-7a83-83fd-5e4943a34278";
    let setup = [
        format!(r#"{{"method":"thread/started","params":{{"thread":{{"id":"{thread}"}}}}}}"#),
        format!(
            r#"{{"method":"turn/started","params":{{"threadId":"{thread}","turn":{{"id":"{turn}","items":[],"status":"inProgress"}}}}}}"#
        ),
        format!(
            r#"{{"method":"item/started","params":{{"item":{{"type":"agentMessage","id":"msg_m0","text":""}},"threadId":"{thread}","turnId":"{turn}"}}}}"#
        ),
        format!(
            r#"{{"method":"item/started","params":{{"item":{{"type":"reasoning","id":"rs_m0","summary":[],"content":[]}},"threadId":"{thread}","turnId":"{turn}"}}}}"#
        ),
        format!(
            r#"{{"method":"item/reasoning/summaryPartAdded","params":{{"threadId":"{thread}","turnId":"{turn}","itemId":"rs_m0","summaryIndex":0}}}}"#
        ),
    ];
    let setup: Vec<&str> = setup.iter().map(String::as_str).collect();
    let delta = |method: &str, item: &str, i: usize| {
        format!(
            r#"{{"method":"{method}","params":{{"threadId":"{thread}","turnId":"{turn}","itemId":"{item}","delta":"word {i} with \"quotes\" and \n","summaryIndex":0}},"emittedAtMs":1795465602747}}"#
        )
    };
    let app = Dialect::named("codex-app-server").unwrap();
    let texts: Vec<String> = (0..500)
        .map(|i| delta("item/agentMessage/delta", "msg_m0", i))
        .collect();
    assert_eq!(allocations(app, &setup, &texts), 0);
    let thoughts: Vec<String> = (0..500)
        .map(|i| delta("item/reasoning/summaryTextDelta", "rs_m0", i))
        .collect();
    assert_eq!(allocations(app, &setup, &thoughts), 0);
}

/// Allocations per line, on average, translating the recordings in `dirs`
/// (every copy's ids made unique, as in a day of logs).
fn allocations_per_line(dialect: Dialect, dirs: &[&str]) -> f64 {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut input = Vec::new();
    for dir in dirs {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            input.push(text.lines().map(str::to_owned).collect::<Vec<_>>());
        }
    }
    assert!(!input.is_empty(), "no recordings in {dirs:?}");
    let mut em = Emitter::new(Format::Ndjson, None, None);
    let mut tr = for_dialect(dialect).unwrap();
    let mut sink = std::io::sink();
    let mut run = |lines: &mut [Vec<u8>], em: &mut Emitter| {
        for line in lines.iter_mut() {
            // Lines that are not the dialect's are RAW events: no error here.
            let _ = tr.line(line, em);
            em.drain_to(&mut sink).unwrap();
        }
        tr.finish(em);
        em.end_of_input(true);
        em.drain_to(&mut sink).unwrap();
    };
    // One copy to size the buffers, then the measured ones.
    let copies = 4;
    let mut total_lines = 0;
    let mut measured = 0;
    for copy in 0..=copies {
        for session in &input {
            let mut lines: Vec<Vec<u8>> = session
                .iter()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    l.replace("\"id\":\"", &format!("\"id\":\"c{copy}-"))
                        .into_bytes()
                })
                .collect();
            let before = allocations_so_far();
            run(&mut lines, &mut em);
            if copy > 0 {
                measured += allocations_so_far() - before;
                total_lines += lines.len();
            }
        }
    }
    measured as f64 / total_lines as f64
}

/// At most one allocation per line on average, on the recordings of every
/// dialect: what a run costs (its ids, its usage, the result record) is
/// shared among its lines, and streamed deltas cost nothing.
#[test]
fn allocations_per_line_stay_bounded() {
    let mut results = Vec::new();
    for (dialect, dirs) in [
        (Dialect::named("gemini").unwrap(), &["gemini/0.61.0"][..]),
        (Dialect::named("codex").unwrap(), &["codex/0.169.0"][..]),
        (
            Dialect::named("codex").unwrap(),
            &["codex/0.42.0-legacy"][..],
        ),
        (Dialect::named("claude").unwrap(), &["claude/2.1.328"][..]),
        (
            Dialect::named("codex-app-server").unwrap(),
            &["codex-app-server/0.169.0"][..],
        ),
    ] {
        let per_line = allocations_per_line(dialect, dirs);
        eprintln!("{dirs:?}: {per_line:.2} allocations per line");
        results.push((dirs, per_line));
    }
    for (dirs, per_line) in results {
        assert!(
            per_line <= 1.0,
            "{dirs:?}: {per_line:.2} allocations per line (at most 1)"
        );
    }
}
