//! The program as a Unix filter: exit codes, closed pipes, live flushing,
//! framing and options.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn testdata(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

fn cmd() -> Command {
    let mut c = Command::new(BIN);
    c.env_clear();
    c
}

#[test]
fn help_teaches_usage_and_exit_codes() {
    cmd()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("--from <CLI>"))
        .stdout(predicate::str::contains("Exit status"))
        .stdout(predicate::str::contains("| agui-translate --from gemini"));
}

#[test]
fn unknown_dialect_is_a_usage_error() {
    cmd()
        .args(["--from", "cursor"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "invalid value 'cursor' for '--from <CLI>'",
        ));
}

#[test]
fn the_dialect_is_detected_from_the_stream() {
    let path = testdata("gemini/0.61.0/b_shell.jsonl");
    let forced = cmd()
        .args(["--from", "gemini"])
        .arg(&path)
        .output()
        .unwrap();
    cmd()
        .arg(&path)
        .assert()
        .success()
        .stderr("")
        .stdout(forced.stdout.clone());
    cmd()
        .args(["--from", "auto"])
        .arg(&path)
        .assert()
        .success()
        .stdout(forced.stdout);
}

#[test]
fn detection_ignores_noise_before_the_first_record() {
    let input = "Loaded cached credentials.\n{\"type\":\"init\",\"session_id\":\"s\"}\n{\"type\":\"result\",\"status\":\"success\"}\n";
    cmd()
        .write_stdin(input)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("<stdin>:1: not a JSON line"))
        .stdout(predicate::str::starts_with(
            r#"{"type":"RUN_STARTED","threadId":"s","runId":"run-3b2e23d015e3ba36"}"#,
        ))
        .stdout(predicate::str::contains(r#""source":"unknown""#))
        .stdout(predicate::str::contains("RUN_FINISHED"));
}

#[test]
fn undetectable_input_is_reported() {
    cmd()
        .write_stdin("{\"hello\":\"world\"}\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "<stdin>: could not tell which CLI wrote this input",
        ))
        .stdout(predicate::str::contains(r#""code":"no_events""#));
}

#[test]
fn missing_file_is_an_io_error() {
    cmd()
        .args(["--from", "gemini", "/nonexistent/agui-input.jsonl"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "agui-translate: /nonexistent/agui-input.jsonl: No such file",
        ));
}

#[test]
fn bad_lines_exit_1_and_are_named_on_stderr() {
    cmd()
        .args(["--from", "gemini"])
        .write_stdin("{\"type\":\"init\",\"session_id\":\"s\"}\nnot json\n{\"type\":\"result\",\"status\":\"success\"}\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("<stdin>:2: not a JSON line"))
        .stdout(predicate::str::contains(r#"{"type":"RAW","event":{"line":2,"text":"not json"},"source":"gemini"}"#))
        .stdout(predicate::str::ends_with(
            "{\"type\":\"RUN_FINISHED\",\"threadId\":\"s\",\"runId\":\"run-3b2e23d015e3ba36\",\"result\":{\"type\":\"result\",\"status\":\"success\"}}\n",
        ));
}

#[test]
fn files_are_read_in_order_as_separate_streams() {
    let a = testdata("gemini/0.61.0/k_resume_1.jsonl");
    let b = testdata("gemini/0.61.0/j_sigterm_group.jsonl");
    let out = cmd()
        .args(["--from", "gemini"])
        .arg(&a)
        .arg("-")
        .arg(&b)
        .write_stdin("")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let starts: Vec<_> = text
        .lines()
        .filter(|l| l.contains("\"RUN_STARTED\""))
        .collect();
    assert_eq!(starts.len(), 3, "{text}");
    // The empty standard input, with --from: exit status 3.
    assert_eq!(out.status.code(), Some(3));
    assert!(starts[0].contains("c795a8c1-ed47-40b2-9b49-681fb01195ba"));
    // The empty standard input still gets its run, ended as empty.
    assert!(text.contains(r#""message":"the input was empty","code":"no_events""#));
    assert!(starts[2].contains("49c9a569-be37-475b-a1a5-c8bad24806c6"));
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("\"RUN_ERROR\"") && last.contains("input_ended"),
        "{last}"
    );
}

/// The (threadId, runId) of each RUN_STARTED in an output.
fn run_ids(stdout: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "RUN_STARTED")
        .map(|e| {
            let id = |k: &str| e[k].as_str().unwrap().to_owned();
            (id("threadId"), id("runId"))
        })
        .collect()
}

/// An empty input has no record to derive its ids from: they come from
/// its name, so that two empty FILEs, in one output or in two, do not
/// share a threadId or a runId, and the same FILE still gives the same
/// bytes.
#[test]
fn empty_inputs_do_not_share_ids() {
    let dir = std::env::temp_dir().join(format!("agui-cli-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    std::fs::write(&a, "").unwrap();
    std::fs::write(&b, "\n\n").unwrap();
    let translate = |files: &[&std::path::Path]| {
        let out = cmd().args(files).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        out.stdout
    };
    let both = run_ids(&translate(&[&a, &b]));
    assert_eq!(both.len(), 2);
    assert_ne!(both[0].0, both[1].0, "{both:?}");
    assert_ne!(both[0].1, both[1].1, "{both:?}");
    let (one, other) = (translate(&[&a]), translate(&[&b]));
    assert_eq!(run_ids(&one), both[..1]);
    assert_eq!(run_ids(&other), both[1..]);
    assert_eq!(one, translate(&[&a]), "the same FILE, the same bytes");
    let stdin = cmd().write_stdin("").output().unwrap().stdout;
    let stdin = run_ids(&stdin);
    assert!(!both.contains(&stdin[0]), "{stdin:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sse_frames_each_event_as_one_data_line() {
    let out = cmd()
        .args(["--from", "gemini", "--format", "sse"])
        .arg(testdata("gemini/0.61.0/k_resume_1.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let frames: Vec<_> = text.split_terminator("\n\n").collect();
    assert_eq!(frames.len(), 10);
    for f in frames {
        let json = f.strip_prefix("data: ").expect("data: prefix");
        assert!(!json.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert!(v["type"].is_string());
    }
}

#[test]
fn thread_and_run_ids_can_be_set() {
    let out = cmd()
        .args(["--from", "gemini", "--thread-id", "T", "--run-id", "R"])
        .arg(testdata("gemini/0.61.0/k_resume_1.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(r#"{"type":"RUN_STARTED","threadId":"T","runId":"R""#),
        "{first}"
    );
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with(r#"{"type":"RUN_FINISHED","threadId":"T","runId":"R""#),
        "{last}"
    );
}

/// `--run-id R` over several FILEs: the runs are `R`, `R-2`, … in the
/// order they are written, the ids derived in a run are scoped by it, and
/// the whole output passes `check` (with `-j` as well).
#[test]
fn run_id_numbers_the_runs_across_files() {
    let shell = testdata("codex/0.169.0/shell.jsonl");
    let resumed = testdata("gemini/0.61.0/k_resume_1.jsonl");
    for jobs in ["1", "4"] {
        let out = cmd()
            .args(["--run-id", "R", "-j", jobs])
            .arg(&shell)
            .arg(&shell)
            .arg(&resumed)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        let runs: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["type"] == "RUN_STARTED")
            .map(|e| e["runId"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(runs, ["R", "R-2", "R-3"]);
        assert!(text.contains(r#""toolCallId":"R-item_0""#), "{text}");
        assert!(text.contains(r#""toolCallId":"R-2-item_0""#), "{text}");
        cmd()
            .arg("check")
            .write_stdin(out.stdout)
            .assert()
            .success()
            .stdout("<stdin>: OK, 28 events in 3 runs\n");
    }
}

#[test]
fn output_is_deterministic() {
    let run = || {
        cmd()
            .args(["--from", "gemini"])
            .arg(testdata("gemini/0.61.0/b_shell.jsonl"))
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(run(), run());
}

/// `agui-translate … | head -1`: the reader goes away; we end quietly, exit 0.
#[test]
fn closed_pipe_ends_quietly() {
    let mut child = StdCommand::new(BIN)
        .args(["--from", "gemini"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(b"{\"type\":\"init\",\"session_id\":\"s\"}\n");
        let line = b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"more text\",\"delta\":true}\n";
        for _ in 0..200_000 {
            if stdin.write_all(line).is_err() {
                break;
            }
        }
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// On a live pipe each event is written before the next input line exists.
#[test]
fn live_pipe_gets_each_event_at_once() {
    let mut child = StdCommand::new(BIN)
        .args(["--from", "gemini"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let wait = Duration::from_secs(20);
    stdin
        .write_all(
            b"{\"type\":\"init\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"session_id\":\"live\"}\n",
        )
        .unwrap();
    stdin.flush().unwrap();
    assert!(rx.recv_timeout(wait).unwrap().contains("RUN_STARTED"));
    assert!(rx.recv_timeout(wait).unwrap().contains("\"RAW\""));
    for (i, word) in ["one", "two", "three"].iter().enumerate() {
        let line = format!("{{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"{word}\",\"delta\":true}}\n");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
        if i == 0 {
            assert!(rx
                .recv_timeout(wait)
                .unwrap()
                .contains("TEXT_MESSAGE_START"));
        }
        let ev = rx.recv_timeout(wait).unwrap();
        assert!(ev.contains(&format!("\"delta\":\"{word}\"")), "{ev}");
    }
    drop(stdin);
    let rest: Vec<String> = rx.iter().collect();
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert!(rest[1].contains("input_ended"));
    child.wait().unwrap();
}

#[test]
fn strict_mode_fails_on_unknown_records() {
    let input = "{\"type\":\"init\",\"session_id\":\"s\"}\n{\"type\":\"brand_new\",\"x\":1}\n{\"type\":\"result\",\"status\":\"success\"}\n";
    cmd()
        .args(["--from", "gemini"])
        .write_stdin(input)
        .assert()
        .success()
        .stderr("")
        .stdout(predicate::str::contains(
            r#"{"type":"RAW","event":{"type":"brand_new","x":1},"source":"gemini"}"#,
        ));
    cmd()
        .args(["--from", "gemini", "--strict"])
        .write_stdin(input)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "<stdin>:2: unknown record type \"brand_new\" (--strict)",
        ));
}

#[test]
fn strict_mode_passes_every_recording() {
    let all = all_recordings();
    assert!(all.len() > 20);
    for path in all {
        let mut strict = cmd();
        strict.arg("--strict");
        if named_only(&path) {
            strict.args(["--from", "qwen"]);
        }
        strict.arg(&path).assert().success().stderr("");
    }
}

/// Whether `--from auto` cannot tell the recording's CLI, which must be
/// named: Qwen Code's stream-json control layer (`run qwen --page-tools`)
/// begins with control records that Claude Code writes too, before the
/// `init` that says it is Qwen Code (docs/qwen.md).
fn named_only(path: &std::path::Path) -> bool {
    let rel = path.strip_prefix(testdata("")).unwrap_or(path);
    rel.starts_with("qwen")
        && std::fs::read(path)
            .unwrap()
            .starts_with(br#"{"type":"control_"#)
}

/// `--stats` counts in words that agree with the number: `1 run`, `2 runs`.
#[test]
fn stats_text_says_1_run_and_2_runs() {
    let summary = |files: &[&str]| {
        let mut c = cmd();
        c.arg("--stats");
        for f in files {
            c.arg(testdata(f));
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stderr = String::from_utf8(out.stderr).unwrap();
        let line = stderr.lines().find(|l| l.contains(" read in "));
        line.unwrap_or_else(|| panic!("{stderr}")).to_owned()
    };
    let one = summary(&["gemini/0.61.0/b_shell.jsonl"]);
    assert!(one.contains(": 8 lines ("), "{one}");
    assert!(one.contains("; 1 run, 17 events ("), "{one}");
    let two = summary(&["gemini/0.61.0/b_shell.jsonl", "claude/2.0.5/http500.jsonl"]);
    assert!(two.contains("; 2 runs, "), "{two}");
    let empty = cmd()
        .arg("--stats=text")
        .write_stdin("\n")
        .output()
        .unwrap();
    let stderr = String::from_utf8(empty.stderr).unwrap();
    assert!(stderr.contains(" 1 line (1 byte) read "), "{stderr}");
}

/// `--stats=json` agrees with counts taken from the output itself.
#[test]
fn stats_match_the_output() {
    let path = testdata("gemini/cases/bad_lines.jsonl");
    let input = std::fs::read(&path).unwrap();
    let out = cmd()
        .args(["--from", "gemini", "--stats=json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let stats: serde_json::Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
    let mut by_type = std::collections::BTreeMap::<String, u64>::new();
    for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        *by_type
            .entry(v["type"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    let total: u64 = by_type.values().sum();
    assert_eq!(stats["events"], total);
    assert_eq!(
        stats["eventsByType"],
        serde_json::to_value(&by_type).unwrap()
    );
    assert_eq!(stats["bytesOut"], out.stdout.len() as u64);
    assert_eq!(stats["bytesIn"], input.len() as u64);
    assert_eq!(
        stats["lines"],
        input
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count() as u64
    );
    assert_eq!(
        stats["badLines"],
        stderr
            .lines()
            .filter(|l| l.contains(": not a JSON line") || l.contains(": unexpected record"))
            .count() as u64
    );
    assert_eq!(stats["runs"], by_type["RUN_STARTED"]);
    assert_eq!(stats["unknown"]["record type \"future_event\""], 1);
}

fn all_recordings() -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![testdata("")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl")
                && !path.components().any(|c| c.as_os_str() == "cases")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Every tool in every real recording has a canonical name, and the native
/// name is kept.
#[test]
fn every_recorded_tool_has_a_canonical_name() {
    let known: Vec<&str> = agui_translate::dialect::ALL
        .iter()
        .flat_map(|spec| spec.tools)
        .map(|(_, c)| *c)
        .chain(["mcp"])
        .collect();
    let mut seen = 0;
    for path in all_recordings() {
        let out = cmd()
            .args(["--tool-names", "canonical"])
            .arg(&path)
            .output()
            .unwrap();
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["type"] == "TOOL_CALL_START" {
                seen += 1;
                let name = v["toolCallName"].as_str().unwrap();
                // A front end's own tool (the page-* scenarios and
                // approval-page-tool), and the tool through which the model
                // changes its state (state-update), keep their names: the
                // front end's vocabulary.
                let page = path.file_name().is_some_and(|f| {
                    let f = f.to_string_lossy();
                    ["page-", "approval-page-", "state-"]
                        .iter()
                        .any(|p| f.starts_with(p))
                }) && v["metadata"]["nativeName"] == name;
                assert!(
                    page || known.contains(&name),
                    "{}: {name} is not canonical",
                    path.display()
                );
                assert!(v["metadata"]["nativeName"].is_string(), "{line}");
            }
        }
    }
    assert!(seen > 10, "only {seen} tool calls found");
}

/// What a conversation holds, whatever the ids: texts, tool calls with
/// parsed arguments, and results, in order.
fn conversation(path: &std::path::Path) -> Vec<String> {
    let out = cmd().arg(path).output().unwrap();
    let mut items = Vec::new();
    let mut texts = std::collections::HashMap::<String, String>::new();
    let mut args = std::collections::HashMap::<String, String>::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        match v["type"].as_str().unwrap() {
            "TEXT_MESSAGE_CONTENT" => texts
                .entry(id("messageId"))
                .or_default()
                .push_str(v["delta"].as_str().unwrap()),
            "TEXT_MESSAGE_END" => items.push(format!(
                "text: {}",
                texts.remove(&id("messageId")).unwrap_or_default()
            )),
            "TOOL_CALL_START" => items.push(format!("call: {}", v["toolCallName"])),
            "TOOL_CALL_ARGS" => args
                .entry(id("toolCallId"))
                .or_default()
                .push_str(v["delta"].as_str().unwrap()),
            "TOOL_CALL_END" => {
                let a: serde_json::Value =
                    serde_json::from_str(&args.remove(&id("toolCallId")).unwrap_or_default())
                        .unwrap();
                items.push(format!("args: {a}"));
            }
            "TOOL_CALL_RESULT" => items.push(format!("result: {}", v["content"])),
            "RUN_FINISHED" | "RUN_ERROR" => items.push(format!("end: {}", v["type"])),
            _ => {}
        }
    }
    items
}

/// Claude Code with and without --include-partial-messages: the same
/// conversation comes out.
#[test]
fn partial_and_complete_claude_streams_agree() {
    for case in ["a-text", "b-bash"] {
        let whole = conversation(&testdata(&format!("claude/2.1.328/{case}.jsonl")));
        let partial = conversation(&testdata(&format!("claude/2.1.328/{case}-partial.jsonl")));
        assert!(whole.len() >= 2, "{whole:?}");
        assert_eq!(whole, partial, "{case}");
    }
}

/// `--from auto` gives what naming the CLI gives, on every recording and on
/// each recording cut after each of its first lines: through the library
/// for every cut (the detection is the translator's), and through the
/// program for each dialect's first recording, whole.
#[test]
fn detection_matches_the_named_dialect() {
    use agui_translate::dialect::FromCli;
    use agui_translate::run::translate_bytes;
    let mut through_the_program = std::collections::HashSet::new();
    for path in all_recordings() {
        let rel = path.strip_prefix(testdata("")).unwrap();
        let cli = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap()
            .to_owned();
        if named_only(&path) {
            continue;
        }
        let input = std::fs::read(&path).unwrap();
        let ends: Vec<usize> = memchr::memchr_iter(b'\n', &input)
            .map(|i| i + 1)
            .take(5)
            .chain([input.len()])
            .collect();
        for end in ends {
            let cut = &input[..end];
            let named = translate_bytes(FromCli::named(&cli).expect("a dialect"), cut);
            let auto = translate_bytes(FromCli::Auto, cut);
            assert_eq!(
                String::from_utf8_lossy(&auto),
                String::from_utf8_lossy(&named),
                "{} cut at byte {end}",
                rel.display()
            );
        }
        if through_the_program.insert(cli.clone()) {
            let named = cmd()
                .args(["--from", &cli])
                .write_stdin(input.clone())
                .output()
                .unwrap();
            let auto = cmd().write_stdin(input).output().unwrap();
            assert_eq!(
                String::from_utf8_lossy(&auto.stdout),
                String::from_utf8_lossy(&named.stdout),
                "{}",
                rel.display()
            );
        }
    }
    assert!(through_the_program.len() >= 7, "{through_the_program:?}");
}

/// `--agui-version 0.0` reaches the writer in the filter, with `-j` and in
/// SSE: only the shapes AG-UI 0.0 refuses change, and what they held is in
/// `metadata`.
#[test]
fn agui_version_0_0_changes_only_what_0_0_refuses() {
    let files = [
        testdata("gemini/cases/cancelled.jsonl"),
        testdata("claude/cases/unknown_blocks_and_image.jsonl"),
    ];
    let run = |args: &[&str]| {
        let out = cmd().args(args).args(&files).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let v1 = run(&["-j", "1"]);
    let v0 = run(&["-j", "1", "--agui-version", "0.0"]);
    assert_eq!(run(&["-j", "2", "--agui-version", "0.0"]), v0);
    let sse = run(&["--format", "sse", "--agui-version", "0.0"]);
    let framed: String = v0.lines().map(|l| format!("data: {l}\n\n")).collect();
    assert_eq!(sse, framed);
    let parse = |l: &str| serde_json::from_str::<serde_json::Value>(l).unwrap();
    let mut changed = Vec::new();
    for (a, b) in v1.lines().zip(v0.lines()) {
        if a == b {
            continue;
        }
        let (old, new) = (parse(a), parse(b));
        match old["type"].as_str().unwrap() {
            "RUN_FINISHED" if old["outcome"]["type"] == "cancelled" => {
                assert_eq!(new.get("outcome"), None);
                assert_eq!(new["metadata"]["outcome"], old["outcome"]);
            }
            "RUN_FINISHED" | "RUN_ERROR" => {
                assert_eq!(new["metadata"]["usage"], old["usage"]);
                assert!(old["usage"][0]["cacheWriteInputTokens"].is_u64());
                assert_eq!(new["usage"][0].get("cacheWriteInputTokens"), None);
            }
            "TOOL_CALL_RESULT" => {
                assert_eq!(new["metadata"]["content"], old["content"]);
                assert_eq!(new["content"], "Here is the image:");
            }
            other => panic!("{other} changed:\n{a}\n{b}"),
        }
        changed.push(old["type"].as_str().unwrap().to_owned());
    }
    assert_eq!(v1.lines().count(), v0.lines().count());
    assert_eq!(
        changed,
        ["RUN_FINISHED", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    );
}

/// The events of translating `file` with `args`, parsed.
fn events_of(file: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = cmd().args(args).arg(testdata(file)).output().expect("runs");
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

#[test]
fn without_user_messages_the_gemini_prompt_stays_raw() {
    let file = "gemini/0.61.0/b_shell.jsonl";
    let with = events_of(file, &["--from", "gemini"]);
    let without = events_of(file, &["--from", "gemini", "--no-user-messages"]);
    let user_texts = |evs: &[serde_json::Value]| {
        evs.iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_START" && e["role"] == "user")
            .count()
    };
    assert_eq!(user_texts(&with), 1, "the echoed prompt is a user message");
    assert_eq!(user_texts(&without), 0);
    let prompt = with
        .iter()
        .find(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].clone())
        .expect("the prompt's text");
    assert!(
        without.iter().any(|e| e["type"] == "RAW"
            && e["event"]["role"] == "user"
            && e["event"]["content"] == prompt),
        "the prompt is kept in RAW"
    );
    // Nothing else changes: the other events are the same, in order.
    let others = |evs: &[serde_json::Value]| -> Vec<serde_json::Value> {
        evs.iter()
            .filter(|e| !(e["type"] == "RAW" && e["event"]["role"] == "user"))
            .filter(|e| {
                !e["messageId"]
                    .as_str()
                    .is_some_and(|m| m.ends_with("-user-1"))
            })
            .cloned()
            .collect()
    };
    assert_eq!(others(&with), others(&without));
}

#[test]
fn a_failed_gemini_tool_says_what_failed() {
    let evs = events_of("gemini/0.61.0/d_tool_failures.jsonl", &["--from", "gemini"]);
    let failed: Vec<_> = evs
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT" && e["metadata"]["isError"] == true)
        .collect();
    assert!(!failed.is_empty());
    for r in failed {
        let message = &r["metadata"]["error"]["message"];
        if message.is_string() {
            assert_eq!(
                &r["content"], message,
                "the error's message is the content: {r}"
            );
        }
    }
    let read = evs
        .iter()
        .find(|e| {
            e["type"] == "TOOL_CALL_RESULT"
                && e["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("does_not_exist.txt"))
        })
        .expect("the failed read names its file");
    assert_eq!(
        read["metadata"]["output"], "File not found.",
        "the CLI's output is kept"
    );
}

/// An empty input (a CLI that died before writing a line) is exit status 3
/// with --strict or --from CLI, and still a complete stream; without them it
/// is only reported. A FILE that cannot be read outranks it (2), and it
/// outranks bad lines (1).
#[test]
fn an_empty_input_is_exit_status_3_with_strict_or_from() {
    for args in [
        &["--strict"][..],
        &["--from", "claude"],
        &["--from", "codex", "--strict"],
    ] {
        let out = cmd().args(args).write_stdin("").output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("<stdin>: the input is empty"),
            "{args:?}"
        );
        cmd()
            .arg("check")
            .write_stdin(out.stdout)
            .assert()
            .success();
    }
    cmd()
        .write_stdin("")
        .assert()
        .code(0)
        .stderr(predicate::str::contains("the input is empty"));
    let empty = std::env::temp_dir().join(format!("agui-empty-{}", std::process::id()));
    std::fs::write(&empty, "").unwrap();
    cmd()
        .args(["--strict"])
        .arg(&empty)
        .arg("/nonexistent/file")
        .assert()
        .code(2);
    cmd()
        .args(["--strict"])
        .arg(&empty)
        .arg(testdata("gemini/0.61.0/b_shell.jsonl"))
        .write_stdin("")
        .assert()
        .code(3);
    cmd()
        .args(["--from", "gemini"])
        .arg(&empty)
        .arg("-")
        .write_stdin("{not json\n")
        .assert()
        .code(3);
    let _ = std::fs::remove_file(&empty);
}

/// `--from claude check f`: `check` is read as a FILE there; the report
/// says where a command goes.
#[test]
fn a_command_after_options_is_named_as_one() {
    cmd()
        .args(["--from", "claude", "check", "f"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "check: No such file or directory (os error 2) ('check' is a command only as the first argument",
        ))
        .stderr(predicate::str::contains(
            "to check a translation: agui-translate --from CLI FILE | agui-translate check",
        ));
    // A FILE that is simply missing gets no such words.
    cmd()
        .arg("nothing-here")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a command").not());
}

/// `check` given a CLI's own log says to translate it first.
#[test]
fn check_on_a_cli_log_says_to_translate_it_first() {
    let log = testdata("claude/2.1.330/shell.jsonl");
    cmd()
        .arg("check")
        .arg(&log)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "this is Claude Code's own stream, not AG-UI events: translate it first: agui-translate --from claude {} | agui-translate check",
            log.display()
        )));
    // An AG-UI stream that breaks a rule gets no such words.
    cmd()
        .arg("check")
        .write_stdin("{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("translate it first").not());
}

/// Two translations of one input joined into one stream repeat its tool
/// call ids: `check` says the first was in an earlier run.
#[test]
fn check_on_joined_translations_names_the_earlier_run() {
    let log = testdata("claude/2.1.330/shell.jsonl");
    let one = cmd().arg(&log).output().unwrap().stdout;
    let joined = [one.clone(), one].concat();
    let out = cmd().arg("check").write_stdin(joined).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("started twice (first at line 10, in an earlier run): a stream joined from translations of the same input repeats its ids"),
        "{stderr}"
    );
}

/// Binary input (an image, a compressed log) is said to be binary once,
/// not reported line by line in raw bytes, and gets no advice to name its
/// CLI; its output is still a complete stream.
#[test]
fn binary_input_is_reported_once() {
    let mut input = Vec::new();
    for i in 0..20_000u32 {
        input.push((i.wrapping_mul(2_654_435_761) >> 24) as u8);
    }
    assert!(input.iter().filter(|&&b| b == b'\n').count() > 50);
    let out = cmd().write_stdin(input).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("agui-translate: <stdin>:1: this input is not text (binary data)"),
        "{stderr}"
    );
    assert!(!stderr.contains("--from"), "{stderr}");
    cmd()
        .arg("check")
        .write_stdin(out.stdout)
        .assert()
        .success();
    // A text line that is not JSON is still reported with its preview.
    cmd()
        .write_stdin("{not json\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("<stdin>:1:").and(predicate::str::contains("{not json")));
}

/// The events of `agui-translate ARGS FILE`.
fn translated(args: &[&str], file: &std::path::Path) -> Vec<serde_json::Value> {
    let out = StdCommand::new(BIN).args(args).arg(file).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn is_raw(e: &serde_json::Value) -> bool {
    e["type"] == "RAW"
}

/// `--raw unknown` and `--raw none` leave every other event as it is, on
/// every recording of every CLI; `unknown` keeps a subsequence of `all`'s
/// RAW events, `none` none of them.
#[test]
fn raw_modes_only_ever_leave_out_raw_events() {
    let mut files = Vec::new();
    for cli in ["gemini", "codex", "claude", "codex-app-server"] {
        let dir = testdata(cli);
        for version in std::fs::read_dir(&dir).unwrap() {
            for f in std::fs::read_dir(version.unwrap().path()).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "jsonl") {
                    files.push(f);
                }
            }
        }
    }
    assert!(files.len() > 100, "{}", files.len());
    let (mut all_raw, mut unknown_raw) = (0, 0);
    for f in &files {
        let all = translated(&["--raw", "all"], f);
        assert_eq!(
            all,
            translated(&[], f),
            "{}: all is the default",
            f.display()
        );
        let unknown = translated(&["--raw", "unknown"], f);
        let none = translated(&["--raw", "none"], f);
        let not_raw = |v: &[serde_json::Value]| -> Vec<serde_json::Value> {
            v.iter().filter(|e| !is_raw(e)).cloned().collect()
        };
        assert_eq!(not_raw(&all), not_raw(&unknown), "{}", f.display());
        assert_eq!(not_raw(&all), none, "{}", f.display());
        let mut raws = all.iter().filter(|e| is_raw(e));
        for kept in unknown.iter().filter(|e| is_raw(e)) {
            assert!(raws.any(|r| r == kept), "{}: {kept}", f.display());
        }
        all_raw += all.iter().filter(|e| is_raw(e)).count();
        unknown_raw += unknown.iter().filter(|e| is_raw(e)).count();
    }
    assert!(
        unknown_raw > 0 && unknown_raw < all_raw,
        "{unknown_raw} of {all_raw}"
    );
}

/// `--raw unknown` drops the RAW of a record that was also translated and
/// keeps the RAW that is a record's only trace.
#[test]
fn raw_unknown_keeps_what_only_raw_carries() {
    let record_types = |events: &[serde_json::Value]| -> Vec<String> {
        events
            .iter()
            .filter(|e| is_raw(e))
            .map(|e| {
                let ev = &e["event"];
                match ev["subtype"].as_str() {
                    Some(sub) => format!("{}/{sub}", ev["type"].as_str().unwrap_or("")),
                    None => ev["type"].as_str().unwrap_or("").to_owned(),
                }
            })
            .collect()
    };
    // Claude Code: the init (its tools, MCP servers and paths) became
    // RUN_STARTED; the status records and message_delta have no AG-UI event.
    let claude = testdata("claude/2.1.330/shell.jsonl");
    let all = record_types(&translated(&[], &claude));
    assert!(all.contains(&"system/init".to_owned()), "{all:?}");
    let unknown = record_types(&translated(&["--raw", "unknown"], &claude));
    assert!(!unknown.contains(&"system/init".to_owned()), "{unknown:?}");
    assert!(unknown.contains(&"system/status".to_owned()), "{unknown:?}");
    assert!(unknown.contains(&"stream_event".to_owned()), "{unknown:?}");

    // Gemini CLI: the init goes; the prompt it echoes stays in RAW when it
    // is not made a user message.
    let gemini = testdata("gemini/0.61.0/b_shell.jsonl");
    assert_eq!(record_types(&translated(&[], &gemini)), ["init"]);
    assert!(translated(&["--raw", "unknown"], &gemini)
        .iter()
        .all(|e| !is_raw(e)));
    let echoed = record_types(&translated(
        &["--raw", "unknown", "--no-user-messages"],
        &gemini,
    ));
    assert_eq!(echoed, ["message"]);

    // A line that is not JSON, and a record of an unknown type: RAW only.
    let input = "{\"type\":\"init\",\"session_id\":\"s\",\"model\":\"m\"}\nnot json\n{\"type\":\"brand_new\",\"x\":1}\n";
    let out = cmd()
        .args(["--from", "gemini", "--raw", "unknown", "-q"])
        .write_stdin(input)
        .output()
        .unwrap();
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let raws: Vec<&serde_json::Value> = events.iter().filter(|e| is_raw(e)).collect();
    assert_eq!(raws.len(), 2, "{events:?}");
    assert_eq!(raws[0]["event"]["text"], "not json");
    assert_eq!(raws[1]["event"]["type"], "brand_new");
}
