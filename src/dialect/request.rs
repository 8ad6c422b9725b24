//! What `run` asks of a CLI, in terms of neither the command line nor the
//! process that starts the CLI: the [`RunRequest`] a dialect's table turns
//! into the CLI's arguments ([`crate::dialect`]), and the policy types the
//! command line parses and the process code acts on.

use std::path::PathBuf;
use std::time::Duration;

/// What the CLI is told: the options of `run` that reach its command line
/// (or, for a server transport, its requests).
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The model the CLI uses.
    pub model: Option<String>,
    /// The reasoning effort, as the CLI names its levels (`--effort`).
    pub effort: Option<String>,
    /// Stop after this many agent turns.
    pub max_turns: Option<u32>,
    /// The directory the CLI runs in.
    pub cwd: Option<PathBuf>,
    /// The session to continue.
    pub resume: Option<String>,
    /// Tools allowed without asking.
    pub allow_tool: Vec<String>,
    /// Tools forbidden.
    pub deny_tool: Vec<String>,
    /// How tool calls are approved.
    pub approval: Approval,
    /// The page's own tools are served to the CLI (`--page-tools`): the
    /// CLI is started to take them, and talked with as `--approval ask`
    /// does.
    pub page_tools: bool,
    /// Files given to the CLI with the prompt (`--attach`).
    pub attachments: Vec<Attachment>,
    /// Arguments passed to the CLI untouched.
    pub extra: Vec<String>,
}

/// A file given to the CLI with the prompt (an image, a PDF), and its
/// media type (told by its name's extension, [`MEDIA_TYPES`]).
#[derive(Debug, Clone)]
pub struct Attachment {
    pub path: PathBuf,
    pub media_type: &'static str,
}

/// The media types a run can attach, with the extension a file of each
/// has: images, PDF documents and WAV audio, the kinds the CLIs' own
/// routes take.
pub const MEDIA_TYPES: &[(&str, &str)] = &[
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
    ("application/pdf", "pdf"),
    ("audio/wav", "wav"),
];

/// The media types of [`MEDIA_TYPES`], for a message: `image/png, …`.
pub fn media_types() -> String {
    let names: Vec<&str> = MEDIA_TYPES.iter().map(|(t, _)| *t).collect();
    names.join(", ")
}

impl Attachment {
    /// The file `path`, its media type told by its extension (`jpeg` is
    /// `jpg`, in any case); `Err` says why it cannot be attached.
    pub fn of(path: PathBuf) -> Result<Attachment, String> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let ext = match ext.as_deref() {
            Some("jpeg") => "jpg",
            Some(e) => e,
            None => "",
        };
        let Some((media_type, _)) = MEDIA_TYPES.iter().find(|(_, e)| *e == ext) else {
            return Err(format!(
                "not a file of a type a run can attach (its extension tells the type: {})",
                MEDIA_TYPES
                    .iter()
                    .map(|(_, e)| *e)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        Ok(Attachment { path, media_type })
    }

    /// Whether it is an image (else a PDF document, or audio).
    pub fn is_image(&self) -> bool {
        self.media_type.starts_with("image/")
    }

    /// Whether it is audio (an ACP agent's audio prompt block).
    pub fn is_audio(&self) -> bool {
        self.media_type.starts_with("audio/")
    }

    /// Its bytes, base64 (standard alphabet, padded); an error names the
    /// file.
    pub fn base64(&self) -> std::io::Result<String> {
        use base64::Engine as _;
        let bytes = std::fs::read(&self.path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("--attach {}: {e}", self.path.display()))
        })?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }
}

/// Why `cli` (its name) cannot take an attachment of `media_type`, if it
/// cannot; `acp`: the run speaks the Agent Client Protocol with it, where
/// images go as image prompt blocks (and the agent must say it takes
/// them). Otherwise Claude Code takes images and PDFs (stream-json content
/// blocks), OpenCode too (`--file`), Copilot CLI images (`--attachment`: a
/// PDF reaches its model as a path, not as bytes), Codex images (its
/// app-server's `turn/start` input); Gemini CLI over ACP only
/// ([`files_pick_acp`]); Qwen Code none. Audio goes over the Agent Client
/// Protocol only (audio prompt blocks: the agent must say
/// `promptCapabilities.audio`, as Gemini CLI does); Qwen Code says it too,
/// but its model was recorded not getting the audio.
pub fn attachment_refused(cli: &str, media_type: &str, acp: bool) -> Option<String> {
    let image = media_type.starts_with("image/");
    let audio = media_type.starts_with("audio/");
    match cli {
        "qwen" if audio => {
            return Some(
                "qwen cannot take audio: Qwen Code says promptCapabilities.audio over the Agent Client Protocol, but an audio prompt block does not reach its model (recorded with 0.24.4)"
                    .into(),
            )
        }
        "qwen" => {}
        _ if acp && (image || audio) => return None,
        _ if acp => {
            return Some(format!(
                "{cli} over the Agent Client Protocol takes images and audio only (as image and audio prompt blocks), not {media_type}"
            ))
        }
        _ if audio => {
            return Some(format!(
                "{cli} cannot take audio: only an agent over the Agent Client Protocol that says promptCapabilities.audio takes it (gemini), as audio prompt blocks"
            ))
        }
        _ => {}
    }
    match cli {
        "claude" | "opencode" => None,
        "copilot" if image => None,
        "copilot" => Some(format!(
            "copilot takes images only: Copilot CLI names a PDF to its model by its path and line count, without its bytes, not {media_type}"
        )),
        "gemini" => Some(
            "gemini takes images over the Agent Client Protocol only, not with --transport stream"
                .into(),
        ),
        "codex" if image => None,
        "codex" => Some(format!(
            "codex takes images only (its app-server's turn/start input has no documents), not {media_type}"
        )),
        "qwen" if image => Some(
            "qwen cannot take images: Qwen Code turns a stream-json image into JSON text and re-encodes an @file image, so the bytes would not reach the model as sent"
                .into(),
        ),
        other => Some(format!(
            "{other} cannot take attachments yet (claude and opencode take images and PDFs, codex, copilot and gemini images)"
        )),
    }
}

/// Whether a run of `cli` given files speaks the Agent Client Protocol
/// with it unless told otherwise (`--transport auto`): Gemini CLI takes
/// images only there.
pub fn files_pick_acp(cli: &str) -> bool {
    cli == "gemini"
}

/// The name of the MCP server that serves the page's tools to a CLI.
pub const PAGE_SERVER: &str = "page";

/// Why a run of `cli` (its name) over `transport` (`ask`: with
/// `--approval ask`, which picks the Agent Client Protocol for the CLIs
/// that speak it) cannot offer the model the state's tool, the one through
/// which it changes the page's shared state (`run --state-file`, `serve`
/// given a state), if it cannot. The tool goes by the page's tools' route:
/// Claude Code's control layer, Codex's app-server, Qwen Code's
/// stream-json control layer, the loopback MCP server of Copilot CLI and
/// OpenCode (in their JSON modes and over ACP, given in `session/new`) and
/// of Gemini CLI (over ACP, which `run` then picks). The one place this is
/// decided: `serve` offers the tool where `run` takes it.
pub fn state_tool_refused(cli: &str, transport: Transport, ask: bool) -> Option<String> {
    let acp = ask || transport == Transport::Acp;
    match cli {
        "claude" | "copilot" | "opencode" => None,
        "qwen" if acp => Some(
            "qwen takes the state's tool on its stream-json control layer only, not over ACP (--transport acp, --approval ask)".into(),
        ),
        "codex" if transport == Transport::Exec => Some(
            "codex takes the state's tool over its app-server only, not with --transport exec"
                .into(),
        ),
        "gemini" if transport == Transport::Stream => {
            Some("gemini takes the state's tool over ACP only, not with --transport stream".into())
        }
        "qwen" | "codex" | "gemini" => None,
        other => Some(format!(
            "{other} cannot take the state's tool yet (claude, codex, qwen, copilot, opencode and gemini can)"
        )),
    }
}

/// How long Qwen Code waits for its host to answer an SDK MCP server's
/// request (a call of the page's tools): its control layer's own limit,
/// which no option changes. After it, the call fails inside the CLI
/// ("Control request timeout") and Qwen Code asks again.
pub const QWEN_MCP_LIMIT: Duration = Duration::from_secs(30);

/// The longest `--tool-timeout` of `run qwen --page-tools`: under
/// [`QWEN_MCP_LIMIT`], so that the page's silence is answered by `run`
/// (an error the model reads, then a clear end) before the CLI gives up
/// on its own.
pub const QWEN_TOOL_TIMEOUT: Duration = Duration::from_secs(25);

/// How long Gemini CLI waits for an MCP server's answer to a call (its
/// `MCP_DEFAULT_TIMEOUT_MSEC`, 0.61.0, Qwen Code 0.24.4 too) when the
/// server's settings give no `timeout`, as an ACP `mcpServers` entry
/// cannot: after it, the call fails inside the CLI, whatever the page
/// answers later.
pub const GEMINI_MCP_LIMIT: Duration = Duration::from_secs(600);

/// The longest `--tool-timeout` for a call of the page's tools that Gemini
/// CLI (or Qwen Code over ACP) makes: under [`GEMINI_MCP_LIMIT`], so that
/// the page's silence is answered by `run` before the CLI gives up.
pub const GEMINI_TOOL_TIMEOUT: Duration = Duration::from_secs(540);

/// How tool calls are approved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Approval {
    /// The CLI's own default (it may refuse tools it would ask about).
    #[default]
    Default,
    /// Approve file edits without asking.
    AutoEdit,
    /// Approve everything without asking.
    Yolo,
    /// Ask the person at the other end: a tool call the CLI asks about ends
    /// the run with an AG-UI interrupt, and the next input resumes it
    /// (claude, codex over its app-server, and the CLIs over ACP).
    Ask,
}

/// The refusal of `--approval ask` by a CLI that cannot ask (`title`),
/// with the CLIs that can.
pub fn cannot_ask(title: &str, why: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "--approval ask: {title} cannot ask ({why}); claude, codex and the CLIs that speak ACP (gemini, qwen, copilot, opencode) can"
    )
}

/// `--effort` given to a CLI that has no choice of a reasoning effort.
pub fn no_effort(title: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "--effort: {title} has no choice of a reasoning effort (claude, codex, copilot and opencode have one)"
    )
}

/// How `run` talks to a CLI that has more than one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Transport {
    /// codex: `app-server` when the installed version is one it is known to
    /// work with (or with --approval ask), else `exec`; gemini, qwen,
    /// copilot, opencode: `acp` with --approval ask, else `stream` (opencode
    /// from 1.18.33 on: `acp` unless the run needs its JSON mode).
    #[default]
    Auto,
    /// The CLI's headless JSON stream (`codex exec --json` for codex).
    Stream,
    /// The Agent Client Protocol (gemini, qwen, copilot, opencode): text
    /// and reasoning stream, approvals are answered by --approval (or
    /// asked, with --approval ask).
    Acp,
    /// `codex exec --json`: messages arrive only when complete.
    Exec,
    /// `codex app-server`, agui-translate its client: text, reasoning and
    /// command output stream as they come, approvals are answered by
    /// --approval (or asked, with --approval ask).
    AppServer,
}

/// A size in bytes: a number, then `K`, `M` or `G` (KiB, MiB, GiB; `KiB`,
/// `MiB`, `GiB` and `B` too) or nothing (bytes).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let at = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(at);
    let n: usize = num
        .parse()
        .map_err(|_| format!("not a size: {s:?} (try 20M, 512K, 1048576)"))?;
    let times: usize = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KIB" => 1 << 10,
        "M" | "MIB" => 1 << 20,
        "G" | "GIB" => 1 << 30,
        _ => return Err(format!("unknown unit in {s:?} (use K, M or G)")),
    };
    n.checked_mul(times)
        .ok_or_else(|| format!("too large a size: {s:?}"))
}

/// `90s`, `10m`, `1h`, `500ms`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (try 90s, 10m, 1h)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?} (use ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("a duration must be positive: {s:?}"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("too long a duration: {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("20M"), Ok(20 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("").is_err());
        assert!(parse_size("2T").is_err());
        assert!(parse_size("-1M").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn attachments_are_typed_by_their_extension() {
        let of = |p: &str| Attachment::of(p.into()).map(|a| a.media_type);
        assert_eq!(of("a.PNG"), Ok("image/png"));
        assert_eq!(of("dir/shot.jpeg"), Ok("image/jpeg"));
        assert_eq!(of("b.pdf"), Ok("application/pdf"));
        assert!(of("notes.txt")
            .unwrap_err()
            .contains("png, jpg, gif, webp, pdf"));
        assert!(of("noext").is_err());
    }

    #[test]
    fn the_state_s_tool_goes_where_the_page_s_route_streams_it() {
        use Transport::*;
        for (cli, transport, ask, taken) in [
            ("claude", Auto, true, true),
            ("codex", Auto, false, true),
            ("codex", AppServer, true, true),
            ("codex", Exec, false, false),
            ("qwen", Auto, false, true),
            ("qwen", Stream, false, true),
            ("qwen", Acp, false, false),
            ("qwen", Auto, true, false),
            ("copilot", Stream, false, true),
            ("copilot", Acp, false, true),
            ("copilot", Auto, true, true),
            ("opencode", Auto, false, true),
            ("opencode", Acp, true, true),
            ("gemini", Auto, false, true),
            ("gemini", Acp, true, true),
            ("gemini", Stream, false, false),
            ("acp", Auto, false, false),
        ] {
            let why = state_tool_refused(cli, transport, ask);
            assert_eq!(
                why.is_none(),
                taken,
                "{cli} {transport:?} ask {ask}: {why:?}"
            );
            if let Some(why) = why {
                assert!(why.starts_with(cli) && !why.contains('\n'), "{why}");
            }
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("99999999999999999999s").is_err());
        assert!(parse_duration("1e400").is_err());
    }
}
