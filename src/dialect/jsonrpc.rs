//! The two dialects that are JSON-RPC over stdio, side by side so that
//! their detection is seen not to overlap: OpenAI Codex CLI's app-server
//! (`codex app-server`, which leaves `jsonrpc` out of its messages) and the
//! Agent Client Protocol (ACP: every message says `"jsonrpc":"2.0"`), whose
//! transcripts hold both directions of a connection.

use super::{AcpStart, Client, Command, Probe, Spec, VersionProbe};
use crate::dialect::request::RunRequest;

pub static CODEX_APP_SERVER: Spec = Spec {
    name: "codex-app-server",
    title: "Codex app-server",
    about: "Codex app-server: the JSON-RPC stdout of `codex app-server`",
    program: "codex",
    package: "@openai/codex",
    env_var: "AGUI_CODEX_CLI",
    translator: || Box::new(crate::source::codex_app_server::CodexAppServer::default()),
    detect,
    command: Some(Command::Client(Client {
        transport_of: "codex",
        argv,
        version_name: "codex-cli",
        // The version whose sessions the client is tested against
        // (testdata/codex-app-server/0.169.0). Older servers differ: 0.59
        // to 0.66 want the sandbox in camelCase, 0.58 sends no text deltas,
        // 0.57 and older refuse `thread/start`.
        since: (0, 169, 0),
        refuses,
    })),
    exit_status: |_| None,
    tools: crate::agui::tools::CODEX,
    acp: None,
};

/// No `type` and no `jsonrpc`: a notification or request (`method`), or a
/// response (`id` with `result` or `error`).
fn detect(p: &Probe) -> bool {
    !p.has("type") && !p.has("jsonrpc") && is_message(p)
}

/// A notification or request (`method`), or a response (`id` with
/// `result` or `error`).
fn is_message(p: &Probe) -> bool {
    p.has("method") || (p.has("id") && (p.has("result") || p.has("error")))
}

/// The Agent Client Protocol: a transcript of both directions of a
/// connection (see `docs/acp.md`). A protocol rather than a CLI: it has no
/// program and is in none of the lists of CLIs; `run acp -- COMMAND ARGS…`
/// starts any agent that speaks it.
pub static ACP: Spec = Spec {
    name: "acp",
    title: "Agent Client Protocol",
    about: "Agent Client Protocol: a transcript of both directions of a connection (`gemini --acp`, `opencode acp`, …)",
    program: "",
    package: "",
    env_var: "",
    translator: || Box::new(crate::source::acp::Acp::default()),
    detect: detect_acp,
    command: None,
    exit_status: |_| None,
    tools: crate::agui::tools::ACP,
    acp: Some(AcpStart {
        argv: any_agent,
        ask_env: None,
        live: None,
        session_model: false,
    }),
};

/// `"jsonrpc":"2.0"` on a message (Codex's app-server leaves it out).
fn detect_acp(p: &Probe) -> bool {
    !p.has("type") && p.has("jsonrpc") && is_message(p)
}

/// `run acp -- COMMAND ARGS…`: the agent is the command after `--` (`run`
/// takes its program from there, unless `--cli` names it); these are the
/// command and its arguments. What an agent
/// is told on its own command line is its own: `run`'s options for it are
/// refused, and go after the command instead.
fn any_agent(a: &RunRequest, _: &VersionProbe<'_>) -> anyhow::Result<Vec<String>> {
    let given = [
        ("--model", a.model.is_some()),
        ("--effort", a.effort.is_some()),
        ("--max-turns", a.max_turns.is_some()),
        ("--allow-tool", !a.allow_tool.is_empty()),
        ("--deny-tool", !a.deny_tool.is_empty()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        anyhow::bail!(
            "run acp: {flag} has no meaning the Agent Client Protocol defines: give the agent's own option after its command"
        );
    }
    Ok(a.extra.clone())
}

/// `codex app-server`, with the arguments after `--` (`-c key=value`
/// overrides). The model, directory, approval policy, sandbox and session
/// go in the JSON-RPC requests ([`crate::converse::appserver`]).
fn argv(a: &RunRequest) -> anyhow::Result<Vec<String>> {
    if a.max_turns.is_some() {
        anyhow::bail!("codex has no setting for a turn limit");
    }
    if !a.allow_tool.is_empty() || !a.deny_tool.is_empty() {
        anyhow::bail!("codex cannot allow or forbid single tools; its sandbox and approval policy (--approval, or -- -c sandbox_mode=MODE) decide what runs");
    }
    let mut v = vec!["app-server".to_owned()];
    if let Some(e) = &a.effort {
        // A config override, as on `codex exec`'s command line.
        v.extend(["-c".to_owned(), format!("model_reasoning_effort={e}")]);
    }
    v.extend(a.extra.iter().cloned());
    Ok(v)
}

/// `codex app-server` takes only config overrides (`-c key=value`,
/// `--config key=value`) and feature switches (`--enable F`,
/// `--disable F`); anything else (`--sandbox`,
/// `--dangerously-bypass-approvals-and-sandbox`, …) is `codex exec`'s, and
/// the server would refuse to start. The first such argument, with what
/// gives the same over the app-server where there is one.
fn refuses(args: &[String]) -> Option<super::Refused<'_>> {
    const VALUED: &[&str] = &["-c", "--config", "--enable", "--disable"];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let taken = VALUED.contains(&arg.as_str()) && args.next().is_some()
            || (arg.starts_with("-c") && arg.len() > 2)
            || ["--config=", "--enable=", "--disable="]
                .iter()
                .any(|p| arg.starts_with(p));
        if !taken {
            return Some((arg, instead(arg)));
        }
    }
    None
}

/// What `run` takes in place of a `codex exec` option, over the app-server.
fn instead(arg: &str) -> Option<&'static str> {
    let name = arg.split('=').next().unwrap_or(arg);
    Some(match name {
        "--dangerously-bypass-approvals-and-sandbox" | "--yolo" => "--approval yolo",
        "--full-auto" => "--approval auto-edit",
        "-m" | "--model" => "--model MODEL",
        "-C" | "--cd" => "--cwd DIR",
        "-s" | "--sandbox" => "-- -c sandbox_mode=MODE",
        "-a" | "--ask-for-approval" => "-- -c approval_policy=POLICY",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::refuses;

    fn refused(args: &[&str]) -> Option<(String, Option<&'static str>)> {
        let args: Vec<String> = args.iter().map(|&a| a.to_owned()).collect();
        refuses(&args).map(|(a, i)| (a.to_owned(), i))
    }

    #[test]
    fn the_server_takes_config_overrides_and_feature_switches_only() {
        assert_eq!(refused(&[]), None);
        assert_eq!(
            refused(&["-c", "model_reasoning_effort=low", "--config=a=1", "-cb=2"]),
            None
        );
        assert_eq!(refused(&["--enable", "web_search", "--disable=x"]), None);
        assert_eq!(
            refused(&["-c", "a=1", "--dangerously-bypass-approvals-and-sandbox"]),
            Some((
                "--dangerously-bypass-approvals-and-sandbox".into(),
                Some("--approval yolo")
            ))
        );
        assert_eq!(
            refused(&["--sandbox", "workspace-write"]),
            Some(("--sandbox".into(), Some("-- -c sandbox_mode=MODE")))
        );
        assert_eq!(
            refused(&["--color", "never"]),
            Some(("--color".into(), None))
        );
        // `-c` without its value is not an override.
        assert_eq!(refused(&["-c"]), Some(("-c".into(), None)));
    }
}
