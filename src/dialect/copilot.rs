//! GitHub Copilot CLI: `copilot -p … --output-format json`.

use std::path::Path;

use super::{AcpStart, Command, Exec, Probe, Spec, VersionProbe};
use crate::dialect::request::{Approval, RunRequest};

pub static SPEC: Spec = Spec {
    name: "copilot",
    title: "GitHub Copilot CLI",
    about: "GitHub Copilot CLI: `copilot -p … --output-format json`",
    program: "copilot",
    package: "@github/copilot",
    env_var: "AGUI_COPILOT_CLI",
    translator: || Box::new(crate::source::copilot::Copilot::default()),
    detect: writes,
    command: Some(Command::Exec(Exec {
        argv,
        deny_file: None,
    })),
    exit_status: |_| None,
    tools: crate::agui::tools::COPILOT,
    acp: Some(AcpStart {
        argv: acp_argv,
        ask_env: None,
        live: None,
        session_model: false,
    }),
};

/// Its session events, `{type, data, id, timestamp, …}` (Codex's event
/// types have dots too, but never `data`), and its `result` with
/// `exitCode`.
pub(super) fn writes(p: &Probe) -> bool {
    match p.kind() {
        Some("result") => p.has("exitCode"),
        Some(_) => p.has("data") && p.has("id") && p.has("timestamp"),
        None => false,
    }
}

/// `copilot --acp`, with the model and the tools on its command line; the
/// approvals are the client's ([`crate::converse::acp`]).
fn acp_argv(a: &RunRequest, _: &VersionProbe<'_>) -> anyhow::Result<Vec<String>> {
    let mut v = vec!["--acp".to_owned()];
    if let Some(m) = &a.model {
        v.push(format!("--model={m}"));
    }
    if let Some(e) = &a.effort {
        v.push(format!("--reasoning-effort={e}"));
    }
    if a.max_turns.is_some() {
        anyhow::bail!("copilot has no option that limits the number of turns");
    }
    v.extend(a.allow_tool.iter().map(|t| format!("--allow-tool={t}")));
    v.extend(a.deny_tool.iter().map(|t| format!("--deny-tool={t}")));
    v.extend(a.extra.iter().cloned());
    Ok(v)
}

fn argv(a: &RunRequest, prompt: &str, _: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let mut v: Vec<String> = Vec::new();
    let s = |x: &str| x.to_owned();
    // Options that take a value take one that begins with `-` only in the
    // `=` form.
    v.push(format!("--prompt={prompt}"));
    v.extend([s("--output-format"), s("json")]);
    if let Some(m) = &a.model {
        v.push(format!("--model={m}"));
    }
    if let Some(e) = &a.effort {
        v.push(format!("--reasoning-effort={e}"));
    }
    if a.max_turns.is_some() {
        anyhow::bail!("copilot has no option that limits the number of turns");
    }
    if let Some(r) = &a.resume {
        v.push(format!("--resume={r}"));
    }
    // Lists that would take the words after them: one tool each, in the
    // `=` form.
    for t in &a.allow_tool {
        v.push(format!("--allow-tool={t}"));
    }
    for t in &a.deny_tool {
        v.push(format!("--deny-tool={t}"));
    }
    match a.approval {
        Approval::Default => {}
        // Its permission kind for file changes.
        Approval::AutoEdit => v.push(s("--allow-tool=write")),
        Approval::Yolo => v.push(s("--allow-all")),
        Approval::Ask => {
            return Err(crate::dialect::request::cannot_ask(
                SPEC.title,
                "its JSON mode has no approval channel; its approvals need ACP: --transport acp",
            ))
        }
    }
    // Images and documents, each its own option (`=`: a path may begin
    // with `-`).
    for f in &a.attachments {
        v.push(format!("--attachment={}", f.path.display()));
    }
    v.extend(a.extra.iter().cloned());
    Ok(v)
}
