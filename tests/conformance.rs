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

use agui_translate::dialect::FromCli;
use agui_translate::run::translate_bytes;

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

/// The file in `node_modules` that says an install finished: a copy of the
/// `package-lock.json` it installed (`npm ci` removes `node_modules` first,
/// so a stale or half-done install has none, or another).
const STAMP: &str = "node_modules/.agui-installed";

/// Installs the packages into `dir` (`npm ci`) unless they are there. Every
/// test of this file needs them, and the test threads (and any other test
/// process) ask at once on a cold checkout: one installs, under an exclusive
/// lock on `package-lock.json`, while the others wait for the lock and then
/// find the install finished. Two `npm ci` in one folder at once fail
/// (ENOENT, ENOTEMPTY).
fn ensure_packages(dir: &Path) {
    use std::os::fd::AsRawFd;
    let lock_file = dir.join("package-lock.json");
    let wanted = std::fs::read(&lock_file).unwrap();
    let installed = || std::fs::read(dir.join(STAMP)).is_ok_and(|s| s == wanted);
    if installed() {
        return;
    }
    let lock = std::fs::File::open(&lock_file).unwrap();
    // SAFETY: flock on a descriptor this function owns; the lock goes with
    // it when `lock` is dropped.
    let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(locked, 0, "flock {}", lock_file.display());
    if installed() {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .unwrap_or_else(|e| panic!("npm is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
    assert!(status.success(), "npm ci in {} failed", dir.display());
    std::fs::write(dir.join(STAMP), &wanted).unwrap();
}

/// Where the packages are: `tests/conformance`, or the folder named by
/// `AGUI_CONFORMANCE_DIR` (a cold copy, for the test below).
fn conformance_dir() -> PathBuf {
    std::env::var_os("AGUI_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("tests/conformance"))
}

/// A first `cargo test` on a machine with many cores: 16 test threads ask
/// for the packages at once in a folder that has none, and every one of them
/// finds them installed and loadable.
#[test]
fn a_cold_checkout_installs_the_packages_once_for_16_threads() {
    if skipped("a_cold_checkout_installs_the_packages_once_for_16_threads") {
        return;
    }
    let cold = std::env::temp_dir().join(format!("agui-conformance-cold-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cold);
    std::fs::create_dir_all(&cold).unwrap();
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(root().join("tests/conformance").join(file), cold.join(file)).unwrap();
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--test-threads", "16", "cold_install_"])
        .env("AGUI_CONFORMANCE_DIR", &cold)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&cold);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("test result: ok. 16 passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One of the 16 threads of the test above: the packages, then each of them
/// loaded by Node.js.
fn cold_install() {
    let dir = conformance_dir();
    ensure_packages(&dir);
    let out = Command::new("node")
        .args(["-e", "for (const p of ['@ag-ui/core', '@ag-ui/client', '@ag-ui/core-0.0', '@ag-ui/client-0.0']) require(p)"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

macro_rules! cold_installs {
    ($($name:ident)*) => {$(
        #[test]
        #[ignore = "one of the 16 threads of a_cold_checkout_installs_the_packages_once_for_16_threads"]
        fn $name() {
            cold_install();
        }
    )*};
}

cold_installs!(
    cold_install_01 cold_install_02 cold_install_03 cold_install_04
    cold_install_05 cold_install_06 cold_install_07 cold_install_08
    cold_install_09 cold_install_10 cold_install_11 cold_install_12
    cold_install_13 cold_install_14 cold_install_15 cold_install_16
);

/// Runs the checks of the official packages of AG-UI `version` (`1.0`, or
/// `0.0` for @ag-ui/core and @ag-ui/client 0.0.59) on `files`: how many
/// passed, and the failures.
fn verify_for(dir: &Path, version: &str, files: &[PathBuf]) -> (usize, Vec<String>) {
    let streams = files
        .iter()
        .map(|path| (path.display().to_string(), std::fs::read(path).unwrap()));
    verify_streams(dir, version, "files", files.len(), streams)
}

/// Runs the checks of AG-UI `version` on `count` named streams, made as
/// they are sent: all go to one `verify.cjs --stdin`, which compiles the
/// schemas once and checks each distinct event once. The verdicts name the
/// streams (`OK NAME`, `FAIL NAME: ...`). Large batches say on the
/// terminal how far they are.
fn verify_streams(
    dir: &Path,
    version: &str,
    unit: &'static str,
    count: usize,
    streams: impl Iterator<Item = (String, Vec<u8>)> + Send,
) -> (usize, Vec<String>) {
    use std::io::BufRead;
    let mut child = Command::new("node")
        .arg(dir.join("verify.cjs"))
        .args(["--agui-version", version, "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("node is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
    let mut stdin = child.stdin.take().unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let progress = (count >= 100).then(|| {
        let what = if version == "0.0" {
            "conformance (AG-UI 0.0)"
        } else {
            "conformance"
        };
        common::Progress::new(what, count, unit)
    });
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut sent = 0;
    let mut said = String::new();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            for (name, bytes) in streams {
                assert!(!name.contains(['\t', '\n']), "{name:?}");
                // A closed pipe: node stopped, which its exit status tells.
                if writeln!(stdin, "{name}\t{}", bytes.len()).is_err()
                    || stdin.write_all(&bytes).is_err()
                {
                    return sent;
                }
                sent += 1;
            }
            sent
        });
        let reader = scope.spawn(|| {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        for line in stdout.lines() {
            let line = line.unwrap();
            if line.starts_with("FAIL") {
                failures.push(line);
            } else if line.starts_with("OK ") {
                passed += 1;
            } else {
                continue;
            }
            if let Some(p) = &progress {
                p.add(1);
            }
        }
        sent = writer.join().unwrap();
        said = reader.join().unwrap();
    });
    let status = child.wait().unwrap();
    assert!(
        (status.success() || !failures.is_empty()) && passed + failures.len() == sent,
        "verify.cjs failed to run ({status}, {passed} passed of {sent} sent): {said}"
    );
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
    let mut recordings = Vec::new();
    files_under(&root().join("testdata"), ".jsonl", &mut recordings);
    recordings.sort();
    let datas: Vec<Vec<u8>> = recordings
        .iter()
        .map(|path| std::fs::read(path).unwrap())
        .collect();
    let mut inputs: Vec<(String, &[u8])> = Vec::new();
    for (path, data) in recordings.iter().zip(&datas) {
        let name = path
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .replace('/', "_");
        for i in memchr::memchr_iter(b'\n', data) {
            inputs.push((format!("{name}-cut{i}"), &data[..=i]));
        }
        // And in the middle of its last line.
        inputs.push((format!("{name}-mid"), &data[..data.len() * 2 / 3]));
    }
    let hostile: [(&str, &[u8]); 7] = [
        ("garbage", b"\x00\xff\xfe binary garbage\n{not json\n"),
        ("empty", b""),
        ("preamble-only", b"{\"model\":\"gpt-5\",\"provider\":\"openai\",\"sandbox\":\"read-only\"}\n{\"prompt\":\"hi\"}\n"),
        ("claude-cut-args", b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n{\"type\":\"stream_event\",\"event\":{\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}}\n{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}}}\n{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": [\\\"ls\"}}}\n"),
        ("gemini-result-first", b"{\"type\":\"result\",\"status\":\"success\"}\n{\"type\":\"init\",\"session_id\":\"s\"}\n"),
        ("codex-unknown", b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"thread.teleported\"}\n{\"type\":\"item.started\",\"item\":{\"id\":\"i\",\"type\":\"hologram\"}}\n"),
        ("app-server-cut", b"{\"id\":0,\"result\":{}}\n{\"method\":\"turn/started\",\"params\":{\"threadId\":\"t\",\"turn\":{\"id\":\"u\"}}}\n{\"method\":\"item/started\",\"params\":{\"item\":{\"type\":\"commandExecution\",\"id\":\"c\",\"command\":\"ls\"}}}\n{\"method\":\"item/reasoning/summaryTextDelta\",\"params\":{\"itemId\":\"r\",\"delta\":\"hm\"}}\n{\"method\":\"item/agentMessage/delta\",\"params\":{\"itemId\":\"m\",\"delta\":\"cut\"}}\n{\"method\":\"item/tool/call\",\"id\":1,\"params\":{}}\n"),
    ];
    for (name, input) in hostile {
        inputs.push((name.to_owned(), input));
    }
    // The goldens as they are, then each input's output, translated as it
    // is sent.
    let streams = files.len() + inputs.len();
    let goldens_sent = files
        .iter()
        .map(|path| (path.display().to_string(), std::fs::read(path).unwrap()));
    let outputs = inputs.iter().map(|(name, input)| {
        (
            format!("{name}.ndjson"),
            translate_bytes(FromCli::Auto, input),
        )
    });
    let (passed, failures) =
        verify_streams(&dir, "1.0", "streams", streams, goldens_sent.chain(outputs));
    report(&files[..goldens], &failures);
    assert!(
        failures.is_empty(),
        "{} of {streams} streams rejected by the official AG-UI checks:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(passed, streams);
    assert!(
        goldens > 50 && streams > 500,
        "{goldens} goldens, {streams} streams"
    );
}

/// Whether `path` (an AG-UI 1.0 stream) holds a shape that AG-UI 0.0.59
/// refuses or strips: a TOOL_CALL_RESULT whose content is an array of parts,
/// a RUN_FINISHED outcome `cancelled`, a usage entry with
/// `cacheWriteInputTokens`.
fn has_a_1_0_only_shape(path: &Path) -> bool {
    common::values(&std::fs::read_to_string(path).unwrap())
        .iter()
        .any(|ev| {
            ev["content"].is_array()
                || ev["outcome"]["type"] == "cancelled"
                || ev["usage"].as_array().is_some_and(|usage| {
                    usage
                        .iter()
                        .any(|u| u.get("cacheWriteInputTokens").is_some())
                })
        })
}

/// The 1.0 output (the goldens) against the official AG-UI 0.0.59 packages
/// (what CopilotKit ships): a golden fails exactly when it holds one of the
/// shapes `--agui-version 0.0` writes differently (docs/output.md); that
/// includes every stream with a content-parts result or a cancelled run.
#[test]
fn the_1_0_output_is_refused_by_0_0_clients_where_docs_say() {
    if skipped("the_1_0_output_is_refused_by_0_0_clients_where_docs_say") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let mut goldens = Vec::new();
    files_under(&root().join("testdata"), ".expected.ndjson", &mut goldens);
    goldens.sort();
    let (_, failures) = verify_for(&dir, "0.0", &goldens);
    let mut wrong = Vec::new();
    let mut refused = 0;
    for path in &goldens {
        let shown = format!("FAIL {}:", path.display());
        let failed = failures.iter().find(|f| f.starts_with(&shown));
        refused += usize::from(failed.is_some());
        if failed.is_some() != has_a_1_0_only_shape(path) {
            wrong.push(
                failed
                    .cloned()
                    .unwrap_or_else(|| format!("OK {}", path.display())),
            );
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(refused > 100, "{refused} of {} refused", goldens.len());
}

/// `--agui-version 0.0`: every recording in testdata (each CLI, each
/// version, the hand-written cases), and a run cancelled by `--timeout` for
/// each CLI `run` starts, pass the official AG-UI 0.0.59 schemas (nothing
/// stripped) and its client's chunk, verify and apply steps; and the 1.0
/// checks as well.
#[test]
fn outputs_for_0_0_pass_the_official_0_0_59_checks() {
    if skipped("outputs_for_0_0_pass_the_official_0_0_59_checks") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let out_dir = std::env::temp_dir().join(format!("agui-conformance-0.0-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let bin = env!("CARGO_BIN_EXE_agui-translate");
    let mut files = Vec::new();
    let mut write = |name: String, out: std::process::Output| {
        assert!(!out.stdout.is_empty(), "{name}: no output");
        let path = out_dir.join(name);
        std::fs::write(&path, out.stdout).unwrap();
        files.push(path);
    };
    let recordings = common::jsonl_under(&common::testdata());
    for path in &recordings {
        let name = path
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .replace('/', "_");
        let out = Command::new(bin)
            .args(["--agui-version", "0.0"])
            .arg(path)
            .output()
            .unwrap();
        write(format!("{name}.ndjson"), out);
    }
    for (cli, recording) in [
        ("gemini", "gemini/0.61.0/j_sigterm_group.jsonl"),
        ("codex", "codex/0.169.0/sigterm_command.jsonl"),
        ("claude", "claude/2.1.328/k-sigterm-tool.jsonl"),
    ] {
        let out = Command::new(bin)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("FAKE_REPLAY", common::testdata().join(recording))
            .env("FAKE_HANG", "30")
            .args([
                "run",
                cli,
                "--agui-version",
                "0.0",
                "--timeout",
                "200ms",
                "--cli",
            ])
            .arg(root().join("tests/fake/cli"))
            .arg("hi")
            .output()
            .unwrap();
        write(format!("run-{cli}-timeout.ndjson"), out);
    }
    for version in ["0.0", "1.0"] {
        let (passed, failures) = verify_for(&dir, version, &files);
        assert!(
            failures.is_empty(),
            "{} of {} streams rejected by the official AG-UI {version} checks:\n{}",
            failures.len(),
            files.len(),
            failures.join("\n")
        );
        assert_eq!(passed, files.len());
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(recordings.len() > 150, "{} recordings", recordings.len());
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
    // Thousands of runs: the ones that only replay, fail and say something
    // on stderr take the reduced stand-in (`tests/fake/replay`, in sh),
    // the others the whole one.
    let fake = root().join("tests/fake/cli");
    let replay_cli = root().join("tests/fake/replay");
    let reduced = |env: &[(String, String)]| {
        env.iter().all(|(k, _)| {
            ["FAKE_REPLAY", "FAKE_LINES", "FAKE_EXIT", "FAKE_STDERR"].contains(&k.as_str())
        })
    };
    // The runs: the CLI, its arguments and the stand-in's environment, or
    // `None` for the CLI missing from PATH. They run as their outputs are
    // sent to the checks.
    type Run = Option<(Vec<String>, Vec<(String, String)>)>;
    let mut runs: Vec<(String, Run)> = Vec::new();
    let mut run = |cli: &str, args: &[&str], env: &[(&str, &str)]| {
        let args = args.iter().map(|a| a.to_string()).collect();
        let env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        runs.push((cli.to_owned(), Some((args, env))));
    };
    let output = |n: usize, (cli, run): &(String, Run)| {
        let Some((args, env)) = run else {
            let out = Command::new(env!("CARGO_BIN_EXE_agui-translate"))
                .env_clear()
                .env("PATH", "/nonexistent")
                .args(["run", cli, "hi"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(127));
            return (format!("missing-{cli}.ndjson"), out.stdout);
        };
        let out = Command::new(env!("CARGO_BIN_EXE_agui-translate"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["run", cli, "--cli"])
            .arg(if reduced(env) { &replay_cli } else { &fake })
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        assert!(
            !out.stdout.is_empty(),
            "run {cli} {args:?} {env:?}: no output"
        );
        (format!("{n}-{cli}.ndjson"), out.stdout)
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
        if cli == "codex-app-server" || cli == "acp" {
            // Not a CLI `run` starts (the filter reads its recordings).
            continue;
        }
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
    }
    for cli in ["gemini", "codex", "claude"] {
        runs.push((cli.to_owned(), None));
    }

    let outputs = runs.iter().enumerate().map(|(n, r)| output(n + 1, r));
    let (passed, failures) = verify_streams(&dir, "1.0", "runs", runs.len(), outputs);
    assert!(
        failures.is_empty(),
        "{} of {} run outputs rejected by the official AG-UI checks:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
    assert_eq!(passed, runs.len());
    assert!(runs.len() > 500, "{} run outputs", runs.len());
}

/// The reduced stand-in of the `run` sweep (`tests/fake/replay`) does what
/// the whole one (`tests/fake/cli`) does with the variables the sweep gives
/// it: the same stdout, stderr and exit status, byte for byte.
#[test]
fn the_reduced_stand_in_does_what_the_whole_one_does() {
    let recording = common::testdata().join("claude/2.1.328/k-sigterm-tool.jsonl");
    let recording = recording.to_str().unwrap();
    let cases: [&[(&str, &str)]; 7] = [
        &[("FAKE_REPLAY", recording)],
        &[
            ("FAKE_REPLAY", recording),
            ("FAKE_EXIT", "41"),
            ("FAKE_STDERR", "Error: it failed\n  at \\x1b 'quoted' %s"),
        ],
        &[
            ("FAKE_REPLAY", recording),
            ("FAKE_LINES", "3"),
            ("FAKE_EXIT", "143"),
        ],
        &[("FAKE_EXIT", "244"), ("FAKE_STDERR", "Error: it failed")],
        &[("FAKE_REPLAY", "/nonexistent")],
        &[("FAKE_VERSION", "codex-cli 0.169.0 \\c")],
        &[],
    ];
    for (n, env) in cases.iter().enumerate() {
        // The last two as a CLI's version is asked for.
        let args: &[&str] = if n >= 5 {
            &["--version"]
        } else {
            &["-p", "hi", "--output-format", "stream-json"]
        };
        let [whole, reduced] = ["cli", "replay"].map(|stand_in| {
            let out = Command::new(root().join("tests/fake").join(stand_in))
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .envs(env.iter().copied())
                .args(args)
                .output()
                .unwrap();
            (
                out.status.code(),
                out.stdout,
                String::from_utf8(out.stderr).unwrap(),
            )
        });
        assert_eq!(reduced, whole, "{env:?}");
        assert!(
            !whole.1.is_empty() || !whole.2.is_empty(),
            "{env:?}: nothing said"
        );
    }
}

/// Every way to spoil one JSON node: the values put in its place.
fn replacements() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        json!(null),
        json!(true),
        json!(1),
        json!(1.5),
        json!(-1),
        json!(9007199254740993u64),
        json!("x"),
        json!(""),
        json!([]),
        json!({}),
    ]
}

/// `value` with the node at `path` (object keys and array indices) changed
/// by `f`; `f` gets the parent and the key or index.
fn mutate_at(
    value: &serde_json::Value,
    path: &[PathStep],
    f: &dyn Fn(&mut serde_json::Value, &PathStep),
) -> serde_json::Value {
    let mut v = value.clone();
    let mut node = &mut v;
    for step in &path[..path.len() - 1] {
        node = match step {
            PathStep::Key(k) => node.get_mut(k.as_str()).unwrap(),
            PathStep::Index(i) => node.get_mut(*i).unwrap(),
        };
    }
    f(node, path.last().unwrap());
    v
}

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    Index(usize),
}

/// The paths of every node under `v` (not `v` itself), and whether each is
/// an object.
fn paths(v: &serde_json::Value, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                prefix.push(PathStep::Key(k.clone()));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(PathStep::Index(i));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// Mutants of a valid stream: each line dropped, doubled, swapped with the
/// next, the stream cut after it; and in each event, each node removed,
/// replaced by a value of every JSON type, and each object given an
/// unknown property; each event type renamed to one that is not AG-UI 1.0.
fn mutants(base: &str) -> Vec<String> {
    let lines: Vec<&str> = base.lines().collect();
    let join = |ls: &[String]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let owned: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let mut out = Vec::new();
    for i in 0..owned.len() {
        let mut v = owned.clone();
        v.remove(i);
        out.push(join(&v));
        let mut v = owned.clone();
        v.insert(i, owned[i].clone());
        out.push(join(&v));
        if i + 1 < owned.len() {
            let mut v = owned.clone();
            v.swap(i, i + 1);
            out.push(join(&v));
        }
        out.push(join(&owned[..=i]));
    }
    for (i, line) in lines.iter().enumerate() {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let mut variants = Vec::new();
        for kind in [
            "BANANA",
            "THINKING_START",
            "THINKING_TEXT_MESSAGE_CONTENT",
            "text_message_start",
        ] {
            let mut e = event.clone();
            e["type"] = kind.into();
            variants.push(e);
        }
        let mut all = Vec::new();
        paths(&event, &mut Vec::new(), &mut all);
        // The event itself as an object that gets a property.
        let mut e = event.clone();
        e["zz"] = 1.into();
        variants.push(e);
        for path in &all {
            variants.push(mutate_at(
                &event,
                path,
                &|parent, step| match (parent, step) {
                    (serde_json::Value::Object(m), PathStep::Key(k)) => {
                        m.remove(k);
                    }
                    (serde_json::Value::Array(a), PathStep::Index(i)) => {
                        a.remove(*i);
                    }
                    _ => unreachable!(),
                },
            ));
            for r in replacements() {
                variants.push(mutate_at(&event, path, &|parent, step| match step {
                    PathStep::Key(k) => parent[k.as_str()] = r.clone(),
                    PathStep::Index(i) => parent[*i] = r.clone(),
                }));
            }
            variants.push(mutate_at(&event, path, &|parent, step| {
                let node = match step {
                    PathStep::Key(k) => &mut parent[k.as_str()],
                    PathStep::Index(i) => &mut parent[*i],
                };
                if let serde_json::Value::Object(m) = node {
                    m.insert("zz".into(), 1.into());
                }
            }));
        }
        for e in variants {
            let mut v = owned.clone();
            v[i] = e.to_string();
            out.push(join(&v));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `agui-translate check` against the official AG-UI 1.0 schemas and
/// verifier (plus the rules check adds, also in `verify.cjs`) on thousands
/// of mutants of valid streams: every verdict must be the same.
#[test]
fn check_agrees_with_the_official_checks() {
    if std::env::var_os("AGUI_SKIP_CONFORMANCE").is_some() {
        eprintln!("AG-UI conformance skipped (AGUI_SKIP_CONFORMANCE is set)");
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let bases = [
        "testdata/check/every-event.ndjson",
        "testdata/check/interrupt.ndjson",
        "testdata/codex/0.44.0/parallel.expected.ndjson",
        "testdata/claude/2.1.328/a-text-partial.expected.ndjson",
    ];
    // (name, text, check's verdict) of every mutant.
    let mut mutated = Vec::new();
    for (b, base) in bases.iter().enumerate() {
        let text = std::fs::read_to_string(root().join(base)).unwrap();
        assert!(
            agui_translate::check::check_bytes(text.as_bytes()).is_ok(),
            "{base}"
        );
        for (i, m) in mutants(&text).into_iter().enumerate() {
            let verdict = agui_translate::check::check_bytes(m.as_bytes());
            mutated.push((format!("mutant-{b}-{i}"), m, verdict));
        }
    }
    let streams = mutated
        .iter()
        .map(|(name, text, _)| (name.clone(), text.as_bytes().to_vec()));
    let (_, failures) = verify_streams(&dir, "1.0", "mutants", mutated.len(), streams);
    let failing: std::collections::HashMap<&str, &str> = failures
        .iter()
        .filter_map(|f| f.strip_prefix("FAIL ")?.split_once(": "))
        .collect();
    let mut disagreements = Vec::new();
    let mut invalid = 0;
    for (name, text, verdict) in &mutated {
        let official = failing.get(name.as_str());
        invalid += usize::from(official.is_some());
        if official.is_none() != verdict.is_ok() {
            disagreements.push(format!(
                "{name}\n  official: {}\n  check: {:?}\n{text}",
                official.map_or("OK".to_owned(), |why| format!("FAIL {name}: {why}")),
                verdict
                    .as_ref()
                    .map_err(|v| v.iter().map(ToString::to_string).collect::<Vec<_>>())
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} verdicts differ:\n{}",
        disagreements.len(),
        mutated.len(),
        disagreements
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        mutated.len() > 2000 && invalid > 1000,
        "{} mutants, {invalid} invalid",
        mutated.len()
    );
}

/// A front end keeps one agent per thread and feeds it run after run: the
/// two halves of every resumed session in testdata, translated separately
/// (`--format sse`), go through one `@ag-ui/client` `HttpAgent` in turn
/// (`tests/conformance/resume.cjs`), and no message of its list may mix the
/// two runs, nor any of the second run's messages be missing.
#[test]
fn resumed_threads_keep_their_runs_apart() {
    if skipped("resumed_threads_keep_their_runs_apart") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let out_dir = std::env::temp_dir().join(format!("agui-resume-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut firsts = Vec::new();
    files_under(&root().join("testdata"), "/resume.jsonl", &mut firsts);
    firsts.sort();
    let mut args = Vec::new();
    for first in &firsts {
        let rel = first.strip_prefix(root().join("testdata")).unwrap();
        let cli = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let name = rel.parent().unwrap().to_str().unwrap().replace('/', "_");
        for half in ["resume", "resume-2"] {
            let input = first.with_file_name(format!("{half}.jsonl"));
            let out = Command::new(env!("CARGO_BIN_EXE_agui-translate"))
                .args(["--quiet", "--from", cli, "--format", "sse"])
                .arg(&input)
                .output()
                .unwrap();
            let path = out_dir.join(format!("{name}-{half}.sse"));
            std::fs::write(&path, out.stdout).unwrap();
            args.push(path);
        }
    }
    let out = Command::new("node")
        .arg(dir.join("resume.cjs"))
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("node is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
    let _ = std::fs::remove_dir_all(&out_dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = text.lines().filter(|l| l.starts_with("OK ")).count();
    assert!(ok >= 10 && ok == args.len() / 2, "{text}");
}

/// `serve` with the official HttpAgent as its client (`tests/conformance/
/// serve.cjs`): two turns on one thread, two threads at once, a wrong token,
/// and a run the client aborts, which ends the CLI.
#[test]
fn http_agent_speaks_to_serve() {
    if skipped("http_agent_speaks_to_serve") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let pid_file = std::env::temp_dir().join(format!("agui-serve-agent-{}", std::process::id()));
    let _ = std::fs::remove_file(&pid_file);
    let resume = root().join("testdata/gemini/0.61.0/resume.jsonl");
    let answering = common::serve("gemini", &["--token", "t0ken"], &[("FAKE_REPLAY", &resume)]);
    let hanging = common::serve(
        "gemini",
        &["--token", "t0ken"],
        &[
            ("FAKE_REPLAY", &resume),
            ("FAKE_LINES", Path::new("2")),
            ("FAKE_PID", &pid_file),
            ("FAKE_HANG", Path::new("60")),
        ],
    );
    let out = Command::new("node")
        .arg(dir.join("serve.cjs"))
        .arg(format!("http://{}/agent", answering.addr))
        .arg(format!("http://{}/agent", hanging.addr))
        .arg("t0ken")
        .arg(&pid_file)
        .output()
        .unwrap_or_else(|e| panic!("node is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
    let _ = std::fs::remove_file(&pid_file);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim() == "OK",
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A page that comes back to its thread (`tests/conformance/history.cjs`):
/// after two turns, a fresh 1.0 and 0.0.59 HttpAgent on the same threadId
/// that sends no message gets both turns back, and what the last run used
/// in its state (the effort the turns chose, with Claude Code), and so
/// after a restart.
#[test]
fn http_agent_gets_its_thread_back() {
    if skipped("http_agent_gets_its_thread_back") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let state = std::env::temp_dir().join(format!("agui-history-node-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    let resume = root().join("testdata/gemini/0.61.0/resume.jsonl");
    let claude = root().join("testdata/claude/2.1.332/text.jsonl");
    let args = ["--token", "t0ken", "--state-dir", state.to_str().unwrap()];
    for (cli, replay, mode, effort) in [
        ("gemini", &resume, "ask", ""),
        ("gemini", &resume, "only", ""),
        ("claude", &claude, "ask", "high"),
        ("claude", &claude, "only", "high"),
    ] {
        let server = common::serve(cli, &args, &[("FAKE_REPLAY", replay)]);
        let out = Command::new("node")
            .arg(dir.join("history.cjs"))
            .arg(format!("http://{}/agent", server.addr))
            .args(["t0ken", mode, effort])
            .output()
            .unwrap_or_else(|e| panic!("node is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.trim() == "OK",
            "{mode}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&state);
}

/// A page that comes back to a thread whose history the server did not
/// keep (`tests/conformance/transcript.cjs`): the 1.0 and 0.0.59
/// HttpAgent take the thread rebuilt from Claude Code's real session file,
/// a message with files back with its stand-ins, and the run error of a
/// thread that cannot be rebuilt (Gemini CLI's).
#[test]
fn http_agent_takes_a_thread_rebuilt_or_refused() {
    if skipped("http_agent_takes_a_thread_rebuilt_or_refused") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let scratch = std::env::temp_dir().join(format!("agui-transcript-node-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let (state, config) = (scratch.join("state"), scratch.join("config"));
    let recording = root().join("testdata/claude/2.1.332/text.jsonl");
    let text = std::fs::read_to_string(&recording).unwrap();
    let at = text.find("\"session_id\":\"").unwrap() + 14;
    let session = text[at..].split('"').next().unwrap();
    std::fs::create_dir_all(config.join("projects/-scratch-work")).unwrap();
    std::fs::copy(
        root().join("testdata/transcripts/claude-2.1.332/resume.transcript"),
        config.join(format!("projects/-scratch-work/{session}.jsonl")),
    )
    .unwrap();
    // The history of the thread `lost` (its files are named by its id in
    // hex), removed.
    let forget = |state: &Path, cli: &str| {
        std::fs::remove_file(state.join(cli).join("6c6f7374.history.json")).unwrap();
    };
    let turn = |addr: &str, thread: &str, content: serde_json::Value| {
        let body = serde_json::json!({"threadId": thread, "protocolVersion": "1.0",
            "messages": [{"id": format!("{thread}-m"), "role": "user", "content": content}]});
        assert!(common::post_raw(addr, &body.to_string()).starts_with("HTTP/1.1 200"));
    };
    let node = |addr: &str, client: &str, mode: &str, thread: &str| {
        let out = Command::new("node")
            .arg(dir.join("transcript.cjs"))
            .args([&format!("http://{addr}/agent"), client, mode, thread])
            .output()
            .unwrap_or_else(|e| panic!("node is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.trim() == "OK",
            "{client} {mode}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let env: &[(&str, &Path)] = &[("FAKE_REPLAY", &recording), ("CLAUDE_CONFIG_DIR", &config)];
    let server = common::serve("claude", &["--state-dir", state.to_str().unwrap()], env);
    turn(&server.addr, "lost", "Hi".into());
    let png = std::fs::read(root().join("testdata/files/dot.png")).unwrap();
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD.encode(png);
    turn(
        &server.addr,
        "files",
        serde_json::json!([
            {"type": "text", "text": "What is on this page?"},
            {"type": "image", "source": {"type": "data", "value": png, "mimeType": "image/png"},
             "metadata": {"filename": "shot.png"}},
        ]),
    );
    for client in ["1.0", "0.0.59"] {
        forget(&state, "claude");
        node(&server.addr, client, "rebuilt", "lost");
        node(&server.addr, client, "files", "files");
    }
    let gemini_state = scratch.join("gemini");
    let resume = root().join("testdata/gemini/0.61.0/resume.jsonl");
    let gemini = common::serve(
        "gemini",
        &["--state-dir", gemini_state.to_str().unwrap()],
        &[("FAKE_REPLAY", &resume)],
    );
    turn(&gemini.addr, "lost", "Hi".into());
    forget(&gemini_state, "gemini");
    for client in ["1.0", "0.0.59"] {
        node(&gemini.addr, client, "unavailable", "lost");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// A page reloaded mid-run (`tests/conformance/rejoin.cjs`): an HttpAgent
/// run is aborted while the CLI still writes, and a fresh HttpAgent on the
/// same thread that sends no message rejoins it within the rejoin grace,
/// getting the rest of the run, which the official verifier passes; with
/// the 1.0 client and with 0.0.59.
#[test]
fn http_agent_rejoins_a_run_after_a_reload() {
    if skipped("http_agent_rejoins_a_run_after_a_reload") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let text = root().join("testdata/gemini/0.61.0/text.jsonl");
    // The 1.0 client, and 0.0.59 (CopilotKit's pin), each on a server of
    // its own.
    for release in ["1.0", "0.0"] {
        let gate =
            std::env::temp_dir().join(format!("agui-rejoin-node-{release}-{}", std::process::id()));
        let _ = std::fs::remove_file(&gate);
        let server = common::serve(
            "gemini",
            &["--token", "t0ken", "--rejoin-grace", "30s"],
            &[
                ("FAKE_REPLAY", &text),
                ("FAKE_LINES", Path::new("4")),
                ("FAKE_GATE", &gate),
            ],
        );
        node_says_ok(
            &format!("AG-UI rejoin ({release})"),
            Command::new("node")
                .arg(dir.join("rejoin.cjs"))
                .arg(format!("http://{}/agent", server.addr))
                .arg("t0ken")
                .arg(&gate)
                .arg(release),
        );
        let _ = std::fs::remove_file(&gate);
    }
}

/// `serve claude -- --approval ask` with the official 1.0 HttpAgent
/// (`tests/conformance/approve.cjs`): a run ends in an interrupt, the agent
/// keeps it pending and refuses to run past it, and a resume approves,
/// approves with edited arguments, denies or cancels the tool call; the
/// CLI gets the matching answer. The 0.0.59 HttpAgent (CopilotKit's pin,
/// no `protocolVersion`) approves too, with no option given to serve. And
/// `serve codex -- --approval ask`, replaying the real app-server's
/// approval request: approve, deny and cancel reach it as `accept`,
/// `decline` and `cancel`. And `serve gemini|opencode|copilot|qwen -- --approval ask`
/// over the Agent Client Protocol, replaying the real CLIs' permission
/// requests: approve, deny and cancel reach them as the options of those
/// kinds, and `cancelled`.
#[test]
fn http_agent_approves_through_serve() {
    if skipped("http_agent_approves_through_serve") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let mut servers = Vec::new();
    let mut args = Vec::new();
    for (name, replay) in [
        ("approve", "approve.jsonl"),
        ("edit", "approve.jsonl"),
        ("deny", "deny.jsonl"),
        ("cancel", "deny.jsonl"),
        ("approve-0.0", "approve.jsonl"),
        ("codex-approve", "approval_shell.jsonl"),
        ("codex-deny", "approval_shell.jsonl"),
        ("codex-cancel", "approval_shell.jsonl"),
        ("gemini-approve", "gemini-0.61.0/approval-allow.jsonl"),
        ("gemini-deny", "gemini-0.61.0/approval-deny.jsonl"),
        ("gemini-cancel", "gemini-0.61.0/approval-interrupt.jsonl"),
        ("opencode-approve", "opencode-1.18.33/approval-allow.jsonl"),
        ("opencode-deny", "opencode-1.18.33/approval-deny.jsonl"),
        (
            "opencode-cancel",
            "opencode-1.18.33/approval-interrupt.jsonl",
        ),
        ("copilot-approve", "copilot-1.0.102/approval-allow.jsonl"),
        ("copilot-deny", "copilot-1.0.102/approval-deny.jsonl"),
        ("copilot-cancel", "copilot-1.0.102/approval-interrupt.jsonl"),
        ("qwen-approve", "qwen-0.24.4/approval-allow.jsonl"),
        ("qwen-deny", "qwen-0.24.4/approval-deny.jsonl"),
        ("qwen-cancel", "qwen-0.24.4/approval-interrupt.jsonl"),
    ] {
        let sent = std::env::temp_dir().join(format!("agui-approve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&sent);
        let acp = name
            .split('-')
            .next()
            .filter(|c| ["gemini", "opencode", "copilot", "qwen"].contains(c));
        let server = if let Some(cli) = acp {
            // The real CLI's side of its ACP session, recorded.
            let replay = root().join("testdata/acp").join(replay);
            common::serve_run(
                cli,
                &[],
                &["--approval", "ask"],
                &[
                    ("FAKE_ACP", Path::new("1")),
                    ("ACP_REPLAY", &replay),
                    ("ACP_SENT", &sent),
                ],
            )
        } else if name.starts_with("codex") {
            // The real app-server's approval request, recorded.
            let replay = root()
                .join("testdata/codex-app-server/0.169.0")
                .join(replay);
            common::serve_run(
                "codex",
                &[],
                &["--codex-transport", "app-server", "--approval", "ask"],
                &[("FAKE_SERVER", &replay), ("FAKE_SENT", &sent)],
            )
        } else {
            let replay = root().join("tests/ask").join(replay);
            common::serve_run(
                "claude",
                &[],
                &["--approval", "ask"],
                &[("FAKE_CONTROL", &replay), ("FAKE_SENT", &sent)],
            )
        };
        args.push(std::ffi::OsString::from(format!(
            "http://{}/agent",
            server.addr
        )));
        args.push(sent.into_os_string());
        servers.push(server);
    }
    node_says_ok(
        "AG-UI conformance",
        Command::new("node")
            .arg(dir.join("approve.cjs"))
            .args(&args),
    );
}

/// CopilotKit's own run handler (`@copilotkit/core` 1.75, its packages in
/// `tests/copilotkit`, installed as this file's are) against `serve claude
/// -- --approval ask`, answering as its stock interrupt card does
/// (`tests/copilotkit/approve.cjs`): after an approval the thread holds the
/// command's real output for the call, after a denial or a cancel what the
/// CLI made of it, and not CopilotKit's own `{"approved":…}`.
#[test]
fn copilotkit_shows_the_real_result_of_an_approved_call() {
    if skipped("copilotkit_shows_the_real_result_of_an_approved_call") {
        return;
    }
    let dir = root().join("tests/copilotkit");
    ensure_packages(&dir);
    let mut servers = Vec::new();
    let mut args = Vec::new();
    for replay in ["approve.jsonl", "deny.jsonl", "deny.jsonl"] {
        let replay = root().join("tests/ask").join(replay);
        let server = common::serve_run(
            "claude",
            &[],
            &["--approval", "ask"],
            &[("FAKE_CONTROL", &replay)],
        );
        args.push(format!("http://{}/agent", server.addr));
        servers.push(server);
    }
    node_says_ok(
        "CopilotKit",
        Command::new("node")
            .arg(dir.join("approve.cjs"))
            .args(&args),
    );
}

/// CopilotKit's own frontend-tool loop (`@copilotkit/core` 1.75's run
/// handler, `tests/copilotkit/tools.cjs`) against `serve claude` with no
/// option: a tool registered as `useFrontendTool` registers one (with a
/// handler) is called by the model, the run ends with the call pending,
/// CopilotKit runs the handler and starts the follow-up run itself, the
/// handler's result reaches the CLI, and the turn ends. The stand-in
/// replays the real Claude Code calling a page's tool
/// (`testdata/claude/2.1.332/page-tool.jsonl`). And the model's change of
/// the state through serve's own tool: CopilotKit takes the new state, and
/// runs no handler (not even a wildcard's) and no follow-up for that call.
#[test]
fn copilotkit_runs_a_frontend_tool_through_serve() {
    if skipped("copilotkit_runs_a_frontend_tool_through_serve") {
        return;
    }
    let dir = root().join("tests/copilotkit");
    ensure_packages(&dir);
    let sent = common::scratch("conformance", "copilotkit-tools-sent");
    let _ = std::fs::remove_file(&sent);
    let replay = root().join("testdata/claude/2.1.332/page-tool.jsonl");
    let server = common::serve_run(
        "claude",
        &[],
        &[],
        &[("FAKE_CONTROL", &replay), ("FAKE_SENT", &sent)],
    );
    let replay = root().join("testdata/claude/2.1.332/state-update.jsonl");
    let state = common::serve_run("claude", &[], &[], &[("FAKE_CONTROL", &replay)]);
    node_says_ok(
        "CopilotKit",
        Command::new("node")
            .arg(dir.join("tools.cjs"))
            .arg(format!("http://{}/agent", server.addr))
            .arg(&sent)
            .arg(format!("http://{}/agent", state.addr)),
    );
}

/// `serve claude -- --approval ask` with a short `--approval-timeout`, and
/// the official 1.0 HttpAgent (`tests/conformance/expire.cjs`): once the
/// interrupt has expired, the agent takes only a cancel of it; the cancel is
/// a run that finishes, the agent lets go of the interrupt, and the thread's
/// next message runs.
#[test]
fn http_agent_goes_on_after_an_interrupt_expires() {
    if skipped("http_agent_goes_on_after_an_interrupt_expires") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let replay = root().join("tests/ask/approve.jsonl");
    let server = common::serve_run(
        "claude",
        &[],
        &["--approval", "ask", "--approval-timeout", "500ms"],
        &[("FAKE_CONTROL", &replay)],
    );
    node_says_ok(
        "AG-UI conformance",
        Command::new("node")
            .arg(dir.join("expire.cjs"))
            .arg(format!("http://{}/agent", server.addr)),
    );
}

/// Where Debian's `chromium` is, if installed.
fn chromium() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
}

/// `serve` from web pages in headless Chromium (`tests/conformance/
/// browser.cjs`): a page from a foreign origin can neither start a run nor
/// read one, by a plain fetch, a blind one or the official HttpAgent; a page
/// from an origin given with `--allow-origin` runs one end to end with the
/// HttpAgent, sending a header of its own, and approves a tool call that
/// `serve claude -- --approval ask` interrupts its run for; reloaded after
/// two turns, it shows both; reloaded during a long run (a stand-in that
/// writes the start of its answer, waits, then writes the rest a line at a
/// time), it shows the text so far and the rest as it comes, ending in one
/// RUN_FINISHED, and a second tab on the thread gets the same events.
/// Skipped, saying so, where
/// Chromium is not installed, unless `AGUI_NO_SKIP=1` (as in CI).
#[test]
fn only_pages_from_allowed_origins_reach_serve_in_a_browser() {
    let test = "only_pages_from_allowed_origins_reach_serve_in_a_browser";
    if skipped(test) {
        return;
    }
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("AGUI_NO_SKIP").is_none_or(|v| v != "1"),
            "chromium is not installed (Debian: apt-get install chromium); AGUI_NO_SKIP=1 refuses the skip"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: chromium is not installed (Debian: apt-get install chromium)"
        );
        return;
    };
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let argv = std::env::temp_dir().join(format!("agui-browser-argv-{}", std::process::id()));
    let _ = std::fs::remove_file(&argv);
    // A free port for the allowed page.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let origin = format!("http://localhost:{port}");
    let text = root().join("testdata/gemini/0.61.0/text.jsonl");
    let server = common::serve(
        "gemini",
        &["--allow-origin", &origin],
        &[("FAKE_REPLAY", &text), ("FAKE_ARGV", &argv)],
    );
    // A page that approves a tool call the CLI asks about.
    let asking = common::serve_run(
        "claude",
        &["--allow-origin", &origin],
        &["--approval", "ask"],
        &[("FAKE_CONTROL", &root().join("tests/ask/approve.jsonl"))],
    );
    // A long run, for a page reloaded during it.
    let gate = std::env::temp_dir().join(format!("agui-browser-gate-{}", std::process::id()));
    let _ = std::fs::remove_file(&gate);
    let long = common::serve(
        "gemini",
        &["--allow-origin", &origin, "--rejoin-grace", "30s"],
        &[
            ("FAKE_REPLAY", &text),
            ("FAKE_LINES", Path::new("4")),
            ("FAKE_GATE", &gate),
            ("FAKE_PACE", Path::new("0.1")),
        ],
    );
    let out = Command::new("node")
        .arg(dir.join("browser.cjs"))
        .arg(format!("http://{}/agent", server.addr))
        .arg(port.to_string())
        .arg(&argv)
        .arg(&browser)
        .arg(format!("http://{}/agent", asking.addr))
        .arg(format!("http://{}/agent", long.addr))
        .arg(&gate)
        .output()
        .unwrap_or_else(|e| panic!("node is needed for the AG-UI conformance test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it"));
    let _ = std::fs::remove_file(&argv);
    let _ = std::fs::remove_file(&gate);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim() == "OK",
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `serve` with no `--agui-version` writes for the client that asks
/// (`tests/conformance/version.cjs`): the 0.0.59 HttpAgent (CopilotKit's
/// pin, no `protocolVersion`) completes a run with a tool result, and the
/// 1.0 HttpAgent still gets the 1.0 shapes.
#[test]
fn serve_writes_for_the_client_s_ag_ui_release() {
    if skipped("serve_writes_for_the_client_s_ag_ui_release") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    // A result with content parts, which a 0.0 client refuses.
    let recording = root().join("testdata/claude/2.1.330/subagent.jsonl");
    let server = common::serve("claude", &[], &[("FAKE_REPLAY", &recording)]);
    node_says_ok(
        "AG-UI conformance",
        Command::new("node")
            .arg(dir.join("version.cjs"))
            .arg(format!("http://{}/agent", server.addr)),
    );
}

/// A run that ends waiting for approvals, and the run that resumes it: the
/// writer's interrupt outcome (several interrupts, every optional field)
/// passes `check` and the official checks of AG-UI 1.0 and of 0.0.59, as
/// written for each; and the resumed run's TOOL_CALL_RESULT for the call of
/// the run before is taken by both.
#[test]
fn interrupted_runs_pass_the_official_checks_of_1_0_and_0_0() {
    use agui_translate::agui::{
        AguiVersion, Content, Emitter, Format, Interrupt, MetaValue, Metadata, Outcome,
    };
    if skipped("interrupted_runs_pass_the_official_checks_of_1_0_and_0_0") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let out_dir = std::env::temp_dir().join(format!("agui-interrupts-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let schema = serde_json::value::RawValue::from_string(
        r#"{"type":"object","properties":{"approved":{"type":"boolean"},"editedArgs":{"type":"object"}},"required":["approved"]}"#.to_owned(),
    )
    .unwrap();
    let tool = [("toolName", Some(MetaValue::Str("Bash")))];
    let interrupts = [
        Interrupt {
            id: "c1-approval",
            reason: "tool_call",
            tool_call_id: Some("c1"),
            message: Some("Bash wants to run: ls"),
            response_schema: Some(MetaValue::Json(&schema)),
            expires_at: Some("2026-11-22T10:45:42.152Z"),
            metadata: Some(MetaValue::Object(&tool)),
        },
        Interrupt {
            id: "c2-approval",
            reason: "tool_call",
            tool_call_id: Some("c2"),
            message: None,
            response_schema: None,
            expires_at: None,
            metadata: None,
        },
    ];
    let mut files = Vec::new();
    for (version, name) in [(AguiVersion::V1_0, "1.0"), (AguiVersion::V0_0, "0.0")] {
        let mut em = Emitter::new(Format::Ndjson, Some("t".into()), None);
        em.set_version(version);
        em.start_run(None, Some("r1"));
        for id in ["c1", "c2"] {
            em.tool_start(id, "Bash", None);
            em.tool_args(id, r#"{"command":"ls"}"#);
            em.tool_end(id);
        }
        em.finish_run(None, Some(Outcome::Interrupt(&interrupts)), &[]);
        em.start_run(None, Some("r2"));
        em.tool_result("c1", Content::Text("a\nb\n"), Metadata::None);
        em.tool_result("c2", Content::Text("denied"), Metadata::None);
        em.finish_run(None, None, &[]);
        em.end_of_input(true);
        let out = em.output().to_vec();
        let text = String::from_utf8(out).unwrap();
        let reason = match version {
            AguiVersion::V1_0 => "tool_call",
            AguiVersion::V0_0 => "agui-translate:tool_approval",
        };
        assert!(
            text.contains(&format!(r#""outcome":{{"type":"interrupt","interrupts":[{{"id":"c1-approval","reason":"{reason}","toolCallId":"c1""#)),
            "{text}"
        );
        assert!(
            agui_translate::check::check_bytes(text.as_bytes()).is_ok(),
            "{text}"
        );
        let path = out_dir.join(format!("interrupt-{name}.ndjson"));
        std::fs::write(&path, &text).unwrap();
        files.push((name, path));
    }
    let mut failures = Vec::new();
    // One checker process for each release: the 1.0 stream is for 1.0
    // clients, the 0.0 one for both. A failure names its stream's file.
    for checker in ["1.0", "0.0"] {
        let paths: Vec<PathBuf> = files
            .iter()
            .filter(|(name, _)| !(*name == "1.0" && checker == "0.0"))
            .map(|(_, path)| path.clone())
            .collect();
        let (passed, failed) = verify_for(&dir, checker, &paths);
        if passed != paths.len() {
            failures.push(format!("{checker} checks: {failed:?}"));
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `serve claude` with the page's own tools, driven by the official 1.0
/// HttpAgent (`tests/conformance/tools.cjs`) as a page that runs its tools
/// does: the run ends with the calls pending, the page answers them with
/// `role: "tool"` messages, and the follow-up run gives the answers to the
/// CLI and streams the rest of the turn; one call, two answered together,
/// and the 0.0.59 HttpAgent (a plain success); and `serve codex`, two calls
/// answered together; `serve copilot` and `serve opencode` (the page's MCP
/// server over HTTP), two calls answered together; and `serve qwen`, two
/// calls answered together and one with the 0.0.59 HttpAgent; over ACP,
/// `serve gemini` (one call with either HttpAgent, and two, which Gemini
/// CLI makes one at a time) and `serve copilot|opencode -- --transport
/// acp` (two calls answered together), the page's permission granted by
/// the run and no approval shown. The stand-in replays the real Claude
/// Code, Codex app-server, Copilot CLI, OpenCode, Qwen Code and Gemini CLI
/// calling the page's tools (`testdata/claude/2.1.332`,
/// `testdata/codex-app-server/0.169.0`, `testdata/copilot/1.0.102`,
/// `testdata/opencode/1.18.33`, `testdata/qwen/0.24.4`, and
/// `testdata/acp/gemini-0.61.0`, `copilot-1.0.102`, `opencode-1.18.33`,
/// page-tool and page-tools-two).
#[test]
fn http_agent_answers_the_page_s_tool_calls_through_serve() {
    if skipped("http_agent_answers_the_page_s_tool_calls_through_serve") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let mut servers = Vec::new();
    let mut args = Vec::new();
    for (name, replay) in [
        ("one", "page-tool"),
        ("two", "page-tools-two"),
        ("one-0.0", "page-tool"),
        ("codex-two", "page-tools-two"),
        ("copilot-two", "page-tools-two"),
        ("opencode-two", "page-tools-two"),
        ("qwen-two", "page-tools-two"),
        ("qwen-one-0.0", "page-tool"),
        ("gemini-one", "page-tool"),
        ("gemini-one-0.0", "page-tool"),
        ("gemini-two", "page-tools-two"),
        ("copilot-acp-two", "page-tools-two"),
        ("opencode-acp-two", "page-tools-two"),
        ("qwen-acp-one", "page-tool"),
        ("qwen-acp-two", "page-tools-two"),
    ]
    .into_iter()
    .chain(APPROVED.iter().copied())
    .chain([
        ("claude-together", "approval-page-tool-together"),
        ("codex-together", "approval-page-tool-together"),
        ("copilot-acp-together", "approval-page-tool-together"),
        ("opencode-acp-together", "approval-page-tool-together"),
    ]) {
        let sent = std::env::temp_dir().join(format!("agui-tools-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&sent);
        if let Some(server) = acp_tools_server(name, replay, &sent) {
            args.push(std::ffi::OsString::from(format!(
                "http://{}/agent",
                server.addr
            )));
            args.push(sent.into_os_string());
            servers.push(server);
            continue;
        }
        let (cli, dir, var) = match name.split('-').next() {
            Some("codex") => ("codex", "testdata/codex-app-server/0.169.0", "FAKE_SERVER"),
            Some("copilot") => ("copilot", "testdata/copilot/1.0.102", "FAKE_MCP_HTTP"),
            Some("opencode") => ("opencode", "testdata/opencode/1.18.33", "FAKE_MCP_HTTP"),
            Some("qwen") => ("qwen", "testdata/qwen/0.24.4", "FAKE_CONTROL"),
            _ => ("claude", "testdata/claude/2.1.332", "FAKE_CONTROL"),
        };
        let replay = root().join(dir).join(format!("{replay}.jsonl"));
        let run_args: &[&str] = if name.contains("-approved") || name.contains("-together") {
            &["--approval", "ask"]
        } else {
            &[]
        };
        let server = common::serve_run(cli, &[], run_args, &[(var, &replay), ("FAKE_SENT", &sent)]);
        args.push(std::ffi::OsString::from(format!(
            "http://{}/agent",
            server.addr
        )));
        args.push(sent.into_os_string());
        servers.push(server);
    }
    node_says_ok(
        "AG-UI conformance",
        Command::new("node").arg(dir.join("tools.cjs")).args(&args),
    );
}

/// The cases of [`http_agent_answers_the_page_s_tool_calls_through_serve`]
/// where a call of the page's tools is answered after an approval of the
/// CLI's own call, in one turn (`--approval ask`), with either client.
const APPROVED: [(&str, &str); 12] = [
    ("claude-approved", "approval-page-tool"),
    ("claude-approved-0.0", "approval-page-tool"),
    ("codex-approved", "approval-page-tool"),
    ("codex-approved-0.0", "approval-page-tool"),
    ("gemini-approved", "approval-page-tool"),
    ("gemini-approved-0.0", "approval-page-tool"),
    ("copilot-acp-approved", "approval-page-tool"),
    ("copilot-acp-approved-0.0", "approval-page-tool"),
    ("opencode-acp-approved", "approval-page-tool"),
    ("opencode-acp-approved-0.0", "approval-page-tool"),
    ("qwen-acp-approved", "approval-page-tool"),
    ("qwen-acp-approved-0.0", "approval-page-tool"),
];

/// For a case of [`http_agent_answers_the_page_s_tool_calls_through_serve`]
/// over ACP (`gemini-…`, `…-acp-…`): `serve CLI` with the stand-in agent
/// replaying the CLI's ACP recording `replay`, which calls the page's
/// tools over HTTP and writes their results to `sent`, with the client's
/// lines (an `…-approved…` case: with `--approval ask`).
fn acp_tools_server(name: &str, replay: &str, sent: &Path) -> Option<common::Server> {
    let ask = name.contains("-approved") || name.contains("-together");
    let (cli, version, run_args): (_, _, &[&str]) = match name.split('-').collect::<Vec<_>>()[..] {
        ["gemini", ..] if ask => ("gemini", "0.61.0", &["--approval", "ask"]),
        ["gemini", ..] => ("gemini", "0.61.0", &[]),
        [cli @ ("copilot" | "opencode" | "qwen"), "acp", ..] => (
            cli,
            match cli {
                "copilot" => "1.0.102",
                "opencode" => "1.18.33",
                _ => "0.24.4",
            },
            if ask {
                &["--approval", "ask"]
            } else {
                &["--transport", "acp"]
            },
        ),
        _ => return None,
    };
    let replay = root()
        .join("testdata/acp")
        .join(format!("{cli}-{version}"))
        .join(format!("{replay}.jsonl"));
    Some(common::serve_run(
        cli,
        &[],
        run_args,
        &[
            ("FAKE_ACP", Path::new("1")),
            ("ACP_VERSION", Path::new(version)),
            ("ACP_REPLAY", &replay),
            ("ACP_PAGE_SENT", sent),
            ("ACP_SENT", sent),
        ],
    ))
}

/// `serve` with the page's state, for each CLI that takes the state's tool
/// (Claude Code, Codex, Copilot CLI, OpenCode, Qwen Code; Gemini CLI,
/// Copilot CLI and OpenCode over ACP), driven by the
/// official 1.0 HttpAgent and the 0.0.59 one
/// (`tests/conformance/state.cjs`): the model changes the state through
/// serve's own tool, the run streams it as STATE_SNAPSHOT before it ends,
/// and each agent's state is the model's, with what the run used under
/// `agui-translate`, which the thread's kept state does not hold. The
/// stand-ins replay the real CLIs calling the state's tool
/// (`testdata/*/*/state-update.jsonl`, `testdata/acp/*/state-update.jsonl`).
#[test]
fn http_agent_takes_the_state_the_model_changed() {
    if skipped("http_agent_takes_the_state_the_model_changed") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let mut servers = Vec::new();
    let mut args = vec![
        r#"{"branch":"dev","files":["src/lib.rs","a/b~c.rs"],"view":{"pane":"diff","a/b":1}}"#
            .to_owned(),
    ];
    // (what the client calls it, the CLI, its recording, the stand-in's
    // variable for it, the run options)
    let acp = ["--transport", "acp"];
    for (name, cli, recording, var, run_args) in [
        (
            "claude",
            "claude",
            "claude/2.1.332",
            "FAKE_CONTROL",
            &[][..],
        ),
        (
            "codex",
            "codex",
            "codex-app-server/0.169.0",
            "FAKE_SERVER",
            &[],
        ),
        (
            "copilot",
            "copilot",
            "copilot/1.0.102",
            "FAKE_MCP_HTTP",
            &[],
        ),
        (
            "opencode",
            "opencode",
            "opencode/1.18.33",
            "FAKE_MCP_HTTP",
            &[],
        ),
        ("qwen", "qwen", "qwen/0.24.4", "FAKE_CONTROL", &[]),
        ("gemini", "gemini", "acp/gemini-0.61.0", "ACP_REPLAY", &[]),
        (
            "copilot-acp",
            "copilot",
            "acp/copilot-1.0.102",
            "ACP_REPLAY",
            &acp,
        ),
        (
            "opencode-acp",
            "opencode",
            "acp/opencode-1.18.33",
            "ACP_REPLAY",
            &acp,
        ),
    ] {
        let replay = root().join(format!("testdata/{recording}/state-update.jsonl"));
        let mut urls = Vec::new();
        let mut files = Vec::new();
        for version in ["1.0", "0.0.59"] {
            let state_dir = std::env::temp_dir().join(format!(
                "agui-state-node-{name}-{version}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&state_dir);
            let fake_acp = Path::new(if var == "ACP_REPLAY" { "1" } else { "" });
            let s = common::serve_run(
                cli,
                &["--state-dir", state_dir.to_str().unwrap()],
                run_args,
                &[(var, &replay), ("FAKE_ACP", fake_acp)],
            );
            urls.push(format!("http://{}/agent", s.addr));
            // The thread's state file: its id in hexadecimal.
            let stem: String = format!("thread-state-{name}-{version}")
                .bytes()
                .map(|b| format!("{b:02x}"))
                .collect();
            files.push(state_dir.join(cli).join(format!("{stem}.state.json")));
            servers.push((s, state_dir));
        }
        args.push(format!(
            "{name}={},{},{},{}",
            urls[0],
            urls[1],
            files[0].display(),
            files[1].display()
        ));
    }
    node_says_ok(
        "AG-UI conformance",
        Command::new("node").arg(dir.join("state.cjs")).args(&args),
    );
    for (_, state_dir) in &servers {
        let _ = std::fs::remove_dir_all(state_dir);
    }
}

/// The states of each case of [`http_agent_applies_the_state_deltas`]: a
/// run's first state goes whole, each later one as the patch of the one
/// before when that is shorter.
fn delta_cases() -> Vec<(&'static str, Vec<serde_json::Value>, usize)> {
    use serde_json::json;
    let big = "x".repeat(300);
    vec![
        (
            "nested objects",
            vec![
                json!({"a": {"b": {"c": 1, "d": big}}, "e": 2}),
                json!({"a": {"b": {"c": 2, "d": big, "n": null}}, "e": 2}),
                json!({"a": {"b": {"c": 2, "d": big}, "x": {"y": true}}, "e": 3}),
            ],
            2,
        ),
        (
            "arrays replaced whole",
            vec![
                json!({"list": [1, 2, 3], "rows": [{"id": 1}], "big": big}),
                json!({"list": [3, 2, 1, 0], "rows": [], "big": big}),
            ],
            1,
        ),
        (
            "removed keys",
            vec![
                json!({"a": 1, "b": {"c": 2, "d": 3}, "big": big}),
                json!({"b": {"c": 2}, "big": big}),
            ],
            1,
        ),
        (
            "keys with / and ~",
            vec![
                json!({"a/b": 1, "c~d": {"e/f~g": [1], "~1": "x", "/": {}}, "": 0, "big": big}),
                json!({"a/b": 2, "c~d": {"e/f~g": [2], "~1": "y", "/": {"~0": 1}}, "": 1, "big": big}),
            ],
            1,
        ),
        (
            "objects that become arrays and back",
            vec![
                json!({"a": {"b": 1}, "c": [1], "big": big}),
                json!({"a": [1], "c": {"d": 1}, "big": big}),
            ],
            1,
        ),
        (
            "a small state goes whole",
            vec![json!({"a": 1}), json!({"b": 2}), json!({"b": 3, "c": 4})],
            0,
        ),
        (
            "a key the clients refuse to patch",
            vec![
                json!({"__proto__": {"a": 1}, "big": big}),
                json!({"__proto__": {"a": 2}, "big": big}),
            ],
            0,
        ),
    ]
}

/// The official 1.0 HttpAgent and the 0.0.59 one
/// (`tests/conformance/delta.cjs`) apply the STATE_DELTA events the emitter
/// writes: after each change, the agent's state is the state the emitter
/// was given (the STATE_SNAPSHOT it would have sent), for nested objects,
/// arrays replaced whole, removed keys, keys holding `/` and `~`, and
/// values that change type.
#[test]
fn http_agent_applies_the_state_deltas() {
    use agui_translate::agui::{Emitter, Format};
    if skipped("http_agent_applies_the_state_deltas") {
        return;
    }
    let dir = root().join("tests/conformance");
    ensure_packages(&dir);
    let cases: Vec<serde_json::Value> = delta_cases()
        .into_iter()
        .map(|(name, states, deltas)| {
            let mut em = Emitter::new(Format::Sse, Some("thread-delta".into()), None);
            for s in &states {
                let raw = serde_json::value::to_raw_value(s).unwrap();
                em.state_update(&raw);
            }
            em.finish_run(None, None, &[]);
            em.end_of_input(true);
            let mut sse = Vec::new();
            em.drain_to(&mut sse).unwrap();
            serde_json::json!({
                "name": name,
                "sse": String::from_utf8(sse).unwrap(),
                "states": states,
                "deltas": deltas,
            })
        })
        .collect();
    let file = common::scratch("conformance", "delta-cases.json");
    std::fs::write(&file, serde_json::to_string(&cases).unwrap()).unwrap();
    node_says_ok(
        "AG-UI conformance",
        Command::new("node").arg(dir.join("delta.cjs")).arg(&file),
    );
}

/// Runs the node script of `cmd`, which prints OK or what failed, for the
/// `what` test, and asserts that it printed OK.
fn node_says_ok(what: &str, cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("node is needed for the {what} test ({e}); install Node.js, or set {SKIP_VAR}=1 to skip it")
    });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim() == "OK",
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
