//! What a page gives besides its prompt, checked as input from the
//! network: its own tools (`RunAgentInput.tools`, served to the CLI where
//! the CLI can take them), its context and state (told to the model before
//! the prompt, the same way for every CLI), and its answers to the calls of
//! its tools (the `role: "tool"` messages after the last user message,
//! handed to the run that waits for them).

use std::io::Write;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::converse::mcp::{self, Text, MAX_ANSWER};
use crate::serve::input::{id_ok, RunAgentInput};

/// The most context entries a page may give.
pub(super) const MAX_CONTEXT_ITEMS: usize = 128;
/// The most bytes of context (descriptions and values together).
pub(super) const MAX_CONTEXT: usize = 64 * 1024;
/// The largest state (bytes of JSON) told to the model.
pub(super) const MAX_STATE: usize = 64 * 1024;

/// What the page gives, checked.
pub(super) struct Page {
    /// Its tools, as JSON, when the CLI can take them and there are some.
    pub(super) tools: Option<String>,
    /// The block told to the model before the prompt, if any.
    context: Option<String>,
}

#[derive(Deserialize)]
struct ContextItem {
    description: String,
    value: String,
}

impl Page {
    /// The page's tools, context, state and answers in `input`, checked for
    /// a server of `cli`; `Err` says which field and why (a `400`).
    pub(super) fn check(
        input: &RunAgentInput,
        cli: crate::dialect::Dialect,
    ) -> Result<Self, String> {
        let tools = match input.tools.map(RawValue::get) {
            None | Some("null") => None,
            Some(json) => {
                let tools = mcp::check_tools(json, cli.spec().tools)?;
                if tools.is_empty() {
                    None
                } else if !takes_tools(cli) {
                    let _ = writeln!(
                        std::io::stderr(),
                        "agui-translate: serve: {} cannot take the page's tools yet (only claude and codex can): the run goes on without its {} tools",
                        cli.name(),
                        tools.len()
                    );
                    None
                } else {
                    Some(serde_json::to_string(&tools).expect("serializable"))
                }
            }
        };
        for (id, content) in &input.messages.1 {
            answer_text(id, *content)?;
        }
        Ok(Page {
            tools,
            context: context_block(input.context, input.state)?,
        })
    }

    /// The prompt as the model gets it: the context block, then `prompt`.
    pub(super) fn prompt(&self, prompt: String) -> String {
        match &self.context {
            Some(c) => format!("{c}{prompt}"),
            None => prompt,
        }
    }
}

/// Whether serve offers `cli` the page's tools (Codex over its
/// app-server, which `run` then picks).
pub(super) fn takes_tools(cli: crate::dialect::Dialect) -> bool {
    matches!(cli.name(), "claude" | "codex")
}

/// The text of the answer to tool call `id`: its content (a string, or
/// text parts), at most [`MAX_ANSWER`] bytes.
fn answer_text(id: &str, content: Option<&RawValue>) -> Result<String, String> {
    if !id_ok(id) {
        return Err(
            "a tool message's toolCallId must be 1 to 1024 bytes without control characters".into(),
        );
    }
    let Some(content) = content else {
        return Ok(String::new());
    };
    if content.get().len() > 2 * MAX_ANSWER {
        return Err(format!(
            "the answer to tool call {id:?}: more than {MAX_ANSWER} bytes"
        ));
    }
    let Text(text) = serde_json::from_str(content.get()).map_err(|_| {
        format!("the answer to tool call {id:?}: content is neither a string nor an array of parts")
    })?;
    if text.len() > MAX_ANSWER {
        return Err(format!(
            "the answer to tool call {id:?}: {} bytes, more than {MAX_ANSWER}",
            text.len()
        ));
    }
    Ok(text)
}

/// The block told to the model before the prompt: each context entry on a
/// line of its own, then the state (when it is not empty). `Err` when the
/// context is not a list of `{description, value}` strings, holds more
/// than [`MAX_CONTEXT_ITEMS`] entries or [`MAX_CONTEXT`] bytes, or the
/// state is larger than [`MAX_STATE`].
fn context_block(
    context: Option<&RawValue>,
    state: Option<&RawValue>,
) -> Result<Option<String>, String> {
    let items: Vec<ContextItem> = match context.map(RawValue::get) {
        None | Some("null") => Vec::new(),
        Some(json) => serde_json::from_str(json)
            .map_err(|e| format!("context: not an array of {{description, value}} strings: {e}"))?,
    };
    if items.len() > MAX_CONTEXT_ITEMS {
        return Err(format!(
            "context: {} entries, more than the {MAX_CONTEXT_ITEMS} a page may give",
            items.len()
        ));
    }
    let size: usize = items
        .iter()
        .map(|i| i.description.len() + i.value.len())
        .sum();
    if size > MAX_CONTEXT {
        return Err(format!("context: {size} bytes, more than {MAX_CONTEXT}"));
    }
    let state = state
        .map(|s| s.get().trim())
        .filter(|s| !matches!(*s, "null" | "{}" | "[]" | "\"\""));
    if let Some(s) = state {
        if s.len() > MAX_STATE {
            return Err(format!("state: {} bytes, more than {MAX_STATE}", s.len()));
        }
    }
    if items.is_empty() && state.is_none() {
        return Ok(None);
    }
    let mut block = String::from("<context from the application>\n");
    for i in &items {
        block.push_str(&format!("{}: {}\n", i.description.trim(), i.value.trim()));
    }
    if let Some(s) = state {
        let one_line = s.replace(['\n', '\r'], " ");
        block.push_str(&format!("The application's state (JSON): {one_line}\n"));
    }
    block.push_str("</context from the application>\n\n");
    Ok(Some(block))
}

/// The fields a waiting run reads besides the resume, to be added to its
/// line: `,"toolResults":[{"toolCallId","content"}],"lastRole":…` (each
/// content as the page's text), or nothing when the request has no
/// messages.
pub(super) fn answer_fields(input: &RunAgentInput) -> Vec<u8> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer<'a> {
        tool_call_id: &'a str,
        content: String,
    }
    let msgs = &input.messages;
    let Some(role) = &msgs.2 else {
        return Vec::new();
    };
    let answers: Vec<Answer> = msgs
        .1
        .iter()
        .map(|(id, c)| Answer {
            tool_call_id: id,
            content: answer_text(id, *c).unwrap_or_default(),
        })
        .collect();
    let mut v = b",\"toolResults\":".to_vec();
    serde_json::to_writer(&mut v, &answers).expect("serializable");
    v.extend_from_slice(b",\"lastRole\":");
    serde_json::to_writer(&mut v, role).expect("serializable");
    v
}

/// Whether the request answers calls of the page's tools: its last message
/// is a `role: "tool"` one after the last user message.
pub(super) fn answers_calls(input: &RunAgentInput) -> bool {
    input.messages.2.as_deref() == Some("tool") && !input.messages.1.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: &str) -> RunAgentInput<'_> {
        serde_json::from_str(json).unwrap()
    }

    fn claude() -> crate::dialect::Dialect {
        crate::dialect::Dialect::named("claude").unwrap()
    }

    #[test]
    fn context_and_state_come_before_the_prompt() {
        let i = input(
            r#"{"threadId":"t","context":[{"description":"User's name","value":"Ada"},{"description":"Open file","value":"src/lib.rs"}],"state":{"count":2}}"#,
        );
        let page = Page::check(&i, claude()).unwrap();
        assert_eq!(
            page.prompt("Hi".into()),
            "<context from the application>\nUser's name: Ada\nOpen file: src/lib.rs\nThe application's state (JSON): {\"count\":2}\n</context from the application>\n\nHi"
        );
        let none = Page::check(
            &input(r#"{"threadId":"t","context":[],"state":{}}"#),
            claude(),
        )
        .unwrap();
        assert_eq!(none.prompt("Hi".into()), "Hi");
    }

    #[test]
    fn each_field_has_its_limit() {
        let why = |json: &str| Page::check(&input(json), claude()).err().unwrap();
        assert!(why(r#"{"threadId":"t","context":{"a":1}}"#).starts_with("context: not an array"));
        let many = format!(
            r#"{{"threadId":"t","context":[{}]}}"#,
            vec![r#"{"description":"d","value":"v"}"#; MAX_CONTEXT_ITEMS + 1].join(",")
        );
        assert!(why(&many).contains("129 entries"));
        let big = format!(
            r#"{{"threadId":"t","context":[{{"description":"d","value":"{}"}}]}}"#,
            "a".repeat(MAX_CONTEXT)
        );
        assert!(why(&big).contains("more than 65536"));
        let state = format!(
            r#"{{"threadId":"t","state":{{"a":"{}"}}}}"#,
            "a".repeat(MAX_STATE)
        );
        assert!(why(&state).starts_with("state:"));
        assert!(why(r#"{"threadId":"t","tools":[{"name":"Bash"}]}"#)
            .contains("the CLI has a tool of that name"));
        let answer = format!(
            r#"{{"threadId":"t","messages":[{{"role":"user","content":"x"}},{{"role":"tool","toolCallId":"c","content":"{}"}}]}}"#,
            "a".repeat(MAX_ANSWER + 1)
        );
        assert!(why(&answer).contains("the answer to tool call \"c\""));
    }

    #[test]
    fn the_answers_are_the_tool_messages_after_the_last_user_message() {
        let i = input(
            r#"{"threadId":"t","messages":[
                {"role":"tool","toolCallId":"old","content":"x"},
                {"role":"user","content":"go"},
                {"role":"assistant","toolCalls":[]},
                {"role":"tool","toolCallId":"a","content":[{"type":"text","text":"A"}]},
                {"role":"tool","toolCallId":"b","content":"B"}]}"#,
        );
        assert!(answers_calls(&i));
        assert_eq!(
            String::from_utf8(answer_fields(&i)).unwrap(),
            r#","toolResults":[{"toolCallId":"a","content":"A"},{"toolCallId":"b","content":"B"}],"lastRole":"tool""#
        );
        let new_turn = input(
            r#"{"threadId":"t","messages":[{"role":"tool","toolCallId":"a","content":"A"},{"role":"user","content":"more"}]}"#,
        );
        assert!(!answers_calls(&new_turn));
        assert!(String::from_utf8(answer_fields(&new_turn))
            .unwrap()
            .ends_with(r#""toolResults":[],"lastRole":"user""#));
    }
}
