//! agui-translate: coding-agent CLI streams in, AG-UI 1.0 events out.
//!
//! Data flows one way: [`lines`] splits the input, a translator in [`source`]
//! reads each line and writes events through the [`agui::Emitter`], and
//! [`run`] hands the output to stdout and decides when to flush. The binary
//! (`main.rs`) only parses arguments and maps errors to exit codes.

pub mod agui;
pub mod appserver;
pub mod check;
pub mod cli;
pub mod closer;
pub mod command;
pub mod dialect;
pub mod fuzzing;
pub mod held;
pub mod interrupt;
pub mod jobs;
pub mod json;
pub mod lines;
pub mod redact;
pub mod request;
pub mod run;
pub mod schema;
pub mod serve;
pub mod source;
pub mod spawn;
pub mod stderr;
pub mod supervise;
pub mod tools;
