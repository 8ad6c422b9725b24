//! Images and files from the page: the content parts of a request's last
//! user message (1.0 `image`/`document` parts with a `data` source, the
//! 0.0 `binary` part) reach the CLI by its own route, the bytes unchanged,
//! and a part no run can take is a `400` that names it, before any run
//! starts. The stand-in CLI (`tests/fake/cli`) keeps what it was sent;
//! each test decodes the base64 it got and compares it with the bytes the
//! page sent.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Value};

mod common;

use common::root;

fn tmp(name: &str) -> PathBuf {
    common::scratch("serve-files", name)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_else(|e| panic!("not base64 ({e}): {s:.60}"))
}

/// A PNG's signature and some bytes of every value, a JPEG's start, a
/// PDF's: what a page's files look like to the code that passes them.
fn png() -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..=255u8).cycle().take(3000));
    v
}

fn pdf() -> Vec<u8> {
    let mut v = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    v.extend((0..=255u8).rev().cycle().take(2000));
    v
}

/// A request as the 1.0 `HttpAgent` sends it, the last user message's
/// content being `parts`.
fn body(thread: &str, parts: Value) -> String {
    json!({
        "threadId": thread, "runId": "r1", "protocolVersion": "1.0.0",
        "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{"id": "m1", "role": "user", "content": parts}],
    })
    .to_string()
}

fn image(mime: &str, bytes: &[u8]) -> Value {
    json!({"type": "image", "source": {"type": "data", "value": b64(bytes), "mimeType": mime},
           "metadata": {"filename": "shot.png"}})
}

fn document(mime: &str, bytes: &[u8]) -> Value {
    json!({"type": "document", "source": {"type": "data", "value": b64(bytes), "mimeType": mime}})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// The status code and the rest of the response of one POST.
fn post(addr: &str, body: &str) -> (u16, String) {
    let text = common::post_raw(addr, body);
    let (status, rest) = text.split_once("\r\n").unwrap_or((&text, ""));
    (
        status.split(' ').nth(1).unwrap().parse().unwrap(),
        rest.to_owned(),
    )
}

fn events(response: &str) -> Vec<Value> {
    response
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// `serve claude` replaying a text answer; the CLI's arguments go to
/// `argv`, its stdin to `stdin`; the server's temporary files under
/// `temp`.
fn claude_in(argv: &Path, stdin: &Path, temp: &Path) -> common::Server {
    let replay = root().join("testdata/claude/2.1.332/text.jsonl");
    std::fs::create_dir_all(temp).unwrap();
    common::serve(
        "claude",
        &[],
        &[
            ("FAKE_REPLAY", &replay),
            ("FAKE_STDIN", stdin),
            ("FAKE_ARGV", argv),
            ("TMPDIR", temp),
        ],
    )
}

fn claude(argv: &Path, stdin: &Path) -> common::Server {
    claude_in(argv, stdin, &std::env::temp_dir())
}

/// Everything under `dir`, but `dir` itself.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all.extend(tree(&p));
        }
        all.push(p);
    }
    all
}

/// The content blocks of the one user message Claude Code read.
fn claude_blocks(stdin: &Path) -> Vec<Value> {
    let got = std::fs::read_to_string(stdin).unwrap();
    let lines = common::values(&got);
    assert_eq!(lines.len(), 1, "one user message: {got:.300}");
    assert_eq!(lines[0]["type"], "user");
    assert_eq!(lines[0]["message"]["role"], "user");
    lines[0]["message"]["content"].as_array().unwrap().clone()
}

#[test]
fn claude_gets_images_and_pdfs_as_content_blocks_with_the_bytes_unchanged() {
    let (argv, stdin, temp) = (tmp("claude-argv"), tmp("claude-stdin"), tmp("claude-temp"));
    let server = claude_in(&argv, &stdin, &temp);
    let (png, pdf) = (png(), pdf());
    let parts = json!([
        text("What is in these?"),
        image("image/png", &png),
        document("application/pdf", &pdf),
        text("Be brief.")
    ]);
    let (status, rest) = post(&server.addr, &body("t-claude", parts));
    assert_eq!(status, 200, "{rest}");
    let ev = events(&rest);
    assert_eq!(types(&ev).last(), Some(&"RUN_FINISHED"), "{rest}");
    let blocks = claude_blocks(&stdin);
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    assert_eq!(blocks[0]["type"], "image");
    assert_eq!(blocks[0]["source"]["type"], "base64");
    assert_eq!(blocks[0]["source"]["media_type"], "image/png");
    assert_eq!(unb64(blocks[0]["source"]["data"].as_str().unwrap()), png);
    assert_eq!(blocks[1]["type"], "document");
    assert_eq!(blocks[1]["source"]["media_type"], "application/pdf");
    assert_eq!(unb64(blocks[1]["source"]["data"].as_str().unwrap()), pdf);
    assert_eq!(
        blocks[2],
        json!({"type": "text", "text": "What is in these?\nBe brief."})
    );
    // The message comes on stdin: the prompt is no argument.
    let args = std::fs::read_to_string(&argv).unwrap();
    assert!(args.contains("--input-format\nstream-json\n"), "{args}");
    assert!(!args.contains("Be brief"), "{args}");
    // The run's files went with it: the server's private directory is empty.
    let left = tree(&temp);
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn a_0_0_binary_part_reaches_claude_too_and_files_alone_make_a_prompt() {
    let (argv, stdin) = (tmp("binary-argv"), tmp("binary-stdin"));
    let server = claude(&argv, &stdin);
    let jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01 and the rest".to_vec();
    // Unpadded base64 is taken too.
    let data = b64(&jpeg).trim_end_matches('=').to_owned();
    let parts =
        json!([{"type": "binary", "mimeType": "image/jpeg", "data": data, "filename": "a.jpg"}]);
    let (status, rest) = post(&server.addr, &body("t-binary", parts));
    assert_eq!(status, 200, "{rest}");
    let blocks = claude_blocks(&stdin);
    assert_eq!(blocks[0]["source"]["media_type"], "image/jpeg");
    assert_eq!(unb64(blocks[0]["source"]["data"].as_str().unwrap()), jpeg);
    assert_eq!(blocks[1]["type"], "text");
    assert!(!blocks[1]["text"].as_str().unwrap().is_empty());
}

#[test]
fn claude_that_asks_gets_the_files_in_its_first_user_message() {
    let sent = tmp("ask-sent");
    let replay = root().join("testdata/claude/2.1.332/text.jsonl");
    let server = common::serve_run(
        "claude",
        &[],
        &["--approval", "ask"],
        &[("FAKE_CONTROL", &replay), ("FAKE_SENT", &sent)],
    );
    let png = png();
    let parts = json!([image("image/png", &png), text("Describe it.")]);
    let (status, rest) = post(&server.addr, &body("t-ask", parts));
    assert_eq!(status, 200, "{rest}");
    let lines = common::values(&std::fs::read_to_string(&sent).unwrap());
    let blocks = lines[0]["message"]["content"].as_array().unwrap();
    assert_eq!(unb64(blocks[0]["source"]["data"].as_str().unwrap()), png);
    assert_eq!(blocks[1], json!({"type": "text", "text": "Describe it."}));
}

#[test]
fn codex_gets_images_as_data_urls_in_its_app_server_turn_input() {
    let sent = tmp("codex-sent");
    let replay = root().join("testdata/codex-app-server/0.169.0/text.jsonl");
    let server = common::serve(
        "codex",
        &[],
        &[("FAKE_SERVER", &replay), ("FAKE_SENT", &sent)],
    );
    let png = png();
    let parts = json!([text("What is this?"), image("image/png", &png)]);
    let (status, rest) = post(&server.addr, &body("t-codex", parts));
    assert_eq!(status, 200, "{rest}");
    assert_eq!(
        types(&events(&rest)).last(),
        Some(&"RUN_FINISHED"),
        "{rest}"
    );
    let lines = common::values(&std::fs::read_to_string(&sent).unwrap());
    let turn = lines
        .iter()
        .find(|l| l["method"] == "turn/start")
        .expect("a turn/start");
    let input = turn["params"]["input"].as_array().unwrap();
    assert_eq!(input.len(), 2, "{input:?}");
    assert_eq!(input[0]["type"], "image");
    let url = input[0]["url"].as_str().unwrap();
    let data = url
        .strip_prefix("data:image/png;base64,")
        .unwrap_or_else(|| panic!("{url:.60}"));
    assert_eq!(unb64(data), png);
    assert_eq!(input[1]["type"], "text");
    assert_eq!(input[1]["text"], "What is this?");
}

/// A request of `parts` to `server` is a `400` whose message says each of
/// `says`, and starts no CLI (`argv` is not written).
fn refused(server: &common::Server, argv: &Path, parts: Value, says: &[&str]) {
    let (status, rest) = post(&server.addr, &body("t-refused", parts.clone()));
    assert_eq!(status, 400, "{parts:.200}: {rest}");
    for s in says {
        assert!(rest.contains(s), "{s:?} not in {rest}");
    }
    assert!(!argv.exists(), "a run started for {parts:.200}");
}

#[test]
fn a_part_no_run_can_take_is_refused_naming_it() {
    let (argv, stdin) = (tmp("refused-argv"), tmp("refused-stdin"));
    let server = claude(&argv, &stdin);
    let png = png();
    let url =
        json!({"type": "image", "source": {"type": "url", "value": "https://example.com/a.png"}});
    refused(
        &server,
        &argv,
        json!([text("look"), url]),
        &["part 2 (image)", "never fetches a URL"],
    );
    let handle = json!({"type": "document", "source": {"type": "file", "value": "file-abc", "provider": "openai"}});
    refused(
        &server,
        &argv,
        json!([handle]),
        &["part 1 (document)", "file handle"],
    );
    refused(
        &server,
        &argv,
        json!([document("text/plain", b"hello")]),
        &[
            "part 1",
            "\\\"text/plain\\\" is not one",
            "image/png, image/jpeg",
        ],
    );
    let audio = json!({"type": "audio", "source": {"type": "data", "value": b64(b"ID3"), "mimeType": "audio/mpeg"}});
    refused(
        &server,
        &argv,
        json!([audio]),
        &["part 1 (audio)", "audio/mpeg"],
    );
    let no_mime = json!({"type": "image", "source": {"type": "data", "value": b64(&png)}});
    refused(&server, &argv, json!([no_mime]), &["needs its mimeType"]);
    let bad = json!({"type": "image", "source": {"type": "data", "value": "not base64!", "mimeType": "image/png"}});
    refused(&server, &argv, json!([bad]), &["not base64"]);
    let binary_url = json!({"type": "binary", "mimeType": "image/png", "url": "http://x/a.png"});
    refused(
        &server,
        &argv,
        json!([binary_url]),
        &["part 1 (binary)", "never fetches"],
    );
    refused(
        &server,
        &argv,
        json!([{"type": "hologram", "data": "x"}]),
        &["\\\"hologram\\\" is not a content part"],
    );
    refused(
        &server,
        &argv,
        json!([text("a"), {}]),
        &["part 2 (no type): it has no type"],
    );
    let many: Vec<Value> = (0..17).map(|_| image("image/png", b"\x89PNG")).collect();
    refused(
        &server,
        &argv,
        Value::Array(many),
        &["part 17", "at most 16 files"],
    );
}

#[test]
fn a_file_over_max_attachment_is_refused() {
    let (argv, stdin) = (tmp("max-argv"), tmp("max-stdin"));
    let replay = root().join("testdata/claude/2.1.332/text.jsonl");
    let server = common::serve_run(
        "claude",
        &["--max-attachment", "2K"],
        &[],
        &[
            ("FAKE_REPLAY", &replay),
            ("FAKE_STDIN", &stdin),
            ("FAKE_ARGV", &argv),
        ],
    );
    // 3000 bytes and more: over 2 KiB.
    refused(
        &server,
        &argv,
        json!([image("image/png", &png())]),
        &[
            "part 1 (image \\\"shot.png\\\")",
            "more than the 2048",
            "--max-attachment",
        ],
    );
    // 2048 bytes exactly is taken.
    let (status, rest) = post(
        &server.addr,
        &body(
            "t-max",
            json!([image("image/png", &[7u8; 2048]), text("ok")]),
        ),
    );
    assert_eq!(status, 200, "{rest}");
    let blocks = claude_blocks(&stdin);
    assert_eq!(
        unb64(blocks[0]["source"]["data"].as_str().unwrap()),
        [7u8; 2048]
    );
}

#[test]
fn each_cli_that_cannot_take_a_file_says_so() {
    let png = png();
    for (cli, parts, says) in [
        (
            "codex",
            json!([document("application/pdf", &pdf())]),
            "codex takes images only",
        ),
        (
            "qwen",
            json!([image("image/png", &png)]),
            "qwen cannot take images: Qwen Code turns a stream-json image into JSON text",
        ),
        (
            "qwen",
            json!([document("application/pdf", &pdf())]),
            "qwen cannot take attachments yet",
        ),
        (
            "gemini",
            json!([document("application/pdf", &pdf())]),
            "gemini over the Agent Client Protocol takes images only",
        ),
    ] {
        let argv = tmp(&format!("{cli}-argv"));
        let server = common::serve(cli, &[], &[("FAKE_ARGV", &argv)]);
        refused(&server, &argv, parts, &["part 1", says]);
    }
    // Gemini CLI in its JSON mode takes none.
    let argv = tmp("gemini-stream-argv");
    let server = common::serve_run(
        "gemini",
        &[],
        &["--transport", "stream"],
        &[("FAKE_ARGV", &argv)],
    );
    refused(
        &server,
        &argv,
        json!([image("image/png", &png)]),
        &["gemini takes images over the Agent Client Protocol only"],
    );
    // Copilot CLI and OpenCode take no PDF over ACP.
    for cli in ["copilot", "opencode"] {
        let argv = tmp(&format!("{cli}-acp-argv"));
        let server = common::serve_run(cli, &[], &["--approval", "ask"], &[("FAKE_ARGV", &argv)]);
        refused(
            &server,
            &argv,
            json!([document("application/pdf", &pdf())]),
            &[&format!(
                "{cli} over the Agent Client Protocol takes images only"
            )],
        );
    }
}

/// `serve gemini` with the stand-in ACP agent in `mode`: what it was sent,
/// and the events of a request with `parts`.
fn gemini_acp(mode: &str, parts: Value) -> (Vec<Value>, Vec<Value>) {
    let sent = tmp(&format!("gemini-acp-{mode}"));
    let server = common::serve(
        "gemini",
        &[],
        &[
            ("FAKE_ACP", Path::new("1")),
            ("ACP_SENT", &sent),
            ("ACP_MODE", Path::new(mode)),
        ],
    );
    let (status, rest) = post(&server.addr, &body(&format!("t-gemini-{mode}"), parts));
    assert_eq!(status, 200, "{rest}");
    let got = common::values(&std::fs::read_to_string(&sent).unwrap_or_default());
    (got, events(&rest))
}

#[test]
fn gemini_gets_images_as_acp_prompt_blocks() {
    let png = png();
    let parts = json!([text("What is this?"), image("image/png", &png)]);
    let (sent, events) = gemini_acp("plain", parts);
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"), "{events:?}");
    let prompt = sent
        .iter()
        .find(|m| m["method"] == "session/prompt")
        .expect("a session/prompt");
    let blocks = prompt["params"]["prompt"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!(blocks[0]["type"], "image");
    assert_eq!(blocks[0]["mimeType"], "image/png");
    assert_eq!(unb64(blocks[0]["data"].as_str().unwrap()), png);
    assert_eq!(blocks[1], json!({"type": "text", "text": "What is this?"}));
}

#[test]
fn an_acp_agent_that_takes_no_images_ends_the_run_saying_so() {
    let parts = json!([text("What is this?"), image("image/png", &png())]);
    let (sent, events) = gemini_acp("noimage", parts);
    assert!(
        !sent.iter().any(|m| m["method"] == "session/prompt"),
        "no prompt is sent: {sent:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{events:?}");
    let msg = last["message"].as_str().unwrap();
    assert!(
        msg.contains("takes no images") && msg.contains("promptCapabilities.image"),
        "{msg}"
    );
}

/// `serve CLI` replaying its text recording: the files the CLI was given
/// are copied to a directory, its arguments written; returns them.
fn given_files(cli: &str, version: &str, parts: Value) -> (Vec<String>, PathBuf) {
    let (argv, got) = (
        tmp(&format!("{cli}-files-argv")),
        tmp(&format!("{cli}-files")),
    );
    std::fs::create_dir_all(&got).unwrap();
    let replay = root().join(format!("testdata/{cli}/{version}/text.jsonl"));
    let server = common::serve(
        cli,
        &[],
        &[
            ("FAKE_REPLAY", &replay),
            ("FAKE_ARGV", &argv),
            ("FAKE_ATTACHED", &got),
        ],
    );
    let (status, rest) = post(&server.addr, &body(&format!("t-{cli}"), parts));
    assert_eq!(status, 200, "{rest}");
    assert_eq!(
        types(&events(&rest)).last(),
        Some(&"RUN_FINISHED"),
        "{rest}"
    );
    let args = std::fs::read_to_string(&argv).unwrap();
    (args.lines().map(str::to_owned).collect(), got)
}

#[test]
fn copilot_gets_files_as_its_attachment_options() {
    let (png, pdf) = (png(), pdf());
    let parts = json!([
        text("What are these?"),
        image("image/png", &png),
        document("application/pdf", &pdf)
    ]);
    let (args, got) = given_files("copilot", "1.0.102", parts);
    let named: Vec<&String> = args
        .iter()
        .filter(|a| a.starts_with("--attachment="))
        .collect();
    assert_eq!(named.len(), 2, "{args:?}");
    assert!(
        named[0].ends_with("/1.png") && named[1].ends_with("/2.pdf"),
        "{named:?}"
    );
    assert!(
        args.contains(&"--prompt=What are these?".to_owned()),
        "{args:?}"
    );
    assert_eq!(std::fs::read(got.join("1.png")).unwrap(), png);
    assert_eq!(std::fs::read(got.join("2.pdf")).unwrap(), pdf);
}

#[test]
fn opencode_gets_files_as_its_file_options_after_the_message() {
    let png = png();
    let parts = json!([text("What is this?"), image("image/png", &png)]);
    let (args, got) = given_files("opencode", "1.18.33", parts);
    let at = args
        .iter()
        .position(|a| a == "What is this?")
        .expect("the message");
    assert!(
        args[at + 1].starts_with("--file=") && args[at + 1].ends_with("/1.png"),
        "{args:?}"
    );
    assert_eq!(std::fs::read(got.join("1.png")).unwrap(), png);
}

#[test]
fn run_refuses_what_the_cli_cannot_take() {
    let file = tmp("shot.png");
    std::fs::write(&file, png()).unwrap();
    let fake = root().join("tests/fake/cli");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agui-translate"))
        .args(["run", "codex", "x", "--transport", "exec", "--cli"])
        .arg(&fake)
        .arg("--attach")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("over its app-server only"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agui-translate"))
        .args(["run", "claude", "x", "--attach", "notes.txt", "--cli"])
        .arg(&fake)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("png, jpg, gif, webp, pdf"), "{err}");
}

#[test]
fn run_gives_opencode_its_files_before_the_dash_dash_of_a_message_that_begins_with_a_dash() {
    let file = tmp("dash.png");
    std::fs::write(&file, png()).unwrap();
    let argv = tmp("dash-argv");
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_agui-translate"))
        .args(["run", "opencode", "--cli"])
        .arg(root().join("tests/fake/cli"))
        .arg(format!("--attach={}", file.display()))
        .env("FAKE_ARGV", &argv)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A message that begins with `-` comes on stdin.
    let mut stdin = run.stdin.take().unwrap();
    stdin.write_all(b"-x marks the spot\n").unwrap();
    drop(stdin);
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = std::fs::read_to_string(&argv).unwrap();
    let want = format!("--file={}\n--\n-x marks the spot\n", file.display());
    assert!(args.ends_with(&want), "{args}");
}
