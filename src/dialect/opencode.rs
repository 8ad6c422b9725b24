//! OpenCode: `opencode run --format json …`, or `opencode acp`.

use std::path::Path;

use super::{AcpStart, Command, Exec, Live, Probe, Spec, VersionProbe};
use crate::dialect::request::{Approval, RunRequest};

pub static SPEC: Spec = Spec {
    name: "opencode",
    title: "OpenCode",
    about: "OpenCode: `opencode run --format json …`",
    program: "opencode",
    package: "opencode-ai",
    env_var: "AGUI_OPENCODE_CLI",
    translator: || Box::new(crate::source::opencode::OpenCode::default()),
    detect: writes,
    command: Some(Command::Exec(Exec {
        argv,
        deny_file: None,
    })),
    exit_status: |_| None,
    tools: crate::agui::tools::OPENCODE,
    acp: Some(AcpStart {
        argv: acp_argv,
        // It allows commands and edits unless its configuration says ask.
        ask_env: Some(("OPENCODE_PERMISSION", r#"{"bash":"ask","edit":"ask"}"#)),
        // `run --format json` writes each text part whole.
        live: Some(Live {
            since: (1, 18, 33),
            keeps_stream,
        }),
        // `session/set_config_option`, the option `model` its `session/new`
        // answer offers (checked with 1.18.33).
        session_model: true,
    }),
};

/// Every record: `{type, timestamp, sessionID, …}` (no other CLI writes a
/// `sessionID`; Gemini CLI's `tool_use` and Codex's `error` share a type
/// with two of them).
pub(super) fn writes(p: &Probe) -> bool {
    p.kind().is_some() && p.has("sessionID") && p.has("timestamp")
}

/// `opencode acp`: the tools' permissions are its configuration's; the
/// model is chosen in the session and the approvals are the client's
/// ([`crate::converse::acp`]).
fn acp_argv(a: &RunRequest, _: &VersionProbe<'_>) -> anyhow::Result<Vec<String>> {
    if a.max_turns.is_some() {
        anyhow::bail!("opencode has no option that limits the number of turns");
    }
    if !a.allow_tool.is_empty() || !a.deny_tool.is_empty() {
        anyhow::bail!(
            "opencode takes its tool permissions from its configuration (the `permission` of opencode.json), not from its command line"
        );
    }
    let mut v = vec!["acp".to_owned()];
    v.extend(a.extra.iter().cloned());
    Ok(v)
}

/// What only `opencode run --format json` takes of a run, if the run has
/// it: `auto` then keeps that mode.
fn keeps_stream(a: &RunRequest) -> Option<&'static str> {
    if !a.attachments.is_empty() {
        Some("--attach (its --file takes images and PDFs; ACP images only)")
    } else if a.page_tools {
        Some("--page-tools (the page's tools reach it in its JSON mode, over HTTP)")
    } else if !a.extra.is_empty() {
        Some("arguments after `--` (options of `opencode run`)")
    } else {
        None
    }
}

fn argv(a: &RunRequest, prompt: &str, _: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let s = |x: &str| x.to_owned();
    // Reasoning is written only with --thinking.
    let mut v: Vec<String> = vec![s("run"), s("--format"), s("json"), s("--thinking")];
    if let Some(m) = &a.model {
        v.push(format!("--model={m}"));
    }
    if let Some(e) = &a.effort {
        // Its model's variant: the provider's reasoning effort.
        v.push(format!("--variant={e}"));
    }
    if a.max_turns.is_some() {
        anyhow::bail!("opencode has no option that limits the number of turns");
    }
    if !a.allow_tool.is_empty() || !a.deny_tool.is_empty() {
        anyhow::bail!(
            "opencode takes its tool permissions from its configuration (the `permission` of opencode.json), not from its command line"
        );
    }
    if let Some(r) = &a.resume {
        v.push(format!("--session={r}"));
    }
    match a.approval {
        // Without --auto, `opencode run` rejects every permission it would ask for.
        Approval::Default => {}
        Approval::AutoEdit => anyhow::bail!(
            "opencode has no option that approves only edits (--approval yolo passes --auto)"
        ),
        Approval::Yolo => v.push(s("--auto")),
        Approval::Ask => {
            return Err(crate::dialect::request::cannot_ask(
                SPEC.title,
                "`opencode run` refuses whatever it would ask about: it has no approval channel; its approvals need ACP: --transport acp",
            ))
        }
    }
    v.extend(a.extra.iter().cloned());
    // The message is one positional argument (after `--` when it begins
    // with `-`, so that it is not taken for an option). Not word by word:
    // after `--` a word that is a number would reach OpenCode as one, which
    // it cannot take; as one argument, OpenCode puts quotes around a
    // message that holds a space, as it does for one typed in a shell.
    // `--file` takes every word after it up to the next option: the files
    // come after the message, or before the `--` that precedes it.
    let files = a
        .attachments
        .iter()
        .map(|f| format!("--file={}", f.path.display()));
    if prompt.starts_with('-') {
        v.extend(files);
        v.push(s("--"));
        v.push(prompt.to_owned());
    } else {
        v.push(prompt.to_owned());
        v.extend(files);
    }
    Ok(v)
}
