//! Qwen Code: `qwen -p … --output-format stream-json`.

use std::path::Path;

use super::{AcpStart, Command, Exec, Probe, Spec, VersionProbe};
use crate::agui::code;
use crate::dialect::request::{Approval, RunRequest};

pub static SPEC: Spec = Spec {
    name: "qwen",
    title: "Qwen Code",
    about: "Qwen Code: `qwen -p … --output-format stream-json`",
    program: "qwen",
    package: "@qwen-code/qwen-code",
    env_var: "AGUI_QWEN_CLI",
    translator: || Box::new(crate::source::qwen::translator()),
    detect: writes,
    command: Some(Command::Exec(Exec {
        argv,
        deny_file: None,
    })),
    exit_status,
    tools: crate::agui::tools::QWEN,
    acp: Some(AcpStart {
        argv: acp_argv,
        ask_env: None,
        live: None,
        session_model: false,
    }),
};

/// Its `system` `init` record, the only one Claude Code's records do not
/// share: it names the version (`qwen_code_version`).
pub(super) fn writes(p: &Probe) -> bool {
    p.kind() == Some("system") && p.has("qwen_code_version")
}

/// `qwen --acp`: its model, turn limit and tools on its command line; with
/// `--approval ask`, `--approval-mode default` (its ACP mode otherwise
/// lets a classifier decide instead of asking).
fn acp_argv(a: &RunRequest, _: &VersionProbe<'_>) -> anyhow::Result<Vec<String>> {
    let s = |x: &str| x.to_owned();
    let mut v = vec![s("--acp")];
    if let Some(m) = &a.model {
        v.extend([s("--model"), m.clone()]);
    }
    if a.effort.is_some() {
        return Err(crate::dialect::request::no_effort(SPEC.title));
    }
    if let Some(n) = a.max_turns {
        v.extend([s("--max-session-turns"), n.to_string()]);
    }
    tool_lists(&mut v, a)?;
    if a.approval == Approval::Ask {
        v.extend([s("--approval-mode"), s("default")]);
    }
    v.extend(a.extra.iter().cloned());
    Ok(v)
}

/// `--allowed-tools=T` and `--exclude-tools=T`, one name each.
fn tool_lists(v: &mut Vec<String>, a: &RunRequest) -> anyhow::Result<()> {
    // Both options are lists that split their values at commas: one name
    // each, in the `=` form, which takes nothing after it.
    for (option, tools) in [
        ("--allowed-tools", &a.allow_tool),
        ("--exclude-tools", &a.deny_tool),
    ] {
        for t in tools {
            if t.contains(',') {
                anyhow::bail!("qwen cannot take a tool name with a comma ({t:?})");
            }
            v.push(format!("{option}={t}"));
        }
    }
    Ok(())
}

fn argv(a: &RunRequest, prompt: &str, _: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let mut v: Vec<String> = Vec::new();
    let s = |x: &str| x.to_owned();
    if a.page_tools {
        // The control layer: the prompt goes in on stdin, after the host's
        // `initialize` that declares the page's server.
        v.extend([s("--input-format"), s("stream-json")]);
    } else {
        super::gemini::prompt_option(&mut v, prompt);
    }
    v.extend([
        s("--output-format"),
        s("stream-json"),
        s("--include-partial-messages"),
    ]);
    if let Some(m) = &a.model {
        v.extend([s("--model"), m.clone()]);
    }
    if a.effort.is_some() {
        return Err(crate::dialect::request::no_effort(SPEC.title));
    }
    if let Some(n) = a.max_turns {
        v.extend([s("--max-session-turns"), n.to_string()]);
    }
    if let Some(r) = &a.resume {
        v.extend([s("--resume"), r.clone()]);
    }
    tool_lists(&mut v, a)?;
    match a.approval {
        Approval::Default => {}
        Approval::AutoEdit => v.extend([s("--approval-mode"), s("auto-edit")]),
        Approval::Yolo => v.extend([s("--approval-mode"), s("yolo")]),
        Approval::Ask => return Err(crate::dialect::request::cannot_ask(
            SPEC.title,
            "its stream-json mode has no approval channel; its approvals need ACP: --transport acp",
        )),
    }
    v.extend(a.extra.iter().cloned());
    Ok(v)
}

/// Qwen Code's fatal errors (its `Fatal…Error` exit codes).
fn exit_status(status: i32) -> Option<(&'static str, String)> {
    Some(match status {
        42 => (code::CLI_ERROR, "the input was rejected".into()),
        44 => (code::CLI_ERROR, "the sandbox failed".into()),
        52 => (code::CLI_ERROR, "the configuration is invalid".into()),
        53 => (code::MAX_TURNS, "the session turn limit was reached".into()),
        55 => (
            code::CLI_ERROR,
            "a budget was exceeded (--max-wall-time or --max-tool-calls)".into(),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_mean_something() {
        assert_eq!(exit_status(53).unwrap().0, code::MAX_TURNS);
        assert!(exit_status(55).unwrap().1.contains("--max-wall-time"));
        assert_eq!(exit_status(1), None);
        assert_eq!(exit_status(130), None);
    }
}
