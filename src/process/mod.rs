//! The CLI's process: `agui-translate run` ([`spawn`]) starts the CLI,
//! feeds its stream through the filter loop and makes the way it ended part
//! of the stream; [`supervise`] keeps the child (process group, signals,
//! timeouts), [`stderr`] its last lines and [`redact`] takes secrets out of
//! them; [`transcript`] reads back what the CLI itself kept of a session
//! (a file of its own, or its app-server asked), for a thread whose
//! history `serve` did not keep.
//!
//! What is said with a running CLI (its control protocol, the app-server,
//! approvals) is in [`crate::converse`]; this folder never speaks HTTP and
//! never parses what a CLI writes beyond handing it to a translator (a
//! transcript's records are told apart by their type, and the items of a
//! Codex thread put in the notifications that carry them, no more).

pub mod redact;
pub mod spawn;
pub mod stderr;
pub mod supervise;
pub mod transcript;
