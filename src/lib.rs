//! agui-translate: coding-agent CLI streams in, AG-UI 1.0 events out.
//!
//! The folders of `src/` are layers, each importing only its own layer and
//! the ones below it (docs/architecture.md; `cargo test --test layers`
//! checks it). Top to bottom, as declared here:
//!
//! - **commands**: [`command`] runs what the command line ([`cli`]) names;
//!   [`jobs`] translates the filter's FILE arguments; [`fuzzing`] is the
//!   fuzzers' entry point.
//! - **serve**: [`serve`], the HTTP endpoint: its door, its requests, who
//!   may call, its threads and the runs waiting for an answer.
//! - **process**: [`process`], the CLI's process: `run` started, supervised,
//!   its stderr kept with secrets hidden.
//! - **conversations**: [`converse`], what is said with a running CLI:
//!   Claude Code's control protocol, the app-server client, approvals.
//! - **filter loop**: [`run`] reads lines into a translator and hands the
//!   events to the output.
//! - **dialect table**: one table per CLI ([`dialect`]), the one place a
//!   dialect is bound to its translator and its command, over the neutral
//!   [`dialect::request`] types.
//! - **translators**: [`source`], one per CLI's stream format.
//! - **writer**: the AG-UI events ([`agui`]) and the canonical tool names
//!   ([`agui::tools`]).
//! - **validation**: the AG-UI validator ([`check`]) and its schema.
//! - **basics**: [`base`]: lines, JSON in place, small stores, the signals
//!   caught, fresh ids, files written whole.

pub mod cli;
pub mod command;
pub mod fuzzing;
pub mod jobs;

pub mod serve;

pub mod process;

pub mod converse;

pub mod run;

pub mod dialect;

pub mod source;

pub mod agui;

pub mod check;

pub mod base;
