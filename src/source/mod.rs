//! The translators, one per upstream CLI, behind one small trait.
//!
//! A translator turns one input line at a time into AG-UI events written
//! through the [`Emitter`]; it never touches stdin, stdout or exit codes.

use std::fmt;

use serde_json::value::RawValue;

use std::borrow::Cow;

use crate::agui::{Emitter, MetaValue, Text};
use crate::base::json;

pub use crate::base::held::Held;

pub mod acp;
pub mod claude;
pub mod codex;
pub mod codex_app_server;
pub mod copilot;
pub mod gemini;
pub mod opencode;
pub mod qwen;

pub trait Translate: Fork {
    /// Translate one non-blank input line. `line` is `&mut` so that a parser
    /// may decode in place.
    fn line(&mut self, line: &mut [u8], em: &mut Emitter) -> Result<(), LineError>;

    /// The input has ended: settle what the input left open. The emitter
    /// closes the rest.
    fn finish(&mut self, em: &mut Emitter);

    /// The dialect's name, for the `source` of RAW events.
    fn source(&self) -> &'static str;

    /// What the CLI keeps across the runs of its session and the plan is
    /// made of (Claude Code's task list), as JSON, to carry into the
    /// translation of the session's next run; none when there is nothing.
    fn carried(&self) -> Option<String> {
        None
    }

    /// Take up what [`carried`](Self::carried) gave, before the input.
    fn carry_in(&mut self, _json: &str) {}
}

/// A copy of a translator in its present state, to go on from there on
/// another path: the reliability sweep translates a recording once, and each
/// cut of it from a copy taken at the cut's line.
pub trait Fork {
    fn fork(&self) -> Box<dyn Translate>;
}

impl<T: Translate + Clone + 'static> Fork for T {
    fn fork(&self) -> Box<dyn Translate> {
        Box::new(self.clone())
    }
}

/// The `source` of RAW events before `--from auto` has told the dialect.
pub const UNDETECTED: &str = "unknown";

/// Why a line could not be translated. The line itself still goes out as a
/// RAW event; this is what is reported on stderr.
#[derive(Debug)]
pub enum LineError {
    /// Not JSON at all (or not UTF-8).
    NotJson(String),
    /// JSON, but not of a shape the translator knows (a field of the wrong
    /// type, a required field missing).
    Shape(String),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::NotJson(e) => write!(f, "not a JSON line ({e})"),
            LineError::Shape(msg) => write!(f, "unexpected record: {msg}"),
        }
    }
}

impl LineError {
    /// Classify a failed parse of `line`.
    pub fn from_parse(line: &[u8], err: serde_json::Error) -> Self {
        if json::is_json(line) {
            LineError::Shape(err.to_string())
        } else {
            LineError::not_json(line, Some(err))
        }
    }

    /// A line that is not JSON; why, if the parser said.
    pub fn not_json(line: &[u8], err: Option<serde_json::Error>) -> Self {
        match (err, std::str::from_utf8(line)) {
            (_, Err(e)) => LineError::NotJson(format!("not UTF-8: {e}")),
            (Some(e), Ok(_)) => LineError::NotJson(e.to_string()),
            (None, Ok(_)) => LineError::NotJson("not valid JSON".into()),
        }
    }
}

/// An input line whose record has parsed: its bytes, and its text when it
/// is UTF-8 (checked once, before the parse). Dereferences to the bytes.
#[derive(Clone, Copy)]
pub struct Line<'a> {
    bytes: &'a [u8],
    text: Option<&'a str>,
}

impl<'a> Line<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Line {
            bytes,
            text: json::utf8(bytes),
        }
    }

    /// A record's text that has parsed before (a record kept for later).
    pub fn of_text(text: &'a str) -> Self {
        Line {
            bytes: text.as_bytes(),
            text: Some(text),
        }
    }

    /// The line as text, if it is UTF-8.
    pub fn text(&self) -> Option<&'a str> {
        self.text
    }
}

impl std::ops::Deref for Line<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

/// Parse `line` into `place`, a fresh record, repairing lone surrogate
/// escapes if that is what failed (the repaired copy is kept in `scratch`):
/// the line the record was read from.
pub fn parse_record<'a, T: serde::Deserialize<'a>>(
    line: &'a [u8],
    scratch: &'a mut Option<Vec<u8>>,
    place: &mut T,
) -> Result<Line<'a>, LineError> {
    let checked = Line::new(line);
    match json::parse_into(line, checked.text, place) {
        Ok(()) => Ok(checked),
        Err(err) => match json::repair_surrogates(line, &err) {
            Some(fixed) => {
                // Every field is written again (absent ones as absent).
                let fixed = Line::new(scratch.insert(fixed));
                match json::parse_into(fixed.bytes, fixed.text, place) {
                    Ok(()) => Ok(fixed),
                    Err(err) => Err(LineError::from_parse(fixed.bytes, err)),
                }
            }
            None => Err(LineError::from_parse(line, err)),
        },
    }
}

/// Text from the input for the output: its JSON string literal copied as
/// it is (the hot path: no decoding, no escaping again), or its text decoded
/// into `decoded` when it must be (not a string, or a lone surrogate).
pub fn input_text<'d>(v: &'d RawValue, decoded: &'d mut Option<Cow<'d, str>>) -> Text<'d> {
    match json::literal(v) {
        Some(lit) => Text::Literal(lit),
        None => Text::Str(decoded.insert(json::text_of(v))),
    }
}

/// The whole line as a JSON value (for RAW events and `result` fields).
/// `line` must be valid JSON.
pub fn line_json(line: &[u8]) -> Option<&RawValue> {
    serde_json::from_slice(line).ok()
}

/// A record that has parsed, to copy into an event (`RUN_FINISHED.result`,
/// metadata) as it is: no second parse, and no second UTF-8 check.
pub fn record_json(line: Line<'_>) -> Option<MetaValue<'_>> {
    line.text().map(|text| MetaValue::Record(json::trim(text)))
}

/// A RAW event around a record that has parsed (so it is one valid JSON
/// value), copied as it is: no second parse. A record that parsed but is not
/// UTF-8 (in a string the parser skipped) goes out as bytes.
pub fn raw_record(em: &mut Emitter, line: Line<'_>, source: &str) {
    match line.text() {
        Some(text) => em.raw_line(json::trim(text), source),
        None => passthrough(em, source, 0, &line),
    }
}

/// Send a line that could not be translated out as a RAW event, so that
/// nothing in the input is lost: the record itself when it is JSON, else
/// `{"line": N, "text": …}` (or `"bytes"`: base64, when it is not UTF-8).
pub fn passthrough(em: &mut Emitter, source: &str, lineno: u64, line: &[u8]) {
    // The line's own time is unknown: do not reuse the previous line's.
    em.set_timestamp(None);
    if let Some(v) = line_json(line) {
        return em.raw(v, source);
    }
    let lineno = Some(MetaValue::Int(i64::try_from(lineno).unwrap_or(i64::MAX)));
    match std::str::from_utf8(line) {
        Ok(text) => em.raw_fields(
            &[("line", lineno), ("text", Some(MetaValue::Str(text)))],
            source,
        ),
        Err(_) => {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(line);
            em.raw_fields(
                &[("line", lineno), ("bytes", Some(MetaValue::Str(&b64)))],
                source,
            );
        }
    }
}
