//! `agui-translate run`, with a stand-in CLI (`tests/fake/cli`) that
//! replays real recordings, exits with chosen statuses, writes to stderr,
//! floods it, hangs, or ignores SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fake() -> PathBuf {
    root().join("tests/fake/cli")
}

fn recording(rel: &str) -> PathBuf {
    root().join("testdata").join(rel)
}

fn run(cli: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", cli, "--cli"])
        .arg(fake());
    c
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-run-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn events(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn last(stdout: &[u8]) -> serde_json::Value {
    events(stdout).pop().expect("some output")
}

/// Tests run in parallel: each argument file gets a name of its own.
fn unique(prefix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    tmp(&format!("{prefix}-{}", N.fetch_add(1, Ordering::SeqCst)))
}

fn argv_of(cli: &str, args: &[&str], stdin: &str) -> Vec<String> {
    let file = unique(&format!("argv-{cli}"));
    run(cli)
        .args(args)
        .env("FAKE_ARGV", &file)
        .write_stdin(stdin)
        .assert()
        .success();
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn argv_per_cli() {
    let prompt = "fix it; rm -rf / `x` $(y) \"q\"";
    assert_eq!(
        argv_of("gemini", &[prompt], ""),
        ["-p", prompt, "--output-format", "stream-json"]
    );
    assert_eq!(
        argv_of("codex", &[prompt], ""),
        ["exec", "--json", "--skip-git-repo-check", "--", prompt]
    );
    assert_eq!(
        argv_of("claude", &[prompt], ""),
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--",
            prompt
        ]
    );
}

/// A prompt that looks like an option (or, for codex, a subcommand) reaches
/// the CLI as the prompt. Checked against each CLI's own parser by hand:
/// `gemini -p --version` prints gemini's version, `claude -p -x` and
/// `codex exec -x` reject an unknown option, `codex exec … resume` resumes a
/// session. (Our own parser rejects such a prompt as an argument: it comes
/// on stdin.)
#[test]
fn a_prompt_is_never_read_as_an_option() {
    for prompt in ["--version", "-x: list the flags", "-", "--"] {
        let stdin = format!("{prompt}\n");
        assert_eq!(
            argv_of("gemini", &[], &stdin),
            [
                format!("--prompt={prompt}").as_str(),
                "--output-format",
                "stream-json"
            ]
        );
        let codex = argv_of("codex", &[], &stdin);
        assert_eq!(codex[codex.len() - 2..], ["--", prompt]);
        let claude = argv_of("claude", &["--allow-tool", "Read"], &stdin);
        assert_eq!(claude[claude.len() - 2..], ["--", prompt]);
    }
    assert_eq!(
        argv_of("codex", &["resume"], ""),
        ["exec", "--json", "--skip-git-repo-check", "--", "resume"]
    );
    assert_eq!(
        argv_of("codex", &["--resume", "s-1", "review"], ""),
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "resume",
            "s-1",
            "--",
            "review"
        ]
    );
}

#[test]
fn options_map_to_each_clis_flags() {
    let common = [
        "--model",
        "m1",
        "--resume",
        "s-1",
        "--approval",
        "yolo",
        "hi",
        "--",
        "--extra",
        "x",
    ];
    assert_eq!(
        argv_of("gemini", &[&common[..], &[]].concat(), ""),
        [
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--model",
            "m1",
            "--resume",
            "s-1",
            "--approval-mode",
            "yolo",
            "--extra",
            "x"
        ]
    );
    assert_eq!(
        argv_of("codex", &common, ""),
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--model",
            "m1",
            "--dangerously-bypass-approvals-and-sandbox",
            "--extra",
            "x",
            "resume",
            "s-1",
            "--",
            "hi"
        ]
    );
    let claude = argv_of(
        "claude",
        &[
            "--max-turns",
            "3",
            "--allow-tool",
            "Read",
            "--allow-tool",
            "Bash(git:*)",
            "--deny-tool",
            "WebFetch",
            "--approval",
            "auto-edit",
            "hi",
        ],
        "",
    );
    assert_eq!(
        claude,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--max-turns",
            "3",
            "--allowedTools",
            "Read,Bash(git:*)",
            "--disallowedTools",
            "WebFetch",
            "--permission-mode",
            "acceptEdits",
            "--",
            "hi"
        ]
    );
    assert_eq!(
        argv_of(
            "gemini",
            &["--allow-tool", "read_file", "--allow-tool", "glob", "hi"],
            ""
        ),
        [
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--allowed-tools",
            "read_file,glob"
        ]
    );
}

/// Gemini CLI forbids tools through its policy engine: a policy file of
/// ours, there while the CLI runs and gone after.
#[test]
fn gemini_deny_tool_is_a_policy_file() {
    let argv_file = unique("argv-policy");
    let copy = unique("policy-copy");
    run("gemini")
        .args([
            "--deny-tool",
            "run_shell_command",
            "--deny-tool",
            "mcp_github_*",
            "--approval",
            "yolo",
            "hi",
        ])
        .env("FAKE_ARGV", &argv_file)
        .env("FAKE_POLICY", &copy)
        .assert()
        .success();
    let argv = std::fs::read_to_string(&argv_file).unwrap();
    let argv: Vec<&str> = argv.lines().collect();
    let at = argv.iter().position(|&a| a == "--policy").unwrap();
    assert_eq!(argv[..at], ["-p", "hi", "--output-format", "stream-json"]);
    assert_eq!(argv[at + 2..], ["--approval-mode", "yolo"]);
    let policy = Path::new(argv[at + 1]);
    assert!(policy.is_absolute());
    assert!(!policy.exists(), "{} outlived the run", policy.display());
    let rules = std::fs::read_to_string(&copy).unwrap();
    for tool in ["run_shell_command", "mcp_github_*"] {
        assert!(
            rules.contains(&format!(
                "[[rule]]\ntoolName = \"{tool}\"\ndecision = \"deny\"\npriority = 999\n"
            )),
            "{rules}"
        );
    }
}

#[test]
fn what_a_cli_cannot_express_is_refused() {
    run("codex")
        .args(["--deny-tool", "shell", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "codex cannot allow or forbid single tools",
        ));
    run("gemini")
        .args(["--max-turns", "2", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "gemini has no flag for a turn limit",
        ));
}

#[test]
fn the_prompt_can_come_from_stdin() {
    let prompt = "line one\nline two: ünïcödé\n";
    assert_eq!(
        argv_of("gemini", &[], prompt),
        [
            "-p",
            "line one",
            "line two: ünïcödé",
            "--output-format",
            "stream-json"
        ]
    );
    let argv = argv_of("claude", &["-"], prompt);
    assert_eq!(
        argv[argv.len() - 3..],
        ["--", "line one", "line two: ünïcödé"]
    );
}

#[test]
fn an_empty_prompt_is_refused() {
    for stdin in ["", "\n", "  \n\n"] {
        let file = unique("argv-empty");
        run("claude")
            .env("FAKE_ARGV", &file)
            .write_stdin(stdin)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains("the prompt is empty"));
        assert!(!file.exists(), "the CLI was started");
    }
}

/// --cwd: the CLI runs there; a relative --cli or codex --cd still names
/// what it named where we were started; a missing directory is not a
/// missing CLI.
#[test]
fn the_cli_runs_in_cwd() {
    let base = unique("cwd");
    std::fs::create_dir_all(base.join("sub")).unwrap();
    std::fs::copy(fake(), base.join("cli")).unwrap();
    let pwd = base.join("sub/pwd");
    let argv = base.join("argv");
    Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&base)
        .args(["run", "codex", "--cli", "./cli", "--cwd", "sub", "hi"])
        .env("FAKE_PWD", "pwd")
        .env("FAKE_ARGV", &argv)
        .assert()
        .success();
    let sub = base.join("sub").canonicalize().unwrap();
    assert_eq!(
        std::fs::read_to_string(&pwd).unwrap().trim_end(),
        sub.to_str().unwrap()
    );
    let argv = std::fs::read_to_string(&argv).unwrap();
    let argv: Vec<&str> = argv.lines().collect();
    let cd = Path::new(argv[argv.iter().position(|&a| a == "--cd").unwrap() + 1]);
    assert_eq!(cd.canonicalize().unwrap(), sub);
    run("gemini")
        .args(["--cwd", "/nonexistent/dir", "hi"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "--cwd /nonexistent/dir: no such directory",
        ));
}

#[test]
fn a_missing_cli_names_its_package() {
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", "/nonexistent")
        .args(["run", "codex", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let evs = events(&out.stdout);
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0]["type"], "RUN_STARTED");
    assert_eq!(evs[1]["type"], "RUN_ERROR");
    assert_eq!(evs[1]["code"], "cli_missing");
    assert!(evs[1]["message"]
        .as_str()
        .unwrap()
        .contains("npm install -g @openai/codex"));
}

/// What the CLI writes is translated as the filter translates it (with the
/// run named alike: a live run's own id is fresh).
#[test]
fn a_recording_streams_through_unchanged() {
    let path = recording("claude/2.1.328/b-bash-partial.jsonl");
    let direct = Command::new(BIN)
        .args(["--from", "claude", "--run-id", "R"])
        .arg(&path)
        .output()
        .unwrap();
    run("claude")
        .args(["--run-id", "R", "hi"])
        .env("FAKE_REPLAY", &path)
        .assert()
        .success()
        .stdout(direct.stdout);
}

#[test]
fn exit_statuses_end_the_run() {
    // gemini: 41 authentication, with the CLI's own words from stderr.
    let out = run("gemini")
        .arg("hi")
        .env("FAKE_EXIT", "41")
        .env(
            "FAKE_STDERR",
            "Please set an Auth method in your settings.json",
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(41));
    let end = last(&out.stdout);
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "auth_error");
    assert_eq!(
        end["message"],
        "gemini exited with status 41: authentication failed: Please set an Auth method in your settings.json"
    );
    // gemini: 55, an untrusted folder, said in red: the colour is for a
    // terminal (our stderr keeps it), not for RUN_ERROR.
    let out = run("gemini")
        .arg("hi")
        .env("FAKE_EXIT", "55")
        .env(
            "FAKE_STDERR",
            "\x1b[31mGemini CLI is not running in a trusted directory.\x1b[0m",
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(55));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\x1b[31mGemini CLI"));
    let end = last(&out.stdout);
    assert_eq!(end["code"], "cli_error");
    assert_eq!(
        end["message"],
        "gemini exited with status 55: the folder is not trusted (GEMINI_CLI_TRUST_WORKSPACE=true or --skip-trust): Gemini CLI is not running in a trusted directory."
    );
    // gemini: a stream cut by the turn limit, exit 53.
    let out = run("gemini")
        .arg("hi")
        .env("FAKE_REPLAY", recording("gemini/0.61.0/j_max_turns.jsonl"))
        .env("FAKE_LINES", "8")
        .env("FAKE_EXIT", "53")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(53));
    assert_eq!(last(&out.stdout)["code"], "max_turns");
    // gemini: the stream says success, the status says HTTP 500.
    let out = run("gemini")
        .arg("hi")
        .env("FAKE_REPLAY", recording("gemini/0.61.0/k_resume_1.jsonl"))
        .env("FAKE_EXIT", "244")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(244));
    let evs = events(&out.stdout);
    assert_eq!(
        evs.iter()
            .filter(|e| e["type"] == "RUN_FINISHED" || e["type"] == "RUN_ERROR")
            .count(),
        1
    );
    assert_eq!(evs.last().unwrap()["code"], "api_error");
    assert!(evs.last().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("HTTP 500"));
    // A stream that ended well-formed with its own error is not ended twice.
    let out = run("gemini")
        .arg("hi")
        .env(
            "FAKE_REPLAY",
            recording("gemini/0.61.0/g_http500_maxattempts2.jsonl"),
        )
        .env("FAKE_EXIT", "244")
        .output()
        .unwrap();
    let end = last(&out.stdout);
    assert_eq!(end["type"], "RUN_ERROR");
    assert!(end["message"].as_str().unwrap().starts_with("[API Error"));
    // codex and claude: 1 is an error; the stderr tail says which.
    let out = run("codex")
        .arg("hi")
        .env("FAKE_EXIT", "1")
        .env("FAKE_STDERR", "Error: stream disconnected")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let end = last(&out.stdout);
    assert_eq!(end["code"], "cli_error");
    assert!(end["message"]
        .as_str()
        .unwrap()
        .ends_with("Error: stream disconnected"));
    // A CLI killed by SIGTERM from elsewhere.
    let out = run("claude")
        .arg("hi")
        .env(
            "FAKE_REPLAY",
            recording("claude/2.1.328/k-sigterm-tool.jsonl"),
        )
        .env("FAKE_EXIT", "143")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(143));
    assert!(last(&out.stdout)["message"]
        .as_str()
        .unwrap()
        .contains("killed by signal 15"));
}

#[test]
fn a_stderr_flood_does_not_hang_the_run() {
    let start = Instant::now();
    let out = run("gemini")
        .arg("hi")
        .env("FAKE_FLOOD", "8000000")
        .env("FAKE_REPLAY", recording("gemini/0.61.0/b_shell.jsonl"))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stderr.len() >= 8_000_000);
    assert_eq!(last(&out.stdout)["type"], "RUN_FINISHED");
    assert!(start.elapsed() < Duration::from_secs(60));
}

fn interrupt(sig: i32, ignore_term: bool) -> (Option<i32>, Vec<serde_json::Value>, Duration) {
    let mut cmd = StdCommand::new(BIN);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "gemini", "--cli"])
        .arg(fake())
        .arg("hi")
        .env(
            "FAKE_REPLAY",
            recording("gemini/0.61.0/j_sigterm_group.jsonl"),
        )
        .env("FAKE_HANG", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if ignore_term {
        cmd.env("FAKE_IGNORE_TERM", "1");
    }
    let child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let start = Instant::now();
    // SAFETY: signalling the child we spawned.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), events(&out.stdout), start.elapsed())
}

#[test]
fn sigterm_and_sigint_cancel_the_run() {
    for (sig, status) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let (code, evs, took) = interrupt(sig, false);
        assert_eq!(code, Some(status));
        let end = evs.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED");
        assert_eq!(end["outcome"]["type"], "cancelled");
        // The text that came before the signal is there, closed.
        assert!(evs.iter().any(|e| e["delta"] == "Part 2. "));
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }
}

#[test]
fn a_cli_that_ignores_sigterm_is_killed() {
    let (code, evs, took) = interrupt(libc::SIGTERM, true);
    assert_eq!(code, Some(143));
    assert_eq!(evs.last().unwrap()["outcome"]["type"], "cancelled");
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(20),
        "took {took:?}"
    );
}

/// Processes the CLI started in sessions of their own do not outlive a
/// cancelled run.
#[test]
fn a_cancelled_run_leaves_no_processes_behind() {
    let marker = format!("{}", 900 + std::process::id() % 90);
    let alive = |m: &str| {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .map(|c| c == format!("sleep\0{m}\0").as_bytes())
                    .unwrap_or(false)
            })
    };
    let start = Instant::now();
    let out = run("gemini")
        .args(["--timeout", "1s", "hi"])
        .env(
            "FAKE_REPLAY",
            recording("gemini/0.61.0/j_sigterm_group.jsonl"),
        )
        .env("FAKE_ORPHAN", &marker)
        .env("FAKE_HANG", "60")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    assert!(start.elapsed() < Duration::from_secs(15));
    assert!(!alive(&marker), "sleep {marker} outlived the run");
}

#[test]
fn a_timeout_cancels_the_run() {
    let start = Instant::now();
    let out = run("gemini")
        .args(["--timeout", "500ms", "hi"])
        .env(
            "FAKE_REPLAY",
            recording("gemini/0.61.0/j_sigterm_group.jsonl"),
        )
        .env("FAKE_HANG", "60")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    assert_eq!(last(&out.stdout)["outcome"]["type"], "cancelled");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn check_lists_the_installed_clis() {
    Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("AGUI_GEMINI_CLI", "/nonexistent/gemini")
        .env("AGUI_CODEX_CLI", "/nonexistent/codex")
        .env("AGUI_CLAUDE_CLI", fake())
        .args(["run", "--check"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "gemini  missing: npm install -g @google/gemini-cli",
        ))
        .stdout(predicate::str::contains(
            "codex   missing: npm install -g @openai/codex",
        ))
        .stdout(predicate::str::contains("claude  fake-cli 1.2.3 ("));
}

/// Whether the process `pid` is running (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s[s.rfind(')')? + 2..].starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

/// Wait up to `limit` for a process to go.
fn gone_within(pid: i32, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

/// The PID a fake CLI wrote to `file`, waited for.
fn pid_in(file: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no PID in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(pid: i32, sig: i32) {
    // SAFETY: signalling a process this test started.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// A process the CLI starts in a session of its own may keep stdout open for
/// ever: the run still ends soon after the CLI, and so does a timed-out one.
#[test]
fn a_descendant_holding_stdout_does_not_hold_the_run() {
    for (args, hang, status) in [
        (&["hi"][..], None, 0),
        (&["--timeout", "500ms", "hi"][..], Some("60"), 124),
    ] {
        let daemon = unique("daemon-pid");
        let mut cmd = run("gemini");
        cmd.args(args)
            .env("FAKE_REPLAY", recording("gemini/0.61.0/b_shell.jsonl"))
            .env("FAKE_DAEMON", "30")
            .env("FAKE_DAEMON_PID", &daemon)
            .timeout(Duration::from_secs(20));
        if let Some(h) = hang {
            cmd.env("FAKE_HANG", h);
        }
        let start = Instant::now();
        let out = cmd.output().unwrap();
        let took = start.elapsed();
        let pid = pid_in(&daemon);
        kill(pid, libc::SIGKILL);
        assert_eq!(out.status.code(), Some(status), "{args:?}");
        assert!(took < Duration::from_secs(10), "took {took:?}");
        let end = last(&out.stdout);
        assert_eq!(end["type"], "RUN_FINISHED", "{args:?}");
        assert!(gone_within(pid, Duration::from_secs(5)));
    }
}

/// SIGHUP (the terminal closed) ends the run like SIGTERM: the stream ends,
/// the CLI is stopped and the policy file removed.
#[test]
fn sighup_cancels_the_run_and_cleans_up() {
    let (code, evs, took) = interrupt(libc::SIGHUP, false);
    assert_eq!(code, Some(129));
    assert_eq!(evs.last().unwrap()["outcome"]["type"], "cancelled");
    assert!(took < Duration::from_secs(5), "took {took:?}");

    let argv = unique("argv-hup");
    let pid_file = unique("pid-hup");
    let child = StdCommand::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "gemini", "--cli"])
        .arg(fake())
        .args(["--deny-tool", "run_shell_command", "hi"])
        .env("FAKE_ARGV", &argv)
        .env("FAKE_PID", &pid_file)
        .env("FAKE_HANG", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let cli = pid_in(&pid_file);
    kill(child.id() as i32, libc::SIGHUP);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129));
    assert_eq!(last(&out.stdout)["outcome"]["type"], "cancelled");
    assert!(
        gone_within(cli, Duration::from_secs(2)),
        "the CLI outlived the run"
    );
    let argv = std::fs::read_to_string(&argv).unwrap();
    let policy = argv
        .lines()
        .skip_while(|&a| a != "--policy")
        .nth(1)
        .unwrap();
    assert!(!Path::new(policy).exists(), "{policy} outlived the run");
}

/// Even SIGKILL, which we cannot catch, does not leave the CLI running.
#[test]
fn the_cli_dies_with_us() {
    let pid_file = unique("pid-kill");
    let mut child = StdCommand::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "claude", "--cli"])
        .arg(fake())
        .arg("hi")
        .env("FAKE_PID", &pid_file)
        .env("FAKE_HANG", "60")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let cli = pid_in(&pid_file);
    assert!(alive(cli));
    kill(child.id() as i32, libc::SIGKILL);
    child.wait().unwrap();
    let gone = gone_within(cli, Duration::from_secs(3));
    if !gone {
        kill(cli, libc::SIGKILL);
    }
    assert!(gone, "the CLI outlived agui-translate");
}

/// Credentials a CLI prints on failure do not reach the stream; our own
/// stderr passes them through unchanged.
#[test]
fn credentials_are_redacted_from_run_error() {
    let said = "Error: GEMINI_API_KEY=AIzaSyA1234567890abcdefghijklmnopqrstu rejected; \
                sent Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig and sk-proj-0123456789abcdefXYZ; \
                token was 9f8e7d6c5b4a3210";
    let out = run("gemini")
        .arg("hi")
        .env("MY_SERVICE_TOKEN", "9f8e7d6c5b4a3210")
        .env("FAKE_EXIT", "1")
        .env("FAKE_STDERR", said)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), format!("{said}\n"));
    let message = last(&out.stdout)["message"].as_str().unwrap().to_owned();
    for secret in [
        "AIzaSyA1234567890abcdefghijklmnopqrstu",
        "eyJhbGciOiJIUzI1NiJ9",
        "sk-proj-0123456789abcdefXYZ",
        "9f8e7d6c5b4a3210",
    ] {
        assert!(!message.contains(secret), "{message}");
    }
    assert!(message.ends_with(
        "Error: GEMINI_API_KEY=[REDACTED] rejected; sent Authorization: Bearer [REDACTED] and [REDACTED]; token was [REDACTED]"
    ), "{message}");
}

/// A prompt on stderr without a newline ("Waiting for authentication…")
/// shows while the CLI waits, not when it ends.
#[test]
fn stderr_without_a_newline_passes_at_once() {
    use std::io::Read;
    let pid_file = unique("pid-prompt");
    let mut child = StdCommand::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["run", "codex", "--cli"])
        .arg(fake())
        .arg("hi")
        .env("FAKE_PROMPT", "Waiting for authentication...")
        .env("FAKE_PID", &pid_file)
        .env("FAKE_HANG", "60")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0; 256];
        let mut seen = Vec::new();
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            let _ = tx.send(seen.clone());
        }
    });
    let cli = pid_in(&pid_file);
    let mut seen = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) && !seen.ends_with(b"authentication...") {
        if let Ok(s) = rx.recv_timeout(Duration::from_millis(100)) {
            seen = s;
        }
    }
    let still_running = alive(cli);
    kill(child.id() as i32, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(still_running);
    assert_eq!(
        String::from_utf8_lossy(&seen),
        "Waiting for authentication..."
    );
}

/// The policy file is valid TOML whatever the tool name (DEL included:
/// Gemini CLI ignores every rule of a file it cannot parse), and its path is
/// absolute even with a relative TMPDIR (the CLI runs in --cwd).
#[test]
fn the_policy_file_holds_for_any_name_and_tmpdir() {
    let base = unique("policy-tmpdir");
    std::fs::create_dir_all(base.join("tmp")).unwrap();
    std::fs::create_dir_all(base.join("work")).unwrap();
    let argv = unique("argv-del");
    let copy = unique("policy-del");
    Command::new(BIN)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TMPDIR", "tmp")
        .current_dir(&base)
        .args(["run", "gemini", "--cli"])
        .arg(fake())
        .args(["--cwd", "work", "--deny-tool", "shell\x7f\u{1}x", "hi"])
        .env("FAKE_ARGV", &argv)
        .env("FAKE_POLICY", &copy)
        .assert()
        .success();
    let argv = std::fs::read_to_string(&argv).unwrap();
    let policy = argv
        .lines()
        .skip_while(|&a| a != "--policy")
        .nth(1)
        .unwrap();
    assert!(Path::new(policy).is_absolute(), "{policy}");
    assert!(
        policy.starts_with(base.join("tmp").to_str().unwrap()),
        "{policy}"
    );
    let rules = std::fs::read_to_string(&copy).unwrap();
    assert!(
        rules.contains("toolName = \"shell\\u007F\\u0001x\"\n"),
        "{rules}"
    );
    assert!(
        !rules.chars().any(|c| c.is_control() && c != '\n'),
        "{rules:?}"
    );
}

/// An empty or relative PATH entry names no directory: `./gemini` in --cwd
/// is not the CLI, for `run` as for `run --check`.
#[test]
fn relative_path_entries_are_skipped() {
    let base = unique("path-entries");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::copy(fake(), base.join("gemini")).unwrap();
    let argv = base.join("argv");
    for path in ["/usr/bin:/bin:", "/usr/bin::/bin", ".:/usr/bin"] {
        let out = Command::new(BIN)
            .env_clear()
            .env("PATH", path)
            .env("FAKE_ARGV", &argv)
            .current_dir(&base)
            .args(["run", "gemini", "--cwd"])
            .arg(&base)
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(127), "{path}");
        assert_eq!(last(&out.stdout)["code"], "cli_missing");
        assert!(!argv.exists(), "PATH={path} ran ./gemini");
        Command::new(BIN)
            .env_clear()
            .env("PATH", path)
            .current_dir(&base)
            .args(["run", "--check"])
            .assert()
            .code(1)
            .stdout(predicate::str::contains("gemini  missing"));
    }
}

/// `--resume=--last` would reach codex as its own flag `--last`.
#[test]
fn option_values_that_look_like_options_are_refused() {
    for (cli, args) in [
        ("codex", &["--resume=--last", "hi"][..]),
        ("claude", &["--model=-x", "hi"][..]),
        ("gemini", &["--allow-tool=--yolo", "hi"][..]),
    ] {
        let argv = unique("argv-dash");
        run(cli)
            .args(args)
            .env("FAKE_ARGV", &argv)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains("would reach the CLI as an option"));
        assert!(!argv.exists(), "{cli} was started");
    }
}

#[test]
fn an_absurd_timeout_is_an_error_not_a_panic() {
    run("gemini")
        .args(["--timeout", "99999999999999999999s", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("too long a duration"));
}

/// A CLI that cannot be started, whatever the reason, gives a run that ends
/// in RUN_ERROR, as a missing one does.
#[test]
fn every_failure_to_start_is_a_run_error() {
    let not_executable = unique("not-executable");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let big = "x".repeat(200 * 1024);
    for (args, stdin, status, code, says) in [
        (
            vec![
                "run",
                "gemini",
                "--cli",
                not_executable.to_str().unwrap(),
                "hi",
            ],
            "",
            126,
            "cli_error",
            "Permission denied",
        ),
        (
            vec!["run", "claude", "--cli", fake().to_str().unwrap()],
            big.as_str(),
            126,
            "cli_error",
            "the command line is too long",
        ),
    ] {
        let out = Command::new(BIN)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(&args)
            .write_stdin(stdin)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(status), "{args:?}");
        let evs = events(&out.stdout);
        assert_eq!(evs.len(), 2, "{args:?}");
        assert_eq!(evs[0]["type"], "RUN_STARTED");
        assert_eq!(evs[1]["type"], "RUN_ERROR");
        assert_eq!(evs[1]["code"], code);
        assert!(
            evs[1]["message"].as_str().unwrap().contains(says),
            "{}",
            evs[1]
        );
    }
}

/// A CLI that ends its stream and exits a while later (flushing telemetry,
/// say) is waited for, not stopped: its exit status still counts.
#[test]
fn a_cli_that_exits_after_its_stream_is_waited_for() {
    let start = Instant::now();
    let out = run("gemini")
        .arg("hi")
        .env("FAKE_REPLAY", recording("gemini/0.61.0/b_shell.jsonl"))
        .env("FAKE_LINGER", "6")
        .env("FAKE_EXIT", "0")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(start.elapsed() >= Duration::from_secs(6));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(last(&out.stdout)["type"], "RUN_FINISHED");
}

/// The RUN_STARTED of a run's output: (threadId, runId).
fn ids(stdout: &[u8]) -> (String, String) {
    let first = events(stdout).remove(0);
    assert_eq!(first["type"], "RUN_STARTED");
    let id = |k: &str| first[k].as_str().unwrap().to_owned();
    (id("threadId"), id("runId"))
}

/// Whether `id` is a UUID version 7 in its text form.
fn is_uuid_v7(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && id.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        && groups[2].starts_with('7')
        && groups[3].starts_with(['8', '9', 'a', 'b'])
}

/// Two live runs get ids of their own (a fresh UUID v7 each), also when
/// the CLI writes the same records twice, or fails before writing any
/// (the filter would derive the same ids from the same input); `--run-id`
/// still names the run.
#[test]
fn live_runs_get_fresh_ids() {
    let replay = || {
        run("codex")
            .env("FAKE_REPLAY", recording("codex/0.169.0/shell.jsonl"))
            .arg("list the files")
            .output()
            .unwrap()
    };
    let (a, b) = (replay(), replay());
    assert!(a.status.success() && b.status.success());
    let (ta, ra) = ids(&a.stdout);
    let (tb, rb) = ids(&b.stdout);
    assert!(is_uuid_v7(&ra) && is_uuid_v7(&rb), "{ra} {rb}");
    assert_ne!(ra, rb);
    // The thread is the CLI's session, as the records say.
    assert_eq!(ta, tb);
    // Ids derived in the run are scoped by its id.
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(
        text.contains(&format!(r#""toolCallId":"{ra}-item_0""#)),
        "{text}"
    );

    let fail = || {
        run("gemini")
            .env("FAKE_EXIT", "1")
            .arg("hi")
            .output()
            .unwrap()
    };
    let (a, b) = (fail(), fail());
    assert_eq!(a.status.code(), Some(1));
    let (ta, ra) = ids(&a.stdout);
    let (tb, rb) = ids(&b.stdout);
    assert!(is_uuid_v7(&ra) && is_uuid_v7(&rb), "{ra} {rb}");
    assert_ne!(ra, rb);
    assert_ne!(ta, tb);

    let named = run("gemini")
        .args(["--run-id", "R", "hi"])
        .env("FAKE_EXIT", "1")
        .output()
        .unwrap();
    assert_eq!(ids(&named.stdout).1, "R");
}

/// `run` without a prompt, on a terminal: it says that it reads the prompt
/// from there, rather than waiting without a word (run under `script`, which
/// gives it a terminal); from a pipe, it says nothing.
#[test]
fn run_without_a_prompt_on_a_terminal_says_so() {
    let argv = unique("argv-terminal");
    let command = format!(
        "FAKE_ARGV={} {BIN} run gemini --cli {}",
        argv.display(),
        fake().display()
    );
    let Ok(mut child) = StdCommand::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        assert!(
            std::env::var_os("AGUI_NO_SKIP").is_none_or(|v| v != "1"),
            "AGUI_NO_SKIP=1 refuses the skip: `script` (util-linux) is not installed"
        );
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED run_without_a_prompt_on_a_terminal_says_so: no `script` (util-linux)"
        );
        return;
    };
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        // Typed: the prompt, then Ctrl-D at the start of a line.
        stdin.write_all(b"Summarize README.md\n\x04").unwrap();
        // Kept open until the run has read it.
        let start = Instant::now();
        while !argv.exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("agui-translate: reading the prompt from the terminal: end it with Ctrl-D"),
        "{text}"
    );
    let argv = std::fs::read_to_string(&argv).unwrap();
    assert!(argv.contains("Summarize README.md"), "{argv}");

    run("gemini")
        .write_stdin("Summarize README.md")
        .assert()
        .success()
        .stderr(predicate::str::contains("reading the prompt").not());
}

/// `run --raw` as the filter's: `unknown` leaves out the RAW of the init
/// that became RUN_STARTED, `none` every RAW.
#[test]
fn run_writes_the_raw_events_asked_for() {
    let raws = |mode: &str| -> Vec<serde_json::Value> {
        let out = run("gemini")
            .env("FAKE_REPLAY", recording("gemini/0.61.0/b_shell.jsonl"))
            .args(["--raw", mode, "Hello"])
            .output()
            .unwrap();
        events(&out.stdout)
            .into_iter()
            .filter(|e| e["type"] == "RAW")
            .collect()
    };
    assert_eq!(raws("all").len(), 1);
    assert_eq!(raws("all")[0]["event"]["type"], "init");
    assert!(raws("unknown").is_empty());
    assert!(raws("none").is_empty());
}

/// `run qwen`: its headless flags, each option in Qwen Code's own form, a
/// prompt that looks like an option kept as the prompt, and a tool name it
/// would split at its comma refused.
#[test]
fn qwen_flags() {
    let prompt = "fix it; rm -rf / `x` $(y) \"q\"";
    assert_eq!(
        argv_of("qwen", &[prompt], ""),
        [
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--include-partial-messages"
        ]
    );
    let args = [
        "--model",
        "qwen3-coder-plus",
        "--max-turns",
        "3",
        "--resume",
        "s-1",
        "--allow-tool",
        "read_file",
        "--allow-tool",
        "glob",
        "--deny-tool",
        "run_shell_command",
        "--approval",
        "auto-edit",
        "hi",
        "--",
        "--debug",
    ];
    assert_eq!(
        argv_of("qwen", &args, ""),
        [
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--include-partial-messages",
            "--model",
            "qwen3-coder-plus",
            "--max-session-turns",
            "3",
            "--resume",
            "s-1",
            "--allowed-tools=read_file",
            "--allowed-tools=glob",
            "--exclude-tools=run_shell_command",
            "--approval-mode",
            "auto-edit",
            "--debug"
        ]
    );
    let yolo = argv_of("qwen", &["--approval", "yolo", "hi"], "");
    assert_eq!(yolo[yolo.len() - 2..], ["--approval-mode", "yolo"]);
    assert_eq!(argv_of("qwen", &[], "--version\n")[0], "--prompt=--version");
    let out = run("qwen")
        .args(["--allow-tool", "a,b", "hi"])
        .env("FAKE_ARGV", unique("argv-qwen-comma"))
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("comma"));
}

/// `run qwen` streams a recording as `--from qwen` translates it, and its
/// exit statuses mean what Qwen Code's fatal errors mean.
#[test]
fn qwen_runs_and_exits() {
    let path = recording("qwen/0.24.4/shell.jsonl");
    let direct = Command::new(BIN)
        .args(["--from", "qwen", "--run-id", "R"])
        .arg(&path)
        .output()
        .unwrap();
    run("qwen")
        .args(["--run-id", "R", "hi"])
        .env("FAKE_REPLAY", &path)
        .assert()
        .success()
        .stdout(direct.stdout);
    // 53: the turn limit, after the recording of a run that reached it.
    let out = run("qwen")
        .args(["--max-turns", "1", "hi"])
        .env("FAKE_REPLAY", recording("qwen/0.24.4/max-turns.jsonl"))
        .env("FAKE_EXIT", "53")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(53));
    let end = last(&out.stdout);
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "max_turns");
    // 130: interrupted, after its recording.
    let out = run("qwen")
        .arg("hi")
        .env("FAKE_REPLAY", recording("qwen/0.24.4/sigint.jsonl"))
        .env("FAKE_EXIT", "130")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(last(&out.stdout)["type"], "RUN_ERROR");
}

/// `run copilot`: every option in the `=` form (checked with Copilot CLI
/// 1.0.102: `--prompt=--version` is a prompt), a turn limit refused, and a
/// recording streamed as `--from copilot` translates it.
#[test]
fn copilot_flags_and_run() {
    assert_eq!(
        argv_of("copilot", &[], "--version\n"),
        ["--prompt=--version", "--output-format", "json"]
    );
    let args = [
        "--model",
        "gpt-4.1",
        "--resume",
        "s-1",
        "--allow-tool",
        "shell(git:*)",
        "--deny-tool",
        "write",
        "--approval",
        "yolo",
        "hi",
        "--",
        "--no-ask-user",
    ];
    assert_eq!(
        argv_of("copilot", &args, ""),
        [
            "--prompt=hi",
            "--output-format",
            "json",
            "--model=gpt-4.1",
            "--resume=s-1",
            "--allow-tool=shell(git:*)",
            "--deny-tool=write",
            "--allow-all",
            "--no-ask-user"
        ]
    );
    let edits = argv_of("copilot", &["--approval", "auto-edit", "hi"], "");
    assert_eq!(edits.last().unwrap(), "--allow-tool=write");
    let out = run("copilot")
        .args(["--max-turns", "2", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("copilot has no option"));

    let path = recording("copilot/1.0.102/shell.jsonl");
    let direct = Command::new(BIN)
        .args(["--from", "copilot", "--run-id", "R"])
        .arg(&path)
        .output()
        .unwrap();
    run("copilot")
        .args(["--run-id", "R", "hi"])
        .env("FAKE_REPLAY", &path)
        .assert()
        .success()
        .stdout(direct.stdout);
    // An API error: the CLI's `session.error` in RUN_ERROR, its status kept.
    let out = run("copilot")
        .arg("hi")
        .env("FAKE_REPLAY", recording("copilot/1.0.102/http400.jsonl"))
        .env("FAKE_EXIT", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let end = last(&out.stdout);
    assert_eq!(end["code"], "api_error");
    assert!(end["message"].as_str().unwrap().contains("400"), "{end}");
}

/// `run opencode`: `opencode run --format json --thinking`, the prompt one
/// argument (after `--` when it begins with `-`: checked with OpenCode
/// 1.18.33, where a number after `--` fails), options it has no flag for
/// refused, and a recording streamed as `--from opencode` translates it.
#[test]
fn opencode_flags_and_run() {
    assert_eq!(
        argv_of("opencode", &[], "-x  is 17 * 23?\n"),
        [
            "run",
            "--format",
            "json",
            "--thinking",
            "--",
            "-x  is 17 * 23?"
        ]
    );
    assert_eq!(
        argv_of("opencode", &["42"], ""),
        ["run", "--format", "json", "--thinking", "42"]
    );
    let args = [
        "--model",
        "scripted/coder",
        "--resume",
        "ses_1",
        "--approval",
        "yolo",
        "hi",
        "--",
        "--agent",
        "plan",
    ];
    assert_eq!(
        argv_of("opencode", &args, ""),
        [
            "run",
            "--format",
            "json",
            "--thinking",
            "--model=scripted/coder",
            "--session=ses_1",
            "--auto",
            "--agent",
            "plan",
            "hi"
        ]
    );
    for (refused, says) in [
        (
            &["--max-turns", "2"][..],
            "no option that limits the number of turns",
        ),
        (&["--deny-tool", "bash"][..], "from its configuration"),
        (
            &["--approval", "auto-edit"][..],
            "no option that approves only edits",
        ),
    ] {
        let out = run("opencode").args(refused).arg("hi").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{refused:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{refused:?}"
        );
    }

    let path = recording("opencode/1.18.33/shell.jsonl");
    let direct = Command::new(BIN)
        .args(["--from", "opencode", "--run-id", "R"])
        .arg(&path)
        .output()
        .unwrap();
    run("opencode")
        .args(["--run-id", "R", "hi"])
        .env("FAKE_REPLAY", &path)
        .assert()
        .success()
        .stdout(direct.stdout);
    // An API error: the CLI's `error` in RUN_ERROR, and its exit status.
    let out = run("opencode")
        .arg("hi")
        .env("FAKE_REPLAY", recording("opencode/1.18.33/http400.jsonl"))
        .env("FAKE_EXIT", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let end = last(&out.stdout);
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "api_error");
    assert_eq!(
        end["message"],
        "The request was rejected by the scripted server."
    );
}
