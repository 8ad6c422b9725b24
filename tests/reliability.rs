//! The promise that the output is always well-formed AG-UI, whatever the
//! input: every recording cut at every byte (or, for large ones, every line
//! end and the bytes around it), hostile inputs of every kind, and memory
//! bounded by the longest line rather than the input's size.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use agui_translate::check::{check_bytes, NdjsonLines, Summary, Violation};
use agui_translate::dialect::FromCli;
use agui_translate::run::{translate_bytes as translate, translate_cuts};
use assert_cmd::Command;
use predicates::prelude::*;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn recordings() -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for cli in agui_translate::dialect::ALL.iter().map(|spec| spec.name) {
        for path in common::jsonl_under(&common::testdata().join(cli)) {
            found.push((cli.to_owned(), path));
        }
    }
    found.sort();
    found
}

fn from(cli: &str) -> FromCli {
    FromCli::named(cli).expect("a dialect")
}

fn terminals(out: &[u8]) -> usize {
    lines_starting(out, br#"{"type":"RUN_FINISHED""#)
        + lines_starting(out, br#"{"type":"RUN_ERROR""#)
}

/// How many lines of `out` start with `prefix` (which holds no newline):
/// found with `memchr::memmem`, as the sweep below counts them in millions
/// of outputs.
fn lines_starting(out: &[u8], prefix: &[u8]) -> usize {
    let mut with_newline = Vec::with_capacity(prefix.len() + 1);
    with_newline.push(b'\n');
    with_newline.extend_from_slice(prefix);
    usize::from(out.starts_with(prefix)) + memchr::memmem::find_iter(out, &with_newline).count()
}

#[test]
fn lines_are_counted_by_their_start() {
    let out = b"{\"type\":\"RUN_STARTED\"}\n{\"type\":\"RAW\",\"x\":\"{\\\"type\\\":\\\"RUN_STARTED\\\"\"}\n{\"type\":\"RUN_ERROR\"}\n{\"type\":\"RUN_FINISHED\"}\n";
    assert_eq!(lines_starting(out, br#"{"type":"RUN_STARTED""#), 1);
    assert_eq!(terminals(out), 2);
    assert_eq!(terminals(b""), 0);
    assert_eq!(terminals(br#"{"type":"RUN_ERROR"}"#), 1);
}

/// Where to cut a recording: every byte of a small one; for a large one every
/// line end and the three bytes on each side of it, and a stride through the
/// rest.
fn cuts(input: &[u8]) -> Vec<usize> {
    if input.len() <= 3 * 1024 {
        return (0..=input.len()).collect();
    }
    let mut v: Vec<usize> = (0..=input.len()).step_by(input.len() / 300 + 1).collect();
    for (i, &b) in input.iter().enumerate() {
        if b == b'\n' {
            v.extend((i.saturating_sub(3)..=(i + 4).min(input.len())).collect::<Vec<_>>());
        }
    }
    v.push(input.len());
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn every_cut_of_every_recording_is_well_formed() {
    // The longest test of the suite: the processors take the recordings,
    // largest first, one at a time.
    let mut recordings = recordings();
    recordings.sort_by_key(|(_, path)| std::cmp::Reverse(path.metadata().unwrap().len()));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Progress in the bytes the cuts hold, which the time follows.
    let weight = |path: &Path| {
        let input = std::fs::read(path).unwrap();
        cuts(&input).iter().sum::<usize>().div_ceil(1 << 20)
    };
    let total = recordings.iter().map(|(_, path)| weight(path)).sum();
    let progress = common::Progress::new("reliability", total, "MiB of recordings cut");
    let (total, checks) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let (mut cuts, mut checks) = (0, 0);
                    while let Some((cli, path)) =
                        recordings.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        let (c, k) = cuts_are_well_formed(cli, path);
                        cuts += c;
                        checks += k;
                        progress.add(weight(path));
                    }
                    (cuts, checks)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .fold((0, 0), |(c, k), (wc, wk)| (c + wc, k + wk))
    });
    let _ = writeln!(
        std::io::stderr(),
        "reliability: {} recordings cut at {total} places, read as their CLI and as auto; {checks} different outputs checked",
        recordings.len()
    );
    assert!(total > 5_000, "only {total} cuts");
}

/// Every cut of one recording, by its dialect and by `auto`; the number of
/// cuts, and of outputs checked.
fn cuts_are_well_formed(cli: &str, path: &Path) -> (usize, usize) {
    let input = std::fs::read(path).unwrap();
    let cuts = cuts(&input);
    // The output last checked. The output by `auto` is most often the
    // named dialect's, and cuts a byte apart inside one line most often
    // give the same output: an output the same, byte for byte, as the one
    // checked before has its verdict.
    let mut checked: Vec<u8> = Vec::new();
    let mut checkers = [Checks::default(), Checks::default()];
    // The outputs come from one pass over the recording (`translate_cuts`);
    // one in 64, and the whole recording's, is also translated on its own
    // and must be the same.
    let (mut outputs, mut checks) = (0, 0);
    let modes = [from(cli), FromCli::Auto];
    translate_cuts(&modes, &input, &cuts, |cut, mode, out, whole| {
        if outputs % 64 == 0 || cut == input.len() {
            assert!(
                out == translate(mode, &input[..cut]),
                "{} cut at {cut} ({mode:?}): the one-pass output differs",
                path.display()
            );
        }
        outputs += 1;
        if out != checked {
            let verdict = checkers[usize::from(mode == FromCli::Auto)].verdict(out, whole);
            one_cut_is_well_formed(path, cut, mode, out, verdict);
            checks += 1;
            checked.clear();
            checked.extend_from_slice(out);
        }
    });
    assert_eq!(outputs, 2 * cuts.len());
    (cuts.len(), checks)
}

/// `agui-translate check`'s verdicts on the outputs of one reading of a
/// recording's cuts, which begin alike: the output of the whole lines
/// before a cut is checked once, and a copy of the checks goes on with the
/// rest of each cut's output.
#[derive(Default)]
struct Checks {
    /// The checks of the output's beginning (`fed` bytes of whole lines).
    base: NdjsonLines,
    fed: usize,
}

impl Checks {
    /// The verdict on `out`, whose first `whole` bytes begin each later
    /// output of the reading (see `translate_cuts`).
    fn verdict(&mut self, out: &[u8], whole: usize) -> Result<Summary, Vec<Violation>> {
        if whole < self.fed {
            return check_bytes(out);
        }
        for line in ndjson_lines(&out[self.fed..whole]) {
            self.base.line(line);
        }
        self.fed = whole;
        let mut rest = self.base.clone();
        for line in ndjson_lines(&out[whole..]) {
            rest.line(line);
        }
        rest.finish()
    }
}

/// The lines of NDJSON text as `check` reads them.
fn ndjson_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    text.split(|&b| b == b'\n')
        .filter(move |_| !text.is_empty())
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
}

/// The one-pass translation of the cuts above gives, for every cut, what
/// translating the cut input alone gives, and the checks taken up at the
/// cut's line the verdict of `check` on the whole output: every byte of
/// the smallest recordings of each dialect, and of inputs with a byte order
/// mark (at the start and inside), CRLF line ends, blank lines and binary
/// data.
#[test]
fn one_pass_cuts_are_the_inputs_cut() {
    let mut inputs: Vec<(FromCli, Vec<u8>)> = Vec::new();
    for cli in agui_translate::dialect::ALL.iter().map(|spec| spec.name) {
        let mut found = common::jsonl_under(&common::testdata().join(cli));
        found.sort_by_key(|path| path.metadata().unwrap().len());
        for path in found.iter().take(2) {
            inputs.push((from(cli), std::fs::read(path).unwrap()));
        }
    }
    let gemini =
        gemini_with(br#"{"type":"message","role":"assistant","content":"hi","delta":true}"#);
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&gemini);
    let mut inner_bom = gemini.clone();
    inner_bom.splice(
        GEMINI_INIT.len() + 1..GEMINI_INIT.len() + 1,
        *b"\xEF\xBB\xBF",
    );
    let crlf = String::from_utf8(gemini.clone())
        .unwrap()
        .replace('\n', "\r\n\n  \n");
    let mut binary = b"\0\xff\xfe{\n".to_vec();
    binary.extend_from_slice(&gemini);
    for input in [bom, inner_bom, crlf.into_bytes(), binary] {
        inputs.push((from("gemini"), input));
    }
    let mut compared = 0;
    for (named, input) in &inputs {
        let every: Vec<usize> = (0..=input.len()).collect();
        let mut checkers = [Checks::default(), Checks::default()];
        translate_cuts(
            &[*named, FromCli::Auto],
            input,
            &every,
            |cut, mode, out, whole| {
                assert!(
                    out == translate(mode, &input[..cut]),
                    "cut at {cut} of {} ({mode:?}):\n{}",
                    String::from_utf8_lossy(input),
                    String::from_utf8_lossy(out)
                );
                let verdict = checkers[usize::from(mode == FromCli::Auto)].verdict(out, whole);
                assert_eq!(verdict, check_bytes(out), "cut at {cut} ({mode:?})");
                compared += 1;
            },
        );
    }
    assert!(compared > 1000, "{compared}");
}

/// The output `out` of `path` cut at `cut`, read as `mode`, is well-formed
/// AG-UI (`verdict`, `check`'s) with one run per input (each recording is
/// one CLI run), so exactly one terminal event.
fn one_cut_is_well_formed(
    path: &Path,
    cut: usize,
    mode: FromCli,
    out: &[u8],
    verdict: Result<Summary, Vec<Violation>>,
) {
    if let Err(v) = verdict {
        panic!(
            "{} cut at {cut} ({mode:?}): {v:?}\n{}",
            path.display(),
            String::from_utf8_lossy(out)
        );
    }
    let runs = lines_starting(out, br#"{"type":"RUN_STARTED""#);
    assert_eq!(terminals(out), runs, "{} cut at {cut}", path.display());
    assert!(runs >= 1, "{} cut at {cut}: no run", path.display());
}

#[test]
fn a_cut_inside_the_last_line_is_reported() {
    let (_, path) = recordings()
        .into_iter()
        .find(|(_, p)| p.ends_with("b_shell.jsonl"))
        .unwrap();
    let input = std::fs::read(path).unwrap();
    let cut = input.len() - 40;
    let lines = input[..cut].iter().filter(|&&b| b == b'\n').count() + 1;
    Command::new(BIN)
        .args(["--from", "gemini"])
        .write_stdin(&input[..cut])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "<stdin>:{lines}: not a JSON line"
        )))
        .stderr(predicate::str::contains(
            "the input ends inside this line: it was cut short",
        ))
        .stdout(predicate::str::contains(r#""code":"input_ended""#));
}

/// Run the binary on `input`; the output must be well-formed AG-UI and the
/// program must not have crashed. Returns (exit status, stdout, stderr).
fn hostile(args: &[&str], input: &[u8]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .write_stdin(input.to_vec())
        .output()
        .unwrap();
    let code = out.status.code().expect("no crash by signal");
    assert!(
        matches!(code, 0 | 1 | 3),
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Err(v) = check_bytes(&out.stdout) {
        panic!("{args:?}: {v:?}\n{}", String::from_utf8_lossy(&out.stdout));
    }
    (
        code,
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const GEMINI_INIT: &str =
    r#"{"type":"init","timestamp":"2026-01-01T00:00:00Z","session_id":"s","model":"m"}"#;
const GEMINI_RESULT: &str =
    r#"{"type":"result","timestamp":"2026-01-01T00:00:09Z","status":"success"}"#;

fn gemini_with(middle: &[u8]) -> Vec<u8> {
    let mut v = format!("{GEMINI_INIT}\n").into_bytes();
    v.extend_from_slice(middle);
    v.extend_from_slice(format!("\n{GEMINI_RESULT}\n").as_bytes());
    v
}

#[test]
fn bad_lines_are_named_and_the_stream_goes_on() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("invalid JSON", b"{\"type\":\"message\",".to_vec(), "<stdin>:2: not a JSON line"),
        ("invalid UTF-8", b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"\xff\xfe\",\"delta\":true}".to_vec(), "<stdin>:2: not a JSON line"),
        ("NUL bytes", b"\0\0\0{\"type\":\"message\"}\0".to_vec(), "<stdin>:2: not a JSON line"),
        ("binary garbage", (0u8..=255).cycle().take(3000).filter(|&b| b != b'\n').collect(), "<stdin>:2: not a JSON line"),
        ("wrong field types", br#"{"type":"tool_use","tool_name":7,"tool_id":["x"],"parameters":"no"}"#.to_vec(), "<stdin>:2: unexpected record"),
        ("duplicate keys", br#"{"type":"message","type":"init","role":"assistant","content":"x"}"#.to_vec(), "<stdin>:2: unexpected record"),
    ];
    for (what, middle, want) in cases {
        let (code, out, err) = hostile(&["--from", "gemini"], &gemini_with(&middle));
        assert_eq!(code, 1, "{what}");
        assert!(err.contains(want), "{what}: {err}");
        assert!(
            out.contains(r#""source":"gemini""#),
            "{what}: the line is kept as RAW"
        );
        assert!(
            out.trim_end().ends_with("}") && out.contains("RUN_FINISHED"),
            "{what}: the stream went on"
        );
    }
}

#[test]
fn lone_surrogates_do_not_lose_the_line() {
    let line =
        br#"{"type":"message","role":"assistant","content":"a \ud800 b \udfff c","delta":true}"#;
    let (code, out, _) = hostile(&["--from", "gemini"], &gemini_with(line));
    assert_eq!(code, 0);
    assert!(
        out.contains("\"delta\":\"a \u{fffd} b \u{fffd} c\""),
        "{out}"
    );
}

#[test]
fn deep_nesting_and_huge_numbers() {
    let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let (code, out, err) = hostile(&["--from", "gemini"], &gemini_with(deep.as_bytes()));
    assert_eq!(code, 1);
    assert!(err.contains("<stdin>:2:"), "{err}");
    assert!(out.contains("RUN_FINISHED"));
    let big = br#"{"type":"result","status":"success","stats":{"total_tokens":1e400,"input_tokens":99999999999999999999999999,"output_tokens":-1}}"#;
    let mut input = format!("{GEMINI_INIT}\n").into_bytes();
    input.extend_from_slice(big);
    let (code, out, _) = hostile(&["--from", "gemini"], &input);
    assert_eq!(code, 0);
    assert!(
        out.contains("99999999999999999999999999"),
        "the record is kept: {out}"
    );
    assert!(!out.contains("\"inputTokens\""), "no invented usage: {out}");
}

#[test]
fn impossible_orders() {
    let tool_result =
        r#"{"type":"tool_result","tool_id":"nobody","status":"success","output":"x"}"#;
    let msg = r#"{"type":"message","role":"assistant","content":"late","delta":true}"#;
    let cases = [
        (
            "a result before init",
            format!("{GEMINI_RESULT}\n{GEMINI_INIT}\n{GEMINI_RESULT}\n"),
        ),
        (
            "a tool result for an unknown id",
            format!("{GEMINI_INIT}\n{tool_result}\n{GEMINI_RESULT}\n"),
        ),
        (
            "events after the final result",
            format!("{GEMINI_INIT}\n{GEMINI_RESULT}\n{msg}\n{tool_result}\n"),
        ),
        (
            "two inits",
            format!("{GEMINI_INIT}\n{msg}\n{GEMINI_INIT}\n{GEMINI_RESULT}\n"),
        ),
    ];
    for (what, input) in cases {
        let (code, out, _) = hostile(&["--from", "gemini"], input.as_bytes());
        assert_eq!(code, 0, "{what}");
        assert!(out.contains("RUN_STARTED"), "{what}");
    }
    // Claude: a result before init, two results, a tool result for nobody.
    let input = concat!(
        r#"{"type":"result","subtype":"success","is_error":false,"result":"early"}"#,
        "\n",
        r#"{"type":"system","subtype":"init","session_id":"s","uuid":"u"}"#,
        "\n",
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"nobody","content":"x"}]}}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"one"}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"two"}"#,
        "\n",
    );
    hostile(&["--from", "claude"], input.as_bytes());
    // Codex: items before thread.started, a completion for an unknown item.
    let input = concat!(
        r#"{"type":"item.completed","item":{"id":"item_9","type":"command_execution","command":"ls","aggregated_output":"a","exit_code":0,"status":"completed"}}"#,
        "\n",
        r#"{"type":"thread.started","thread_id":"t"}"#,
        "\n",
        r#"{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"after"}}"#,
        "\n",
    );
    hostile(&["--from", "codex"], input.as_bytes());
    // Codex app-server: a turn completed before it started, deltas and a
    // completion for items never started, a turn started twice, two turns
    // interleaved, an approval outside any turn, then the end of input.
    let input = concat!(
        r#"{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u0","status":"completed"}}}"#,
        "\n",
        r#"{"method":"item/reasoning/summaryTextDelta","params":{"turnId":"u1","itemId":"rs","delta":"hm","summaryIndex":3}}"#,
        "\n",
        r#"{"method":"item/commandExecution/outputDelta","params":{"turnId":"u1","itemId":"nobody","delta":"x"}}"#,
        "\n",
        r#"{"method":"item/completed","params":{"turnId":"u1","item":{"type":"mcpToolCall","id":"c","server":"s","tool":"t","status":"failed","arguments":[1],"result":null,"error":{"message":"no"}}}}"#,
        "\n",
        r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u1"}}}"#,
        "\n",
        r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u1"}}}"#,
        "\n",
        r#"{"method":"item/agentMessage/delta","params":{"turnId":"u2","itemId":"m","delta":"other turn"}}"#,
        "\n",
        r#"{"method":"item/fileChange/requestApproval","id":0,"params":{"itemId":"nobody","reason":"why"}}"#,
        "\n",
        r#"{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u2","status":"interrupted"}}}"#,
        "\n",
        r#"{"method":"item/agentMessage/delta","params":{"turnId":"u2","itemId":"m","delta":"after the end"}}"#,
        "\n",
    );
    let (code, out, _) = hostile(&["--from", "codex-app-server"], input.as_bytes());
    assert_eq!(code, 0);
    assert!(out.contains(r#""name":"approval_request""#), "{out}");
    assert!(out.contains(r#""content":"no""#), "{out}");
}

/// The app-server's shapes that are not of this protocol version: fields of
/// the wrong type are reported and kept; numbers and strings out of range
/// do not stop the stream.
#[test]
fn app_server_wrong_shapes() {
    let input = concat!(
        r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u"}},"emittedAtMs":1e400}"#,
        "\n",
        r#"{"method":"item/agentMessage/delta","params":{"itemId":7,"delta":"x"}}"#,
        "\n",
        r#"{"method":"item/started","params":{"item":"not an object"}}"#,
        "\n",
        r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":-1}}}}"#,
        "\n",
        r#"{"params":{"itemId":"m","delta":"late method"},"method":"item/agentMessage/delta"}"#,
        "\n",
        r#"{"hello":"world"}"#,
        "\n",
        r#"{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"completed"}}}"#,
        "\n",
    );
    let (code, out, err) = hostile(&["--from", "codex-app-server"], input.as_bytes());
    assert_eq!(code, 1);
    for line in [2, 3, 4, 6] {
        assert!(
            err.contains(&format!("<stdin>:{line}: unexpected record")),
            "line {line}: {err}"
        );
    }
    assert!(out.contains(r#""delta":"late method""#), "{out}");
    assert!(out.contains(r#""itemId":7"#), "kept as RAW: {out}");
    assert!(out.contains("RUN_FINISHED"), "{out}");
}

#[test]
fn empty_preamble_only_crlf_and_bom() {
    for cli in agui_translate::dialect::ALL
        .iter()
        .map(|s| s.name)
        .chain(["auto"])
    {
        let (code, out, _) = hostile(&["--from", cli], b"");
        // Named, the CLI should have written something: status 3.
        assert_eq!(code, if cli == "auto" { 0 } else { 3 }, "{cli}");
        assert!(out.contains(r#""code":"no_events""#), "{cli}: {out}");
    }
    let preamble = b"{\"model\":\"gpt-5\",\"provider\":\"openai\",\"sandbox\":\"read-only\"}\n{\"prompt\":\"hi\"}\n";
    for cli in ["codex", "auto"] {
        let (code, out, _) = hostile(&["--from", cli], preamble);
        assert_eq!(code, 0);
        assert!(out.contains(r#""code":"input_ended""#), "{out}");
    }
    let plain =
        gemini_with(br#"{"type":"message","role":"assistant","content":"hi","delta":true}"#);
    let mut crlf_bom = b"\xEF\xBB\xBF".to_vec();
    crlf_bom.extend(
        String::from_utf8(plain.clone())
            .unwrap()
            .replace('\n', "\r\n")
            .into_bytes(),
    );
    let (_, a, _) = hostile(&["--from", "gemini"], &plain);
    let (_, b, _) = hostile(&["--from", "gemini"], &crlf_bom);
    assert_eq!(a, b);
}

#[test]
fn unknown_event_types_in_every_dialect() {
    let inputs = [
        ("gemini", format!("{GEMINI_INIT}\n{{\"type\":\"teleport\",\"to\":\"mars\"}}\n{GEMINI_RESULT}\n")),
        ("codex", "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"thread.teleported\",\"to\":\"mars\"}\n".into()),
        ("claude", "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n{\"type\":\"teleport\",\"to\":\"mars\"}\n".into()),
        ("copilot", "{\"type\":\"user.message\",\"data\":{\"content\":\"hi\"},\"id\":\"i\",\"timestamp\":\"t\"}\n{\"type\":\"teleport\",\"data\":{\"to\":\"mars\"},\"id\":\"j\",\"timestamp\":\"t\"}\n".into()),
        ("qwen", "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\",\"qwen_code_version\":\"0.24.4\"}\n{\"type\":\"teleport\",\"to\":\"mars\"}\n".into()),
        ("opencode", "{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"s\",\"part\":{}}\n{\"type\":\"teleport\",\"timestamp\":2,\"sessionID\":\"s\",\"to\":\"mars\"}\n".into()),
        ("codex-app-server", "{\"method\":\"turn/started\",\"params\":{\"threadId\":\"t\",\"turn\":{\"id\":\"u\"}}}\n{\"method\":\"thread/teleported\",\"params\":{\"to\":\"mars\"}}\n".into()),
    ];
    for (cli, input) in inputs {
        let (code, out, err) = hostile(&["--from", cli], input.as_bytes());
        assert_eq!((code, err.as_str()), (0, ""), "{cli}");
        assert!(out.contains("\"to\":\"mars\""), "{cli}: kept as RAW: {out}");
        let strict = Command::new(BIN)
            .args(["--from", cli, "--strict"])
            .write_stdin(input)
            .output()
            .unwrap();
        assert_eq!(strict.status.code(), Some(1), "{cli}");
        assert!(
            String::from_utf8_lossy(&strict.stderr).contains(":2: unknown"),
            "{cli}"
        );
    }
}

/// A 100 MiB line (a huge tool output) goes through whole.
#[test]
fn a_100_mib_line() {
    let mut child = StdCommand::new(BIN)
        .args(["--from", "gemini", "--stats=json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = "0123456789abcdef".repeat(64 * 1024);
        writeln!(stdin, "{GEMINI_INIT}").unwrap();
        write!(stdin, r#"{{"type":"tool_use","tool_name":"run_shell_command","tool_id":"big","parameters":{{}}}}"#).unwrap();
        write!(
            stdin,
            "\n{{\"type\":\"tool_result\",\"tool_id\":\"big\",\"status\":\"success\",\"output\":\""
        )
        .unwrap();
        for _ in 0..100 {
            stdin.write_all(chunk.as_bytes()).unwrap();
        }
        writeln!(stdin, "\"}}\n{GEMINI_RESULT}").unwrap();
    });
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    writer.join().unwrap();
    let status = child.wait_with_output().unwrap();
    assert!(status.status.success());
    check_bytes(&out).unwrap();
    let result = out
        .split(|&b| b == b'\n')
        .find(|l| l.starts_with(br#"{"type":"TOOL_CALL_RESULT""#))
        .unwrap();
    assert!(result.len() > 100 * 1024 * 1024, "{}", result.len());
}

/// Peak memory follows the longest line, not the input: 256 MiB of
/// ordinary lines through a pipe.
#[test]
fn memory_is_bounded_by_the_longest_line() {
    let mut child = StdCommand::new(BIN)
        .args(["--from", "gemini", "--stats=json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let total: usize = 256 * 1024 * 1024;
    let writer = std::thread::spawn(move || {
        let mut block = String::new();
        let mut n = 0;
        while block.len() < 4 * 1024 * 1024 {
            n += 1;
            block.push_str(&format!(
                "{{\"type\":\"message\",\"timestamp\":\"2026-01-01T00:00:01Z\",\"role\":\"assistant\",\"content\":\"token {n} of a long and streaming answer, with some text to make the line ordinary\",\"delta\":true}}\n"
            ));
        }
        writeln!(stdin, "{GEMINI_INIT}").unwrap();
        let mut sent = 0;
        while sent < total {
            stdin.write_all(block.as_bytes()).unwrap();
            sent += block.len();
        }
        writeln!(stdin, "{GEMINI_RESULT}").unwrap();
    });
    let mut sink = [0u8; 1 << 16];
    let mut stdout = child.stdout.take().unwrap();
    let mut written = 0u64;
    loop {
        match stdout.read(&mut sink).unwrap() {
            0 => break,
            n => written += n as u64,
        }
    }
    writer.join().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stats: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert!(stats["bytesIn"].as_u64().unwrap() >= total as u64);
    assert_eq!(stats["bytesOut"].as_u64().unwrap(), written);
    let rss = stats["maxRssKiB"].as_u64().unwrap();
    assert!(
        rss > 0 && rss < 32 * 1024,
        "peak RSS {rss} KiB for a {} MiB input",
        total >> 20
    );
}
