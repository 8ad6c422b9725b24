//! Golden tests: every `testdata/<cli>/**/<case>.jsonl` is translated with
//! `--from <cli>` and compared with `<case>.expected.ndjson` (stdout) and, when
//! the run reports anything or exits non-zero, `<case>.expected.stderr` (the
//! exit status on the first line, then stderr).
//!
//! To re-bless after an intended change: `AGUI_BLESS=1 cargo test --test golden`,
//! then review `git diff testdata/` line by line.
//!
//! With `AGUI_RESULTS=FILE`, each case's verdict is appended to FILE
//! (`golden<TAB>testdata/...jsonl<TAB>ok|fail`), which `scripts/matrix.py`
//! turns into the compatibility matrix in docs/compatibility.md.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

mod common;

fn cases(cli: &str) -> Vec<PathBuf> {
    common::jsonl_under(&common::testdata().join(cli))
}

fn sibling(case: &Path, ext: &str) -> PathBuf {
    let stem = case.file_stem().unwrap().to_str().unwrap();
    case.with_file_name(format!("{stem}.{ext}"))
}

fn golden(cli: &str) {
    let bless = std::env::var_os("AGUI_BLESS").is_some();
    let cases = cases(cli);
    assert!(!cases.is_empty(), "no cases in testdata/{cli}");
    let mut failures = Vec::new();
    for case in &cases {
        let failed_before = failures.len();
        let out = Command::new(env!("CARGO_BIN_EXE_agui-translate"))
            .args(["--from", cli])
            .pipe_stdin(case)
            .unwrap()
            .output()
            .unwrap();
        let status = out.status.code().unwrap_or(-1);
        let stdout = String::from_utf8(out.stdout).expect("output is UTF-8");
        let mut stderr = String::new();
        if status != 0 || !out.stderr.is_empty() {
            stderr = format!("exit: {status}\n{}", String::from_utf8_lossy(&out.stderr));
        }
        if let Err(v) = agui_translate::check::check_bytes(stdout.as_bytes()) {
            failures.push(format!(
                "{}: the output breaks AG-UI rules: {v:?}",
                case.display()
            ));
        }
        let want_out = sibling(case, "expected.ndjson");
        let want_err = sibling(case, "expected.stderr");
        if bless {
            std::fs::write(&want_out, &stdout).unwrap();
            if stderr.is_empty() {
                let _ = std::fs::remove_file(&want_err);
            } else {
                std::fs::write(&want_err, &stderr).unwrap();
            }
            continue;
        }
        let expected = std::fs::read_to_string(&want_out).unwrap_or_default();
        if expected != stdout {
            failures.push(format!(
                "{}: stdout differs\n--- expected\n{expected}--- actual\n{stdout}",
                case.display()
            ));
        }
        let expected = std::fs::read_to_string(&want_err).unwrap_or_default();
        if expected != stderr {
            failures.push(format!(
                "{}: exit status or stderr differs\n--- expected\n{expected}--- actual\n{stderr}",
                case.display()
            ));
        }
        common::report_verdicts(
            "golden",
            [(case.as_path(), failures.len() == failed_before)],
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} golden cases differ (AGUI_BLESS=1 cargo test --test golden to re-bless, then review git diff):\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn gemini() {
    golden("gemini");
}

#[test]
fn codex() {
    golden("codex");
}

#[test]
fn claude() {
    golden("claude");
}

#[test]
fn qwen() {
    golden("qwen");
}

#[test]
fn copilot() {
    golden("copilot");
}

#[test]
fn opencode() {
    golden("opencode");
}

#[test]
fn codex_app_server() {
    golden("codex-app-server");
}

#[test]
fn acp() {
    golden("acp");
}
