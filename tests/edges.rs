//! The filter at its edges: signals on a live pipe, the pipes it reads and
//! writes, a `--from` that names the wrong CLI, unreadable FILEs in a batch,
//! and `--jobs`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use agui_translate::check::check_bytes;

const BIN: &str = env!("CARGO_BIN_EXE_agui-translate");

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

fn cmd() -> Command {
    let mut c = Command::new(BIN);
    c.env_clear();
    c
}

/// Five lines of a Gemini session go into a live pipe that stays open; once
/// their events are out, `sig` is sent. The stream must end with the run
/// cancelled, and the exit status must be 128+N.
fn interrupted_by(sig: libc::c_int) {
    let lines: Vec<String> = std::fs::read_to_string(testdata("gemini/0.61.0/b_shell.jsonl"))
        .unwrap()
        .lines()
        .take(5)
        .map(|l| format!("{l}\n"))
        .collect();
    let mut child = cmd()
        .args(["--from", "gemini"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in &lines {
        stdin.write_all(l.as_bytes()).unwrap();
    }
    stdin.flush().unwrap();
    // Read events until the last line's are out (a tool call's ARGS).
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("TOOL_CALL_RESULT")) {
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the events of the lines written so far");
        seen.push(line);
    }
    // Let the filter block in its next read, then signal it.
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
    let mut status = None;
    for _ in 0..100 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("signal {sig}: still running 5 s after the signal");
    };
    drop(stdin);
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
        seen.push(line);
    }
    assert_eq!(status.code(), Some(128 + sig), "signal {sig}");
    let last: serde_json::Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "signal {sig}: {last}");
    assert_eq!(
        last["outcome"],
        serde_json::json!({"type": "cancelled"}),
        "signal {sig}"
    );
    assert_eq!(last["threadId"], "558cdc5e-b843-4244-9649-81a37329a497");
    let text = seen.join("\n") + "\n";
    assert!(check_bytes(text.as_bytes()).is_ok(), "{text}");
}

/// The pipes the filter reads and writes are widened to 1 MiB (the program
/// at the other end is woken a sixteenth as often as with the default
/// 64 KiB), and the events of a line still come out as soon as it is
/// written.
#[test]
fn pipes_are_widened_and_lines_still_go_out_at_once() {
    use std::os::fd::AsRawFd;
    let line = std::fs::read_to_string(testdata("gemini/0.61.0/b_shell.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let mut child = cmd()
        .args(["--from", "gemini"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    // SAFETY: asking the size of a pipe we hold open.
    let size = |fd| unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    let (fd_in, fd_out) = (stdin.as_raw_fd(), stdout.as_raw_fd());
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(stdout);
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("RUN_STARTED"), "{first}");
    // A new pipe holds 64 KiB; the system may allow less than 1 MiB.
    let max: i32 = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .map_or(1 << 20, |s| s.trim().parse().unwrap());
    let want = max.min(1 << 20);
    assert!(size(fd_in) >= want, "input: {} bytes", size(fd_in));
    assert!(size(fd_out) >= want, "output: {} bytes", size(fd_out));
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn sigint_ends_the_run_as_cancelled() {
    interrupted_by(libc::SIGINT);
}

#[test]
fn sigterm_ends_the_run_as_cancelled() {
    interrupted_by(libc::SIGTERM);
}

#[test]
fn sighup_ends_the_run_as_cancelled() {
    interrupted_by(libc::SIGHUP);
}

#[test]
fn a_wrong_from_names_the_cli_the_input_looks_like() {
    let cases = [
        ("claude/2.1.328/a-text-partial.jsonl", "gemini", "looks like Claude Code's, not Gemini CLI's (--from gemini): name it with --from claude"),
        ("gemini/0.61.0/b_shell.jsonl", "codex", "looks like Gemini CLI's, not Codex CLI's (--from codex): name it with --from gemini"),
        ("codex/0.169.0/sigterm_command.jsonl", "claude", "looks like Codex CLI's, not Claude Code's (--from claude): name it with --from codex"),
    ];
    for (file, from, says) in cases {
        let out = cmd()
            .args(["--from", from])
            .arg(testdata(file))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{file} --from {from}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(says), "{file} --from {from}: {stderr}");
        assert!(check_bytes(&out.stdout).is_ok(), "{file} --from {from}");
    }
    // Records of no CLI at all.
    let out = cmd()
        .args(["--from", "claude"])
        .write_stdin_bytes(b"{\"hello\":\"world\"}\n")
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("<stdin>: no record of Claude Code was seen (--from claude)"));
    assert!(check_bytes(&out.stdout).is_ok());
    // The right CLI: nothing said.
    let out = cmd()
        .args(["--from", "claude"])
        .arg(testdata("claude/2.1.328/a-text-partial.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn an_empty_input_is_said() {
    for from in ["auto", "gemini"] {
        let out = cmd().args(["--from", from]).write_stdin_bytes(b"").unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "agui-translate: <stdin>: the input is empty\n"
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(r#""code":"no_events""#));
        let quiet = cmd()
            .args(["--from", from, "-q"])
            .write_stdin_bytes(b"")
            .unwrap();
        assert_eq!(quiet.stderr, b"");
    }
}

#[test]
fn unreadable_files_are_reported_and_the_batch_goes_on() {
    let a = testdata("gemini/0.61.0/k_resume_1.jsonl");
    let b = testdata("gemini/0.61.0/b_shell.jsonl");
    let out = cmd()
        .args(["--from", "gemini", "-j", "1"])
        .arg(&a)
        .arg("/nonexistent/agui-input.jsonl")
        .arg(env!("CARGO_MANIFEST_DIR")) // a directory: opens, cannot be read
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("agui-translate: /nonexistent/agui-input.jsonl: No such file or directory"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}: Is a directory", env!("CARGO_MANIFEST_DIR"))),
        "{stderr}"
    );
    // Both readable files were translated, in order, and nothing else.
    let alone = |p: &Path| {
        cmd()
            .args(["--from", "gemini"])
            .arg(p)
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(out.stdout, [alone(&a), alone(&b)].concat());
}

/// Every recording, with a missing FILE in the middle: `-j 2` and `-j 3`
/// write the same bytes as `-j 1`, with the same exit status and stderr.
#[test]
fn jobs_write_the_same_bytes_in_argument_order() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["gemini/0.61.0", "codex/0.169.0", "claude/2.1.328"] {
        let mut here: Vec<PathBuf> = std::fs::read_dir(testdata(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        here.sort();
        files.extend(here);
    }
    let mid = files.len() / 2;
    files.insert(mid, PathBuf::from("/nonexistent/agui-input.jsonl"));
    let run = |jobs: &str, format: &str| {
        cmd()
            .args(["-j", jobs, "--format", format])
            .args(&files)
            .output()
            .unwrap()
    };
    for format in ["ndjson", "sse"] {
        let one = run("1", format);
        assert_eq!(one.status.code(), Some(2));
        assert!(one.stdout.len() > 100_000, "{}", one.stdout.len());
        for jobs in ["2", "3"] {
            let many = run(jobs, format);
            assert!(
                many.stdout == one.stdout,
                "-j {jobs} --format {format}: other bytes"
            );
            assert_eq!(many.status.code(), one.status.code());
            assert_eq!(many.stderr, one.stderr);
        }
    }
}

trait WriteStdin {
    fn write_stdin_bytes(&mut self, input: &[u8]) -> std::io::Result<std::process::Output>;
}

impl WriteStdin for Command {
    fn write_stdin_bytes(&mut self, input: &[u8]) -> std::io::Result<std::process::Output> {
        let mut child = self
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        child.stdin.take().unwrap().write_all(input)?;
        child.wait_with_output()
    }
}

/// FILEs whose output is far larger than what a thread may hold in memory
/// ahead of the writer: the rest is spilled and copied out in order.
#[test]
fn jobs_spill_what_runs_ahead_and_keep_the_order() {
    let dir = std::env::temp_dir().join(format!("agui-jobs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for (i, rec) in [
        "gemini/0.61.0/b_shell.jsonl",
        "codex/0.169.0/sigterm_command.jsonl",
        "claude/2.1.328/a-text-partial.jsonl",
        "gemini/0.61.0/k_resume_1.jsonl",
        "codex/0.169.0/sigterm_command.jsonl",
        "gemini/0.61.0/b_shell.jsonl",
    ]
    .iter()
    .enumerate()
    {
        let data = std::fs::read(testdata(rec)).unwrap();
        let path = dir.join(format!("{i}.jsonl"));
        std::fs::write(&path, data.repeat(1 + (6 << 20) / data.len())).unwrap();
        files.push(path);
    }
    let run = |jobs: &str| {
        cmd()
            .env("TMPDIR", &dir)
            .args(["-j", jobs])
            .args(&files)
            .output()
            .unwrap()
    };
    // Read slowly: output copied into the pipe stays there a while, and
    // must not change while it waits (as it would if the pages of a spill
    // file in the pipe were written again for another FILE).
    let run_slowly = |jobs: &str| {
        let mut child = cmd()
            .env("TMPDIR", &dir)
            .args(["-j", jobs])
            .args(&files)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (mut all, mut buf) = (Vec::new(), vec![0; 64 << 10]);
        loop {
            std::thread::sleep(Duration::from_millis(4));
            match std::io::Read::read(&mut stdout, &mut buf).unwrap() {
                0 => break,
                n => all.extend_from_slice(&buf[..n]),
            }
        }
        assert!(child.wait().unwrap().success());
        all
    };
    let one = run("1");
    assert!(one.stdout.len() > 16 << 20, "{}", one.stdout.len());
    for jobs in ["2", "4"] {
        let many = run(jobs);
        assert!(many.stdout == one.stdout, "-j {jobs}: other bytes");
        assert_eq!(many.status.code(), one.status.code());
        assert!(
            run_slowly(jobs) == one.stdout,
            "-j {jobs}, read slowly: other bytes"
        );
    }
    // Spill files are removed as soon as they are made.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".spill"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
