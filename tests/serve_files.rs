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

fn audio(mime: &str, bytes: &[u8]) -> Value {
    json!({"type": "audio", "source": {"type": "data", "value": b64(bytes), "mimeType": mime}})
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
    let video = json!({"type": "video", "source": {"type": "data", "value": b64(b"\x00\x00\x00\x18ftypmp42"), "mimeType": "video/mp4"},
                       "metadata": {"filename": "clip.mp4"}});
    refused(
        &server,
        &argv,
        json!([text("watch"), video]),
        &[
            "part 2 (video \\\"clip.mp4\\\")",
            "\\\"video/mp4\\\" is not one this server takes",
        ],
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
            "gemini over the Agent Client Protocol takes images and audio only",
        ),
        // Recorded: Qwen Code 0.24.4 says promptCapabilities.audio over
        // ACP, and its model got no audio.
        (
            "qwen",
            json!([audio("audio/wav", &dot("dot.wav"))]),
            "qwen cannot take audio: Qwen Code says promptCapabilities.audio",
        ),
        (
            "claude",
            json!([audio("audio/wav", &dot("dot.wav"))]),
            "claude cannot take audio: only an agent over the Agent Client Protocol",
        ),
        (
            "codex",
            json!([audio("audio/wav", &dot("dot.wav"))]),
            "codex cannot take audio",
        ),
        (
            "copilot",
            json!([audio("audio/wav", &dot("dot.wav"))]),
            "copilot cannot take audio",
        ),
        (
            "opencode",
            json!([audio("audio/wav", &dot("dot.wav"))]),
            "opencode cannot take audio",
        ),
        // Recorded: Copilot CLI 1.0.102 named the PDF to its model by its
        // path and line count, without its bytes.
        (
            "copilot",
            json!([document("application/pdf", &pdf())]),
            "copilot takes images only: Copilot CLI names a PDF to its model by its path",
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
                "{cli} over the Agent Client Protocol takes images and audio only"
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

/// `serve CLI` replaying `replay`, for a CLI given files by path: the
/// server, the file its arguments go to (one a line) and the directory
/// the files it was given are copied to (both named after `tag`).
fn serve_by_path(cli: &str, replay: &Path, tag: &str) -> (common::Server, PathBuf, PathBuf) {
    let (argv, got) = (tmp(&format!("{tag}-argv")), tmp(tag));
    std::fs::create_dir_all(&got).unwrap();
    let server = common::serve(
        cli,
        &[],
        &[
            ("FAKE_REPLAY", replay),
            ("FAKE_ARGV", &argv),
            ("FAKE_ATTACHED", &got),
        ],
    );
    (server, argv, got)
}

/// `serve CLI` replaying its text recording: the files the CLI was given
/// are copied to a directory, its arguments written; returns them.
fn given_files(cli: &str, version: &str, parts: Value) -> (Vec<String>, PathBuf) {
    let replay = root().join(format!("testdata/{cli}/{version}/text.jsonl"));
    let (server, argv, got) = serve_by_path(cli, &replay, &format!("{cli}-files"));
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
fn copilot_gets_images_as_its_attachment_options() {
    let (png, jpeg) = (
        png(),
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01 and the rest".to_vec(),
    );
    let parts = json!([
        text("What are these?"),
        image("image/png", &png),
        image("image/jpeg", &jpeg)
    ]);
    let (args, got) = given_files("copilot", "1.0.102", parts);
    let named: Vec<&String> = args
        .iter()
        .filter(|a| a.starts_with("--attachment="))
        .collect();
    assert_eq!(named.len(), 2, "{args:?}");
    assert!(
        named[0].ends_with("/1.png") && named[1].ends_with("/2.jpg"),
        "{named:?}"
    );
    assert!(
        args.contains(&"--prompt=What are these?".to_owned()),
        "{args:?}"
    );
    assert_eq!(std::fs::read(got.join("1.png")).unwrap(), png);
    assert_eq!(std::fs::read(got.join("2.jpg")).unwrap(), jpeg);
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

// Real recordings: each CLI that takes a file was recorded (scripts/record,
// the `image` and `pdf` scenarios) receiving testdata/files/dot.png or
// dot.pdf by the route `serve` gives it, against a scripted model that
// checked the bytes in its request and said what it got. Each test replays
// one through `serve` with the same file from a page, checks that the
// stand-in got it by the same route, byte for byte, and that the run
// carries the model's words.

/// What the recorded model said of the bytes it got: their size and the
/// sha256 it computed (of testdata/files/dot.png and dot.pdf).
const PNG_SAID: &str = "image/png received: 75 bytes, sha256 5500a1331e8fa2025f7c475676ccddc5fe54d2ab9fc24f39a6ec93d77e3bddfb.";
const PDF_SAID: &str = "application/pdf received: 603 bytes, sha256 60e4263603363d042034982260c6959ac6ffb5de9119ae665bb7b899d77876fd.";

fn dot(name: &str) -> Vec<u8> {
    std::fs::read(root().join("testdata/files").join(name)).unwrap()
}

/// The text of the run's messages, its deltas joined.
fn said(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// A request of the file `name` (an image, or a PDF document) and the
/// recorded scenario's prompt, as a page sends it; the run's events, which
/// must end in RUN_FINISHED and say `says`.
fn send_dot(server: &common::Server, name: &str, says: &str) -> Vec<Value> {
    let bytes = dot(name);
    let (file, prompt) = if name.ends_with(".pdf") {
        (document("application/pdf", &bytes), "What is in this PDF?")
    } else {
        (image("image/png", &bytes), "What is in this image?")
    };
    let (status, rest) = post(
        &server.addr,
        &body("t-recorded", json!([text(prompt), file])),
    );
    assert_eq!(status, 200, "{rest}");
    let ev = events(&rest);
    assert_eq!(types(&ev).last(), Some(&"RUN_FINISHED"), "{rest}");
    assert!(said(&ev).contains(says), "{:?} lacks {says:?}", said(&ev));
    ev
}

fn recording(rel: &str) -> PathBuf {
    root().join("testdata").join(rel)
}

/// The lines of a recording's `.client.txt`: what the recorder wrote to
/// the real CLI.
fn recorded_client(rel: &str) -> Vec<Value> {
    common::values(&std::fs::read_to_string(recording(rel)).unwrap())
}

#[test]
fn claude_recorded_getting_an_image_and_a_pdf_gets_the_same_message_from_serve() {
    for (case, file, says) in [("image", "dot.png", PNG_SAID), ("pdf", "dot.pdf", PDF_SAID)] {
        let (argv, stdin) = (
            tmp(&format!("rec-claude-{case}-argv")),
            tmp(&format!("rec-claude-{case}-stdin")),
        );
        let replay = recording(&format!("claude/2.1.332/{case}.jsonl"));
        let server = common::serve(
            "claude",
            &[],
            &[
                ("FAKE_REPLAY", &replay),
                ("FAKE_STDIN", &stdin),
                ("FAKE_ARGV", &argv),
            ],
        );
        send_dot(&server, file, says);
        // The user message the real Claude Code read, and its model got
        // the bytes of: the one `serve` wrote.
        let sent = common::values(&std::fs::read_to_string(&stdin).unwrap());
        let want = recorded_client(&format!("claude/2.1.332/{case}.client.txt"));
        assert_eq!(sent, want[..1], "{case}");
        let blocks = claude_blocks(&stdin);
        assert_eq!(
            unb64(blocks[0]["source"]["data"].as_str().unwrap()),
            dot(file)
        );
    }
}

#[test]
fn codex_recorded_getting_an_image_gets_the_same_turn_input_from_serve() {
    let sent = tmp("rec-codex-sent");
    let replay = recording("codex-app-server/0.169.0/image.jsonl");
    let server = common::serve(
        "codex",
        &[],
        &[("FAKE_SERVER", &replay), ("FAKE_SENT", &sent)],
    );
    send_dot(&server, "dot.png", PNG_SAID);
    let input = |lines: &[Value]| {
        let turn = lines.iter().find(|l| l["method"] == "turn/start").unwrap();
        turn["params"]["input"].clone()
    };
    let got = input(&common::values(&std::fs::read_to_string(&sent).unwrap()));
    let want = input(&recorded_client(
        "codex-app-server/0.169.0/image.client.txt",
    ));
    assert_eq!(got, want);
    let url = got[0]["url"].as_str().unwrap();
    assert_eq!(
        unb64(url.strip_prefix("data:image/png;base64,").unwrap()),
        dot("dot.png")
    );
}

#[test]
fn acp_agents_recorded_getting_an_image_get_the_same_prompt_blocks_from_serve() {
    // Gemini CLI speaks ACP with a run given files; Copilot CLI and
    // OpenCode when told to (or with `--approval ask`).
    for (cli, version, run_args) in [
        ("gemini", "0.61.0", &[][..]),
        ("copilot", "1.0.102", &["--transport", "acp"][..]),
        ("opencode", "1.18.33", &["--transport", "acp"][..]),
    ] {
        let (sent, recorded) = (
            tmp(&format!("rec-{cli}-acp-sent")),
            tmp(&format!("rec-{cli}-acp-recorded")),
        );
        let replay = recording(&format!("acp/{cli}-{version}/image.jsonl"));
        let server = common::serve_run(
            cli,
            &[],
            run_args,
            &[
                ("FAKE_ACP", Path::new("1")),
                ("ACP_REPLAY", &replay),
                ("ACP_SENT", &sent),
                ("ACP_RECORDED", &recorded),
            ],
        );
        send_dot(&server, "dot.png", PNG_SAID);
        let prompt = |file: &Path| {
            let lines = common::values(&std::fs::read_to_string(file).unwrap());
            let p = lines
                .iter()
                .find(|m| m["method"] == "session/prompt")
                .unwrap_or_else(|| panic!("{cli}: no session/prompt in {lines:?}"));
            p["params"]["prompt"].clone()
        };
        let got = prompt(&sent);
        assert_eq!(got, prompt(&recorded), "{cli}");
        assert_eq!(unb64(got[0]["data"].as_str().unwrap()), dot("dot.png"));
    }
}

/// `serve CLI` replaying the recording `case` of a CLI that is given files
/// by path: the file it was given, and its arguments.
fn recorded_by_path(
    cli: &str,
    version: &str,
    case: &str,
    file: &str,
    says: &str,
) -> (Vec<u8>, Vec<String>) {
    let replay = recording(&format!("{cli}/{version}/{case}.jsonl"));
    let (server, argv, got) = serve_by_path(cli, &replay, &format!("rec-{cli}-{case}"));
    send_dot(&server, file, says);
    let ext = file.rsplit('.').next().unwrap();
    let args = std::fs::read_to_string(&argv).unwrap();
    (
        std::fs::read(got.join(format!("1.{ext}"))).unwrap(),
        args.lines().map(str::to_owned).collect(),
    )
}

#[test]
fn copilot_recorded_getting_an_image_gets_it_from_serve_as_its_attachment() {
    let (bytes, args) = recorded_by_path("copilot", "1.0.102", "image", "dot.png", PNG_SAID);
    assert_eq!(bytes, dot("dot.png"));
    assert!(
        args.iter()
            .any(|a| a.starts_with("--attachment=") && a.ends_with("/1.png")),
        "{args:?}"
    );
}

#[test]
fn opencode_recorded_getting_an_image_and_a_pdf_gets_them_from_serve_as_its_files() {
    for (case, file, says) in [("image", "dot.png", PNG_SAID), ("pdf", "dot.pdf", PDF_SAID)] {
        let (bytes, args) = recorded_by_path("opencode", "1.18.33", case, file, says);
        assert_eq!(bytes, dot(file), "{case}");
        let ext = file.rsplit('.').next().unwrap();
        assert!(
            args.last().unwrap().starts_with("--file=")
                && args.last().unwrap().ends_with(&format!("/1.{ext}")),
            "{args:?}"
        );
    }
}

// `serve --allow-fetch`: a `url` part whose host the operator named is
// fetched by the server, and its bytes take a `data` part's route. A web
// server on the loopback address stands for the named host; it notes each
// path it is asked for, so that a refusal made before any fetch is seen to
// fetch nothing.

/// The web server of a fetch test: its `host:port`, and the paths asked.
struct Web {
    host: String,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Web {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.host)
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

/// A web server answering each request on a thread of its own:
/// `/dot.png` is testdata/files/dot.png, `/page.html` is HTML,
/// `/moved.png` a redirect to `/dot.png`, `/big.png` announces 4096 bytes
/// (`/2m.png` 2 MiB),
/// `/endless.png` sends bytes with no length until the reader goes, and
/// anything else is `404`.
fn web() -> Web {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (log, at) = (asked.clone(), host.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let (log, at) = (log.clone(), at.clone());
            std::thread::spawn(move || {
                let mut head = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                head.read_line(&mut line).unwrap();
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                loop {
                    let mut l = String::new();
                    if head.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                        break;
                    }
                }
                log.lock().unwrap().push(path.clone());
                let answer = |status: &str, headers: &str, body: &[u8]| {
                    let mut a = format!(
                        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    a.extend_from_slice(body);
                    a
                };
                let sent = match path.as_str() {
                    "/dot.png" => answer("200 OK", "Content-Type: image/png\r\n", &dot("dot.png")),
                    "/page.html" => answer(
                        "200 OK",
                        "Content-Type: text/html; charset=utf-8\r\n",
                        b"<html></html>",
                    ),
                    "/moved.png" => answer(
                        "302 Found",
                        &format!("Location: http://{at}/dot.png\r\n"),
                        b"",
                    ),
                    "/big.png" => answer("200 OK", "Content-Type: image/png\r\n", &[7u8; 4096]),
                    "/2m.png" => {
                        answer("200 OK", "Content-Type: image/png\r\n", &vec![7u8; 2 << 20])
                    }
                    "/endless.png" => {
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n";
                        let _ = conn.write_all(head.as_bytes());
                        while conn.write_all(&[7u8; 1024]).is_ok() {}
                        return;
                    }
                    _ => answer("404 Not Found", "", b""),
                };
                let _ = conn.write_all(&sent);
            });
        }
    });
    Web { host, asked }
}

/// `serve claude` (a text answer replayed) with `args`: the server, and
/// where the CLI's arguments and stdin go.
fn claude_with(tag: &str, args: &[&str]) -> (common::Server, PathBuf, PathBuf) {
    let (argv, stdin) = (tmp(&format!("{tag}-argv")), tmp(&format!("{tag}-stdin")));
    let replay = root().join("testdata/claude/2.1.332/text.jsonl");
    let server = common::serve_run(
        "claude",
        args,
        &[],
        &[
            ("FAKE_REPLAY", &replay),
            ("FAKE_STDIN", &stdin),
            ("FAKE_ARGV", &argv),
        ],
    );
    (server, argv, stdin)
}

/// An image part with a `url` source, of type `mime` if given.
fn image_url(url: &str, mime: Option<&str>) -> Value {
    let mut source = json!({"type": "url", "value": url});
    if let Some(m) = mime {
        source["mimeType"] = json!(m);
    }
    json!({"type": "image", "source": source})
}

/// `serve claude --allow-fetch` for `web`, with `args` besides.
fn fetching(tag: &str, web: &Web, args: &[&str]) -> (common::Server, PathBuf, PathBuf) {
    let named = format!("http://{}", web.host);
    let mut all = vec!["--allow-fetch", "example.com", "--allow-fetch", &named];
    all.extend_from_slice(args);
    claude_with(tag, &all)
}

#[test]
fn a_url_part_from_a_named_host_is_fetched_and_reaches_the_cli_unchanged() {
    let web = web();
    let (server, _, stdin) = fetching("fetch-ok", &web, &[]);
    // The 1.0 part with its type, and the 0.0 `binary` one, whose type
    // is the answer's.
    let parts = json!([
        text("What is in these?"),
        image_url(&web.url("/dot.png"), Some("image/PNG")),
        {"type": "binary", "url": web.url("/dot.png"), "filename": "dot.png"},
    ]);
    let (status, rest) = post(&server.addr, &body("t-fetch", parts));
    assert_eq!(status, 200, "{rest}");
    assert_eq!(
        types(&events(&rest)).last(),
        Some(&"RUN_FINISHED"),
        "{rest}"
    );
    let blocks = claude_blocks(&stdin);
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    for b in &blocks[..2] {
        assert_eq!(b["source"]["media_type"], "image/png");
        assert_eq!(unb64(b["source"]["data"].as_str().unwrap()), dot("dot.png"));
    }
    assert_eq!(web.asked(), ["/dot.png", "/dot.png"]);
}

#[test]
fn a_url_from_a_host_not_named_is_refused_saying_how_to_allow_it() {
    let web = web();
    let (server, argv, _) = fetching("fetch-unnamed", &web, &[]);
    let port = web.host.rsplit(':').next().unwrap();
    // Another name of the same address, another port, another scheme.
    let other = format!("http://localhost:{port}/dot.png");
    refused(
        &server,
        &argv,
        json!([text("look"), image_url(&other, Some("image/png"))]),
        &[
            "part 2 (image)",
            "never fetches a URL from a host",
            &format!("--allow-fetch http://localhost:{port}"),
        ],
    );
    let https = format!("https://{}/dot.png", web.host);
    refused(
        &server,
        &argv,
        json!([image_url(&https, None)]),
        &[&format!("--allow-fetch 127.0.0.1:{port})")],
    );
    refused(
        &server,
        &argv,
        json!([image_url("https://example.com:8443/a.png", None)]),
        &["--allow-fetch example.com:8443"],
    );
    refused(
        &server,
        &argv,
        json!([image_url("ftp://example.com/a.png", None)]),
        &["not an https:// (or http://) URL"],
    );
    assert_eq!(web.asked(), Vec::<String>::new());
}

#[test]
fn a_url_with_credentials_is_refused_unfetched() {
    let web = web();
    let (server, argv, _) = fetching("fetch-credentials", &web, &[]);
    let url = format!("http://user:secret@{}/dot.png", web.host);
    refused(
        &server,
        &argv,
        json!([image_url(&url, Some("image/png"))]),
        &["part 1 (image)", "credentials in the URL are refused"],
    );
    assert_eq!(web.asked(), Vec::<String>::new());
}

#[test]
fn a_fetched_file_over_max_attachment_is_refused_as_it_is_read() {
    let web = web();
    let (server, argv, _) = fetching("fetch-size", &web, &["--max-attachment", "2K"]);
    refused(
        &server,
        &argv,
        json!([image_url(&web.url("/big.png"), Some("image/png"))]),
        &[
            "announced 4096 bytes, more than the 2048",
            "--max-attachment",
        ],
    );
    // No length said, and no end: the reading stops at the limit.
    refused(
        &server,
        &argv,
        json!([image_url(&web.url("/endless.png"), Some("image/png"))]),
        &[
            "sent more than the 2048 a file may have (--max-attachment)",
            "the rest was not read",
        ],
    );
}

#[test]
fn the_fetched_files_of_a_message_together_are_bounded_as_a_body_is() {
    // 2 MiB a file: together 18 MiB (16 MiB more than one file), nine.
    let web = web();
    let (server, argv, _) = fetching("fetch-total", &web, &["--max-attachment", "2M"]);
    let parts: Vec<Value> = (0..10)
        .map(|_| image_url(&web.url("/2m.png"), Some("image/png")))
        .collect();
    refused(
        &server,
        &argv,
        Value::Array(parts),
        &[
            "part 10 (image)",
            "more than the 0 bytes left of the 18874368 the fetched files of a message may have together",
        ],
    );
    assert_eq!(web.asked().len(), 10);
}

#[test]
fn a_fetched_file_of_another_type_than_said_or_listed_is_refused() {
    let web = web();
    let (server, argv, _) = fetching("fetch-type", &web, &[]);
    refused(
        &server,
        &argv,
        json!([image_url(&web.url("/page.html"), Some("image/png"))]),
        &[
            "answered a file of type",
            "text/html",
            "is not one this server takes",
        ],
    );
    refused(
        &server,
        &argv,
        json!([image_url(&web.url("/dot.png"), Some("image/jpeg"))]),
        &["its mimeType is image/jpeg, but 127.0.0.1 answered image/png"],
    );
    // A type off the list is refused before anything is fetched.
    refused(
        &server,
        &argv,
        json!([image_url(&web.url("/nothing.txt"), Some("text/plain"))]),
        &["text/plain", "is not one this server takes"],
    );
    assert_eq!(web.asked(), ["/page.html", "/dot.png"]);
}

#[test]
fn a_redirect_is_not_followed() {
    let web = web();
    let (server, argv, _) = fetching("fetch-redirect", &web, &[]);
    refused(
        &server,
        &argv,
        json!([image_url(&web.url("/moved.png"), Some("image/png"))]),
        &["answered 302 Found, a redirect to", "follows no redirect"],
    );
    assert_eq!(web.asked(), ["/moved.png"]);
    refused(
        &server,
        &argv,
        json!([image_url(&web.url("/gone.png"), Some("image/png"))]),
        &["answered 404 Not Found"],
    );
}

#[test]
fn an_unreachable_host_is_refused_saying_so() {
    // A port nothing listens on any more.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let named = format!("http://127.0.0.1:{port}");
    let (server, argv, _) = claude_with("fetch-unreachable", &["--allow-fetch", &named]);
    refused(
        &server,
        &argv,
        json!([image_url(&format!("{named}/dot.png"), Some("image/png"))]),
        &["part 1 (image)", "fetching it from 127.0.0.1 failed"],
    );
}

#[test]
fn allow_fetch_takes_hosts_only() {
    for bad in [
        "example.com/a",
        "user@example.com",
        "https://example.com/",
        "",
        "ftp://x",
    ] {
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_agui-translate"))
            .args(["serve", "claude", "--no-token", "--allow-fetch", bad])
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--allow-fetch") && err.contains("not HOST"),
            "{bad:?}: {err}"
        );
    }
}

/// What the recorded model said of dot.wav.
const WAV_SAID: &str = "audio/wav received: 844 bytes, sha256 f4ee38454deae3222110e8170271825cff1a638c2e488d91ac0a07307637fcc5.";

#[test]
fn gemini_recorded_getting_audio_gets_the_same_audio_block_from_serve() {
    let (sent, recorded) = (
        tmp("rec-gemini-audio-sent"),
        tmp("rec-gemini-audio-recorded"),
    );
    let replay = recording("acp/gemini-0.61.0/audio.jsonl");
    let server = common::serve(
        "gemini",
        &[],
        &[
            ("FAKE_ACP", Path::new("1")),
            ("ACP_REPLAY", &replay),
            ("ACP_SENT", &sent),
            ("ACP_RECORDED", &recorded),
        ],
    );
    let parts = json!([
        text("What is in this recording?"),
        audio("audio/wav", &dot("dot.wav"))
    ]);
    let (status, rest) = post(&server.addr, &body("t-audio", parts));
    assert_eq!(status, 200, "{rest}");
    let ev = events(&rest);
    assert_eq!(types(&ev).last(), Some(&"RUN_FINISHED"), "{rest}");
    assert!(said(&ev).contains(WAV_SAID), "{:?}", said(&ev));
    let prompt = |file: &Path| {
        let lines = common::values(&std::fs::read_to_string(file).unwrap());
        let p = lines
            .iter()
            .find(|m| m["method"] == "session/prompt")
            .unwrap_or_else(|| panic!("no session/prompt in {lines:?}"));
        p["params"]["prompt"].clone()
    };
    let got = prompt(&sent);
    assert_eq!(got, prompt(&recorded));
    assert_eq!(got[0]["type"], "audio");
    assert_eq!(got[0]["mimeType"], "audio/wav");
    assert_eq!(unb64(got[0]["data"].as_str().unwrap()), dot("dot.wav"));
}

#[test]
fn an_acp_agent_that_takes_no_audio_ends_the_run_saying_so() {
    let parts = json!([text("Listen."), audio("audio/wav", &dot("dot.wav"))]);
    let (sent, events) = gemini_acp("noaudio", parts);
    assert!(
        !sent.iter().any(|m| m["method"] == "session/prompt"),
        "no prompt is sent: {sent:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{events:?}");
    let msg = last["message"].as_str().unwrap();
    assert!(
        msg.contains("takes no audio") && msg.contains("promptCapabilities.audio"),
        "{msg}"
    );
}
