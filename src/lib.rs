//! agui-translate: coding-agent CLI streams in, AG-UI 1.0 events out.
//!
//! The modules are layers, each importing only its own layer and the ones
//! below it (docs/architecture.md; `cargo test --test layers` checks it).
//! Top to bottom, as declared here:
//!
//! - **commands**: [`command`] runs what the command line ([`cli`]) names;
//!   [`jobs`] translates the filter's FILE arguments; [`fuzzing`] is the
//!   fuzzers' entry point.
//! - **process**: `serve` ([`serve`], its HTTP in [`http`], what it keeps of each
//!   thread in [`threads`]), `run`
//!   ([`spawn`]), the client of a CLI's server ([`appserver`]), Claude
//!   Code's control protocol ([`control`]), a CLI's approval requests as
//!   interrupts ([`ask`]), and the
//!   child process ([`supervise`], its stderr in [`stderr`], secrets hidden
//!   by [`redact`]).
//! - **filter loop**: [`run`] reads lines into a translator and hands the
//!   events to the output.
//! - **dialect table**: one table per CLI ([`dialect`]), the one place a
//!   dialect is bound to its translator and its command, over the neutral
//!   [`request`] types.
//! - **translators**: [`source`], one per CLI's stream format.
//! - **writer**: the AG-UI events ([`agui`]) and the canonical tool names
//!   ([`tools`]).
//! - **bytes and JSON**: the AG-UI validator ([`check`], [`schema`]), lines
//!   ([`lines`]), JSON in place ([`json`]), small stores ([`held`],
//!   [`closer`]), the signals caught ([`interrupt`]) and fresh ids
//!   ([`uuid`]).

pub mod cli;
pub mod command;
pub mod fuzzing;
pub mod jobs;

pub mod appserver;
pub mod ask;
pub mod control;
pub mod http;
pub mod redact;
pub mod serve;
pub mod spawn;
pub mod stderr;
pub mod supervise;
pub mod threads;

pub mod run;

pub mod dialect;
pub mod request;

pub mod source;

pub mod agui;
pub mod tools;

pub mod check;
pub mod closer;
pub mod held;
pub mod interrupt;
pub mod json;
pub mod lines;
pub mod schema;
pub mod uuid;
