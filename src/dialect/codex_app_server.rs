//! OpenAI Codex CLI's app-server: `codex app-server`, JSON-RPC 2.0 over stdio.

use super::{Probe, Spec};

pub static SPEC: Spec = Spec {
    name: "codex-app-server",
    title: "Codex app-server",
    about: "Codex app-server: the JSON-RPC stdout of `codex app-server`",
    program: "codex",
    package: "@openai/codex",
    env_var: "AGUI_CODEX_CLI",
    translator: || Box::new(crate::source::codex_app_server::CodexAppServer::default()),
    detect,
    command: None,
    exit_status: |_| None,
    tools: super::codex::TOOLS,
};

/// No `type`: a notification or request (`method`), or a response (`id`
/// with `result` or `error`).
fn detect(p: &Probe) -> bool {
    !p.has("type") && (p.has("method") || (p.has("id") && (p.has("result") || p.has("error"))))
}
