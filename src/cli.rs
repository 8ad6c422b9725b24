//! The command line: one clap definition, the single source of `--help`, the
//! man page and the shell completions.

use std::ffi::OsString;
use std::marker::PhantomData;
use std::path::PathBuf;

use clap::builder::{EnumValueParser, PossibleValue, StyledStr, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::agui::{AguiVersion, Emitter, Format, RawMode, ToolNames};
use crate::dialect::FromCli;
use crate::run::StatsFormat;

/// `--help` groups options under these headings, as ripgrep does.
const INPUT: &str = "Input";
const TRANSLATION: &str = "Translation";
const OUTPUT: &str = "Output";
const RUN: &str = "Run";

const ABOUT: &str = "Translate a coding-agent CLI's JSON stream into AG-UI 1.0 events";

/// The program's description in `--help` and its man page: each paragraph
/// one line, for clap (or roff) to fill.
fn long_about() -> String {
    format!(
        "Translate a coding-agent CLI's JSON stream into AG-UI 1.0 events.

Reads the JSONL stream of {} from FILEs or standard input and writes one \
AG-UI event per line (NDJSON) to standard output, or server-sent events \
with --format sse. Every run in the output starts with RUN_STARTED and ends \
with exactly one RUN_FINISHED or RUN_ERROR, even when the input is cut short \
or holds garbage. Lines that cannot be translated are reported on standard \
error with their line number and still go out as RAW events, so nothing is \
lost.

Events are written as soon as they are complete when the input is a live \
pipe, and in large batches when it is a file.",
        crate::dialect::titles("or")
    )
}

const AFTER_HELP: &str = "\
Examples:
  gemini -p 'Fix the tests' --output-format stream-json | agui-translate
  gemini -p 'Fix the tests' --output-format stream-json \\
    | agui-translate --from gemini
  agui-translate --from gemini session.jsonl > events.ndjson
  agui-translate --from gemini --format sse < session.jsonl";

/// One exit status and what it means to each command (`""`: the command
/// never exits with it).
pub struct ExitStatus {
    pub status: &'static str,
    /// `agui-translate [FILE]...`
    pub translate: &'static str,
    pub check: &'static str,
    pub run: &'static str,
    pub serve: &'static str,
}

/// Every exit status of every command: the one table that each command's
/// `--help` (and so its man page) lists its part of, and that the README's
/// "Exit status" section shows whole (a test keeps it so).
pub static EXIT_STATUSES: &[ExitStatus] = &[
    ExitStatus {
        status: "0",
        translate: "every line was translated",
        check: "every stream is valid",
        run: "the CLI succeeded; `run --check`: every CLI is installed",
        serve: "stopped by SIGINT, SIGTERM or SIGHUP (each run ends as cancelled)",
    },
    ExitStatus {
        status: "1",
        translate: "some input lines could not be translated (each named on stderr as FILE:LINE, and sent as RAW; with --strict, also lines holding something unknown), or an input is not the --from CLI's, or no CLI was recognized in it",
        check: "a stream breaks a rule (an empty one too: it has no events)",
        run: "`run --check`: a CLI is missing; over the app-server or ACP, the run ended in RUN_ERROR and the CLI's own status is 0 (a server that went on, or ended without ending the turn) (else the CLI's own 1)",
        serve: "",
    },
    ExitStatus {
        status: "2",
        translate: "usage error, a FILE that could not be read (the others are translated), or an output error",
        check: "usage error, or a FILE that could not be read",
        run: "usage error, or an option the CLI cannot express",
        serve: "usage error (such as a non-loopback --listen without a token, or a bad run option), or the address could not be bound",
    },
    ExitStatus {
        status: "3",
        translate: "with --strict or --from CLI: an input was empty (a CLI that died before writing anything); without them, an empty input is only reported on stderr",
        check: "",
        run: "--approval ask: no decision came (--approval-timeout passed, or standard input ended): the tool calls asked about were denied and the CLI stopped; --page-tools: no answer came (--tool-timeout passed, or standard input ended): the calls were answered with an error and the CLI stopped",
        serve: "",
    },
    ExitStatus {
        status: "124",
        translate: "",
        check: "",
        run: "--timeout ended the run (it ends as cancelled)",
        serve: "",
    },
    ExitStatus {
        status: "126",
        translate: "",
        check: "",
        run: "the CLI was found but could not be started (RUN_ERROR)",
        serve: "",
    },
    ExitStatus {
        status: "127",
        translate: "",
        check: "",
        run: "the CLI is not installed (RUN_ERROR cli_missing names its npm package)",
        serve: "",
    },
    ExitStatus {
        status: "128+N",
        translate: "ended by signal N (SIGHUP 129, SIGINT 130, SIGTERM 143): the open run ends as cancelled",
        check: "",
        run: "ended by signal N (SIGHUP 129, SIGINT 130, SIGTERM 143), passed to the CLI's process group (over the app-server: turn/interrupt); the run ends as cancelled",
        serve: "",
    },
    ExitStatus {
        status: "other",
        translate: "",
        check: "",
        run: "the CLI's own exit status (RUN_ERROR says what it means)",
        serve: "",
    },
];

/// What `translate`, `check`, `run` or `serve` (`which`) says of a status.
pub fn exit_meaning(status: &ExitStatus, which: &str) -> &'static str {
    match which {
        "translate" => status.translate,
        "check" => status.check,
        "run" => status.run,
        "serve" => status.serve,
        _ => panic!("no command {which}"),
    }
}

/// The `Exit status:` part of a command's `--help`, from [`EXIT_STATUSES`],
/// after its examples: each status and its meaning, as an [`item`].
fn after_help(examples: &str, which: &str, width: usize) -> String {
    let mut text = format!("{examples}\n\nExit status:");
    for status in EXIT_STATUSES {
        let meaning = exit_meaning(status, which);
        if !meaning.is_empty() {
            text.push('\n');
            text.push_str(&item(status.status, 5, meaning, width));
        }
    }
    text
}

/// `  TAG  text`: the tag padded to `tag_width`, and the text wrapped at
/// `width` columns (0: not wrapped), its lines after the first indented to
/// where it begins. clap wraps a line as a paragraph, indented as its
/// first line: an item is wrapped here, to the width clap wraps the rest to.
fn item(tag: &str, tag_width: usize, text: &str, width: usize) -> String {
    let indent = 2 + tag_width + 2;
    let mut out = String::new();
    let mut line = format!("  {tag:<tag_width$}  ");
    for word in text.split(' ') {
        let long = line.chars().count() + 1 + word.chars().count() > width;
        if width > 0 && long && line.trim().len() > tag.len() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
        } else if !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

/// `--help`'s widest: clap wraps to the terminal, up to this.
const MAX_WIDTH: usize = 100;

/// The width clap wraps `--help` to, found as clap finds it: a terminal's
/// (on standard output, error or input), else `COLUMNS`, else the most.
fn help_width() -> usize {
    let terminal = [1, 2, 0].into_iter().find_map(|fd| {
        // SAFETY: TIOCGWINSZ only writes the struct it is given.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
        (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
    });
    terminal
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
        .unwrap_or(MAX_WIDTH)
        .min(MAX_WIDTH)
}

/// The command line as `--help`, the man pages and the completions show it:
/// [`Args`] with the exit statuses of [`EXIT_STATUSES`] in each command's
/// help, wrapped to the terminal.
pub fn command() -> clap::Command {
    command_at(help_width())
}

/// [`command`], its help wrapped at `width` columns (0: not wrapped, for
/// the man pages: roff fills the paragraphs, and each item is one line).
pub fn command_at(width: usize) -> clap::Command {
    Args::command()
        .term_width(width)
        .long_about(long_about())
        .after_help(after_help(AFTER_HELP, "translate", width))
        .mut_subcommand("run", |c| {
            c.long_about(run_long_about(width))
                .after_help(after_help(RUN_AFTER_HELP, "run", width) + &run_after_status())
        })
        .mut_subcommand("check", |c| {
            c.after_help(after_help(CHECK_AFTER_HELP, "check", width))
        })
        .mut_subcommand("serve", |c| {
            c.after_help(after_help(SERVE_AFTER_HELP, "serve", width))
        })
}

#[derive(Parser, Debug)]
#[command(
    name = "agui-translate",
    version,
    about = ABOUT,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub filter: FilterArgs,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Start a CLI in its headless streaming mode and translate its output.
    Run(Box<RunArgs>),
    /// Check AG-UI 1.0 streams (NDJSON or SSE): the schema of every event
    /// and the sequence rules.
    #[command(long_about = CHECK_LONG_ABOUT)]
    Check(CheckArgs),
    /// Serve a CLI as an AG-UI endpoint: each POSTed RunAgentInput is a run,
    /// streamed back as server-sent events.
    #[command(long_about = SERVE_LONG_ABOUT)]
    Serve(Box<ServeArgs>),
}

const SERVE_LONG_ABOUT: &str = "\
Serve a coding-agent CLI as an AG-UI endpoint, for front ends such as \
@ag-ui/client's HttpAgent.

Each POST carries an AG-UI RunAgentInput (JSON). Its last user message is \
the prompt of one `agui-translate run`, whose events are streamed back as \
server-sent events as they come, with the request's threadId and runId. A \
later request on the same threadId resumes the CLI's session (claude \
--resume, gemini --resume, qwen --resume, copilot --resume, opencode \
--session, codex exec resume or the app-server's thread/resume); a thread \
takes one run at a time (409 while one is going). A client that disconnects \
ends its run as SIGTERM does. Requests on different threads run at once, \
each a CLI of its own.

Options after `--` are given to every run: any option of `agui-translate \
run` but the ones serve sets (--format, --thread-id, --run-id, --resume), \
and after a second `--`, the CLI's own arguments.

Safe by default: a request must be addressed to the server by a name of its \
own (the listening address, localhost, 127.0.0.1, [::1], or one given with \
--allow-host; otherwise 421), so that a web page cannot reach it through \
DNS rebinding; a POST must be application/json (otherwise 415), so that a \
browser always asks first; and a request from a web page (with an Origin \
header) is refused (403) unless the page's origin was given with \
--allow-origin. Requests without Origin (curl, programs) are not affected.

Every request must send `Authorization: Bearer TOKEN`. The token is one \
given (--token-file, the AGUI_SERVE_TOKEN environment variable, or --token, \
which other local users can read on the command line) or, by default, one \
the server makes and keeps in the state directory (`token`, mode 0600; its \
path is printed at start), the same across restarts. --no-token opens a \
loopback server to every local user and their programs. A server that \
listens beyond the loopback interface requires a token given: the CLI runs \
tools on this machine for whoever can reach it.";

const SERVE_AFTER_HELP: &str = "\
Examples:
  agui-translate serve claude
  agui-translate serve gemini --listen 127.0.0.1:0 -- -m gemini-2.5-flash
  agui-translate serve claude --allow-origin http://localhost:3000
  agui-translate serve codex --listen 0.0.0.0:8799 \\
    --token-file ~/.agui-token -- --timeout 10m";

/// `agui-translate serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The CLI that answers.
    #[arg(value_enum, value_parser = values::<crate::dialect::Dialect>())]
    pub cli: crate::dialect::Dialect,

    /// Where to listen; port 0 picks a free one. The address is printed on
    /// standard error.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8799")]
    pub listen: String,

    /// Require `Authorization: Bearer TOKEN` on every request (required
    /// when --listen is not a loopback address). Other local users can read
    /// a command line: prefer --token-file or AGUI_SERVE_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,

    /// Read the token from FILE (its first line); a FILE that others may
    /// read or write is refused.
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,

    /// Require no token (loopback only): any local user's programs may then
    /// start runs, and approve their tool calls, as this user. Without a
    /// token given, the server makes one and keeps it in the state
    /// directory.
    #[arg(long, conflicts_with_all = ["token", "token_file"])]
    pub no_token: bool,

    /// Let web pages from ORIGIN (`scheme://host[:port]`, matched exactly)
    /// call the server; repeatable. Pages from any other origin are refused.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,

    /// Serve requests addressed to NAME (the Host header, as through a
    /// reverse proxy); repeatable. Besides these, only the listening
    /// address, localhost, 127.0.0.1 and [::1] are served.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// The AG-UI release to write for, whatever the client: without it, a
    /// request whose RunAgentInput has a `protocolVersion` of 1 or later
    /// gets AG-UI 1.0, and one without (a 0.0 client, such as CopilotKit's
    /// runtime) the 0.0 shapes. `--agui-version` among the run options
    /// forces it too.
    #[arg(
        long,
        value_enum,
        value_parser = values::<AguiVersion>(),
        value_name = "VERSION"
    )]
    pub agui_version: Option<AguiVersion>,

    /// Which RAW events a client gets: only records that RAW is the only
    /// trace of (`unknown`: the CLI's records that became AG-UI events, its
    /// init with paths and tool lists, say, are not echoed to a browser),
    /// `all`, or `none`. `--raw` among the run options sets it too.
    #[arg(
        long,
        value_enum,
        value_parser = values::<RawMode>(),
        default_value_t = RawMode::Unknown,
        value_name = "WHICH"
    )]
    pub raw: RawMode,

    /// The largest file a page may send with a message (decoded; `K`, `M`
    /// or `G` after the number: KiB, MiB, GiB): a larger one is refused
    /// (`400`). A request body may be 16 MiB more than one such file,
    /// base64.
    #[arg(
        long,
        value_name = "SIZE",
        value_parser = crate::dialect::request::parse_size,
        default_value = "20M"
    )]
    pub max_attachment: usize,

    /// Fetch a page's `url` parts (an image, a PDF given by its URL) from
    /// HOST: `HOST` or `HOST:PORT` over HTTPS (port 443 unless given),
    /// `http://HOST[:PORT]` over plain HTTP; repeatable. A URL's scheme,
    /// host and port must be those of one named; no redirect is followed,
    /// no proxy taken, credentials in a URL are refused, the file's type
    /// must be the part's `mimeType` and the answer's Content-Type, and its
    /// size at most `--max-attachment`. Without it no URL is fetched (a
    /// `400`).
    #[arg(long, value_name = "HOST")]
    pub allow_fetch: Vec<String>,

    /// How long a run goes on after its client has gone away (a page
    /// reloaded mid-run, an aborted run), for a request on its thread with
    /// no new message to rejoin it; with no one reading it that long, it
    /// ends as SIGTERM ends it. `0`: at once. `500ms`, `5s`, `1m`, or plain
    /// seconds; at most `10m`.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = rejoin_grace,
        default_value = "5s"
    )]
    pub rejoin_grace: std::time::Duration,

    /// How long a thread's agent is kept between its turns over the Agent
    /// Client Protocol (gemini, qwen, copilot, opencode, acp): the next
    /// turn prompts the same session in the same process, with no
    /// `session/load`. An idle agent holds a run slot, and the one idle
    /// longest is ended first when a run needs its slot. `0`: a new
    /// process (and `session/load`) for each turn. `30s`, `5m`, or plain
    /// seconds; at most `1h`.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = keep_idle,
        default_value = "5m"
    )]
    pub keep_idle: std::time::Duration,

    /// Where each thread's CLI session (and plan) is kept, so that threads
    /// survive a restart: one directory per CLI in it, private (0700), for
    /// the 10,000 most recent threads (default:
    /// `$XDG_STATE_HOME/agui-translate`, or `~/.local/state/agui-translate`).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Options given to every run (after `--`): run's own, then, after a
    /// second `--`, the CLI's.
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run_options: Vec<String>,
}

const CHECK_LONG_ABOUT: &str = "\
Check AG-UI 1.0 streams (this program's output, or any producer's), as \
NDJSON or as server-sent events (told from the first line).

Every event is checked against the AG-UI 1.0 schema: a known event type \
(THINKING_* were removed in 1.0), its required fields, the type of every \
field, and no property the schema does not describe (a 1.0 client strips \
them). The stream is checked against the sequence rules of a 1.0 client: \
runs start with RUN_STARTED, every START has its END with the same id, and \
RUN_FINISHED comes with nothing open. And against what every translation \
keeps: the stream does not end inside a run, a run has one terminal event, \
RUN_FINISHED has the RUN_STARTED's ids, tool-call arguments join into JSON, \
and a tool result names a tool call started before it.

Each stream gets a verdict on stdout (FILE: OK, N events in M runs); each \
problem is reported on stderr as FILE:LINE: message.";

const CHECK_AFTER_HELP: &str = "\
Examples:
  agui-translate --from claude session.jsonl | agui-translate check
  agui-translate check events.ndjson more-events.ndjson";

/// Parses the command line as [`Args::parse`] does (printing help or a usage
/// error and exiting), with one more tip on usage errors.
pub fn parse() -> Args {
    parse_from(std::env::args_os()).unwrap_or_else(|err| err.exit())
}

/// [`parse`] on the given arguments, the program's name first.
pub fn parse_from<I, T>(argv: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    // The common path builds no help text: the command line is read
    // without it, and only what ends in help, a version or an error is
    // read again with it, to be shown as the user asked.
    if let Ok(args) = Args::command()
        .try_get_matches_from(&argv)
        .and_then(|m| Args::from_arg_matches(&m))
    {
        return Ok(args);
    }
    let mut cmd = command();
    cmd.try_get_matches_from_mut(&argv)
        .and_then(|m| Args::from_arg_matches(&m))
        .map_err(|err| err.format(&mut cmd))
        .map_err(|mut err| {
            if let Some(tip) = misplaced_option_tip(&err, &argv) {
                // Replaces clap's "to pass '--strict' as a value, use '-- --strict'".
                err.insert(ContextKind::Suggested, ContextValue::StyledStrs(tip));
            }
            err
        })
}

/// A translation option given to a command (`check --strict`) gets a tip
/// that says where it belongs, rather than clap's advice to pass it as a
/// file name after `--`.
fn misplaced_option_tip(err: &clap::Error, argv: &[OsString]) -> Option<Vec<StyledStr>> {
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(given)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let top = Args::command();
    let sub = argv.get(1)?.to_str()?;
    top.find_subcommand(sub)?;
    let option = given.split('=').next()?;
    let known = top
        .get_arguments()
        .any(|a| match option.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long),
            None => {
                option.len() == 2
                    && a.get_short() == option.strip_prefix('-').and_then(|c| c.chars().next())
            }
        });
    if !known {
        return (sub == "run").then(|| prompt_tip(argv, given)).flatten();
    }
    let mut tips = vec![format!(
        "'{option}' is an option of the translation, not of '{sub}': agui-translate {option} [FILE]..."
    )
    .into()];
    if sub == "check" && option == "--strict" {
        tips.push(
            "'check' is always strict: every problem it finds makes the exit status 1".into(),
        );
    }
    Some(tips)
}

/// `run claude '-v: why?'`: the prompt begins with `-`, so it was read as
/// options. clap's advice (`-- -v`) would hand it to the CLI as arguments;
/// the prompt goes on standard input instead.
fn prompt_tip(argv: &[OsString], given: &str) -> Option<Vec<StyledStr>> {
    let at = argv
        .iter()
        .skip(2)
        .position(|a| a.to_str().is_some_and(|a| a.starts_with(given)))?
        + 2;
    let quote = |s: &str| {
        if !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
        {
            s.to_owned()
        } else {
            format!("'{}'", s.replace('\'', r"'\''"))
        }
    };
    let prompt = argv[at].to_string_lossy();
    let rest: Vec<String> = argv
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(i, _)| i != at)
        .map(|(_, a)| quote(&a.to_string_lossy()))
        .collect();
    Some(vec![
        format!(
            "a prompt that begins with '-' is read from standard input: echo {} | agui-translate {}",
            quote(&prompt),
            rest.join(" ")
        )
        .into(),
        format!(
            "arguments after '--' are the CLI's own options, not the prompt: agui-translate run CLI PROMPT -- {given}"
        )
        .into(),
    ])
}

/// `agui-translate check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// AG-UI streams (NDJSON or SSE); `-` or none reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Translating a stream (the default command).
#[derive(clap::Args, Debug)]
pub struct FilterArgs {
    /// The CLI that wrote the input stream; `auto` tells it from the first
    /// records that only one CLI writes.
    #[arg(
        long,
        short = 'f',
        value_enum,
        value_parser = values::<FromCli>(),
        value_name = "CLI",
        default_value_t = FromCli::Auto,
        help_heading = INPUT
    )]
    pub from: FromCli,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Treat anything the translator does not know (a record type, a block
    /// type, a field shape) as an error: reported on stderr with its line
    /// number, exit status 1; an empty input is exit status 3. For CI runs
    /// against a new CLI version. Without it, such records go out as RAW
    /// events and are only counted.
    #[arg(long, help_heading = TRANSLATION)]
    pub strict: bool,

    /// Do not report bad lines on stderr (they still go out as RAW events and
    /// still make the exit status 1).
    #[arg(long, short = 'q', help_heading = OUTPUT)]
    pub quiet: bool,

    /// At the end, print a summary on stderr: lines and bytes read, events
    /// written by type, unknown records, bad lines, runs, time; `json` prints
    /// it as one JSON object.
    #[arg(
        long,
        value_enum,
        value_parser = values::<StatsFormat>(),
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "text",
        help_heading = OUTPUT
    )]
    pub stats: Option<StatsFormat>,

    /// Translate up to N FILEs at once, on N threads (default: the
    /// processors available, at most 8). The output is the same as with
    /// `-j 1`: each FILE's events, in the order of the FILEs.
    #[arg(long, short = 'j', value_name = "N", help_heading = INPUT)]
    pub jobs: Option<std::num::NonZeroUsize>,

    /// Input files, read one after another; `-` or none reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// How the AG-UI output looks, for both commands.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Use this threadId instead of the session id found in the input.
    #[arg(long, value_name = "ID", help_heading = TRANSLATION)]
    pub thread_id: Option<String>,

    /// Use this runId instead of the derived one (later runs in the same
    /// output get `ID-2`, `ID-3`, ..., across FILEs too); `run` gives a live
    /// run a fresh UUID v7 without it.
    #[arg(long, value_name = "ID", help_heading = TRANSLATION)]
    pub run_id: Option<String>,

    /// Tool names on TOOL_CALL_START: each CLI's own (`Bash`,
    /// `run_shell_command`), or one vocabulary for all of them (`shell`,
    /// `file_read`, `file_edit`, `mcp`, ...; the native name goes into
    /// `metadata.nativeName`).
    #[arg(
        long,
        value_enum,
        value_parser = values::<ToolNames>(),
        default_value_t = ToolNames::Native,
        value_name = "NAMES",
        help_heading = TRANSLATION
    )]
    pub tool_names: ToolNames,

    /// The AG-UI release to write for: `1.0`, or `0.0` for clients built on
    /// `@ag-ui/core` 0.0.x (CopilotKit), whose schemas refuse or strip some
    /// 1.0 shapes; the 1.0 values are kept in the event's metadata.
    #[arg(
        long,
        value_enum,
        value_parser = values::<AguiVersion>(),
        default_value_t = AguiVersion::V1_0,
        value_name = "VERSION",
        help_heading = OUTPUT
    )]
    pub agui_version: AguiVersion,

    /// Which RAW events to write: `all` (nothing in the input is lost),
    /// `unknown` (only records that RAW is the only trace of: a record also
    /// translated into AG-UI events is not echoed), or `none`.
    #[arg(
        long,
        value_enum,
        value_parser = values::<RawMode>(),
        default_value_t = RawMode::All,
        value_name = "WHICH",
        help_heading = OUTPUT
    )]
    pub raw: RawMode,

    /// Do not turn the prompt that Gemini CLI and older Codex CLIs echo into
    /// a user TEXT_MESSAGE (a front end that sent the prompt would show it
    /// twice); it stays in the output as RAW.
    #[arg(long, help_heading = TRANSLATION)]
    pub no_user_messages: bool,

    /// How events are framed on standard output: one JSON object per line,
    /// or server-sent events (`data: <json>` and a blank line).
    #[arg(
        long,
        value_enum,
        value_parser = values::<Format>(),
        default_value_t = Format::Ndjson,
        value_name = "FORMAT",
        help_heading = OUTPUT
    )]
    pub format: Format,
}

/// The longest `serve --rejoin-grace`: a run in its grace holds its run
/// slot and its CLI works on.
const MAX_REJOIN_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// `serve --rejoin-grace`: a duration, or `0`, at most
/// [`MAX_REJOIN_GRACE`].
fn rejoin_grace(s: &str) -> Result<std::time::Duration, String> {
    bounded_duration(
        s,
        MAX_REJOIN_GRACE,
        "at most 10m: a run in its grace holds its run slot",
    )
}

/// A duration, or `0` (`0s`, `0ms`…: none), at most `max`; past it, `why`.
fn bounded_duration(
    s: &str,
    max: std::time::Duration,
    why: &str,
) -> Result<std::time::Duration, String> {
    if s.trim().trim_end_matches(['s', 'm', 'h']) == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    let d = crate::dialect::request::parse_duration(s)?;
    if d > max {
        return Err(format!("{why}: {s:?}"));
    }
    Ok(d)
}

/// The longest `serve --keep-idle`: an idle agent holds a run slot and
/// its memory.
const MAX_KEEP_IDLE: std::time::Duration = std::time::Duration::from_secs(3600);

/// `serve --keep-idle`: a duration, or `0`, at most [`MAX_KEEP_IDLE`].
fn keep_idle(s: &str) -> Result<std::time::Duration, String> {
    bounded_duration(
        s,
        MAX_KEEP_IDLE,
        "at most 1h: an idle agent holds a run slot (0 keeps none)",
    )
}

/// Parses a [`ValueEnum`] as clap does, but lists its values without their
/// descriptions, so that `--help` shows them on one line
/// (`[possible values: auto, gemini, …]`) rather than one block per value.
/// The option's own help says what the values mean.
fn values<E: ValueEnum + Clone + Send + Sync + 'static>() -> Values<E> {
    Values(PhantomData)
}

#[derive(Clone)]
struct Values<E>(PhantomData<E>);

impl<E: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for Values<E> {
    type Value = E;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<E, clap::Error> {
        EnumValueParser::<E>::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            E::value_variants()
                .iter()
                .filter_map(ValueEnum::to_possible_value)
                .map(|v| v.help(None::<&'static str>)),
        ))
    }
}

/// How `run` starts each CLI, for `run --help`.
pub const RUN_COMMAND_LINES: &[(&str, &str)] = &[
    (
        "gemini",
        "gemini -p PROMPT --output-format stream-json, or gemini --acp (--transport acp; agui-translate is its ACP client)",
    ),
    (
        "codex",
        "codex app-server (agui-translate is its JSON-RPC client), or codex exec --json --skip-git-repo-check -- PROMPT (--transport)",
    ),
    (
        "claude",
        "claude -p --output-format stream-json --verbose --include-partial-messages -- PROMPT",
    ),
    (
        "qwen",
        "qwen -p PROMPT --output-format stream-json --include-partial-messages, or qwen --acp",
    ),
    (
        "copilot",
        "copilot --prompt=PROMPT --output-format json, or copilot --acp",
    ),
    (
        "opencode",
        "opencode run --format json --thinking [--] PROMPT, or opencode acp",
    ),
];

/// `run`'s description: a paragraph, the command line of each CLI (as
/// [`item`]s at `width`), and a paragraph.
fn run_long_about(width: usize) -> String {
    let tag_width = RUN_COMMAND_LINES.iter().map(|(cli, _)| cli.len()).max();
    let rows: Vec<String> = RUN_COMMAND_LINES
        .iter()
        .map(|(cli, line)| item(cli, tag_width.unwrap_or(0), line, width))
        .collect();
    format!(
        "Start a coding-agent CLI in its headless streaming mode and translate \
its output to AG-UI events as it runs: the one-command way to put an agent \
behind an AG-UI front end.

{}

The prompt is passed as one argument, never through a shell, and so that the \
CLI cannot read it as an option (gemini and qwen get `--prompt=PROMPT` when \
it begins with `-`); without a prompt, or with `-`, it is read from standard \
input (the way to give one that begins with `-`). Options are mapped to each \
CLI's own flags; anything after `--` goes to the CLI untouched. The CLI's \
stderr is passed through, and when the run fails its last lines say why in \
RUN_ERROR, credentials redacted. SIGINT, SIGTERM and SIGHUP are passed to \
the CLI's process group (over the Codex app-server, they interrupt the turn; \
over ACP, they cancel it) and the stream ends as a cancelled run.

`run acp -- COMMAND ARGS...` runs any agent that speaks the Agent Client \
Protocol (ACP) on stdio, agui-translate its client; so does `run gemini|qwen|\
copilot|opencode --transport acp`, and `--approval ask` picks it for them \
(`auto` for OpenCode 1.18.33 on, whose text streams there only).",
        rows.join("\n")
    )
}

const RUN_AFTER_HELP: &str = "\
Examples:
  agui-translate run claude 'Fix the failing test' > events.ndjson
  echo 'Summarize README.md' | agui-translate run gemini -m gemini-2.5-flash
  agui-translate run codex --timeout 10m 'Add a CHANGELOG entry' \\
    -- -c sandbox_mode=workspace-write
  agui-translate run --check";

/// After the exit statuses in `run --help`: each CLI's environment
/// variable.
fn run_after_status() -> String {
    let vars: Vec<&str> = crate::dialect::clis().map(|d| d.env_var).collect();
    format!(
        "\n\nEnvironment: {} name the executables (like --cli). The CLI \
inherits the environment, API keys included: they never go on its command \
line or into the output.",
        vars.join(", ")
    )
}

/// `agui-translate run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The CLI to start.
    #[arg(value_enum, value_parser = values::<crate::dialect::Dialect>(), required_unless_present = "check")]
    pub cli: Option<crate::dialect::Dialect>,

    /// The prompt; `-` or none reads it from standard input.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Arguments passed to the CLI untouched (after `--`).
    #[arg(last = true, value_name = "CLI ARGS")]
    pub extra: Vec<String>,

    /// The CLI's executable (default: its name on PATH,
    /// or the AGUI_<CLI>_CLI environment variable).
    #[arg(long = "cli", value_name = "PATH", help_heading = RUN)]
    pub cli_path: Option<PathBuf>,

    /// The model the CLI uses.
    #[arg(long, short = 'm', value_name = "MODEL", help_heading = RUN)]
    pub model: Option<String>,

    /// The reasoning effort, one of the CLI's own levels: claude's
    /// `--effort`, codex's `-c model_reasoning_effort=`, copilot's
    /// `--reasoning-effort`, opencode's `--variant` (over ACP chosen in the
    /// session, among the levels it offers for the model). gemini and qwen
    /// have none.
    #[arg(long, value_name = "LEVEL", help_heading = RUN)]
    pub effort: Option<String>,

    /// Stop after this many agent turns (claude and qwen only: the others have no
    /// such flag).
    #[arg(long, value_name = "N", help_heading = RUN)]
    pub max_turns: Option<u32>,

    /// Run the CLI in this directory.
    #[arg(long, value_name = "DIR", help_heading = RUN)]
    pub cwd: Option<PathBuf>,

    /// Continue an earlier session (multi-turn).
    #[arg(long, value_name = "SESSION", help_heading = RUN)]
    pub resume: Option<String>,

    /// Allow this tool without asking (repeatable; all but codex).
    #[arg(long, value_name = "TOOL", help_heading = RUN)]
    pub allow_tool: Vec<String>,

    /// Forbid this tool (repeatable; all but codex).
    #[arg(long, value_name = "TOOL", help_heading = RUN)]
    pub deny_tool: Vec<String>,

    /// How tool calls are approved: the CLI's own way, file edits without
    /// asking (`auto-edit`), everything without asking (`yolo`, never the
    /// default), or by the person at the other end (`ask`: claude, codex
    /// over its app-server, and the CLIs over ACP; the run ends with an
    /// interrupt, and a resume line on standard input answers it).
    #[arg(
        long,
        value_enum,
        value_parser = values::<crate::dialect::request::Approval>(),
        default_value_t = crate::dialect::request::Approval::Default,
        value_name = "MODE",
        help_heading = RUN
    )]
    pub approval: crate::dialect::request::Approval,

    /// How `run` talks to a CLI that has two ways. Codex: `app-server`
    /// streams text and command output as they come, `exec` (or `stream`)
    /// is `codex exec --json` (each message only when complete); `auto`
    /// uses the app-server when the installed version is 0.169.0 or later
    /// and the arguments after `--` are ones it takes (`-c key=value`).
    /// Gemini, Qwen, Copilot and OpenCode: `acp` speaks the Agent Client
    /// Protocol with them (`gemini --acp`, `opencode acp`), `stream` is
    /// their JSON mode; `auto` uses ACP with `--approval ask`, and for
    /// OpenCode 1.18.33 on unless given `--attach` or arguments after `--`
    /// (its text streams over ACP only).
    #[arg(
        long = "transport",
        alias = "codex-transport",
        value_enum,
        value_parser = values::<crate::dialect::request::Transport>(),
        default_value_t = crate::dialect::request::Transport::Auto,
        value_name = "HOW",
        help_heading = RUN
    )]
    pub transport: crate::dialect::request::Transport,

    /// With `--approval ask`: how long the tool calls asked about wait for
    /// a decision before they are denied and the CLI is stopped (exit
    /// status 3).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::dialect::request::parse_duration,
        default_value = "10m",
        help_heading = RUN
    )]
    pub approval_timeout: std::time::Duration,

    /// Over the Agent Client Protocol: how long the agent has to answer
    /// `initialize`, then `session/new` (or `session/load`), before the
    /// run ends with an error that names the request left unanswered.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::dialect::request::parse_duration,
        default_value = "2m",
        help_heading = RUN
    )]
    pub start_timeout: std::time::Duration,

    /// Offer the CLI the tools of a front end (claude, codex, qwen,
    /// copilot, opencode, gemini, and an ACP agent that reaches MCP servers
    /// over HTTP): FILE holds an AG-UI `tools` array (`[{name, description,
    /// parameters}]`). A call of one
    /// ends the run with the call pending (`pendingToolCallIds`), and the
    /// next input line answers it (`{"runId", "toolResults":
    /// [{"toolCallId", "content"}]}`); the prompt is the first input line,
    /// as with `--approval ask`. How `serve` passes a page's tools.
    #[arg(long, value_name = "FILE", help_heading = RUN)]
    pub page_tools: Option<PathBuf>,

    /// Give the CLI this file with the prompt (repeatable): an image (png,
    /// jpg, gif, webp), a PDF or WAV audio, its type told by its extension.
    /// Claude Code gets it as a content block of its stream-json user
    /// message, Codex (images only) in its app-server's turn input, Copilot
    /// CLI (images only) as `--attachment`, OpenCode as `--file`, Gemini
    /// and ACP agents (images and audio) as prompt blocks over ACP; audio
    /// goes over ACP only; Qwen refuses it.
    /// How `serve` passes a page's files.
    #[arg(
        long,
        value_name = "FILE",
        value_parser = |s: &str| crate::dialect::request::Attachment::of(s.into()),
        help_heading = RUN
    )]
    pub attach: Vec<crate::dialect::request::Attachment>,

    /// With `--page-tools`: how long a call waits for its answer before it
    /// is answered with an error the model reads and the CLI is stopped
    /// (exit status 3). Cut to 25s for Qwen Code on its control layer and
    /// to 9m for Gemini CLI and Qwen Code over ACP, which give up on a call
    /// sooner than that on their own (30s, 10m).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::dialect::request::parse_duration,
        default_value = "10m",
        help_heading = RUN
    )]
    pub tool_timeout: std::time::Duration,

    /// With `--approval ask`: after each run that ends waiting for an input
    /// line, write an SSE comment that `serve` takes as the end of its
    /// response.
    #[arg(long, hide = true)]
    pub input_marker: bool,

    /// Over ACP: when a turn has ended, keep the agent and wait for the
    /// next turn's line (`{"runId", "prompt"}`) on stdin, writing an SSE
    /// comment that `serve` takes as the end of its response. How `serve`
    /// keeps a thread's agent between its turns (`--keep-idle`).
    #[arg(long, hide = true)]
    pub keep_turns: bool,

    /// End the run (as cancelled) after this long: `90s`, `10m`, `1h`, or
    /// plain seconds.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::dialect::request::parse_duration,
        help_heading = RUN
    )]
    pub timeout: Option<std::time::Duration>,

    /// List the CLIs, each with its version and path or the npm
    /// command that installs it; exit status 0 when all are installed, 1
    /// when one is missing.
    #[arg(long, help_heading = RUN)]
    pub check: bool,

    /// At the end, write the CLI's session id (what `--resume` takes) to
    /// FILE, with a second line `acp` when the run spoke the Agent Client
    /// Protocol: how `serve` resumes a thread.
    #[arg(long, value_name = "FILE", hide = true)]
    pub session_file: Option<PathBuf>,

    /// Where the thread's plan is kept across its runs: read at the start
    /// (if it names the --thread-id) and written at the end. How `serve`
    /// keeps Claude Code's task list across a thread's runs.
    #[arg(long, value_name = "FILE", hide = true)]
    pub plan_file: Option<PathBuf>,

    /// Where the thread's shared state is kept: the model may change it
    /// through a tool of this program's own, offered beside the page's
    /// tools (claude, codex, qwen, copilot, opencode, gemini), each change written
    /// there and streamed as STATE_SNAPSHOT (or STATE_DELTA). How `serve`
    /// keeps a page's state.
    #[arg(long, value_name = "FILE", hide = true)]
    pub state_file: Option<PathBuf>,

    #[command(flatten)]
    pub output: OutputArgs,
}

impl OutputArgs {
    /// An emitter set up by the output options.
    pub fn emitter(&self) -> Emitter {
        let mut em = Emitter::new(self.format, self.thread_id.clone(), self.run_id.clone());
        em.set_tool_names(self.tool_names);
        em.set_version(self.agui_version);
        em.set_user_messages(!self.no_user_messages);
        em.set_raw_mode(self.raw);
        em
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_valid() {
        super::Args::command().debug_assert();
    }

    fn usage_error(argv: &[&str]) -> String {
        let err = super::parse_from(argv).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        err.render().to_string()
    }

    /// `check --strict` says where `--strict` belongs rather than suggesting
    /// `check -- --strict` (which would read a file named `--strict`).
    #[test]
    fn a_translation_option_given_to_a_command_gets_a_tip() {
        let msg = usage_error(&["agui-translate", "check", "--strict", "out.ndjson"]);
        assert!(msg.contains("unexpected argument '--strict'"), "{msg}");
        assert!(!msg.contains("-- --strict"), "{msg}");
        assert!(
            msg.contains("'--strict' is an option of the translation, not of 'check'"),
            "{msg}"
        );
        assert!(msg.contains("'check' is always strict"), "{msg}");

        let msg = usage_error(&["agui-translate", "run", "gemini", "-q"]);
        assert!(
            msg.contains("'-q' is an option of the translation, not of 'run'"),
            "{msg}"
        );
        let msg = usage_error(&["agui-translate", "check", "--stats=json"]);
        assert!(
            msg.contains("'--stats' is an option of the translation"),
            "{msg}"
        );
    }

    /// A prompt that begins with `-` is given on standard input, not after
    /// `--` (which would hand it to the CLI as options of its own).
    #[test]
    fn a_prompt_that_looks_like_an_option_gets_a_tip() {
        let msg = usage_error(&["agui-translate", "run", "claude", "-v: why?"]);
        assert!(msg.contains("unexpected argument '-v'"), "{msg}");
        assert!(!msg.contains("use '-- -v'"), "{msg}");
        assert!(
            msg.contains("echo '-v: why?' | agui-translate run claude"),
            "{msg}"
        );
        assert!(
            msg.contains("arguments after '--' are the CLI's own options"),
            "{msg}"
        );
        let msg = usage_error(&["agui-translate", "run", "gemini", "--model", "m", "--it's"]);
        assert!(
            msg.contains(r"echo '--it'\''s' | agui-translate run gemini --model m"),
            "{msg}"
        );
    }

    /// `--help` of `args` as clap prints it, wrapped at `width`.
    fn help_at(width: usize, args: &[&str]) -> String {
        let argv = std::iter::once("agui-translate").chain(args.iter().copied());
        let err = super::command_at(width)
            .try_get_matches_from(argv)
            .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
        err.render().to_string()
    }

    const HELPS: [&[&str]; 4] = [
        &["--help"],
        &["run", "--help"],
        &["check", "--help"],
        &["serve", "--help"],
    ];

    /// The help's paragraphs are each one line, for clap to fill to the
    /// terminal: a paragraph wrapped by hand stays ragged at another width.
    #[test]
    fn help_paragraphs_are_left_to_clap_to_wrap() {
        for args in HELPS {
            let help = help_at(0, args);
            let lines: Vec<&str> = help.lines().collect();
            for pair in lines.windows(2) {
                let prose = |l: &str| !l.is_empty() && !l.starts_with(' ') && !l.ends_with(':');
                assert!(
                    !(prose(pair[0]) && prose(pair[1])),
                    "{args:?}: a paragraph wrapped by hand:\n{}\n{}",
                    pair[0],
                    pair[1]
                );
            }
        }
    }

    /// At 80 and 100 columns no line is longer, and the indented lists
    /// (the exit statuses, `run`'s command lines) go on under their text,
    /// not under their tags.
    #[test]
    fn help_fits_the_terminal_and_lists_hang() {
        for width in [80, 100] {
            for args in HELPS {
                let help = help_at(width, args);
                for line in help.lines() {
                    assert!(line.chars().count() <= width, "{args:?} at {width}: {line}");
                }
                let statuses = help.split("Exit status:\n").nth(1).unwrap();
                for line in statuses.lines().take_while(|l| l.starts_with("  ")) {
                    let tag = line.split_whitespace().next().unwrap();
                    let listed = super::EXIT_STATUSES.iter().any(|s| s.status == tag);
                    assert!(
                        line.starts_with(&" ".repeat(9)) || (listed && line.starts_with("  ")),
                        "{args:?} at {width}: {line}"
                    );
                }
            }
            let run = help_at(width, &["run", "--help"]);
            let rows = run.split("\n\n").nth(1).unwrap();
            for line in rows.lines() {
                let tag = line.split_whitespace().next().unwrap();
                let cli = super::RUN_COMMAND_LINES.iter().any(|(c, _)| *c == tag);
                let text = &line[12..];
                assert!(
                    line.starts_with(&" ".repeat(12)) || (cli && !text.starts_with(' ')),
                    "run --help at {width}: {line}"
                );
            }
        }
    }

    /// Other usage errors keep clap's own advice.
    #[test]
    fn other_usage_errors_are_clap_s_own() {
        let msg = usage_error(&["agui-translate", "check", "--nonsense"]);
        assert!(msg.contains("use '-- --nonsense'"), "{msg}");
        assert!(!msg.contains("option of the translation"), "{msg}");
        let msg = usage_error(&["agui-translate", "--from", "cursor"]);
        assert!(
            msg.contains(
                "[possible values: auto, gemini, codex, claude, codex-app-server, qwen, copilot, opencode, acp]"
            ),
            "{msg}"
        );
    }
}
