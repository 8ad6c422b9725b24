//! The command line: one clap definition, the single source of `--help`, the
//! man page and the shell completions.

use std::path::PathBuf;

use clap::Parser;

use crate::agui::{Format, ToolNames};
use crate::source::FromCli;

const ABOUT: &str = "Translate a coding-agent CLI's JSON stream into AG-UI 1.0 events";

const LONG_ABOUT: &str = "\
Translate a coding-agent CLI's JSON stream into AG-UI 1.0 events.

Reads the JSONL stream of Gemini CLI, Codex CLI or Claude Code from FILEs or
standard input and writes one AG-UI event per line (NDJSON) to standard output,
or server-sent events with --format sse. Every run in the output starts with
RUN_STARTED and ends with exactly one RUN_FINISHED or RUN_ERROR, even when the
input is cut short or holds garbage. Lines that cannot be translated are
reported on standard error with their line number and still go out as RAW
events, so nothing is lost.

Events are written as soon as they are complete when the input is a live pipe,
and in large batches when it is a file.";

const AFTER_HELP: &str = "\
Examples:
  gemini -p 'Fix the tests' --output-format stream-json | agui-translate
  gemini -p 'Fix the tests' --output-format stream-json | agui-translate --from gemini
  agui-translate --from gemini session.jsonl > events.ndjson
  agui-translate --from gemini --format sse < session.jsonl

Exit status:
  0  every line was translated
  1  some input lines could not be translated (reported on stderr, sent as RAW)
  2  usage error, or an input or output error";

#[derive(Parser, Debug)]
#[command(
    name = "agui-translate",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    max_term_width = 100,
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
    #[command(long_about = RUN_LONG_ABOUT, after_help = RUN_AFTER_HELP)]
    Run(Box<RunArgs>),
    /// Check AG-UI NDJSON streams: every START has its END, one terminal
    /// event per run, tool arguments are JSON, and more.
    #[command(long_about = CHECK_LONG_ABOUT)]
    Check(CheckArgs),
}

const CHECK_LONG_ABOUT: &str = "\
Check AG-UI NDJSON streams (this program's output, or any producer's) against
the rules every translation keeps: every line is a JSON event; runs start with
RUN_STARTED and end with exactly one RUN_FINISHED (with the same ids) or
RUN_ERROR, and nothing but a new run follows; every START has its END with
the same id before the run ends (text and reasoning messages, reasoning,
tool calls, steps, subagents); tool-call arguments join into valid JSON; a
tool result names a tool call of its run.

Problems are reported on stderr as FILE:LINE: message; the exit status is 0
when every stream is valid, 1 when one is not.

  agui-translate --from claude session.jsonl | agui-translate check";

/// `agui-translate check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// AG-UI NDJSON files; `-` or none reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Translating a stream (the default command).
#[derive(clap::Args, Debug)]
pub struct FilterArgs {
    /// The CLI that wrote the input stream; `auto` tells it from the first
    /// records that only one CLI writes.
    #[arg(long, short = 'f', value_enum, value_name = "CLI", default_value_t = FromCli::Auto)]
    pub from: FromCli,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Treat anything the translator does not know (a record type, a block
    /// type, a field shape) as an error: reported on stderr with its line
    /// number, exit status 1. For CI runs against a new CLI version. Without
    /// it, such records go out as RAW events and are only counted.
    #[arg(long)]
    pub strict: bool,

    /// Do not report bad lines on stderr (they still go out as RAW events and
    /// still make the exit status 1).
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// At the end, print a summary on stderr: lines and bytes read, events
    /// written by type, unknown records, bad lines, runs, time.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "text"
    )]
    pub stats: Option<StatsFormat>,

    /// Input files, read one after another; `-` or none reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// How the AG-UI output looks, for both commands.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// How events are framed on standard output.
    #[arg(long, value_enum, default_value_t = Format::Ndjson, value_name = "FORMAT")]
    pub format: Format,

    /// Use this threadId instead of the session id found in the input.
    #[arg(long, value_name = "ID")]
    pub thread_id: Option<String>,

    /// Use this runId instead of the derived one (later runs in the same
    /// output get `ID-2`, `ID-3`, ...).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,

    /// Tool names on TOOL_CALL_START: each CLI's own, or one vocabulary for
    /// all of them (`shell`, `file_read`, `file_edit`, `mcp`, …; the native
    /// name goes into `metadata.nativeName`).
    #[arg(long, value_enum, default_value_t = ToolNames::Native, value_name = "NAMES")]
    pub tool_names: ToolNames,
}

const RUN_LONG_ABOUT: &str = "\
Start a coding-agent CLI in its headless streaming mode and translate its
output to AG-UI events as it runs: the one-command way to put an agent behind
an AG-UI front end.

  gemini  gemini -p PROMPT --output-format stream-json
  codex   codex exec --json --skip-git-repo-check -- PROMPT
  claude  claude -p --output-format stream-json --verbose --include-partial-messages -- PROMPT

The prompt is passed as one argument, never through a shell, and so that the
CLI cannot read it as an option (gemini gets `--prompt=PROMPT` when it begins
with `-`); without a prompt, or with `-`, it is read from standard input (the
way to give one that begins with `-`). Options are mapped to
each CLI's own flags; anything after `--` goes to the CLI untouched. The CLI's
stderr is passed through, and when the run fails its last lines say why in
RUN_ERROR, credentials redacted. SIGINT, SIGTERM and SIGHUP are passed to the
CLI's process group and the stream ends as a cancelled run.";

const RUN_AFTER_HELP: &str = "\
Examples:
  agui-translate run claude 'Fix the failing test' > events.ndjson
  echo 'Summarize README.md' | agui-translate run gemini --model gemini-2.5-flash
  agui-translate run codex --timeout 10m 'Add a CHANGELOG entry' -- --sandbox workspace-write
  agui-translate run --check

Exit status: the CLI's own; 127 when it is not installed, 126 when it cannot
be started; 130, 143 or 129 when interrupted by SIGINT, SIGTERM or SIGHUP; 124
when --timeout ended the run.

Environment: AGUI_GEMINI_CLI, AGUI_CODEX_CLI, AGUI_CLAUDE_CLI name the
executables (like --cli). The CLI inherits the environment, API keys included:
they never go on its command line or into the output.";

/// `agui-translate run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The CLI to start.
    #[arg(value_enum, required_unless_present = "check")]
    pub cli: Option<crate::dialect::Dialect>,

    /// The prompt; `-` or none reads it from standard input.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Arguments passed to the CLI untouched (after `--`).
    #[arg(last = true, value_name = "CLI ARGS")]
    pub extra: Vec<String>,

    /// The CLI's executable (default: `gemini`, `codex` or `claude` on PATH,
    /// or the AGUI_<CLI>_CLI environment variable).
    #[arg(long = "cli", value_name = "PATH")]
    pub cli_path: Option<PathBuf>,

    /// The model the CLI uses.
    #[arg(long, short = 'm', value_name = "MODEL")]
    pub model: Option<String>,

    /// Stop after this many agent turns (claude only: the others have no
    /// such flag).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,

    /// Run the CLI in this directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Continue an earlier session (multi-turn).
    #[arg(long, value_name = "SESSION")]
    pub resume: Option<String>,

    /// Allow this tool without asking (repeatable; gemini and claude).
    #[arg(long, value_name = "TOOL")]
    pub allow_tool: Vec<String>,

    /// Forbid this tool (repeatable; gemini and claude).
    #[arg(long, value_name = "TOOL")]
    pub deny_tool: Vec<String>,

    /// How tool calls are approved. `yolo` approves everything and is never
    /// the default.
    #[arg(long, value_enum, default_value_t = crate::spawn::Approval::Default, value_name = "MODE")]
    pub approval: crate::spawn::Approval,

    /// How `run codex` talks to Codex: `app-server` streams text and
    /// command output as they come; `auto` uses it when the installed
    /// version is 0.169.0 or later.
    #[arg(long, value_enum, default_value_t = crate::spawn::Transport::Auto, value_name = "HOW")]
    pub codex_transport: crate::spawn::Transport,

    /// End the run (as cancelled) after this long: `90s`, `10m`, `1h`, or
    /// plain seconds.
    #[arg(long, value_name = "DURATION", value_parser = crate::spawn::parse_duration)]
    pub timeout: Option<std::time::Duration>,

    /// List the CLIs that are installed, with their versions.
    #[arg(long)]
    pub check: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// How `--stats` prints its summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// Lines for people.
    Text,
    /// One JSON object.
    Json,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_valid() {
        super::Args::command().debug_assert();
    }

    /// The man page and completions in the repository are what the clap
    /// definition generates. `AGUI_BLESS=1 cargo test` rewrites them.
    #[test]
    fn generated_docs_are_fresh() {
        let mut cmd = super::Args::command();
        let mut man = Vec::new();
        clap_mangen::Man::new(cmd.clone()).render(&mut man).unwrap();
        check("man/agui-translate.1", &man);
        let run = cmd
            .find_subcommand("run")
            .expect("the run subcommand")
            .clone()
            .name("agui-translate-run");
        let mut man = Vec::new();
        clap_mangen::Man::new(run).render(&mut man).unwrap();
        check("man/agui-translate-run.1", &man);
        let sub = cmd
            .find_subcommand("check")
            .expect("the check subcommand")
            .clone()
            .name("agui-translate-check");
        let mut man = Vec::new();
        clap_mangen::Man::new(sub).render(&mut man).unwrap();
        check("man/agui-translate-check.1", &man);
        for (shell, file) in [
            (
                clap_complete::Shell::Bash,
                "completions/agui-translate.bash",
            ),
            (clap_complete::Shell::Zsh, "completions/_agui-translate"),
            (
                clap_complete::Shell::Fish,
                "completions/agui-translate.fish",
            ),
        ] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "agui-translate", &mut out);
            check(file, &out);
        }
    }

    fn check(rel: &str, want: &[u8]) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        if std::env::var_os("AGUI_BLESS").is_some() {
            std::fs::write(&path, want).unwrap();
            return;
        }
        let have = std::fs::read(&path).unwrap_or_default();
        assert!(
            have == want,
            "{rel} is stale: run `AGUI_BLESS=1 cargo test` and review the diff"
        );
    }
}
