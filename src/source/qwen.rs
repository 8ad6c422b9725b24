//! Qwen Code: `qwen -p PROMPT --output-format stream-json`, with or without
//! `--include-partial-messages`.
//!
//! Qwen Code writes Claude Code's records (`system`, `assistant`, `user`,
//! `stream_event`, `result`), read by Claude Code's translator
//! ([`super::claude`]) with these differences, its [`Flavor`]:
//! ```text
//! {"type":"system","subtype":"init","session_id":"…","model":"qwen3-coder-plus","permission_mode":"yolo","qwen_code_version":"0.24.4",…}
//! {"type":"stream_event","event":{"type":"goal_state","goal_state":{"v":2,"goal":null,"activity":"idle"}},…}
//! {"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":"SUBJECT"}},…}
//! {"type":"result","subtype":"error_during_execution","is_error":true,"usage":{…},"error":{"message":"[API Error: 400 …]"}}
//! ```
//! - an assistant message holds blocks of one type: a turn's text and its
//!   tool calls are two messages, and from 0.2x on only the first of a turn
//!   (and no subagent message) has a `message_start`;
//! - a thinking block's `signature` is the thought's subject, which its
//!   text begins with;
//! - `input_tokens` counts the whole input, cache reads included, and the
//!   provider is whatever OpenAI-compatible server it was pointed at;
//! - a failed run's `result` says why in `error.message`;
//! - `goal_state` and `tool_progress` stream events, kept as RAW;
//! - its tools are Gemini CLI's (`run_shell_command`, `read_file`,
//!   `edit`, …), the todo list is `todo_write`, a subagent is `agent` (or
//!   `task` before);
//! - MCP tools are deferred: the model selects them with `tool_search` and
//!   calls them through `tool_call` (`{"name":"mcp__page__pick_branch",
//!   "arguments":{…}}`); in a run given the page's tools, such a call of
//!   one of them is named by the page's tool, with the arguments it was
//!   given, once its complete line says which tool it calls.

pub use super::claude::Flavor;

/// Qwen Code's stream.
pub static QWEN: Flavor = Flavor {
    source: "qwen",
    provider: None,
    cache_outside_input: false,
    signatures: false,
    unstarted_messages: true,
    stream_events: &["goal_state", "tool_progress"],
    agent_tools: &["agent", "task"],
    todo_tool: "todo_write",
    tool_bridge: Some("tool_call"),
};

/// A fresh translator for one Qwen Code stream.
pub fn translator() -> super::claude::Claude {
    super::claude::Claude::new(&QWEN)
}
