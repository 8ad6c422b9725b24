//! Claude Code: `claude -p … --output-format stream-json --verbose`.

use std::path::Path;

use super::{Command, Exec, Probe, Spec};
use crate::dialect::request::{Approval, RunRequest, PAGE_SERVER};

pub static SPEC: Spec = Spec {
    name: "claude",
    title: "Claude Code",
    about: "Claude Code: `claude -p … --output-format stream-json --verbose`",
    program: "claude",
    package: "@anthropic-ai/claude-code",
    env_var: "AGUI_CLAUDE_CLI",
    translator: || Box::new(crate::source::claude::Claude::default()),
    detect,
    command: Some(Command::Exec(Exec {
        argv,
        deny_file: None,
    })),
    exit_status: |_| None,
    tools: crate::agui::tools::CLAUDE,
    acp: None,
};

/// `system` (but Qwen Code's `init`), `assistant`, `user`, `stream_event`,
/// `control_request` (its control protocol: the messages to an MCP server
/// its host answers come before `system`), and `result` with `subtype`
/// (Gemini's has `status`).
fn detect(p: &Probe) -> bool {
    match p.kind() {
        Some("result") => p.has("subtype"),
        Some("system") => !super::qwen::writes(p),
        Some("assistant" | "user" | "stream_event" | "control_request") => true,
        _ => false,
    }
}

fn argv(a: &RunRequest, prompt: &str, _: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let mut v: Vec<String> = Vec::new();
    let s = |x: &str| x.to_owned();
    v.extend([
        s("-p"),
        s("--output-format"),
        s("stream-json"),
        s("--verbose"),
        s("--include-partial-messages"),
    ]);
    if let Some(m) = &a.model {
        v.extend([s("--model"), m.clone()]);
    }
    if let Some(e) = &a.effort {
        v.extend([s("--effort"), e.clone()]);
    }
    if let Some(n) = a.max_turns {
        v.extend([s("--max-turns"), n.to_string()]);
    }
    if let Some(r) = &a.resume {
        v.extend([s("--resume"), r.clone()]);
    }
    if !a.allow_tool.is_empty() {
        v.extend([s("--allowedTools"), a.allow_tool.join(",")]);
    }
    if !a.deny_tool.is_empty() {
        v.extend([s("--disallowedTools"), a.deny_tool.join(",")]);
    }
    match a.approval {
        Approval::Default => {}
        Approval::AutoEdit => v.extend([s("--permission-mode"), s("acceptEdits")]),
        Approval::Yolo => v.push(s("--dangerously-skip-permissions")),
        // The control protocol: the prompt goes in on stdin as a user
        // message, and each permission the CLI would ask for comes out as a
        // `control_request` that the host answers.
        Approval::Ask => v.extend([s("--permission-prompt-tool"), s("stdio")]),
    }
    // Attachments go in as content blocks of a stream-json user message
    // too, on stdin.
    let talks = a.approval == Approval::Ask || a.page_tools || !a.attachments.is_empty();
    if talks {
        v.extend([s("--input-format"), s("stream-json")]);
    }
    if a.page_tools {
        // The page's tools: an MCP server the host answers over the
        // control protocol, its tools allowed (the page decides).
        v.extend([
            s("--mcp-config"),
            format!(
                r#"{{"mcpServers":{{"{PAGE_SERVER}":{{"type":"sdk","name":"{PAGE_SERVER}"}}}}}}"#
            ),
            s("--allowedTools"),
            format!("mcp__{PAGE_SERVER}"),
        ]);
    }
    v.extend(a.extra.iter().cloned());
    if !talks {
        // `-p` is a switch and the prompt an argument: last, after `--`, so
        // that neither a prompt that begins with `-` nor a variadic option
        // such as --allowedTools can take it.
        v.extend([s("--"), s(prompt)]);
    }
    Ok(v)
}
