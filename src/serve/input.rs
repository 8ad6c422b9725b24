//! A request's body read and checked: the AG-UI `RunAgentInput` it holds,
//! of which a run needs the prompt (the last user message), the thread and
//! run ids, the decisions it resumes with, the AG-UI release of the
//! client (`protocolVersion`), and what the page gives besides: its tools,
//! its context and its state (each checked against its limit), and its
//! answers to the calls of its tools (the `role: "tool"` messages after
//! the last user message).

use std::borrow::Cow;
use std::net::TcpStream;
use std::time::Instant;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agui::AguiVersion;
use crate::serve::http::{self, Head, Refused};
use crate::serve::listen::{refuse, refuse_with};
use crate::serve::page;
use crate::serve::Shared;

/// A request checked: what its run needs.
pub(super) struct Request<'a> {
    pub(super) input: RunAgentInput<'a>,
    /// The text of the last user message, if it has any, after the page's
    /// context (see [`page`]).
    pub(super) prompt: Option<String>,
    /// Whether the request carries decisions (a `resume` not empty).
    pub(super) resuming: bool,
    /// The page's tools, checked, as JSON (none when it gives none).
    pub(super) tools: Option<String>,
    /// The model and effort the page chooses for the run.
    pub(super) choices: page::Choices,
    /// The files of the last user message, for the run.
    pub(super) attachments: Vec<page::Attached>,
    /// The state the page gives, to be kept for the thread.
    pub(super) state_given: Option<String>,
    /// The thread's kept state, when the page gives none.
    pub(super) state_kept: Option<String>,
    /// Whether the run offers the model the tool that changes the state.
    pub(super) state_tool: bool,
}

/// The prompt of a user message that holds files and no text.
const NO_TEXT: &str = "(The user sent the attached files without a message.)";

impl<'a> Request<'a> {
    /// The request in `body` to the server `shared`, or `None` when it is
    /// answered here as one no run can take.
    pub(super) fn check(
        conn: &mut TcpStream,
        cors: &str,
        body: &'a [u8],
        shared: &Shared,
    ) -> Option<Self> {
        let input: RunAgentInput = match serde_json::from_slice(body) {
            Ok(i) => i,
            Err(e) => {
                let msg = format!("not an AG-UI RunAgentInput: {e}");
                let _ = refuse_with(conn, cors, 400, &msg);
                return None;
            }
        };
        if !id_ok(&input.thread_id) || !input.run_id.as_deref().is_none_or(id_ok) {
            let why = "threadId and runId must be 1 to 1024 bytes without control characters";
            let _ = refuse(conn, cors, Refused(400, why));
            return None;
        }
        let resuming = input.resume.is_some_and(|r| {
            serde_json::from_str::<Vec<serde::de::IgnoredAny>>(r.get())
                .map_or(true, |v| !v.is_empty())
        });
        let page = page::Page::check(
            &input,
            shared.cli,
            shared.ask,
            &shared.run_options,
            shared.max_attachment,
            &shared.allow_fetch,
            || {
                let threads = shared.threads.lock().expect("not poisoned");
                threads.kept_state(&input.thread_id)
            },
        );
        let page = match page {
            Ok(p) => p,
            Err(why) => {
                let _ = refuse_with(conn, cors, 400, &why);
                return None;
            }
        };
        // Files without a word still make a prompt.
        let prompt = prompt_of(&input)
            .or_else(|| (!page.attachments.is_empty()).then(|| NO_TEXT.to_owned()));
        Some(Request {
            prompt: prompt.map(|p| page.prompt(p)),
            input,
            resuming,
            tools: page.tools,
            choices: page.choices,
            attachments: page.attachments,
            state_given: page.state_given,
            state_kept: page.state_kept,
            state_tool: page.state_tool,
        })
    }
}

/// The body of the request of `head`, read before `deadline`, or `None`
/// when it is too large or does not come (the client is answered).
pub(super) fn read_body(
    conn: &mut TcpStream,
    head: &mut Head,
    cors: &str,
    deadline: Instant,
    shared: &Shared,
) -> Option<Vec<u8>> {
    if head.content_length > max_body(shared.max_attachment) {
        let why = "the request body is too large";
        let _ = refuse(conn, cors, Refused(413, why));
        return None;
    }
    match http::read_body(conn, head, deadline) {
        Ok(body) => Some(body),
        Err(r) => {
            let _ = refuse(conn, cors, r);
            None
        }
    }
}

/// A request body without files, at most (a long conversation of messages
/// fits).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A request body, at most, when a file may have `max_attachment` bytes:
/// [`MAX_BODY`] and one such file, base64.
fn max_body(max_attachment: usize) -> usize {
    MAX_BODY.saturating_add(max_attachment.div_ceil(3).saturating_mul(4))
}

/// A thread or run id, at most (bytes).
pub(super) const MAX_ID: usize = 1024;

/// The parts of an AG-UI `RunAgentInput` a run needs, borrowed from the
/// request body: nothing of a message is kept but the last user message's
/// content, unparsed, so that a request costs little more than its body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RunAgentInput<'a> {
    pub(super) thread_id: String,
    #[serde(default)]
    pub(super) run_id: Option<String>,
    #[serde(default, borrow)]
    pub(super) messages: LastUserContent<'a>,
    /// Sent by 1.0 clients (`"1.0"`, as `@ag-ui/client` 1.0 does); 0.0 clients send none.
    #[serde(default)]
    protocol_version: Option<String>,
    /// The decisions on the interrupts the thread's last run ended with.
    #[serde(default, borrow)]
    pub(super) resume: Option<&'a RawValue>,
    /// The page's own tools (`[{name, description, parameters}]`).
    #[serde(default, borrow)]
    pub(super) tools: Option<&'a RawValue>,
    /// What the page tells the model (`[{description, value}]`).
    #[serde(default, borrow)]
    pub(super) context: Option<&'a RawValue>,
    /// The page's state (any JSON).
    #[serde(default, borrow)]
    pub(super) state: Option<&'a RawValue>,
    /// What the page forwards: its `model` and `effort` are the run's
    /// choices ([`super::page::Choices`]), the rest is left alone.
    #[serde(default, borrow)]
    pub(super) forwarded_props: Option<&'a RawValue>,
}

/// Which AG-UI release a run writes for.
#[derive(Clone, Copy)]
pub(super) enum Version {
    /// The one the request's client reads ([`client_version`]).
    PerRequest,
    /// `serve --agui-version`.
    Forced(AguiVersion),
    /// The run options say (`-- --agui-version`).
    InRunOptions,
}

impl Version {
    /// The release for `--agui-version` of the run of `input`; none when the
    /// run options give it.
    pub(super) fn of(self, input: Option<&RunAgentInput>) -> Option<AguiVersion> {
        match self {
            Version::PerRequest => Some(input.map_or(AguiVersion::V1_0, client_version)),
            Version::Forced(v) => Some(v),
            Version::InRunOptions => None,
        }
    }
}

/// The AG-UI release a request's client reads: 1.0 for a `protocolVersion`
/// of 1 or later, the 0.0 shapes without one (or with a 0.x).
fn client_version(input: &RunAgentInput) -> AguiVersion {
    let major = input
        .protocol_version
        .as_deref()
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.trim().parse::<u64>().ok());
    match major {
        Some(m) if m >= 1 => AguiVersion::V1_0,
        _ => AguiVersion::V0_0,
    }
}

/// Of the messages: the content of the last one with role `user`, the
/// `role: "tool"` messages after it (the page's answers to the calls of
/// its tools: the call's id and the content), the role of the last
/// message, and the ids of the user messages (which a thread's history
/// compares with its own).
#[derive(Default)]
pub(super) struct LastUserContent<'a> {
    /// The content of the last user message.
    content: Option<&'a RawValue>,
    /// The id of the last user message, if it has one.
    id: Option<Cow<'a, str>>,
    /// The ids of all user messages.
    user_ids: Vec<Cow<'a, str>>,
    /// The `role: "tool"` messages after the last user message: the call's
    /// id and the content.
    pub(super) answers: Vec<(Cow<'a, str>, Option<&'a RawValue>)>,
    /// The role of the last message.
    pub(super) last_role: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for LastUserContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Messages<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Messages<'a> {
            type Value = LastUserContent<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut all = LastUserContent::default();
                while let Some(m) = seq.next_element::<Message<'de>>()? {
                    if m.role == "user" {
                        all.content = m.content;
                        all.answers.clear();
                        all.id.clone_from(&m.id);
                        all.user_ids.extend(m.id);
                    }
                    if let (true, Some(id)) = (m.role == "tool", m.tool_call_id) {
                        all.answers.push((id, m.content));
                    }
                    all.last_role = Some(m.role);
                }
                Ok(all)
            }
        }
        d.deserialize_seq(Messages(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_call_id: Option<Cow<'a, str>>,
}

/// A part of a message's content (AG-UI `InputContent`).
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// The text of a content: a string, or the text parts of an array of parts,
/// one per line.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Content;
        impl<'de> Visitor<'de> for Content {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of parts")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Text, E> {
                Ok(Text(s.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
                let mut text = String::new();
                let mut first = true;
                while let Some(p) = seq.next_element::<Part<'de>>()? {
                    if let (Some("text"), Some(t)) = (p.kind.as_deref(), p.text) {
                        if !std::mem::take(&mut first) {
                            text.push('\n');
                        }
                        text.push_str(&t);
                    }
                }
                Ok(Text(text))
            }
        }
        d.deserialize_any(Content)
    }
}

/// The prompt: the text of the last user message, if it has any.
fn prompt_of(input: &RunAgentInput) -> Option<String> {
    let Text(text) = serde_json::from_str(input.messages.content?.get()).ok()?;
    Some(text).filter(|t| !t.trim().is_empty())
}

impl RunAgentInput<'_> {
    /// The id of the last user message, if it has one.
    pub(super) fn last_user_id(&self) -> Option<&str> {
        self.messages.id.as_deref()
    }

    /// Whether the request holds the user message `id`.
    pub(super) fn has_user_message(&self, id: &str) -> bool {
        self.messages.user_ids.iter().any(|m| m == id)
    }

    /// How many user messages (with an id) the request holds.
    pub(super) fn user_messages(&self) -> usize {
        self.messages.user_ids.len()
    }

    /// The text of the last user message, as the page sent it (without the
    /// page's context).
    pub(super) fn last_user_text(&self) -> Option<String> {
        prompt_of(self)
    }

    /// The content of the last user message, as sent.
    pub(super) fn last_user_content(&self) -> Option<&RawValue> {
        self.messages.content
    }
}

/// An id the runs and their CLIs can take: not empty, at most [`MAX_ID`]
/// bytes, no control characters.
pub(super) fn id_ok(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID && !id.chars().any(char::is_control)
}

/// Whether a `Content-Type` is JSON (`application/json`, parameters allowed).
pub(super) fn is_json(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: &str) -> RunAgentInput<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_prompt_is_the_last_user_message() {
        let i = input(
            r#"{"threadId":"t","runId":"r","messages":[
                {"id":"1","role":"user","content":"first"},
                {"id":"2","role":"assistant","content":"answer"},
                {"id":"3","role":"user","content":[{"type":"text","text":"a"},{"type":"binary","mimeType":"image/png"},{"type":"text","text":"b"}]},
                {"id":"4","role":"tool","content":"x","toolCallId":"c"}]}"#,
        );
        assert_eq!(prompt_of(&i).as_deref(), Some("a\nb"));
        let none =
            input(r#"{"threadId":"t","runId":"r","messages":[{"role":"user","content":"  "}]}"#);
        assert_eq!(prompt_of(&none), None);
    }

    #[test]
    fn the_client_s_release_is_told_by_protocol_version() {
        let of = |extra: &str| {
            client_version(&input(&format!(r#"{{"threadId":"t","runId":"r"{extra}}}"#)))
        };
        assert_eq!(of(""), AguiVersion::V0_0);
        assert_eq!(of(r#","protocolVersion":"1.0""#), AguiVersion::V1_0);
        assert_eq!(of(r#","protocolVersion":"1.0.0""#), AguiVersion::V1_0);
        assert_eq!(of(r#","protocolVersion":"1.3""#), AguiVersion::V1_0);
        assert_eq!(of(r#","protocolVersion":"2.0.0""#), AguiVersion::V1_0);
        assert_eq!(of(r#","protocolVersion":"0.0.59""#), AguiVersion::V0_0);
        assert_eq!(of(r#","protocolVersion":"next""#), AguiVersion::V0_0);
    }

    #[test]
    fn only_json_bodies_are_taken() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json5",
            "",
        ] {
            assert!(!is_json(bad), "{bad}");
        }
    }

    #[test]
    fn ids_are_short_and_printable() {
        assert!(id_ok("thread-1") && id_ok("-x") && id_ok(&"a".repeat(MAX_ID)));
        for bad in ["", "a\0b", "a\nb", "\u{7f}"] {
            assert!(!id_ok(bad), "{bad:?}");
        }
        assert!(!id_ok(&"a".repeat(MAX_ID + 1)));
    }
}
