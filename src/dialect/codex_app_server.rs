//! OpenAI Codex CLI's app-server: `codex app-server`, JSON-RPC 2.0 over stdio.

use super::{Client, Command, Probe, Spec};
use crate::request::RunRequest;

pub static SPEC: Spec = Spec {
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
    })),
    exit_status: |_| None,
    tools: crate::tools::CODEX,
};

/// No `type`: a notification or request (`method`), or a response (`id`
/// with `result` or `error`).
fn detect(p: &Probe) -> bool {
    !p.has("type") && (p.has("method") || (p.has("id") && (p.has("result") || p.has("error"))))
}

/// `codex app-server`, with the arguments after `--` (`-c key=value`
/// overrides). The model, directory, approval policy, sandbox and session
/// go in the JSON-RPC requests ([`crate::appserver`]).
fn argv(a: &RunRequest) -> anyhow::Result<Vec<String>> {
    if a.max_turns.is_some() {
        anyhow::bail!("codex has no setting for a turn limit");
    }
    if !a.allow_tool.is_empty() || !a.deny_tool.is_empty() {
        anyhow::bail!("codex cannot allow or forbid single tools; its sandbox and approval policy (--approval, or -- -c sandbox_mode=MODE) decide what runs");
    }
    let mut v = vec!["app-server".to_owned()];
    v.extend(a.extra.iter().cloned());
    Ok(v)
}
