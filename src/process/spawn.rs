//! `agui-translate run`: start a CLI in its headless streaming mode, pipe
//! its stdout through the same translator, and make the way the CLI ended
//! part of the AG-UI stream.
//!
//! What each CLI is told comes from its table ([`crate::dialect`]); how it
//! is supervised (process group, signals, timeouts, its stderr) is in
//! [`crate::process::supervise`]. This module puts them together: the options
//! checked, the CLI started, its stream translated, and the way it ended
//! made part of the AG-UI stream.

use std::io::{self, BufReader, IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::agui::{code, Outcome};
use crate::converse::acp;
use crate::converse::appserver;
use crate::converse::ask;
use crate::converse::control;
use crate::dialect::request::{
    attachment_refused, files_pick_acp, state_tool_refused, Approval, RunRequest, Transport,
};
use crate::dialect::{AcpStart, Client, Dialect};
use crate::process::redact::Redactor;
use crate::process::stderr::Tail;
use crate::process::supervise::{self, Exit, Output, Signals};
use crate::run::{self, Options, Stats};

/// A file of ours in the temporary directory, removed when dropped (after
/// the CLI has exited).
struct TempFile(PathBuf);

impl TempFile {
    /// Created new (never an existing file or link) and private to us.
    fn create(stem: &str, ext: &str, contents: &str) -> anyhow::Result<TempFile> {
        use std::os::unix::fs::OpenOptionsExt;
        // A relative TMPDIR would name another file from the CLI's --cwd.
        let dir = std::path::absolute(std::env::temp_dir())
            .context("the temporary directory (TMPDIR) cannot be made absolute")?;
        let mut n = 0;
        loop {
            let path = dir.join(format!("{stem}-{}-{n}.{ext}", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut f) => {
                    let file = TempFile(path);
                    f.write_all(contents.as_bytes())
                        .with_context(|| format!("writing {}", file.0.display()))?;
                    return Ok(file);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The executable: `--cli`, else the environment variable, else the
/// program name. A name with a slash is made absolute here (with --cwd it
/// would be looked up from DIR instead); a bare name is looked up on PATH
/// here too, so that `run` and `run --check` agree. `Err` holds the name
/// that was not found.
pub fn executable(cli: Dialect, cli_path: Option<&Path>) -> Result<PathBuf, PathBuf> {
    let exe = cli_path
        .map(Path::to_path_buf)
        .or_else(|| {
            std::env::var_os(cli.env_var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(cli.program));
    if exe.components().count() > 1 {
        Ok(std::path::absolute(&exe).unwrap_or(exe))
    } else {
        find_on_path(&exe).ok_or(exe)
    }
}

/// `program` in the directories of PATH. Like Go's `exec.LookPath`, an
/// empty or relative entry is skipped: it would name a directory relative
/// to wherever the CLI runs.
fn find_on_path(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Values that reach the CLI as the argument of one of its options: one
/// that begins with `-` would be read as an option of its own
/// (`--resume=--last`), so it is refused.
fn refuse_option_like_values(a: &RunRequest) -> anyhow::Result<()> {
    let values = [
        ("--model", a.model.as_deref()),
        ("--effort", a.effort.as_deref()),
        ("--resume", a.resume.as_deref()),
    ]
    .into_iter()
    .chain(
        a.allow_tool
            .iter()
            .map(|t| ("--allow-tool", Some(t.as_str()))),
    )
    .chain(
        a.deny_tool
            .iter()
            .map(|t| ("--deny-tool", Some(t.as_str()))),
    );
    for (flag, value) in values {
        if let Some(v) = value.filter(|v| v.starts_with('-')) {
            anyhow::bail!(
                "{flag} {v:?}: a value that begins with '-' would reach the CLI as an option"
            );
        }
    }
    Ok(())
}

/// The CLI could not be started: a run that ends in RUN_ERROR, as for a
/// missing CLI, and the exit status a shell gives (127 not found, 126
/// found but not runnable).
fn cannot_start(
    em: &mut crate::agui::Emitter,
    out: &mut dyn Write,
    msg: &str,
    code: &str,
    status: u8,
) -> anyhow::Result<ExitCode> {
    let _ = writeln!(io::stderr(), "agui-translate: {msg}");
    em.start_run(None, None);
    em.fail_run(msg, code, &[], None);
    em.end_of_input(true);
    em.drain_to(out).context("writing stdout")?;
    out.flush().context("writing stdout")?;
    Ok(ExitCode::from(status))
}

/// What an exit status means: the CLI's own table first, then what any
/// process's status says: (code, explanation).
fn meaning(cli: Dialect, status: i32) -> (&'static str, String) {
    if let Some(m) = (cli.exit_status)(status) {
        return m;
    }
    match status {
        127 => (code::CLI_ERROR, "a program it needs was not found".into()),
        s if s > 128 && s < 160 => (
            code::CLI_ERROR,
            format!("it was killed by signal {}", s - 128),
        ),
        _ => (code::CLI_ERROR, "it reported an error".into()),
    }
}

/// `agui-translate run` as the command line asked for it.
#[derive(Debug)]
pub struct Run {
    /// The CLI to start.
    pub cli: Dialect,
    /// The prompt; `-` or none reads it from standard input.
    pub prompt: Option<String>,
    /// What the CLI is told.
    pub request: RunRequest,
    /// The CLI's executable, when named (`--cli`).
    pub cli_path: Option<PathBuf>,
    /// How `run codex` talks to Codex.
    pub transport: Transport,
    /// End the run (as cancelled) after this long.
    pub timeout: Option<Duration>,
    /// Where to write the CLI's session id at the end.
    pub session_file: Option<PathBuf>,
    /// Where the thread's plan is kept across its runs (`--plan-file`).
    pub plan_file: Option<PathBuf>,
    /// The thread the output is given (`--thread-id`), whose plan that is.
    pub thread_id: Option<String>,
    /// With `--approval ask`: how long pending asks wait for a decision.
    pub approval_timeout: Duration,
    /// Over ACP: how long the agent has to answer the requests that open
    /// its session.
    pub start_timeout: Duration,
    /// With `--approval ask`: mark each wait for an input line (`serve`).
    pub input_marker: bool,
    /// Over ACP: keep the agent for the next turn's input line (`serve`).
    pub keep_turns: bool,
    /// The file of the page's tools (`--page-tools`).
    pub page_tools: Option<PathBuf>,
    /// The thread's state, which the model may change (`--state-file`).
    pub state_file: Option<PathBuf>,
    /// How long a call of one waits for its answer.
    pub tool_timeout: Duration,
}

/// Why `cli` cannot ask (`--approval ask`) with the run options `options`
/// (`serve`'s), if it cannot: its table says, for each way `run` starts it.
pub fn ask_refused(cli: Dialect, options: &[String]) -> Option<anyhow::Error> {
    let req = RunRequest {
        approval: Approval::Ask,
        ..RunRequest::default()
    };
    // `auto` picks ACP when the run asks; `--transport stream` keeps the
    // CLI's stream mode.
    let stream = options.iter().enumerate().any(|(i, o)| {
        let value = match o.split_once('=') {
            Some(("--transport" | "--codex-transport", v)) => Some(v),
            None if o == "--transport" || o == "--codex-transport" => {
                options.get(i + 1).map(String::as_str)
            }
            _ => None,
        };
        matches!(value, Some("stream" | "exec"))
    });
    if cli.acp().is_some() && !stream {
        return None;
    }
    let exec = cli.exec().map(|e| (e.argv)(&req, "", None).err());
    let client = cli.client().map(|(_, c)| (c.argv)(&req).err());
    match (exec, client) {
        (Some(None), _) | (_, Some(None)) => None,
        (Some(Some(e)), _) | (None, Some(Some(e))) => Some(e),
        (None, None) => Some(anyhow::anyhow!("{cli} cannot be started by run")),
    }
}

/// The exit status of a run whose pending asks got no decision.
pub const EXPIRED: u8 = 3;

/// `agui-translate run`: the events go out through `em`.
pub fn main(mut a: Run, mut em: crate::agui::Emitter) -> anyhow::Result<ExitCode> {
    let cli = a.cli;
    let (tools, mut endpoint) = page_server(&mut a, &mut em)?;
    let over_http = endpoint.is_some();
    let asking = a.request.approval == Approval::Ask || tools.is_some();
    // A run that keeps its agent reads its prompt as a line: the next turns' follow.
    let prompt = checked_prompt(&a, asking || over_http || a.keep_turns)?;
    let attached = !a.request.attachments.is_empty();
    let exe = match cli.program {
        // `run acp -- COMMAND ARGS…`
        "" => agent_executable(a.cli_path.as_deref(), &a.request.extra),
        _ => executable(cli, a.cli_path.as_deref()),
    };
    let agent = acp_agent(&a, tools.is_some() || over_http, exe.as_deref().ok())?;
    check_attachments(&a, agent.is_some())?;
    let client = match agent {
        Some(_) => None,
        None => transport(
            cli,
            a.transport,
            exe.as_deref().ok(),
            &a.request.extra,
            // Images go in the app-server's turn input.
            asking || attached,
        )?,
    };
    // Claude Code in control-protocol mode: the prompt and the decisions
    // go in on its stdin (its table refuses `ask` for a CLI that cannot).
    // Over a server or an ACP agent, the decisions go in its client's
    // requests.
    let lines = (asking || over_http || a.keep_turns).then(ask::input_lines);
    let control = asking && client.is_none() && agent.is_none();
    let server = client.is_some() || agent.is_some();
    // Claude Code given attachments without asking: one stream-json user
    // message on its stdin, which is then closed.
    let message = attached && !control && !server;
    // The policy file lives until the CLI has exited.
    let (args, _policy) = match agent {
        Some(start) => {
            let version = || {
                exe.as_deref()
                    .ok()
                    .and_then(probe_version)
                    .and_then(|v| any_version(&v))
            };
            let mut args = (start.argv)(&a.request, &version)?;
            if cli.program.is_empty() && a.cli_path.is_none() {
                // `run acp -- COMMAND ARGS…`: COMMAND is the executable.
                if args.is_empty() {
                    anyhow::bail!("run acp needs the agent's command after `--` (agui-translate run acp -- COMMAND ARGS…), or --cli");
                }
                args.remove(0);
            }
            (args, None)
        }
        None => arguments(&a, client, &prompt)?,
    };
    let (args, page_env, _page_config) = match &endpoint {
        // An ACP agent is given the page's server in `session/new`.
        Some(e) if agent.is_none() => page_route(&a, e.url(), args)?,
        _ => (args, None, None),
    };
    let cwd = server_cwd(&a.request, server)?;
    let stdout = io::stdout();
    let mut out = stdout.lock();

    let env = agent
        .and_then(|s| s.ask_env)
        .filter(|(var, _)| asking && std::env::var_os(var).is_none())
        .or(page_env.as_ref().map(|(var, v)| (*var, v.as_str())));
    let stdin = control || server || message;
    let mut child = match start(&a, exe, &args, stdin, server, env, &prompt)? {
        Ok(child) => child,
        Err(not) => return cannot_start(&mut em, &mut out, &not.msg, not.code, not.status),
    };
    if message {
        let user = crate::converse::control::user_message(&prompt, &a.request.attachments)?;
        if let Some(mut cli_in) = child.input.take() {
            // A CLI that has already failed does not read it: its output says why.
            let _ = cli_in
                .write_all(&user)
                .and_then(|()| cli_in.write_all(b"\n"));
        }
    }
    let stream = match (agent, client) {
        (Some(_), _) => Dialect::named("acp").expect("a dialect"),
        (None, Some((d, _))) => d,
        (None, None) => cli,
    };
    let name = agent_name(cli, &a);
    let mut tr = translator(&a, stream)?;
    let mut talk = Talk {
        prompt: &prompt,
        tools,
        lines: lines.as_ref(),
        tr: tr.as_mut(),
        em: &mut em,
        out: &mut out,
    };
    let conversed = if let (Some(e), None) = (endpoint.as_mut(), agent) {
        child.paged(&a, e, &mut talk)
    } else if control {
        child.control(&a, &mut talk)
    } else if agent.is_some() {
        child.agent(&a, cwd.as_deref(), &name, endpoint.as_mut(), &mut talk)
    } else {
        child.server(&a, cwd.as_deref(), &mut talk)
    }?;
    let Some(conversed) = conversed else {
        keep(&a, &em, tr.as_ref(), agent.is_some())?;
        return Ok(ExitCode::from(EXPIRED));
    };
    if conversed.idle_over {
        return Ok(child.idle_over());
    }
    let mut stats = Stats::default();
    let output = child.output.take().expect("once");
    let pumped = run::pump(
        output,
        stream.name(),
        tr.as_mut(),
        &mut em,
        &mut out,
        Options::default(),
        &mut stats,
    );
    let saw_input = match pumped {
        Ok(saw) => saw || conversed.session,
        Err(e) => {
            // Our stdout went away (or the pipe failed): stop the CLI too.
            supervise::stop(child.group, &child.exit);
            return Err(e);
        }
    };
    let ended = child.wait();
    end_run(cli, &name, &ended, &conversed, &mut em);
    run::settle(
        stream.name(),
        tr.as_mut(),
        &mut em,
        &mut out,
        saw_input || ended.cancelled,
        Options::default(),
        &mut stats,
    )?;
    keep(&a, &em, tr.as_ref(), agent.is_some())?;
    Ok(run_status(&ended, server, &em))
}

/// The exit status of a run that went to its end: the CLI's, but 1 for a
/// server (the app-server, an ACP agent) whose run failed while it ended
/// well. A server outlives its failed turns, or ends with 0 without ending
/// one: its own status says nothing of the run's.
fn run_status(ended: &Ended, server: bool, em: &crate::agui::Emitter) -> ExitCode {
    let code = ended.exit_code();
    if server && code == ExitCode::SUCCESS && em.last_run_failed() {
        return ExitCode::FAILURE;
    }
    code
}

/// Whether the CLI can take each attachment (`--attach`), `acp`: over the
/// Agent Client Protocol, and each is a file that can be read.
fn check_attachments(a: &Run, acp: bool) -> anyhow::Result<()> {
    for at in &a.request.attachments {
        if let Some(why) = attachment_refused(a.cli.name(), at.media_type, acp) {
            anyhow::bail!("--attach {}: {why}", at.path.display());
        }
        if a.cli.name() == "codex" && matches!(a.transport, Transport::Exec | Transport::Stream) {
            anyhow::bail!(
                "--attach {}: codex takes images over its app-server only, not with --transport exec",
                at.path.display()
            );
        }
        let file = std::fs::File::open(&at.path)
            .and_then(|f| f.metadata())
            .with_context(|| format!("--attach {}", at.path.display()))?;
        if !file.is_file() {
            anyhow::bail!("--attach {}: not a file", at.path.display());
        }
    }
    Ok(())
}

/// The most a `--page-tools` file is read of.
const MAX_PAGE_TOOLS: u64 = 16 * 1024 * 1024;

/// The agent's start when `run` speaks the Agent Client Protocol with the
/// CLI: asked for (`--transport acp`), needed (approvals; Gemini CLI's
/// images; Gemini CLI's page's tools: Qwen Code's go on its stream-json
/// control layer, Copilot CLI's and OpenCode's reach their stream mode over
/// HTTP unless the run speaks ACP with them), or chosen by `auto` where the
/// CLI's text streams only there.
fn acp_agent(
    a: &Run,
    tools: bool,
    exe: Option<&Path>,
) -> anyhow::Result<Option<&'static AcpStart>> {
    let cli = a.cli;
    let needed = a.request.approval == Approval::Ask
        || (tools && !matches!(cli.name(), "qwen" | "copilot" | "opencode"))
        || (!a.request.attachments.is_empty() && files_pick_acp(cli.name()));
    Ok(acp_transport(cli, a.transport, needed)?
        .or_else(|| live_acp(cli, a.transport, &a.request, exe)))
}

/// The page's tools (`--page-tools`), read and checked, as the server that
/// offers them to the CLI, with the tool that changes the state
/// (`--state-file`); refused for a CLI that cannot take them.
fn page_tools(a: &Run) -> anyhow::Result<Option<crate::converse::mcp::Server>> {
    if a.page_tools.is_some() {
        tools_taken(a, "--page-tools")?;
    }
    if a.state_file.is_some() {
        let ask = a.request.approval == Approval::Ask;
        if let Some(why) = state_tool_refused(a.cli.name(), a.transport, ask) {
            anyhow::bail!("--state-file: {why}");
        }
    }
    let server = match &a.page_tools {
        Some(file) => Some(read_page_tools(a, file)?),
        None => None,
    };
    let Some(file) = &a.state_file else {
        return Ok(server);
    };
    let server = server.unwrap_or_else(|| crate::converse::mcp::Server::new(Vec::new()));
    Ok(Some(
        server.with_state(crate::converse::state::State::new(file)),
    ))
}

/// Whether the run's CLI can take tools from the page (`option` gives
/// them), or why not.
fn tools_taken(a: &Run, option: &str) -> anyhow::Result<()> {
    match a.cli.name() {
        "claude" => Ok(()),
        "qwen" => Ok(()),
        "codex" if a.transport != Transport::Exec => Ok(()),
        "codex" => anyhow::bail!(
            "{option}: codex takes tools from the page over its app-server only, not with --codex-transport exec"
        ),
        "gemini" if a.transport == Transport::Stream => anyhow::bail!(
            "--page-tools: gemini takes tools from the page over ACP only, not with --transport stream"
        ),
        // Any ACP agent: given the page's server if its `initialize` answer
        // says it reaches MCP servers over HTTP, else the run says why.
        "copilot" | "opencode" | "gemini" | "acp" => Ok(()),
        other => anyhow::bail!(
            "{option}: {other} cannot take tools from the page yet; only claude, codex, qwen, copilot, opencode, gemini and ACP agents can"
        ),
    }
}

/// The page's tools in `file` (`--page-tools`), read and checked.
fn read_page_tools(a: &Run, file: &Path) -> anyhow::Result<crate::converse::mcp::Server> {
    let mut json = String::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_PAGE_TOOLS + 1).read_to_string(&mut json))
        .with_context(|| format!("--page-tools {}", file.display()))?;
    if json.len() as u64 > MAX_PAGE_TOOLS {
        anyhow::bail!("--page-tools {}: larger than 16 MiB", file.display());
    }
    let tools = crate::converse::mcp::check_tools(&json, a.cli.spec().tools)
        .map_err(|why| anyhow::anyhow!("--page-tools {}: {why}", file.display()))?;
    let prefix = page_prefix(a);
    if page_over_http(a) {
        // The model's API takes function names of at most 64 bytes.
        let most = crate::converse::mcp::MAX_NAME - prefix.len();
        if let Some(t) = tools.iter().find(|t| t.name.len() > most) {
            anyhow::bail!(
                "--page-tools {}: tool name {:?}: {} names it {prefix}{}, longer than the 64 bytes a model's function name may have: name it in at most {most} bytes",
                file.display(),
                t.name,
                a.cli.name(),
                t.name
            );
        }
    }
    Ok(crate::converse::mcp::Server::new(tools))
}

/// The page's tools (`--page-tools`), made known to `em` by the names the
/// CLI gives them: served over the protocol the CLI is talked with (as
/// asks are), or for Copilot CLI and OpenCode, whose stream mode reaches
/// them over HTTP, at an endpoint of their own.
#[allow(clippy::type_complexity)]
fn page_server(
    a: &mut Run,
    em: &mut crate::agui::Emitter,
) -> anyhow::Result<(
    Option<crate::converse::mcp::Server>,
    Option<crate::converse::mcphttp::Endpoint>,
)> {
    let Some(tools) = page_tools(a)? else {
        return Ok((None, None));
    };
    em.set_page_tools(page_prefix(a), tools.names().to_vec());
    if a.state_file.is_some() {
        em.set_own_tool(crate::converse::state::TOOL);
    }
    limit_tool_timeout(a);
    if !page_over_http(a) {
        return Ok((Some(tools), None));
    }
    let endpoint = crate::converse::mcphttp::Endpoint::start(tools)
        .context("--page-tools: cannot listen on the loopback address")?;
    Ok((None, Some(endpoint)))
}

/// How the run's CLI names the page's tools in its stream: this, then the
/// page's name (Claude Code and Qwen Code: `mcp__page__pick`, Copilot CLI:
/// `page-pick`, OpenCode: `page_pick`, Gemini CLI: `mcp_page_pick`; Codex,
/// and an agent of `run acp`: the page's name).
fn page_prefix(a: &Run) -> &'static str {
    match a.cli.name() {
        "claude" | "qwen" => crate::converse::mcp::PREFIX,
        "copilot" => "page-",
        "opencode" => "page_",
        "gemini" => "mcp_page_",
        _ => "",
    }
}

/// Whether the run's CLI reaches the page's tools at an MCP server over
/// HTTP ([`crate::converse::mcphttp`]): in its stream mode, or over ACP
/// (given in `session/new`): Copilot CLI, OpenCode, Gemini CLI, Qwen Code
/// over ACP and any agent of `run acp`.
fn page_over_http(a: &Run) -> bool {
    matches!(a.cli.name(), "copilot" | "opencode" | "gemini" | "acp")
        || (a.cli.name() == "qwen" && over_acp(a))
}

/// Whether the run speaks the Agent Client Protocol with a CLI that has
/// another mode too: `--transport acp`, or `--approval ask`, which picks it.
fn over_acp(a: &Run) -> bool {
    a.transport == Transport::Acp || a.request.approval == Approval::Ask
}

/// The page's MCP server at `url`, handed to the CLI for this process
/// alone: Copilot CLI's `--additional-mcp-config` (a private file, so that
/// the URL's secret is not on its command line) with `--allow-tool` for the
/// server, OpenCode's `OPENCODE_CONFIG_CONTENT` (merged into the one we
/// were given, if any). The CLI's arguments, the variable to set, and the
/// file, kept until the CLI has exited.
#[allow(clippy::type_complexity)]
fn page_route(
    a: &Run,
    url: &str,
    mut args: Vec<String>,
) -> anyhow::Result<(
    Vec<String>,
    Option<(&'static str, String)>,
    Option<TempFile>,
)> {
    use crate::dialect::request::PAGE_SERVER;
    let timeout = crate::converse::mcphttp::cli_timeout(a.tool_timeout).as_millis();
    if a.cli.name() == "copilot" {
        let config = serde_json::json!({"mcpServers": {PAGE_SERVER: {
            "type": "http", "url": url, "tools": ["*"], "timeout": timeout,
        }}});
        let file = TempFile::create("agui-translate-page-mcp", "json", &config.to_string())?;
        let mut first = vec![
            format!("--additional-mcp-config=@{}", file.0.display()),
            format!("--allow-tool={PAGE_SERVER}"),
        ];
        first.append(&mut args);
        return Ok((first, None, Some(file)));
    }
    const VAR: &str = "OPENCODE_CONFIG_CONTENT";
    let mut config = match std::env::var(VAR) {
        Ok(v) if !v.trim().is_empty() => serde_json::from_str::<serde_json::Value>(&v)
            .ok()
            .filter(serde_json::Value::is_object)
            .with_context(|| format!("--page-tools: {VAR} is set but is not a JSON object, so the page's MCP server cannot be added to it"))?,
        _ => serde_json::json!({}),
    };
    let server =
        serde_json::json!({"type": "remote", "url": url, "oauth": false, "timeout": timeout});
    let mcp = config
        .as_object_mut()
        .expect("an object")
        .entry("mcp")
        .or_insert_with(|| serde_json::json!({}));
    let Some(mcp) = mcp.as_object_mut() else {
        anyhow::bail!("--page-tools: {VAR} has an `mcp` that is not an object");
    };
    mcp.insert(PAGE_SERVER.to_owned(), server);
    Ok((args, Some((VAR, config.to_string())), None))
}

/// A CLI gives up on a call of the page's tools after a limit of its own:
/// Qwen Code on its control layer after
/// [`QWEN_MCP_LIMIT`](crate::dialect::request::QWEN_MCP_LIMIT), Gemini CLI
/// and Qwen Code over ACP after
/// [`GEMINI_MCP_LIMIT`](crate::dialect::request::GEMINI_MCP_LIMIT). A
/// longer `--tool-timeout` is cut to
/// [`QWEN_TOOL_TIMEOUT`](crate::dialect::request::QWEN_TOOL_TIMEOUT) or
/// [`GEMINI_TOOL_TIMEOUT`](crate::dialect::request::GEMINI_TOOL_TIMEOUT), in
/// one line on stderr, so that a page that answers late finds the call
/// expired (its model told so by `run`) rather than lost inside the CLI.
fn limit_tool_timeout(a: &mut Run) {
    use crate::dialect::request::{
        GEMINI_MCP_LIMIT, GEMINI_TOOL_TIMEOUT, QWEN_MCP_LIMIT, QWEN_TOOL_TIMEOUT,
    };
    // The state's tool is answered at once: only the page's calls wait.
    if a.page_tools.is_none() {
        return;
    }
    let (limit, most) = match a.cli.name() {
        "qwen" if over_acp(a) => (GEMINI_MCP_LIMIT, GEMINI_TOOL_TIMEOUT),
        "qwen" => (QWEN_MCP_LIMIT, QWEN_TOOL_TIMEOUT),
        "gemini" => (GEMINI_MCP_LIMIT, GEMINI_TOOL_TIMEOUT),
        _ => return,
    };
    if a.tool_timeout <= most {
        return;
    }
    let human = crate::converse::ask::humanize;
    let _ = writeln!(
        io::stderr(),
        "agui-translate: --tool-timeout {}: {} gives up on a call of the page's tools after {}, so its calls wait {} for the page",
        human(a.tool_timeout),
        a.cli.name(),
        human(limit),
        human(most)
    );
    a.tool_timeout = most;
}

/// The translator of `stream`, given the list the thread's last run left
/// (`--plan-file`).
fn translator(a: &Run, stream: Dialect) -> anyhow::Result<Box<dyn crate::source::Translate>> {
    let mut tr = crate::dialect::for_dialect(stream)?;
    if let Some(file) = &a.plan_file {
        if let Some(list) = carried_list(file, a.thread_id.as_deref()) {
            tr.carry_in(&list);
        }
    }
    Ok(tr)
}

/// The prompt, once the request is checked: its directory exists, the
/// prompt is not empty, no value would reach the CLI as an option.
fn checked_prompt(a: &Run, asking: bool) -> anyhow::Result<String> {
    if let Some(d) = &a.request.cwd {
        // Checked here: a spawn that fails on it would look like a missing CLI.
        if !d.is_dir() {
            anyhow::bail!("--cwd {}: no such directory", d.display());
        }
    }
    let prompt = match a.prompt.as_deref() {
        None | Some("-") => prompt_from_stdin(a.cli, asking)?,
        Some(p) => p.to_owned(),
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty (give it as an argument, or on standard input)");
    }
    refuse_option_like_values(&a.request)?;
    Ok(prompt)
}

/// The prompt on standard input: all of it, or with `--approval ask` its
/// first line (the rest of the input is the decisions).
fn prompt_from_stdin(cli: Dialect, asking: bool) -> anyhow::Result<String> {
    if io::stdin().is_terminal() {
        // Else it would wait without a word.
        let _ = writeln!(
            io::stderr(),
            "agui-translate: reading the prompt from the terminal: end it with Ctrl-D (or give it as an argument: agui-translate run {cli} 'PROMPT')"
        );
    }
    let mut p = String::new();
    if asking {
        // The rest of the input is the decisions.
        io::stdin()
            .read_line(&mut p)
            .context("reading the prompt from stdin")?;
        p = ask::prompt_line(&p);
    } else {
        io::stdin()
            .read_to_string(&mut p)
            .context("reading the prompt from stdin")?;
    }
    // `echo PROMPT | agui-translate run …`: the newline is not part of it.
    let end = p.trim_end_matches(['\n', '\r']).len();
    p.truncate(end);
    Ok(p)
}

/// The CLI's arguments: its server's, or its command line's with the
/// prompt; and the file of denied tools that command line names, kept
/// until the CLI has exited.
fn arguments(
    a: &Run,
    client: Option<(Dialect, &'static Client)>,
    prompt: &str,
) -> anyhow::Result<(Vec<String>, Option<TempFile>)> {
    if let Some((_, c)) = client {
        return Ok(((c.argv)(&a.request)?, None));
    }
    let cli = a.cli;
    let command = cli
        .exec()
        .with_context(|| format!("{cli} cannot be started by run"))?;
    let policy = match &command.deny_file {
        Some(file) if !a.request.deny_tool.is_empty() => Some(TempFile::create(
            "agui-translate-deny-tools",
            file.ext,
            &(file.contents)(&a.request.deny_tool)?,
        )?),
        _ => None,
    };
    let args = (command.argv)(&a.request, prompt, policy.as_ref().map(|p| p.0.as_path()))?;
    Ok((args, policy))
}

/// The session's directory, for a server (which also runs there).
fn server_cwd(request: &RunRequest, server: bool) -> anyhow::Result<Option<String>> {
    match &request.cwd {
        Some(d) if server => Ok(Some(
            std::path::absolute(d)
                .ok()
                .and_then(|d| d.to_str().map(str::to_owned))
                .with_context(|| format!("--cwd {}: not a UTF-8 path", d.display()))?,
        )),
        _ => Ok(None),
    }
}

/// Why the CLI could not be started, for [`cannot_start`].
struct NotStarted {
    msg: String,
    code: &'static str,
    status: u8,
}

/// Start the CLI `exe` (the name not found, as `Err`) with `args`, under
/// supervision: its process group, its stderr's tail, the watchdog of
/// `--timeout` and the signals. `stdin`: whether its stdin is a pipe;
/// `server`: whether it is a server (asked to stop, not signalled).
fn start(
    a: &Run,
    exe: Result<PathBuf, PathBuf>,
    args: &[String],
    stdin: bool,
    server: bool,
    env: Option<(&str, &str)>,
    prompt: &str,
) -> anyhow::Result<Result<Started, NotStarted>> {
    let cli = a.cli;
    let missing = |exe: &Path| {
        NotStarted {
        msg: match cli.program {
            "" => format!("the ACP agent {} was not found", exe.display()),
            program => format!(
                "{program} is not installed: no executable {} found (install it with `npm install -g {}`, or name it with --cli or {})",
                exe.display(),
                cli.package,
                cli.env_var
            ),
        },
        code: code::CLI_MISSING,
        status: 127,
    }
    };
    let exe = match exe {
        Ok(exe) => exe,
        Err(name) => return Ok(Err(missing(&name))),
    };
    let mut cmd = Command::new(&exe);
    cmd.args(args)
        .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = &a.request.cwd {
        cmd.current_dir(d);
    }
    if let Some((var, value)) = env {
        cmd.env(var, value);
    }
    let signals = Arc::new(Signals::install()?);
    supervise::become_subreaper().context("cannot supervise the CLI's processes")?;
    let mut child = match supervise::spawn(&mut cmd) {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Err(missing(&exe))),
        Err(e) => {
            let why = match e.kind() {
                io::ErrorKind::ArgumentListTooLong => format!(
                    "the command line is too long (the prompt is {} bytes; one argument may hold 128 KiB)",
                    prompt.len()
                ),
                _ => e.to_string(),
            };
            return Ok(Err(NotStarted {
                msg: format!("cannot start {} {}: {why}", cli.program, exe.display()),
                code: code::CLI_ERROR,
                status: 126,
            }));
        }
    };
    let group = child.id() as i32;
    let tail = Arc::new(Mutex::new(Tail::new(Redactor::from_env())));
    let err_thread = supervise::drain_stderr(child.stderr.take().expect("piped"), tail.clone());
    let child_out = child.stdout.take().expect("piped");
    run::widen_pipe(child_out.as_fd());
    let input = child.stdin.take();
    let exit = Exit::watch(child);
    let timed_out = Arc::new(AtomicBool::new(false));
    // A server is asked to stop by its client (`turn/interrupt`), not
    // signalled.
    let ask = server.then(|| Arc::new(AtomicBool::new(false)));
    supervise::watchdog(
        group,
        a.timeout,
        signals.clone(),
        exit.clone(),
        timed_out.clone(),
        ask.clone(),
    );
    let output = BufReader::new(Output::new(child_out, exit.clone()));
    Ok(Ok(Started {
        group,
        exit,
        signals,
        timed_out,
        ask,
        lingered: Arc::new(AtomicBool::new(false)),
        tail,
        err_thread,
        input,
        output: Some(output),
    }))
}

/// The CLI, started and supervised: what the steps of a run after its
/// start share.
struct Started {
    /// Its process group.
    group: i32,
    exit: Arc<Exit>,
    signals: Arc<Signals>,
    /// Whether the watchdog ended it on `--timeout`.
    timed_out: Arc<AtomicBool>,
    /// For a server: set to ask its client to stop it.
    ask: Option<Arc<AtomicBool>>,
    /// Whether the server outstayed its grace after the session and was
    /// stopped: not a failure of the run.
    lingered: Arc<AtomicBool>,
    /// The tail of its stderr, and the thread that reads it.
    tail: Arc<Mutex<Tail>>,
    err_thread: std::thread::JoinHandle<()>,
    /// Its stdin, when it is a pipe.
    input: Option<std::process::ChildStdin>,
    /// Its stdout, until the stream is pumped.
    output: Option<BufReader<Output>>,
}

/// What a conversation with the CLI writes to and reads from.
struct Talk<'t> {
    prompt: &'t str,
    /// The page's tools, served to the CLI (`--page-tools`).
    tools: Option<crate::converse::mcp::Server>,
    /// The input lines (`--approval ask`).
    lines: Option<&'t Lines>,
    tr: &'t mut dyn crate::source::Translate,
    em: &'t mut crate::agui::Emitter,
    out: &'t mut dyn Write,
}

/// How a conversation with the CLI went, for the end of the run.
#[derive(Default)]
struct Conversed {
    /// Whether the user cancelled a tool call (`--approval ask`): the CLI
    /// then ends its turn, and exits with a failure, as asked.
    user_cancelled: bool,
    /// Whether a session with a server or an agent ran.
    session: bool,
    /// Why that session left the run unfinished, if it did: the run's
    /// error unless it has ended.
    unfinished: Option<String>,
    /// Why the run fails although its turn ended (the end it had is
    /// replaced).
    failed: Option<String>,
    /// Whether a kept agent ended with no turn going (`--keep-turns`): the
    /// run ends without a word.
    idle_over: bool,
}

/// How the CLI ended, once it is waited for.
struct Ended {
    status: ExitStatus,
    /// The signal we caught, if any.
    signal: Option<i32>,
    /// Our own stop: a signal, or `--timeout`.
    cancelled: bool,
    /// Whether the watchdog ended it on `--timeout` (read when asked).
    timed_out: Arc<AtomicBool>,
    /// Whether the server lingered and was stopped (read when asked).
    lingered: Arc<AtomicBool>,
    /// The tail of its stderr.
    tail: String,
}

impl Started {
    /// The asking loop with Claude Code (control protocol): its prompt and
    /// the decisions go in on its stdin. `None` when the run has ended
    /// waiting for decisions (the CLI stopped).
    fn control(&mut self, a: &Run, talk: &mut Talk) -> anyhow::Result<Option<Conversed>> {
        let lines = talk.lines.expect("asking");
        let opts = control::Options {
            prompt: talk.prompt,
            attachments: &a.request.attachments,
            timeout: a.approval_timeout,
            marker: a.input_marker,
            tools: talk.tools.take(),
            tool_timeout: a.tool_timeout,
            // Qwen Code learns of the page's server from the host's
            // `initialize`; Claude Code from its command line.
            declare: a.cli.name() == "qwen",
        };
        let output = self.output.as_mut().expect("not pumped");
        output.get_mut().set_tick(true);
        let mut cli_in = ServerInput(self.input.take());
        let (signals, timed_out) = (&self.signals, &self.timed_out);
        let stop = || signals.caught().is_some() || timed_out.load(Ordering::SeqCst);
        let mut session = control::Session::new(opts);
        let ended = session.run(
            output,
            &mut cli_in,
            lines,
            &mut *talk.tr,
            talk.em,
            &mut *talk.out,
            &stop,
        );
        output.get_mut().set_tick(false);
        // The turn is over (or nothing more will be answered): the CLI's
        // stdin is closed, and it exits.
        drop(cli_in);
        match ended {
            Ok(control::End::Expired(why)) => {
                // The run has ended waiting: what the CLI says after the
                // denial is no run's. It has the usual grace to take the
                // denial and exit, its stdin closed.
                let pending = if why.contains("the page") {
                    "the pending calls of the page's tools were answered with that error"
                } else {
                    "the pending tool calls were denied"
                };
                self.expired(&why, pending, a.cli);
                Ok(None)
            }
            Ok(_) => Ok(Some(Conversed {
                user_cancelled: session.user_cancelled(),
                ..Conversed::default()
            })),
            Err(e) => {
                supervise::stop(self.group, &self.exit);
                Err(e).context("writing stdout")
            }
        }
    }

    /// The CLI's stream mode with the page's tools served at `endpoint`:
    /// each call ends the run and the input line answers it. `None` when the
    /// run has ended waiting for the page (the CLI stopped).
    fn paged(
        &mut self,
        a: &Run,
        endpoint: &mut crate::converse::mcphttp::Endpoint,
        talk: &mut Talk,
    ) -> anyhow::Result<Option<Conversed>> {
        use crate::converse::mcphttp::{End, Session};
        let w = answers(a, talk.lines.expect("input lines"));
        let output = self.output.as_mut().expect("not pumped");
        output.get_mut().set_tick(true);
        let (signals, timed_out) = (&self.signals, &self.timed_out);
        let stop = || signals.caught().is_some() || timed_out.load(Ordering::SeqCst);
        let ended =
            Session::new(endpoint, w).run(output, &mut *talk.tr, talk.em, &mut *talk.out, &stop);
        output.get_mut().set_tick(false);
        match ended {
            Ok(End::Expired(why)) => {
                let pending = "the pending calls of the page's tools were answered with that error";
                self.expired(&why, pending, a.cli);
                Ok(None)
            }
            Ok(End::Eof | End::Stopped) => Ok(Some(Conversed::default())),
            Err(e) => {
                supervise::stop(self.group, &self.exit);
                Err(e).context("writing stdout")
            }
        }
    }

    /// The session with a server, when the CLI is one: its client sends
    /// the prompt, and the decisions. `None` when the run has ended
    /// waiting for decisions (the server stopped).
    fn server(
        &mut self,
        a: &Run,
        cwd: Option<&str>,
        talk: &mut Talk,
    ) -> anyhow::Result<Option<Conversed>> {
        let (Some(server_in), Some(ask)) = (self.input.take(), &self.ask) else {
            return Ok(Some(Conversed::default()));
        };
        let opts = appserver::Options {
            prompt: talk.prompt,
            attachments: &a.request.attachments,
            resume: a.request.resume.as_deref(),
            cwd,
            model: a.request.model.as_deref(),
            approval: a.request.approval,
            ask: asks(a, talk.lines),
            page: talk
                .tools
                .take()
                .zip(talk.lines)
                .map(|(server, input)| (server, answers(a, input))),
        };
        let output = self.output.as_mut().expect("not pumped");
        output.get_mut().set_tick(true);
        let mut server_in = ServerInput(Some(server_in));
        let ran = appserver::Session::new(opts).run(
            output,
            &mut server_in,
            &mut *talk.tr,
            talk.em,
            &mut *talk.out,
            ask,
        );
        output.get_mut().set_tick(false);
        self.closed(server_in);
        let name = a.cli.client().map_or(a.cli.name(), |(d, _)| d.name());
        match ran {
            Ok(appserver::End::Expired(why)) => {
                // As with Claude Code: the decisions never came.
                let pending = if why.contains("the page") {
                    "the pending calls of the page's tools were answered with that error"
                } else {
                    "the pending requests were cancelled"
                };
                self.expired(&why, pending, a.cli);
                Ok(None)
            }
            Ok(end) => Ok(Some(Conversed {
                session: true,
                unfinished: unfinished(&end).map(|why| format!("{name} {why}")),
                ..Conversed::default()
            })),
            Err(e) => {
                supervise::stop(self.group, &self.exit);
                Err(e).context("writing stdout")
            }
        }
    }

    /// The session is over: the server's (or agent's) stdin is closed, and
    /// it has the usual grace to exit before it is stopped.
    fn closed(&self, input: ServerInput) {
        drop(input);
        let (e, l, group) = (self.exit.clone(), self.lingered.clone(), self.group);
        std::thread::spawn(move || {
            if e.wait_for(supervise::KILL_GRACE).is_none() {
                l.store(true, Ordering::SeqCst);
                supervise::stop(group, &e);
            }
        });
    }

    /// The session with an Agent Client Protocol agent: its client sends
    /// the prompt, and the decisions. `None` when the run has ended waiting
    /// for decisions (the agent stopped).
    fn agent(
        &mut self,
        a: &Run,
        cwd: Option<&str>,
        name: &str,
        endpoint: Option<&mut crate::converse::mcphttp::Endpoint>,
        talk: &mut Talk,
    ) -> anyhow::Result<Option<Conversed>> {
        let (Some(agent_in), Some(ask)) = (self.input.take(), &self.ask) else {
            return Ok(Some(Conversed::default()));
        };
        // ACP wants an absolute directory: --cwd's, else ours.
        let here = std::env::current_dir()
            .ok()
            .and_then(|d| d.to_str().map(str::to_owned))
            .context("the current directory is not a UTF-8 path: give --cwd")?;
        let served = endpoint.is_some();
        let opts = acp::Options {
            prompt: talk.prompt,
            attachments: &a.request.attachments,
            cwd: cwd.unwrap_or(&here),
            resume: a.request.resume.as_deref(),
            approval: a.request.approval,
            ask: asks(a, talk.lines),
            // Its title where it has one: "Gemini CLI asks permission…".
            agent: if a.cli.program.is_empty() {
                name
            } else {
                a.cli.title
            },
            start_timeout: a.start_timeout,
            model: a
                .request
                .model
                .as_deref()
                .filter(|_| a.cli.acp().is_some_and(|s| s.session_model)),
            effort: a
                .request
                .effort
                .as_deref()
                .filter(|_| a.cli.acp().is_some_and(|s| s.session_model)),
            page: endpoint
                .zip(talk.lines)
                .map(|(e, input)| (e.route(), answers(a, input))),
        };
        let output = self.output.as_mut().expect("not pumped");
        output.get_mut().set_tick(true);
        let mut agent_in = ServerInput(Some(agent_in));
        let stop = || ask.load(Ordering::SeqCst);
        let mut session = acp::Session::new(opts);
        let ran = session.run(
            output,
            &mut agent_in,
            &mut *talk.tr,
            talk.em,
            &mut *talk.out,
            &stop,
        );
        // The page's server lives as long as this run: an agent given it is
        // not kept for the next turn.
        let (ran, idle_over) = if served {
            (ran, false)
        } else {
            kept_turns(a, &mut session, ran, output, &mut agent_in, talk, &stop)
        };
        output.get_mut().set_tick(false);
        self.closed(agent_in);
        if idle_over {
            return Ok(Some(Conversed {
                idle_over,
                ..Conversed::default()
            }));
        }
        let unfinished = match ran {
            Ok(acp::End::Expired(why)) => {
                let pending = if why.contains("the page") {
                    "the pending calls of the page's tools were answered with that error"
                } else {
                    "the pending requests were cancelled"
                };
                self.expired(&why, pending, a.cli);
                return Ok(None);
            }
            Ok(acp::End::TurnEnded | acp::End::Stopped) => None,
            Ok(acp::End::Failed(why)) => Some(why),
            Ok(acp::End::Eof(false)) => Some(format!(
                "{name} ended its output without answering initialize: it does not speak the Agent Client Protocol (ACP) on stdio, or it failed to start"
            )),
            Ok(acp::End::Eof(true)) => {
                Some(format!("{name} ended its output before the turn ended"))
            }
            Err(e) => {
                supervise::stop(self.group, &self.exit);
                return Err(e).context("writing stdout");
            }
        };
        Ok(Some(Conversed {
            user_cancelled: session.user_cancelled(),
            session: true,
            unfinished,
            failed: session.failure().map(str::to_owned),
            idle_over: false,
        }))
    }

    /// A kept agent ended with no turn going (`--keep-turns`): its output
    /// is no run's, and the run ends without a word once it has exited.
    fn idle_over(mut self) -> ExitCode {
        drop(self.output.take());
        let _ = self.wait();
        ExitCode::SUCCESS
    }

    /// The run has ended waiting for decisions: the CLI has the usual
    /// grace to exit, then it is stopped; stderr says why.
    fn expired(&self, why: &str, pending: &str, cli: Dialect) {
        if self.exit.wait_for(supervise::KILL_GRACE).is_none() {
            supervise::stop(self.group, &self.exit);
        }
        let _ = self.exit.wait();
        let _ = writeln!(
            io::stderr(),
            "agui-translate: {why}: {pending} and {} was stopped",
            cli.name()
        );
    }

    /// The stream has ended (or gone quiet after the CLI exited): the CLI
    /// is waited for (the watchdog still ends it on --timeout or a signal),
    /// and the tail of its stderr taken.
    fn wait(self) -> Ended {
        let status = self.exit.wait();
        let signal = self.signals.caught();
        let cancelled = signal.is_some() || self.timed_out.load(Ordering::SeqCst);
        if cancelled {
            supervise::end_orphans();
        }
        // A process the CLI left behind may still hold its stderr: the tail
        // is taken as it is after a short wait, without waiting for that
        // process.
        let wait = Instant::now();
        while !self.err_thread.is_finished() && wait.elapsed() < supervise::READ_GRACE {
            std::thread::sleep(Duration::from_millis(10));
        }
        let tail = self.tail.lock().map(|t| t.text()).unwrap_or_default();
        Ended {
            status,
            signal,
            cancelled,
            timed_out: self.timed_out,
            lingered: self.lingered,
            tail,
        }
    }
}

/// With `--keep-turns`, each turn that ends well is followed by the
/// agent's next, on the same session, as long as input lines bring them
/// (see [`acp::Session::idle`]); the run's end is the last turn's, or none
/// (`true`) when the agent was kept and no next turn came. Each idle agent
/// leaves its session and plan for the thread first.
fn kept_turns(
    a: &Run,
    session: &mut acp::Session,
    mut ran: io::Result<acp::End>,
    output: &mut BufReader<Output>,
    agent_in: &mut ServerInput,
    talk: &mut Talk,
    stop: &dyn Fn() -> bool,
) -> (io::Result<acp::End>, bool) {
    let Some(lines) = talk.lines.filter(|_| a.keep_turns && talk.tools.is_none()) else {
        return (ran, false);
    };
    loop {
        let well = matches!(ran, Ok(acp::End::TurnEnded))
            && session.failure().is_none()
            && !session.user_cancelled()
            && !stop();
        if !well {
            return (ran, false);
        }
        if let Err(e) = keep(a, talk.em, &*talk.tr, true) {
            let _ = writeln!(io::stderr(), "agui-translate: {e:#}");
            return (ran, false);
        }
        let next = match session.idle(output, lines, talk.em, &mut *talk.out, stop) {
            Ok(Some(next)) => next,
            Ok(None) => return (Ok(acp::End::TurnEnded), true),
            Err(e) => return (Err(e), false),
        };
        ran = session.next_turn(
            next,
            output,
            agent_in,
            &mut *talk.tr,
            talk.em,
            &mut *talk.out,
            stop,
        );
    }
}

/// Our standard input, line by line ([`ask::input_lines`]).
type Lines = std::sync::mpsc::Receiver<ask::InputLine>;

/// Where the decisions come from, when the run asks (`--approval ask`).
fn asks<'t>(a: &Run, lines: Option<&'t Lines>) -> Option<ask::Waiting<'t>> {
    lines
        .filter(|_| a.request.approval == Approval::Ask)
        .map(|input| ask::Waiting {
            input,
            timeout: a.approval_timeout,
            marker: a.input_marker,
        })
}

/// Where the answers to the calls of the page's tools come from.
fn answers<'t>(a: &Run, input: &'t Lines) -> ask::Waiting<'t> {
    ask::Waiting {
        input,
        timeout: a.tool_timeout,
        marker: a.input_marker,
    }
}

/// The way the CLI ended, made part of the AG-UI stream: cancelled by us,
/// failed by its exit status, or left unfinished by its server.
fn end_run(
    cli: Dialect,
    name: &str,
    ended: &Ended,
    conversed: &Conversed,
    em: &mut crate::agui::Emitter,
) {
    let tail = &ended.tail;
    if ended.cancelled {
        // Our own stop: the run ends as cancelled, unless it had ended
        // (or had ended waiting for decisions).
        if em.in_run() || !em.started_any() {
            em.finish_run(None, Some(Outcome::Cancelled), &[]);
        }
    } else if let Some(code_num) = failure(ended.status)
        .filter(|_| !ended.lingered.load(Ordering::SeqCst))
        // A turn the user cancelled ends as the CLI says (cancelled), not
        // as a failure.
        .filter(|_| !(conversed.user_cancelled && em.run_ended() && !em.terminal_is_error()))
    {
        let (code, why) = meaning(cli, code_num);
        let mut msg = format!("{name} exited with status {code_num}: {why}");
        if !tail.is_empty() {
            msg.push_str(": ");
            msg.push_str(tail);
        }
        if em.run_ended() {
            // The stream said success but the exit status says otherwise.
            if !em.terminal_is_error() {
                em.refail_run(&msg, code, &[], None);
            }
        } else {
            em.fail_run(&msg, code, &[], None);
        }
    } else if let Some(why) = &conversed.unfinished {
        if !em.run_ended() {
            let mut msg = why.clone();
            if !tail.is_empty() {
                msg.push_str(": ");
                msg.push_str(tail);
            }
            em.fail_run(&msg, code::CLI_ERROR, &[], None);
        }
    } else if let Some(why) = &conversed.failed {
        if !em.run_ended() {
            em.fail_run(why, code::CLI_ERROR, &[], None);
        } else if !em.terminal_is_error() {
            em.refail_run(why, code::CLI_ERROR, &[], None);
        }
    }
}

impl Ended {
    /// The exit status of `run`: 124 on `--timeout`, 128+N for signal N,
    /// else the CLI's own (0 for a server that only lingered).
    fn exit_code(&self) -> ExitCode {
        let exit = if self.timed_out.load(Ordering::SeqCst) {
            124
        } else if self.lingered.load(Ordering::SeqCst) {
            0
        } else if let Some(sig) = self.signal {
            128 + sig
        } else {
            self.status
                .code()
                .unwrap_or_else(|| 128 + self.status.signal().unwrap_or(0))
        };
        ExitCode::from(exit.clamp(0, 255) as u8)
    }
}

/// What a run leaves for the thread's next: the CLI's session id
/// (`--session-file`: the id, and a second line `acp` when the run spoke
/// the Agent Client Protocol, `acp`, so that the session is loaded back the
/// way it was made) and its carried list (`--plan-file`).
fn keep(
    a: &Run,
    em: &crate::agui::Emitter,
    tr: &dyn crate::source::Translate,
    acp: bool,
) -> anyhow::Result<()> {
    if let (Some(file), Some(session)) = (&a.session_file, em.cli_thread()) {
        let route = if acp { "\nacp" } else { "" };
        std::fs::write(file, format!("{session}{route}"))
            .with_context(|| format!("--session-file {}", file.display()))?;
    }
    if let (Some(file), Some(list)) = (&a.plan_file, tr.carried()) {
        let kept = Carried {
            thread: a.thread_id.as_deref().unwrap_or(""),
            list: serde_json::value::RawValue::from_string(list)?,
        };
        crate::base::files::write_atomic(file, &serde_json::to_vec(&kept)?)
            .with_context(|| format!("--plan-file {}", file.display()))?;
    }
    Ok(())
}

/// What `--plan-file` holds: the list a translation carries into the next
/// run of its thread, and the thread's id.
#[derive(serde::Serialize, serde::Deserialize)]
struct Carried<'a> {
    thread: &'a str,
    list: Box<serde_json::value::RawValue>,
}

/// The most a plan file is read of: a task list is far smaller.
const MAX_PLAN_FILE: u64 = 4 << 20;

/// The list in `file`, if it is there and belongs to `thread`. Only a
/// regular file is read, not through a link and not past
/// [`MAX_PLAN_FILE`]: a FIFO or `/dev/zero` in its place neither hangs nor
/// exhausts the run (it is ignored, with a warning).
fn carried_list(file: &Path, thread: Option<&str>) -> Option<String> {
    let bytes = match crate::base::files::read_regular(file, MAX_PLAN_FILE) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "agui-translate: warning: --plan-file {}: {e}: ignored",
                file.display()
            );
            return None;
        }
    };
    let kept: Carried = serde_json::from_slice(&bytes).ok()?;
    (kept.thread == thread.unwrap_or("")).then(|| kept.list.get().to_owned())
}

/// Why a session with a server that exited normally left the run
/// unfinished, if it did.
fn unfinished(end: &appserver::End) -> Option<&'static str> {
    match end {
        // A stop while the run waited for decisions: the run has ended.
        appserver::End::TurnCompleted | appserver::End::Stopped => None,
        appserver::End::Expired(_) => Some("got no decision"),
        appserver::End::Refused => {
            Some("refused a request of agui-translate (its error is the RAW event before)")
        }
        appserver::End::Eof => Some("ended its output before the turn completed"),
    }
}

/// The server's stdin. Once the server stops reading, what is sent is
/// dropped: its stdout then ends too, and that ends the session.
struct ServerInput(Option<std::process::ChildStdin>);

impl Write for ServerInput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(pipe) = &mut self.0 {
            if pipe.write_all(buf).is_err() {
                self.0 = None;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(pipe) = &mut self.0 {
            if pipe.flush().is_err() {
                self.0 = None;
            }
        }
        Ok(())
    }
}

/// Which transport `run` uses for `cli`: `None` for its command line, or
/// its server transport. `auto` picks the server when the installed version
/// (`PROGRAM --version`) is one the client is known to work with, and the
/// arguments after `--` are ones the server takes: arguments meant for the
/// command line keep it (a command that worked goes on working), with a
/// notice on stderr saying how to get the server's live text.
fn transport(
    cli: Dialect,
    choice: Transport,
    exe: Option<&Path>,
    extra: &[String],
    asking: bool,
) -> anyhow::Result<Option<(Dialect, &'static Client)>> {
    let client = cli.client();
    // Every CLI has its stream.
    if !matches!(choice, Transport::Auto | Transport::Stream) && client.is_none() {
        anyhow::bail!("--transport: {cli} has a single transport");
    }
    Ok(match choice {
        Transport::Acp => anyhow::bail!("--transport acp: {cli} does not speak the Agent Client Protocol (its transports are stream and app-server)"),
        Transport::Exec | Transport::Stream => None,
        Transport::AppServer => client,
        // Only the server can ask.
        Transport::Auto if asking => client,
        Transport::Auto => client.filter(|(_, c)| {
            let recent = exe
                .and_then(probe_version)
                .and_then(|v| version_in(&v, c.version_name))
                .is_some_and(|v| v >= c.since);
            if !recent {
                return false;
            }
            let Some((arg, instead)) = (c.refuses)(extra) else {
                return true;
            };
            let instead = match instead {
                Some(i) => format!("give {i} instead of {arg}"),
                None => "give run's own options or `-- -c key=value` instead".to_owned(),
            };
            let _ = writeln!(
                io::stderr(),
                "agui-translate: {arg} is an option of `{} exec`, which the app-server does not take: running `{0} exec --json`, whose text comes only when each message is complete; for live text, {instead}",
                cli.program,
            );
            false
        }),
    })
}

/// Whether `run` talks to `cli` over the Agent Client Protocol, and how it
/// starts it then: `acp` always; the CLIs that also have a stream mode
/// when asked (`--transport acp`), or with `auto` when the run asks
/// (their stream modes cannot).
fn acp_transport(
    cli: Dialect,
    choice: Transport,
    asking: bool,
) -> anyhow::Result<Option<&'static AcpStart>> {
    let Some(start) = cli.acp() else {
        return Ok(None);
    };
    Ok(match choice {
        Transport::Acp => Some(start),
        _ if cli.exec().is_none() => match choice {
            Transport::Auto => Some(start),
            _ => anyhow::bail!("--transport: run acp speaks the Agent Client Protocol only"),
        },
        Transport::Auto if asking => Some(start),
        Transport::Auto | Transport::Stream => None,
        Transport::Exec | Transport::AppServer => {
            anyhow::bail!("--transport: {cli}'s transports are stream (its JSON mode) and acp")
        }
    })
}

/// Whether `auto` speaks ACP with `cli` although the run does not ask (as
/// it does for Gemini CLI given images, which it takes over ACP only): its
/// JSON mode writes text only whole, the installed version is one checked
/// over ACP, and the run needs nothing only the JSON mode takes (else a
/// notice on stderr says what keeps it).
fn live_acp(
    cli: Dialect,
    choice: Transport,
    request: &RunRequest,
    exe: Option<&Path>,
) -> Option<&'static AcpStart> {
    let start = cli.acp().filter(|_| choice == Transport::Auto)?;
    let live = start.live.as_ref()?;
    let recent = exe
        .and_then(probe_version)
        .and_then(|v| any_version(&v))
        .is_some_and(|v| v >= live.since);
    if !recent {
        return None;
    }
    if let Some(what) = (live.keeps_stream)(request) {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: {what} keeps {cli} in its JSON mode, whose text comes only when each part is complete (without it, its text streams over the Agent Client Protocol)",
        );
        return None;
    }
    Some(start)
}

/// The program and arguments that start `cli` as an Agent Client Protocol
/// agent, as a run with no request of its own (`extra` its arguments
/// after `--`) starts it: `--cli` (`cli_path`), or for `run acp` COMMAND.
pub fn acp_command(
    cli: Dialect,
    cli_path: Option<&Path>,
    extra: &[String],
) -> anyhow::Result<(PathBuf, Vec<String>)> {
    let Some(start) = cli.acp() else {
        anyhow::bail!("{cli} does not speak the Agent Client Protocol");
    };
    let exe = match cli.program {
        "" => agent_executable(cli_path, extra),
        _ => executable(cli, cli_path),
    }
    .map_err(|name| anyhow::anyhow!("no {} on PATH", name.display()))?;
    let request = RunRequest {
        extra: extra.to_vec(),
        ..RunRequest::default()
    };
    let version = || probe_version(&exe).and_then(|v| any_version(&v));
    let mut args = (start.argv)(&request, &version)?;
    if cli.program.is_empty() && cli_path.is_none() && !args.is_empty() {
        args.remove(0);
    }
    Ok((exe, args))
}

/// `run acp -- COMMAND ARGS…`: the agent's executable, `--cli` or COMMAND,
/// found as [`executable`] finds a CLI's.
fn agent_executable(cli_path: Option<&Path>, extra: &[String]) -> Result<PathBuf, PathBuf> {
    let exe = cli_path
        .map(Path::to_path_buf)
        .or_else(|| extra.first().map(PathBuf::from))
        .unwrap_or_default();
    if exe.components().count() > 1 {
        Ok(std::path::absolute(&exe).unwrap_or(exe))
    } else {
        find_on_path(&exe).ok_or(exe)
    }
}

/// How the run's messages name the CLI: its name, or for `run acp` the
/// agent's command.
fn agent_name(cli: Dialect, a: &Run) -> String {
    match cli.program {
        "" => {
            let command = a
                .cli_path
                .as_deref()
                .map(|p| p.display().to_string())
                .or_else(|| a.request.extra.first().cloned())
                .unwrap_or_default();
            format!("the ACP agent {command}")
        }
        _ => cli.name().to_owned(),
    }
}

/// The first word of `--version` output that is a version (`0.61.0`,
/// `v1.2.3`, `gemini 0.33.1`).
fn any_version(text: &str) -> Option<(u64, u64, u64)> {
    text.split_whitespace().find_map(|w| {
        let w = w.strip_prefix('v').unwrap_or(w);
        let core = w.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let v = (parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(v)
    })
}

/// The version after `name` in `--version` output: `codex-cli 0.169.0` →
/// (0, 169, 0). A pre-release suffix (`0.170.0-alpha.1`) is ignored.
fn version_in(text: &str, name: &str) -> Option<(u64, u64, u64)> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == name)?;
    let word = words.next()?;
    let word = word.strip_prefix('v').unwrap_or(word);
    let core = word.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

/// The exit status as a failure number, or `None` for success.
fn failure(status: ExitStatus) -> Option<i32> {
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(c), _) => Some(c),
        (None, Some(sig)) => Some(128 + sig),
        (None, None) => Some(1),
    }
}

/// `run --check`: which CLIs are installed, and their versions.
pub fn check() -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut missing = 0;
    for cli in Dialect::all().filter(|d| d.exec().is_some()) {
        let exe = executable(cli, None).ok().filter(|p| p.is_file());
        match exe {
            None => {
                missing += 1;
                writeln!(
                    out,
                    "{:<7} missing: npm install -g {}",
                    cli.name(),
                    cli.package
                )?;
            }
            Some(path) => {
                let version = probe_version(&path).unwrap_or_else(|| "version unknown".into());
                writeln!(out, "{:<7} {version} ({})", cli.name(), path.display())?;
            }
        }
    }
    Ok(if missing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `PROGRAM --version`, given 10 seconds.
fn probe_version(path: &Path) -> Option<String> {
    let mut child = supervise::spawn(
        Command::new(path)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                supervise::signal_group(child.id() as i32, libc::SIGKILL);
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut s = String::new();
    child.stdout.take()?.read_to_string(&mut s).ok()?;
    s.lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_mean_something() {
        let d = |n| Dialect::named(n).unwrap();
        assert_eq!(meaning(d("gemini"), 41).0, code::AUTH_ERROR);
        assert_eq!(meaning(d("gemini"), 143).1, "it was killed by signal 15");
        assert_eq!(meaning(d("codex"), 1).0, code::CLI_ERROR);
        assert_eq!(meaning(d("claude"), 143).1, "it was killed by signal 15");
    }

    #[test]
    fn versions_are_read_from_version_output() {
        let v = |t| version_in(t, "codex-cli");
        assert_eq!(v("codex-cli 0.169.0"), Some((0, 169, 0)));
        assert_eq!(v("codex-cli 0.170.0-alpha.2\n"), Some((0, 170, 0)));
        assert_eq!(v("codex-cli v1.2.3"), Some((1, 2, 3)));
        assert_eq!(v("fake-cli 1.2.3"), None);
        assert_eq!(v("codex-cli 1.2"), None);
        assert_eq!(v("codex-cli 1.2.3.4"), None);
        assert_eq!(v("codex-cli"), None);
    }
}
