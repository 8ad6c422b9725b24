//! One table per CLI: everything agui-translate knows about a CLI that is
//! not its stream format. The translator (in [`crate::source`]) reads the
//! stream; the entry here says what the CLI is called, where it comes from,
//! how to tell its records, how `run` starts it and what its exit statuses
//! mean, and what its tools are called.
//!
//! This is the one place a dialect is bound to its translator and its
//! command: the translators ([`crate::source`]) and the tool names
//! ([`crate::agui::tools`]) below know nothing of this table, and `run` is given
//! a [`RunRequest`] (not the command line's options). [`for_input`] and
//! [`detect`] (`--from auto`) pick the translator.
//!
//! Adding a dialect is a file here with its [`Spec`], a line in [`ALL`], its
//! translator, and its tools' table in [`crate::agui::tools`]. Two dialects may come from one CLI (its program, package
//! and environment variable then appear in both); `run` starts those with a
//! [`Command`]: a command line whose stdout is the stream ([`Exec`]), or a
//! server this program is the client of ([`Client`]), which `run` reaches
//! through the dialect it is another transport of.

use std::fmt;
use std::path::Path;

use clap::builder::PossibleValue;

use crate::dialect::request::RunRequest;
use crate::source::Translate;

pub mod detect;
pub mod request;

mod claude;
mod codex;
mod copilot;
mod gemini;
mod jsonrpc;
mod opencode;
mod qwen;

/// Every dialect, in the order auto-detection asks them and `run --check`
/// lists them.
pub static ALL: &[&Spec] = &[
    &gemini::SPEC,
    &codex::SPEC,
    &claude::SPEC,
    &jsonrpc::CODEX_APP_SERVER,
    &qwen::SPEC,
    &copilot::SPEC,
    &opencode::SPEC,
    &jsonrpc::ACP,
];

/// The CLIs, each once, in the order of [`ALL`]: the dialects `run`
/// starts on the command line; not those that are another transport of one
/// (`codex-app-server` is Codex CLI's), nor a protocol (`acp`).
pub fn clis() -> impl Iterator<Item = Dialect> {
    Dialect::all().filter(|d| matches!(d.command, Some(Command::Exec(_))))
}

/// The CLIs' names as their makers write them, for a sentence:
/// `Gemini CLI, Codex CLI, … or OpenCode` (`last` is `or` or `and`).
pub fn titles(last: &str) -> String {
    let titles: Vec<&str> = clis().map(|d| d.title).collect();
    match titles.split_last() {
        Some((end, [])) => (*end).to_owned(),
        Some((end, rest)) => format!("{} {last} {end}", rest.join(", ")),
        None => String::new(),
    }
}

/// A fresh translator for one input stream: the forced dialect's, or one
/// that detects it.
pub fn for_input(from: FromCli) -> anyhow::Result<Box<dyn Translate>> {
    match from.dialect() {
        Some(d) => for_dialect(d),
        None => Ok(Box::new(detect::Detect::default())),
    }
}

/// A fresh translator for one input stream.
pub fn for_dialect(d: Dialect) -> anyhow::Result<Box<dyn Translate>> {
    Ok((d.translator)())
}

/// One CLI's table.
pub struct Spec {
    /// Its name for `--from` and `run`, and the `source` of its RAW events.
    pub name: &'static str,
    /// The CLI's name as its makers write it, for messages.
    pub title: &'static str,
    /// What `--from NAME` reads, for `--help`.
    pub about: &'static str,
    /// The executable `run` looks for on PATH.
    pub program: &'static str,
    /// The npm package that provides it.
    pub package: &'static str,
    /// The environment variable that names its executable.
    pub env_var: &'static str,
    /// A fresh translator for one input stream.
    pub translator: fn() -> Box<dyn Translate>,
    /// Whether a record is one only this CLI writes (for `--from auto`).
    /// The dialects' answers never overlap.
    pub detect: fn(&Probe) -> bool,
    /// How `run` starts it, if it can.
    pub command: Option<Command>,
    /// What an exit status other than 0 means, where the CLI documents it:
    /// the AG-UI error code and an explanation.
    pub exit_status: fn(i32) -> Option<(&'static str, String)>,
    /// Its tool names (and item types that are tool calls), each with its
    /// canonical name: its table in [`crate::agui::tools`].
    pub tools: &'static [(&'static str, &'static str)],
    /// How it starts as an Agent Client Protocol agent, if it can
    /// (`run --transport acp`; [`crate::converse::acp`] is its client).
    pub acp: Option<AcpStart>,
}

/// A CLI started as an Agent Client Protocol agent on stdio, this program
/// its client. The stream is an ACP transcript (the `acp` dialect's).
pub struct AcpStart {
    /// The argument list that starts the agent (the arguments after `--`
    /// last), or why the options cannot be expressed for it. `version`
    /// gives the installed version, for a CLI whose option changed name.
    pub argv: fn(&RunRequest, &VersionProbe<'_>) -> anyhow::Result<Vec<String>>,
    /// An environment variable set (unless already set) when the run asks
    /// (`--approval ask`), for a CLI that asks only when configured to.
    pub ask_env: Option<(&'static str, &'static str)>,
    /// For a CLI whose JSON mode writes text only whole: when `auto` picks
    /// ACP although the run does not ask.
    pub live: Option<Live>,
    /// Whether the run's `--model` and `--effort` are chosen in the session
    /// (`session/set_config_option`, the options `model` and the one of
    /// category `thought_level`) rather than on the agent's command line.
    pub session_model: bool,
}

/// `auto` picks ACP for a CLI whose JSON mode writes text only whole (its
/// text streams over ACP), from version `since` on, unless the run needs
/// what only the JSON mode takes.
pub struct Live {
    /// The first version checked over ACP.
    pub since: Version,
    /// What of the run only the JSON mode takes, if the run has some: the
    /// JSON mode is kept then.
    pub keeps_stream: fn(&RunRequest) -> Option<&'static str>,
}

/// A CLI's version: major, minor, patch.
pub type Version = (u64, u64, u64);

/// The installed CLI's version, asked for when needed (`PROGRAM --version`).
pub type VersionProbe<'a> = dyn Fn() -> Option<Version> + 'a;

/// How `run` starts a CLI.
pub enum Command {
    /// In its headless streaming mode: the stream is its stdout.
    Exec(Exec),
    /// As a JSON-RPC server on stdio, this program its client
    /// ([`crate::converse::appserver`]).
    Client(Client),
}

/// A CLI in its headless streaming mode.
pub struct Exec {
    /// The argument list (without the executable), or why the options cannot
    /// be expressed for this CLI. `deny_file` is the file written by
    /// `deny_file` below, if any.
    pub argv: fn(&RunRequest, &str, Option<&Path>) -> anyhow::Result<Vec<String>>,
    /// For a CLI that reads the `--deny-tool` rules from a file: how to
    /// write it.
    pub deny_file: Option<DenyFile>,
}

/// A CLI started as a server that this program talks to.
pub struct Client {
    /// The dialect `run` names it by: this is another transport of that
    /// CLI, picked by `--transport`.
    pub transport_of: &'static str,
    /// The argument list that starts the server, or why the options cannot
    /// be expressed for it.
    pub argv: fn(&RunRequest) -> anyhow::Result<Vec<String>>,
    /// The name `PROGRAM --version` prints before its version
    /// (`codex-cli 0.169.0`): output without it is not this CLI's.
    pub version_name: &'static str,
    /// The first version whose server this client has been checked
    /// against: `auto` picks this transport from that version on.
    pub since: (u64, u64, u64),
    /// The first of the arguments after `--` that the server does not take
    /// (they were meant for the command line), with what `run` takes in
    /// its place if anything: `auto` then keeps the command line.
    pub refuses: fn(&[String]) -> Option<Refused<'_>>,
}

/// An argument a server does not take, and what `run` takes in its place
/// (if anything).
pub type Refused<'a> = (&'a str, Option<&'static str>);

/// A file of rules that forbid tools.
pub struct DenyFile {
    /// Its extension.
    pub ext: &'static str,
    /// Its contents for these tool names, or why a name cannot be expressed
    /// in it.
    pub contents: fn(&[String]) -> anyhow::Result<String>,
}

/// A dialect: a row of the table.
#[derive(Clone, Copy)]
pub struct Dialect(&'static Spec);

impl Dialect {
    /// The dialect called `name`.
    pub fn named(name: &str) -> Option<Dialect> {
        ALL.iter().find(|s| s.name == name).map(|&s| Dialect(s))
    }

    /// Every dialect.
    pub fn all() -> impl Iterator<Item = Dialect> {
        ALL.iter().map(|&s| Dialect(s))
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn spec(self) -> &'static Spec {
        self.0
    }

    /// How `run` starts it on the command line, if it can.
    pub fn exec(self) -> Option<&'static Exec> {
        match &self.0.command {
            Some(Command::Exec(e)) => Some(e),
            _ => None,
        }
    }

    /// How it starts as an Agent Client Protocol agent, if it can.
    pub fn acp(self) -> Option<&'static AcpStart> {
        self.0.acp.as_ref()
    }

    /// Whether `run` starts it: a CLI's command line, or any ACP agent
    /// (`run acp -- COMMAND`, the one dialect with no program of its own).
    pub fn runnable(self) -> bool {
        self.exec().is_some() || (self.0.program.is_empty() && self.0.acp.is_some())
    }

    /// The server transport of this dialect's CLI, if it has one: the
    /// dialect of the server's stream, and how to start it.
    pub fn client(self) -> Option<(Dialect, &'static Client)> {
        Dialect::all().find_map(|d| match &d.0.command {
            Some(Command::Client(c)) if c.transport_of == self.0.name => Some((d, c)),
            _ => None,
        })
    }
}

impl std::ops::Deref for Dialect {
    type Target = Spec;
    fn deref(&self) -> &Spec {
        self.0
    }
}

impl PartialEq for Dialect {
    fn eq(&self, other: &Dialect) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Dialect {}

impl fmt::Debug for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

/// The dialects `run` can start, as `run`'s first argument (a server
/// transport is reached through the dialect it belongs to; `acp` runs the
/// agent named after `--`).
impl clap::ValueEnum for Dialect {
    fn value_variants<'a>() -> &'a [Self] {
        static RUNNABLE: std::sync::LazyLock<Vec<Dialect>> =
            std::sync::LazyLock::new(|| Dialect::all().filter(|d| d.runnable()).collect());
        &RUNNABLE
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name))
    }
}

/// What `--from` accepts: a dialect, or `auto` to tell it from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FromCli {
    /// Tell the CLI from the stream itself.
    #[default]
    Auto,
    /// This dialect.
    Dialect(Dialect),
}

impl FromCli {
    /// The forced dialect, or `None` for `auto`.
    pub fn dialect(self) -> Option<Dialect> {
        match self {
            FromCli::Auto => None,
            FromCli::Dialect(d) => Some(d),
        }
    }

    /// `auto` or a dialect's name.
    pub fn named(name: &str) -> Option<FromCli> {
        match name {
            "auto" => Some(FromCli::Auto),
            _ => Dialect::named(name).map(FromCli::Dialect),
        }
    }
}

impl clap::ValueEnum for FromCli {
    fn value_variants<'a>() -> &'a [Self] {
        static VALUES: std::sync::LazyLock<Vec<FromCli>> = std::sync::LazyLock::new(|| {
            std::iter::once(FromCli::Auto)
                .chain(Dialect::all().map(FromCli::Dialect))
                .collect()
        });
        &VALUES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            FromCli::Auto => PossibleValue::new("auto").help("Tell the CLI from the stream itself"),
            FromCli::Dialect(d) => PossibleValue::new(d.name).help(d.about),
        })
    }
}

/// A record's top-level keys and its `type`, for detection.
#[derive(Debug, Default)]
pub struct Probe<'a> {
    kind: Option<std::borrow::Cow<'a, str>>,
    keys: Vec<std::borrow::Cow<'a, str>>,
}

impl<'a> Probe<'a> {
    /// The probe of a line that is a JSON object.
    pub fn of(line: &'a [u8]) -> Option<Probe<'a>> {
        serde_json::from_slice(line).ok()
    }

    /// The record's `type`, when it is a string.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    /// Whether the record has the key `key` (whatever its value, null included).
    pub fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }
}

impl<'de> serde::Deserialize<'de> for Probe<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Probe<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Probe<'de>, A::Error> {
                let mut p = Probe::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "type" {
                        p.kind = map.next_value::<Kind<'de>>()?.0;
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                    p.keys.push(key);
                }
                Ok(p)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A `type` value: a string, or anything else (which tells nothing).
struct Kind<'a>(Option<std::borrow::Cow<'a, str>>);

impl<'de> serde::Deserialize<'de> for Kind<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum K<'a> {
            Str(#[serde(borrow)] std::borrow::Cow<'a, str>),
            Other(serde::de::IgnoredAny),
        }
        Ok(Kind(match K::deserialize(d)? {
            K::Str(s) => Some(s),
            K::Other(_) => None,
        }))
    }
}

/// The dialect `line` belongs to, if one of them claims it.
pub fn classify(line: &[u8]) -> Option<Dialect> {
    let probe = Probe::of(line)?;
    Dialect::all().find(|d| (d.detect)(&probe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_known() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(ALL[i + 1..].iter().all(|b| b.name != a.name));
            assert_eq!(Dialect::named(a.name).map(|d| d.name()), Some(a.name));
            assert_eq!(
                FromCli::named(a.name)
                    .and_then(FromCli::dialect)
                    .map(|d| d.name()),
                Some(a.name)
            );
        }
        assert_eq!(FromCli::named("auto"), Some(FromCli::Auto));
        assert!(Dialect::named("auto").is_none());
    }

    #[test]
    fn a_server_transport_belongs_to_a_runnable_dialect() {
        let clients: Vec<_> = Dialect::all().filter_map(|d| d.client()).collect();
        assert!(!clients.is_empty());
        for (server, client) in clients {
            let of = Dialect::named(client.transport_of).expect("a dialect");
            assert!(of.exec().is_some(), "{of} is runnable");
            assert_eq!((server.program, server.env_var), (of.program, of.env_var));
        }
        assert_eq!(
            Dialect::named("codex")
                .and_then(|d| d.client())
                .map(|c| c.0.name()),
            Some("codex-app-server")
        );
        let runnable: Vec<_> = <Dialect as clap::ValueEnum>::value_variants()
            .iter()
            .map(|d| d.name())
            .collect();
        assert_eq!(
            runnable,
            ["gemini", "codex", "claude", "qwen", "copilot", "opencode", "acp"]
        );
    }

    #[test]
    fn every_tool_table_belongs_to_a_dialect() {
        for table in crate::agui::tools::ALL {
            assert!(ALL.iter().any(|s| s.tools == *table));
        }
        for s in ALL {
            let known = crate::agui::tools::ALL.contains(&s.tools);
            assert!(known, "{}", s.name);
        }
    }
}
