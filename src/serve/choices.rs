//! What a page chooses for one run, in its `RunAgentInput`'s
//! `forwardedProps`: `model` and `effort`, checked and turned into the
//! run's arguments. Every other key of `forwardedProps` is the page's (or
//! its runtime's: CopilotKit puts `threadMetadata`, `nodeName` and
//! `properties` there) and reaches no CLI.

use std::ffi::OsString;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::dialect::Dialect;

/// The longest model name a page may give (bytes).
pub(super) const MAX_MODEL: usize = 256;

/// The efforts a page may ask for, as Codex's `model_reasoning_effort`
/// spells them.
pub(super) const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// The choices of one request, checked.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Choices {
    model: Option<String>,
    effort: Option<&'static str>,
}

/// The two keys taken from `forwardedProps`; the rest is left alone.
#[derive(Deserialize)]
struct Props<'a> {
    #[serde(default, borrow)]
    model: Option<&'a RawValue>,
    #[serde(default, borrow)]
    effort: Option<&'a RawValue>,
}

/// The choices in `forwarded` (the request's `forwardedProps`) for a run of
/// `cli` with the server's run `options` (`ask`: `--approval ask` among
/// them), or why they are refused (the `400`'s message).
pub(super) fn of(
    cli: Dialect,
    ask: bool,
    options: &[String],
    forwarded: Option<&RawValue>,
) -> Result<Choices, String> {
    // A `forwardedProps` that is not an object chooses nothing (serde
    // would take an array's items for the fields, in order).
    let props = forwarded
        .filter(|f| f.get().trim_start().starts_with('{'))
        .and_then(|f| serde_json::from_str::<Props>(f.get()).ok());
    let Some(props) = props else {
        return Ok(Choices::default());
    };
    let model = string(props.model, "model")?;
    let effort = string(props.effort, "effort")?;
    let mut c = Choices::default();
    if let Some(m) = model {
        model_ok(&m)?;
        model_taken(cli, ask, options)?;
        c.model = Some(m);
    }
    if let Some(e) = effort {
        let Some(&level) = EFFORTS.iter().find(|&&l| l == e) else {
            return Err(format!(
                "forwardedProps.effort {:?} is not one of {}",
                shown(&e),
                EFFORTS.join(", ")
            ));
        };
        effort_taken(cli, options)?;
        c.effort = Some(level);
    }
    Ok(c)
}

impl Choices {
    /// Adds the choices to the arguments of the run (`argv`, which ends
    /// with the server's run options): the model as run's `--model`, the
    /// effort among the CLI's own arguments (after `--`).
    pub(super) fn add_to(&self, argv: &mut Vec<OsString>, options: &[String]) {
        if let Some(m) = &self.model {
            // Before the run options, which may end with the CLI's own.
            let at = argv.len() - options.len();
            argv.insert(at, format!("--model={m}").into());
        }
        if let Some(e) = self.effort {
            if !options.iter().any(|o| o == "--") {
                argv.push("--".into());
            }
            argv.extend(["-c".into(), format!("model_reasoning_effort={e}").into()]);
        }
    }
}

/// The value of `forwardedProps.KEY`: none when absent or `null`, else a
/// string.
fn string(value: Option<&RawValue>, key: &str) -> Result<Option<String>, String> {
    let Some(v) = value.filter(|v| v.get() != "null") else {
        return Ok(None);
    };
    serde_json::from_str::<String>(v.get())
        .map(Some)
        .map_err(|_| format!("forwardedProps.{key} must be a string"))
}

/// A model name a CLI can take as an option's value.
fn model_ok(m: &str) -> Result<(), String> {
    let why = if m.is_empty() {
        "is empty"
    } else if m.len() > MAX_MODEL {
        "is too long"
    } else if m.starts_with('-') {
        "begins with '-' (it would be taken for an option)"
    } else if m.chars().any(char::is_control) {
        "has a control character"
    } else {
        return Ok(());
    };
    Err(format!(
        "forwardedProps.model {:?} {why}: a model is 1 to {MAX_MODEL} bytes, no control \
         characters, not beginning with '-'",
        shown(m)
    ))
}

/// Whether the run can take a model from the page, or why not.
fn model_taken(cli: Dialect, ask: bool, options: &[String]) -> Result<(), String> {
    let own = own_options(options);
    if own
        .iter()
        .any(|o| *o == "--model" || o.starts_with("--model="))
    {
        return Err(
            "forwardedProps.model: the server's run options set the model (--model); \
             a page cannot choose another"
                .into(),
        );
    }
    let acp = ask || transport(own) == Some("acp");
    match cli.name() {
        "acp" => Err(
            "forwardedProps.model: an ACP agent takes its model from its own \
                      options, not from the page"
                .into(),
        ),
        "opencode" if acp => Err("forwardedProps.model: opencode over ACP takes its model \
                                  from its configuration (opencode.json), not from the page"
            .into()),
        _ => Ok(()),
    }
}

/// Whether the run can take an effort from the page, or why not: Codex
/// alone has an option for it (`-c model_reasoning_effort=LEVEL`, on its
/// command line and its app-server's alike).
fn effort_taken(cli: Dialect, options: &[String]) -> Result<(), String> {
    if cli.name() != "codex" {
        return Err(format!(
            "forwardedProps.effort: {} has no option for a reasoning effort (codex alone \
             has one)",
            cli.spec().title
        ));
    }
    if options.iter().any(|o| o.contains("model_reasoning_effort")) {
        return Err(
            "forwardedProps.effort: the server's run options set the effort \
             (model_reasoning_effort); a page cannot choose another"
                .into(),
        );
    }
    Ok(())
}

/// The run options proper: those before `--` (after it come the CLI's).
fn own_options(options: &[String]) -> &[String] {
    let end = options
        .iter()
        .position(|o| o == "--")
        .unwrap_or(options.len());
    &options[..end]
}

/// `--transport`'s value among the run options, if given.
fn transport(own: &[String]) -> Option<&str> {
    own.iter()
        .enumerate()
        .find_map(|(i, o)| match o.strip_prefix("--transport=") {
            Some(v) => Some(v),
            None if o == "--transport" => own.get(i + 1).map(String::as_str),
            None => None,
        })
}

/// A value as a refusal shows it: its first 64 characters.
fn shown(v: &str) -> String {
    v.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(cli: &str, options: &[&str], props: &str) -> Result<Choices, String> {
        let raw: Box<RawValue> = serde_json::from_str(props).unwrap();
        let options: Vec<String> = options.iter().map(|&o| o.to_owned()).collect();
        of(Dialect::named(cli).unwrap(), false, &options, Some(&raw))
    }

    #[test]
    fn other_keys_and_other_shapes_choose_nothing() {
        for props in [
            "{}",
            r#"{"threadMetadata":{"a":1},"nodeName":"x","properties":{"model":7}}"#,
            "[1,2]",
            "\"text\"",
            "null",
            r#"{"model":null,"effort":null}"#,
        ] {
            assert_eq!(
                choose("claude", &[], props),
                Ok(Choices::default()),
                "{props}"
            );
        }
    }

    #[test]
    fn a_model_and_an_effort_become_run_and_cli_arguments() {
        let c = choose(
            "codex",
            &["--cli", "x"],
            r#"{"model":"gpt-5","effort":"high"}"#,
        )
        .unwrap();
        let options = vec!["--cli".to_owned(), "x".to_owned()];
        let mut argv: Vec<OsString> = vec!["run".into(), "--cli".into(), "x".into()];
        c.add_to(&mut argv, &options);
        assert_eq!(
            argv,
            [
                "run",
                "--model=gpt-5",
                "--cli",
                "x",
                "--",
                "-c",
                "model_reasoning_effort=high"
            ]
        );
        let options = vec!["--".to_owned(), "--foo".to_owned()];
        let mut argv: Vec<OsString> = vec!["run".into(), "--".into(), "--foo".into()];
        c.add_to(&mut argv, &options);
        assert_eq!(
            argv,
            [
                "run",
                "--model=gpt-5",
                "--",
                "--foo",
                "-c",
                "model_reasoning_effort=high"
            ]
        );
    }

    #[test]
    fn hostile_or_unknown_values_are_refused_saying_why() {
        let refused = |cli: &str, options: &[&str], props: &str, says: &str| {
            let e = choose(cli, options, props).unwrap_err();
            assert!(e.contains(says), "{props}: {e}");
        };
        refused(
            "claude",
            &[],
            r#"{"model":"--dangerously-skip-permissions"}"#,
            "begins with '-'",
        );
        refused("claude", &[], r#"{"model":"a\nb"}"#, "control character");
        refused("claude", &[], r#"{"model":""}"#, "is empty");
        let long = format!(r#"{{"model":"{}"}}"#, "m".repeat(MAX_MODEL + 1));
        refused("claude", &[], &long, "too long");
        refused("claude", &[], r#"{"model":7}"#, "must be a string");
        refused(
            "codex",
            &[],
            r#"{"effort":"extreme"}"#,
            "not one of none, minimal",
        );
        refused(
            "claude",
            &[],
            r#"{"effort":"high"}"#,
            "Claude Code has no option",
        );
        refused(
            "claude",
            &["--model", "m"],
            r#"{"model":"x"}"#,
            "run options set the model",
        );
        refused(
            "codex",
            &["--", "-c", "model_reasoning_effort=low"],
            r#"{"effort":"high"}"#,
            "set the effort",
        );
        refused(
            "opencode",
            &["--transport=acp"],
            r#"{"model":"a/b"}"#,
            "opencode over ACP",
        );
        // After `--`, `--model` is the CLI's own argument, not run's.
        assert!(choose("claude", &["--", "--model", "m"], r#"{"model":"x"}"#).is_ok());
    }
}
