//! The application's shared state (AG-UI `RunAgentInput.state`), changed
//! by the model: a tool of this program's own, [`TOOL`], offered beside
//! the page's tools (in the MCP server of [`crate::converse::mcp`], over
//! the control layer for Claude Code and Qwen Code and over HTTP
//! ([`crate::converse::mcphttp`]) for Copilot CLI and OpenCode in their
//! JSON modes and for Gemini CLI, Copilot CLI and OpenCode over ACP, and
//! among Codex's dynamic tools) when the run is given the thread's state
//! file (`--state-file`); which route takes it is decided by
//! [`crate::dialect::request::state_tool_refused`]. A call is answered at once, here, and never goes
//! to the page: its arguments' `state`, a JSON object of at most
//! [`MAX_STATE`] bytes, becomes the state, written to the file (where
//! `serve` keeps it for the thread's next runs) and streamed as
//! `STATE_SNAPSHOT` (or `STATE_DELTA`, see [`crate::agui::patch`]); anything else is an error result the model reads, and
//! nothing changes.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::converse::mcp::PageTool;

/// The tool's name (Claude Code shows it as `mcp__page__ag_ui_update_state`),
/// as the official AG-UI adapter for the Claude Agent SDK names its own.
pub const TOOL: &str = "ag_ui_update_state";

/// The largest state (bytes of JSON).
pub const MAX_STATE: usize = 64 * 1024;

/// The key of the state under which `serve` tells the page what the run
/// used: the page's and the model's state never hold it (see
/// [`without_run_info`]).
pub const RUN_INFO_KEY: &str = "agui-translate";

/// The tool, as the CLI is offered it.
pub fn tool() -> PageTool {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "state": {
                "type": "object",
                "description": "The application's whole new state: it replaces the state you were told.",
            },
        },
        "required": ["state"],
    });
    PageTool {
        name: TOOL.to_owned(),
        description: format!(
            "Change the application's shared state (the JSON you were told as \"The \
             application's state\"): give the whole new state, a JSON object of at most \
             {MAX_STATE} bytes, as `state`. The application sees it at once."
        ),
        parameters: Some(serde_json::value::to_raw_value(&schema).expect("serializable")),
    }
}

/// The most inputs of calls kept until they are shown
/// ([`State::take_inputs`]).
const MAX_INPUTS: usize = 16;

/// The thread's state, kept in its file.
pub struct State {
    file: PathBuf,
    /// A new state not streamed yet.
    unsent: Option<Box<RawValue>>,
    /// The arguments of the calls since they were last taken (`None`: a
    /// call without), the newest [`MAX_INPUTS`].
    inputs: Vec<Option<Box<RawValue>>>,
}

impl State {
    /// The state kept in `file` (written on each change).
    pub fn new(file: &Path) -> Self {
        State {
            file: file.to_owned(),
            unsent: None,
            inputs: Vec::new(),
        }
    }

    /// A call of [`TOOL`] with `arguments`: the text of its result, and
    /// whether it is an error (nothing changed).
    pub fn update(&mut self, arguments: Option<&RawValue>) -> (String, bool) {
        if self.inputs.len() >= MAX_INPUTS {
            self.inputs.remove(0);
        }
        self.inputs.push(arguments.map(ToOwned::to_owned));
        match self.new_state(arguments) {
            Ok(state) => {
                if let Err(e) = crate::base::files::write_atomic(&self.file, state.get().as_bytes())
                {
                    return (
                        format!("the state could not be kept ({e}): nothing was changed"),
                        true,
                    );
                }
                self.unsent = Some(state);
                (
                    "The application's state is now the one given.".to_owned(),
                    false,
                )
            }
            Err(why) => (why, true),
        }
    }

    /// The state a call gives, checked.
    fn new_state(&self, arguments: Option<&RawValue>) -> Result<Box<RawValue>, String> {
        #[derive(Deserialize)]
        struct Args<'a> {
            #[serde(borrow)]
            state: Option<&'a RawValue>,
        }
        let usage = format!(
            "{TOOL} takes {{\"state\": {{...}}}}: the whole new state, a JSON object; nothing was changed"
        );
        let state = arguments
            .and_then(|a| serde_json::from_str::<Args>(a.get()).ok())
            .and_then(|a| a.state)
            .filter(|s| s.get().trim_start().starts_with('{'))
            .ok_or(usage)?;
        // Compact, so that the size is the state's own.
        let mut value: serde_json::Value =
            serde_json::from_str(state.get()).map_err(|e| format!("{TOOL}: {e}"))?;
        without_run_info(&mut value);
        let compact = serde_json::to_string(&value).expect("serializable");
        if compact.len() > MAX_STATE {
            return Err(format!(
                "the new state is {} bytes, more than the {MAX_STATE} the application's state may have: nothing was changed",
                compact.len()
            ));
        }
        Ok(RawValue::from_string(compact).expect("JSON"))
    }

    /// The state changed since the last call, to be streamed.
    pub fn take_unsent(&mut self) -> Option<Box<RawValue>> {
        self.unsent.take()
    }

    /// The arguments of the calls since this was last asked, oldest first:
    /// the input of a call the stream shows without one (Gemini CLI's over
    /// ACP, see [`crate::agui::Emitter::own_call_input`]).
    pub fn take_inputs(&mut self) -> Vec<Option<Box<RawValue>>> {
        std::mem::take(&mut self.inputs)
    }
}

/// Takes [`RUN_INFO_KEY`] out of a new state: what the run used is
/// `serve`'s to say, and is not kept as the page's state.
fn without_run_info(state: &mut serde_json::Value) {
    if let Some(o) = state.as_object_mut() {
        o.remove(RUN_INFO_KEY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn a_new_state_is_kept_and_to_be_streamed_once() {
        let dir = std::env::temp_dir().join(format!("agui-state-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.state.json");
        let mut s = State::new(&file);
        let (text, error) = s.update(Some(&raw(r#"{"state": {"branch": "dev", "n": [1, 2]}}"#)));
        assert!(!error, "{text}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            r#"{"branch":"dev","n":[1,2]}"#
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            s.take_unsent().unwrap().get(),
            r#"{"branch":"dev","n":[1,2]}"#
        );
        assert!(s.take_unsent().is_none());
        // The run's information is serve's: the model cannot set it.
        let (_, error) = s.update(Some(&raw(
            r#"{"state": {"branch": "main", "agui-translate": {"model": "x"}}}"#,
        )));
        assert!(!error);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            r#"{"branch":"main"}"#
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn anything_but_a_bounded_object_is_an_error_the_model_reads() {
        let dir = std::env::temp_dir().join(format!("agui-state-bad-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.state.json");
        let mut s = State::new(&file);
        for args in [
            None,
            Some(raw("{}")),
            Some(raw(r#"{"state": [1]}"#)),
            Some(raw(r#"{"state": "x"}"#)),
            Some(raw(r#"{"branch": "dev"}"#)),
        ] {
            let (text, error) = s.update(args.as_deref());
            assert!(error);
            assert!(text.contains("takes {\"state\": {...}}"), "{text}");
        }
        let big = format!(r#"{{"state": {{"a": "{}"}}}}"#, "x".repeat(MAX_STATE));
        let (text, error) = s.update(Some(&raw(&big)));
        assert!(error);
        assert!(text.contains("more than the 65536"), "{text}");
        assert!(!file.exists(), "nothing was kept");
        assert!(s.take_unsent().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
