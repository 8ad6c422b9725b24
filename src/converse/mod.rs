//! What is said with a running CLI, beyond reading its stream: Claude Code's
//! control protocol ([`control`]), the client of `codex app-server`
//! ([`appserver`]), the client of an Agent Client Protocol agent ([`acp`]),
//! the approval requests of each as AG-UI interrupts answered by resume
//! lines ([`ask`]), the page's own tools offered to the CLI, their
//! calls answered by the page ([`mcp`]; over HTTP for the CLIs that reach
//! an MCP server by URL, [`mcphttp`]), and the tool through which the
//! model changes the page's shared state ([`state`]).
//!
//! Each conversation writes events through the writer and the translators;
//! it never starts or stops a process (that is [`crate::process`]) and
//! never speaks HTTP (that is [`crate::serve`]).

pub mod acp;
pub mod appserver;
pub mod ask;
pub mod control;
pub mod mcp;
pub mod mcphttp;
pub mod state;
