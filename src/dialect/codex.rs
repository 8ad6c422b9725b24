//! OpenAI Codex CLI: `codex exec --json …` (current and legacy formats).

use std::path::Path;

use super::{Command, Exec, Probe, Spec};
use crate::dialect::request::{Approval, RunRequest};

pub static SPEC: Spec = Spec {
    name: "codex",
    title: "Codex CLI",
    about: "OpenAI Codex CLI: `codex exec --json …` (current and legacy formats)",
    program: "codex",
    package: "@openai/codex",
    env_var: "AGUI_CODEX_CLI",
    translator: || Box::new(crate::source::codex::Codex::default()),
    detect,
    command: Some(Command::Exec(Exec {
        argv,
        deny_file: None,
    })),
    exit_status: |_| None,
    tools: crate::agui::tools::CODEX,
    acp: None,
};

/// A `type` with a dot (`thread.started`, `item.completed`), `error` without
/// `severity` (Gemini's has one) or `sessionID` (OpenCode's); legacy: `{"id":…,"msg":{…}}`, the
/// `{"prompt":…}` preamble, the config summary (`model` with `provider`,
/// `sandbox`, `approval` or `workdir`).
fn detect(p: &Probe) -> bool {
    if p.has("type") {
        return match p.kind() {
            Some("error") => !p.has("severity") && !super::opencode::writes(p),
            Some(k) => k.contains('.') && !super::copilot::writes(p),
            None => false,
        };
    }
    let legacy_event = p.has("id") && p.has("msg");
    let preamble = p.has("prompt")
        || (p.has("model")
            && ["provider", "sandbox", "approval", "workdir"]
                .iter()
                .any(|k| p.has(k)));
    legacy_event || preamble
}

fn argv(a: &RunRequest, prompt: &str, _: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let mut v: Vec<String> = Vec::new();
    let s = |x: &str| x.to_owned();
    v.extend([s("exec"), s("--json"), s("--skip-git-repo-check")]);
    if let Some(m) = &a.model {
        v.extend([s("--model"), m.clone()]);
    }
    if let Some(e) = &a.effort {
        v.extend([s("-c"), format!("model_reasoning_effort={e}")]);
    }
    if let Some(d) = &a.cwd {
        // The CLI already runs in DIR: a relative --cd would be taken from
        // there a second time.
        let d = std::path::absolute(d).unwrap_or_else(|_| d.clone());
        v.extend([s("--cd"), d.display().to_string()]);
    }
    match a.approval {
        Approval::Default => {}
        Approval::AutoEdit => v.push(s("--full-auto")),
        Approval::Yolo => v.push(s("--dangerously-bypass-approvals-and-sandbox")),
        Approval::Ask => anyhow::bail!(
            "--approval ask: {} cannot ask over `codex exec --json` (--transport exec); its app-server can (--transport app-server or auto)",
            SPEC.title
        ),
    }
    if a.max_turns.is_some() {
        anyhow::bail!("codex has no flag for a turn limit");
    }
    if !a.allow_tool.is_empty() || !a.deny_tool.is_empty() {
        anyhow::bail!("codex cannot allow or forbid single tools; its sandbox and approval policy (--approval, or -- --sandbox MODE) decide what runs");
    }
    v.extend(a.extra.iter().cloned());
    if let Some(r) = &a.resume {
        v.extend([s("resume"), r.clone()]);
    }
    // Last, after `--`: a prompt that begins with `-`, or that is a word
    // like `resume` or `review`, is never read as an option or a subcommand.
    v.extend([s("--"), s(prompt)]);
    Ok(v)
}
