//! Gemini CLI: `gemini -p … --output-format stream-json`.

use std::path::Path;

use super::{AcpStart, Command, DenyFile, Exec, Probe, Spec, VersionProbe};
use crate::agui::code;
use crate::dialect::request::{Approval, RunRequest};

pub static SPEC: Spec = Spec {
    name: "gemini",
    title: "Gemini CLI",
    about: "Gemini CLI: `gemini -p … --output-format stream-json`",
    program: "gemini",
    package: "@google/gemini-cli",
    env_var: "AGUI_GEMINI_CLI",
    translator: || Box::new(crate::source::gemini::Gemini::default()),
    detect,
    command: Some(Command::Exec(Exec {
        argv,
        deny_file: Some(DenyFile {
            ext: "toml",
            contents: deny_policy,
        }),
    })),
    exit_status,
    tools: crate::agui::tools::GEMINI,
    acp: Some(AcpStart {
        argv: acp_argv,
        ask_env: None,
        live: None,
        session_model: false,
    }),
};

/// `{"type":"init","session_id":…}`, `message`/`tool_use`/`tool_result`
/// records (OpenCode's `tool_use` has a `sessionID`), `result` with
/// `status` (Claude's has `subtype`), `error` with `severity`.
fn detect(p: &Probe) -> bool {
    match p.kind() {
        Some("init") => p.has("session_id"),
        Some("message") => p.has("role"),
        Some("tool_use" | "tool_result") => !super::opencode::writes(p),
        Some("result") => p.has("status") && !p.has("subtype"),
        Some("error") => p.has("severity"),
        _ => false,
    }
}

fn argv(a: &RunRequest, prompt: &str, policy: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let mut v: Vec<String> = Vec::new();
    let s = |x: &str| x.to_owned();
    prompt_option(&mut v, prompt);
    v.extend([s("--output-format"), s("stream-json")]);
    if let Some(m) = &a.model {
        v.extend([s("--model"), m.clone()]);
    }
    if a.effort.is_some() {
        return Err(crate::dialect::request::no_effort(SPEC.title));
    }
    if let Some(r) = &a.resume {
        v.extend([s("--resume"), r.clone()]);
    }
    if !a.allow_tool.is_empty() {
        v.extend([s("--allowed-tools"), a.allow_tool.join(",")]);
    }
    if !a.deny_tool.is_empty() {
        let Some(policy) = policy else {
            anyhow::bail!("gemini forbids tools with a policy file, and none was given");
        };
        v.extend([s("--policy"), policy.display().to_string()]);
    }
    match a.approval {
        Approval::Default => {}
        Approval::AutoEdit => v.extend([s("--approval-mode"), s("auto_edit")]),
        Approval::Yolo => v.extend([s("--approval-mode"), s("yolo")]),
        Approval::Ask => return Err(crate::dialect::request::cannot_ask(
            SPEC.title,
            "its stream-json mode has no approval channel; its approvals need ACP: --transport acp",
        )),
    }
    if a.max_turns.is_some() {
        anyhow::bail!(
            "gemini has no flag for a turn limit: set model.maxSessionTurns in its settings.json"
        );
    }
    v.extend(a.extra.iter().cloned());
    Ok(v)
}

/// `gemini --acp` (`--experimental-acp` before 0.34, an alias after), with
/// the model and the tools allowed on its command line; the approval
/// policy is the client's ([`crate::converse::acp`]).
fn acp_argv(a: &RunRequest, version: &VersionProbe<'_>) -> anyhow::Result<Vec<String>> {
    let s = |x: &str| x.to_owned();
    let flag = match version() {
        Some(v) if v < (0, 34, 0) => "--experimental-acp",
        _ => "--acp",
    };
    let mut v = vec![s(flag)];
    if let Some(m) = &a.model {
        v.extend([s("--model"), m.clone()]);
    }
    if a.effort.is_some() {
        return Err(crate::dialect::request::no_effort(SPEC.title));
    }
    if !a.allow_tool.is_empty() {
        v.extend([s("--allowed-tools"), a.allow_tool.join(",")]);
    }
    if !a.deny_tool.is_empty() {
        anyhow::bail!("gemini over ACP: --deny-tool is written as a policy file for --transport stream only; use that transport, or --approval default (every tool that asks is refused)");
    }
    if a.max_turns.is_some() {
        anyhow::bail!(
            "gemini has no flag for a turn limit: set model.maxSessionTurns in its settings.json"
        );
    }
    v.extend(a.extra.iter().cloned());
    Ok(v)
}

/// `-p PROMPT`, for Gemini CLI and the CLIs built on it (their yargs
/// takes a value that begins with `-` for an option of its own: such a
/// prompt goes in the `--prompt=` form).
pub(super) fn prompt_option(v: &mut Vec<String>, prompt: &str) {
    if prompt.starts_with('-') {
        v.push(format!("--prompt={prompt}"));
    } else {
        v.extend(["-p".to_owned(), prompt.to_owned()]);
    }
}

/// Gemini CLI's policy engine (`--policy FILE`, TOML) is its one way to
/// forbid a tool from the command line: a `deny` rule without conditions
/// removes the tool from what the model is offered, in every approval mode
/// (yolo included), and outranks the CLI's own rules.
pub fn deny_policy(tools: &[String]) -> anyhow::Result<String> {
    let mut toml = String::from("# Written by agui-translate run for --deny-tool.\n");
    for tool in tools {
        toml.push_str("\n[[rule]]\ntoolName = ");
        toml.push_str(&toml_string(tool));
        toml.push_str("\ndecision = \"deny\"\npriority = 999\n");
    }
    Ok(toml)
}

/// `s` as a TOML basic string. TOML allows no control character but tab
/// in one (DEL included): they are escaped, as are `"` and `\`.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn exit_status(status: i32) -> Option<(&'static str, String)> {
    Some(match status {
        41 => (code::AUTH_ERROR, "authentication failed".into()),
        42 => (code::CLI_ERROR, "the input was rejected".into()),
        52 => (code::CLI_ERROR, "the configuration is invalid".into()),
        53 => (code::MAX_TURNS, "the session turn limit was reached".into()),
        55 => (
            code::CLI_ERROR,
            "the folder is not trusted (GEMINI_CLI_TRUST_WORKSPACE=true or --skip-trust)".into(),
        ),
        s if (144..=255).contains(&s) => {
            // HTTP status & 0xFF: 400→144, 429→173, 500→244, …
            let http = [400, 401, 403, 404, 408, 409, 429, 500, 502, 503, 504]
                .into_iter()
                .find(|h| h & 0xFF == s)
                .map_or_else(|| "an HTTP error".to_owned(), |h| format!("HTTP {h}"));
            let code = if s == 145 || s == 147 {
                code::AUTH_ERROR
            } else {
                code::API_ERROR
            };
            (code, format!("the model API failed ({http})"))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_policy_rules() {
        let toml = deny_policy(&["run_shell_command".into(), "odd\"name\\\n".into()]).unwrap();
        assert_eq!(
            toml,
            "# Written by agui-translate run for --deny-tool.\n\
             \n[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \"deny\"\npriority = 999\n\
             \n[[rule]]\ntoolName = \"odd\\\"name\\\\\\n\"\ndecision = \"deny\"\npriority = 999\n"
        );
    }

    /// TOML forbids DEL and the C0 and C1 controls (but tab) in a basic
    /// string: a name holding one must still give a valid file.
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(toml_string("a\x7fb"), r#""a\u007Fb""#);
        assert_eq!(toml_string("\x00\x1b\u{85}"), r#""\u0000\u001B\u0085""#);
        assert_eq!(toml_string("tab\there"), r#""tab\there""#);
        assert_eq!(toml_string("ünï"), "\"ünï\"");
    }

    #[test]
    fn exit_statuses_mean_something() {
        assert_eq!(exit_status(41).unwrap().0, code::AUTH_ERROR);
        assert_eq!(exit_status(53).unwrap().0, code::MAX_TURNS);
        assert_eq!(
            exit_status(244),
            Some((code::API_ERROR, "the model API failed (HTTP 500)".into()))
        );
        assert_eq!(
            exit_status(173).unwrap().1,
            "the model API failed (HTTP 429)"
        );
        assert_eq!(exit_status(1), None);
    }
}
