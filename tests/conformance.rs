//! Official AG-UI 1.0 conformance: every golden output, and the output of
//! every recording cut at every line end and of a set of hostile inputs, goes
//! through the official `@ag-ui/core` schemas and the `@ag-ui/client`
//! enforcement and sequence verifier (`tests/conformance/verify.cjs`).
//!
//! Needs Node.js with npm; the packages are installed from npm on first use
//! (`npm ci` in `tests/conformance`). `AGUI_SKIP_CONFORMANCE=1` (and only
//! `1`) skips it, saying so on the terminal.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use agui_translate::run::translate_bytes;
use agui_translate::source::FromCli;

mod common;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(dir: &Path, suffix: &str, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, suffix, found);
        } else if path.to_str().unwrap().ends_with(suffix) {
            found.push(path);
        }
    }
}

const SKIP_VAR: &str = "AGUI_SKIP_CONFORMANCE";

/// Whether this value of `AGUI_SKIP_CONFORMANCE` asks for a skip: only `1`
/// does, so that `AGUI_SKIP_CONFORMANCE=0` runs the test.
fn skip_requested(value: Option<&OsStr>) -> bool {
    value == Some(OsStr::new("1"))
}

/// True when the test is to be skipped, after saying so. The notice goes
/// straight to the process's stderr: `eprintln!` would be captured by the
/// test harness and never shown for a passing test.
fn skipped(test: &str) -> bool {
    if !skip_requested(std::env::var_os(SKIP_VAR).as_deref()) {
        return false;
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: the official AG-UI conformance checks did not run ({SKIP_VAR}=1)"
    );
    true
}

#[test]
fn only_the_value_1_skips() {
    assert!(skip_requested(Some(OsStr::new("1"))));
    for value in ["0", "", "yes", "true", " 1"] {
        assert!(!skip_requested(Some(OsStr::new(value))), "{value:?}");
    }
    assert!(!skip_requested(None));
}

/// The skip notice reaches the terminal through `cargo test`'s capture:
/// this test binary, run again on one test with the skip asked for, prints
/// it on its stderr.
#[test]
fn a_skip_is_visible() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "outputs_pass_the_official_ag_ui_checks"])
        .env(SKIP_VAR, "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SKIPPED outputs_pass_the_official_ag_ui_checks"),
        "{stderr}"
    );
}

fn ensure_packages(dir: &Path) {
    if dir.join("node_modules/@ag-ui/client").is_dir() {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .unwrap_or_else(|e| panic!("npm is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
    assert!(status.success(), "npm ci in {} failed", dir.display());
}

/// Runs the official checks on `files`: how many passed, and the failures.
fn verify(dir: &Path, files: &[PathBuf]) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut passed = 0;
    for chunk in files.chunks(400) {
        let out = Command::new("node")
            .arg(dir.join("verify.cjs"))
            .args(chunk)
            .output()
            .unwrap_or_else(|e| panic!("node is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
        let text = String::from_utf8_lossy(&out.stdout);
        failures.extend(
            text.lines()
                .filter(|l| l.starts_with("FAIL"))
                .map(str::to_owned),
        );
        passed += text.lines().filter(|l| l.starts_with("OK ")).count();
        assert!(
            out.status.success() || !failures.is_empty(),
            "verify.cjs failed to run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (passed, failures)
}

/// Each golden output's verdict, for `$AGUI_RESULTS`.
fn report(goldens: &[PathBuf], failures: &[String]) {
    common::report_verdicts(
        "conformance",
        goldens.iter().map(|path| {
            let shown = format!("FAIL {}:", path.display());
            (
                path.as_path(),
                !failures.iter().any(|f| f.starts_with(&shown)),
            )
        }),
    );
}

#[test]
fn outputs_pass_the_official_ag_ui_checks() {
    if skipped("outputs_pass_the_official_ag_ui_checks") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);

    let mut files = Vec::new();
    files_under(&root().join("testdata"), ".expected.ndjson", &mut files);
    let goldens = files.len();

    // Each recording cut at every line end, and hostile inputs.
    let out_dir = std::env::temp_dir().join(format!("agui-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut recordings = Vec::new();
    files_under(&root().join("testdata"), ".jsonl", &mut recordings);
    recordings.sort();
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    for path in &recordings {
        let data = std::fs::read(path).unwrap();
        let name = path
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .replace('/', "_");
        for (i, _) in data.iter().enumerate().filter(|(_, &b)| b == b'\n') {
            inputs.push((format!("{name}-cut{i}"), data[..=i].to_vec()));
        }
        // And in the middle of its last line.
        inputs.push((format!("{name}-mid"), data[..data.len() * 2 / 3].to_vec()));
    }
    let hostile: [(&str, &[u8]); 6] = [
        ("garbage", b"\x00\xff\xfe binary garbage\n{not json\n"),
        ("empty", b""),
        ("preamble-only", b"{\"model\":\"gpt-5\",\"provider\":\"openai\",\"sandbox\":\"read-only\"}\n{\"prompt\":\"hi\"}\n"),
        ("claude-cut-args", b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n{\"type\":\"stream_event\",\"event\":{\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}}\n{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}}}\n{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": [\\\"ls\"}}}\n"),
        ("gemini-result-first", b"{\"type\":\"result\",\"status\":\"success\"}\n{\"type\":\"init\",\"session_id\":\"s\"}\n"),
        ("codex-unknown", b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"thread.teleported\"}\n{\"type\":\"item.started\",\"item\":{\"id\":\"i\",\"type\":\"hologram\"}}\n"),
    ];
    for (name, input) in hostile {
        inputs.push((name.to_owned(), input.to_vec()));
    }
    for (name, input) in &inputs {
        let path = out_dir.join(format!("{name}.ndjson"));
        std::fs::write(&path, translate_bytes(FromCli::Auto, input)).unwrap();
        files.push(path);
    }

    let (passed, failures) = verify(&dir, &files);
    let _ = std::fs::remove_dir_all(&out_dir);
    report(&files[..goldens], &failures);
    assert!(
        failures.is_empty(),
        "{} of {} streams rejected by the official AG-UI checks:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    assert_eq!(passed, files.len());
    assert!(
        goldens > 50 && files.len() > 500,
        "{goldens} goldens, {} streams",
        files.len()
    );
}

/// `agui-translate run`, whose endings come from the exit status, stderr,
/// signals and timeouts: every recording replayed by the stand-in CLI with
/// its own exit status and stderr, every recording cut in half and ended by
/// each failing status, a bare failure per status, a timeout mid-stream and
/// a missing CLI, for each of the three CLIs.
#[test]
fn run_outputs_pass_the_official_ag_ui_checks() {
    if skipped("run_outputs_pass_the_official_ag_ui_checks") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let out_dir = std::env::temp_dir().join(format!("agui-run-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let fake = root().join("tests/fake/cli");
    let mut files = Vec::new();
    let mut missing_clis = Vec::new();
    let mut n = 0;
    let mut run = |cli: &str, args: &[&str], env: &[(&str, &str)]| {
        n += 1;
        let path = out_dir.join(format!("{n}-{cli}.ndjson"));
        let out = Command::new(env!("CARGO_BIN_EXE_agui-translate"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["run", cli, "--cli"])
            .arg(&fake)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            !out.stdout.is_empty(),
            "run {cli} {args:?} {env:?}: no output"
        );
        std::fs::write(&path, out.stdout).unwrap();
        files.push(path);
    };
    const STATUSES: [&str; 8] = ["1", "41", "42", "53", "55", "143", "173", "244"];
    let mut recordings = Vec::new();
    files_under(&root().join("testdata"), ".jsonl", &mut recordings);
    recordings.sort();
    for path in &recordings {
        let rel = path.strip_prefix(root().join("testdata")).unwrap();
        let cli = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let replay = path.to_str().unwrap();
        let lines = std::fs::read(path)
            .unwrap()
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        if let Ok(exit) = std::fs::read_to_string(path.with_extension("exit")) {
            let stderr = std::fs::read_to_string(path.with_extension("stderr")).unwrap_or_default();
            run(
                cli,
                &["hi"],
                &[
                    ("FAKE_REPLAY", replay),
                    ("FAKE_EXIT", exit.trim()),
                    ("FAKE_STDERR", &stderr),
                ],
            );
        }
        let half = (lines / 2).to_string();
        for status in STATUSES {
            run(
                cli,
                &["hi"],
                &[
                    ("FAKE_REPLAY", replay),
                    ("FAKE_LINES", &half),
                    ("FAKE_EXIT", status),
                ],
            );
        }
    }
    for cli in ["gemini", "codex", "claude"] {
        for status in STATUSES {
            run(
                cli,
                &["hi"],
                &[("FAKE_EXIT", status), ("FAKE_STDERR", "Error: it failed")],
            );
        }
        let recording = match cli {
            "gemini" => "gemini/0.61.0/j_sigterm_group.jsonl",
            "codex" => "codex/0.169.0/sigterm_command.jsonl",
            _ => "claude/2.1.328/k-sigterm-tool.jsonl",
        };
        let replay = root().join("testdata").join(recording);
        run(
            cli,
            &["--timeout", "200ms", "hi"],
            &[
                ("FAKE_REPLAY", replay.to_str().unwrap()),
                ("FAKE_HANG", "30"),
            ],
        );
        run(cli, &["hi"], &[("FAKE_REPLAY", "/nonexistent")]);
        let missing = out_dir.join(format!("missing-{cli}.ndjson"));
        let out = Command::new(env!("CARGO_BIN_EXE_agui-translate"))
            .env_clear()
            .env("PATH", "/nonexistent")
            .args(["run", cli, "hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(127));
        std::fs::write(&missing, out.stdout).unwrap();
        missing_clis.push(missing);
    }
    files.extend(missing_clis);

    let (passed, failures) = verify(&dir, &files);
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(
        failures.is_empty(),
        "{} of {} run outputs rejected by the official AG-UI checks:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    assert_eq!(passed, files.len());
    assert!(files.len() > 500, "{} run outputs", files.len());
}
