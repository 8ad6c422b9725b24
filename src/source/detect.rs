//! `--from auto`: tell the dialect from the stream itself.
//!
//! The first record that only one CLI writes decides, and from then on the
//! lines go to that CLI's translator. Nothing is buffered: the deciding line
//! is translated at once, and lines before it (noise that is not JSON, a
//! record every dialect could have written) go out as RAW, as they would with
//! `--from`. One line is almost always enough:
//!
//! | first record | dialect |
//! |---|---|
//! | `{"type":"init","session_id":…}`, `message`/`tool_use`/`tool_result` records, `result` with `status`, `error` with `severity` | gemini |
//! | `type` with a dot (`thread.started`, `turn.started`, `item.completed`), `error` without `severity` | codex (current) |
//! | `{"id":…,"msg":{…}}`, the `{"prompt":…}` preamble, the config summary object (`model`, `provider`, `sandbox`, …) | codex (legacy) |
//! | `system`, `assistant`, `user`, `stream_event`, `result` with `subtype` | claude |
//! | no `type`: `method` (a notification or request), or `id` with `result` or `error` (a response) | codex-app-server |

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{for_dialect, Dialect, LineError, Translate};
use crate::agui::Emitter;

/// A record's keys that tell the dialects apart.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    session_id: Option<&'a RawValue>,
    role: Option<&'a RawValue>,
    status: Option<&'a RawValue>,
    subtype: Option<&'a RawValue>,
    severity: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    msg: Option<&'a RawValue>,
    prompt: Option<&'a RawValue>,
    model: Option<&'a RawValue>,
    provider: Option<&'a RawValue>,
    sandbox: Option<&'a RawValue>,
    approval: Option<&'a RawValue>,
    workdir: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

/// The dialect `line` belongs to, if it tells.
pub fn classify(line: &[u8]) -> Option<Dialect> {
    let p: Probe = serde_json::from_slice(line).ok()?;
    if let Some(kind) = p.kind.as_deref() {
        return match kind {
            k if k.contains('.') => Some(Dialect::Codex),
            "init" if p.session_id.is_some() => Some(Dialect::Gemini),
            "message" if p.role.is_some() => Some(Dialect::Gemini),
            "tool_use" | "tool_result" => Some(Dialect::Gemini),
            "result" if p.subtype.is_some() => Some(Dialect::Claude),
            "result" if p.status.is_some() => Some(Dialect::Gemini),
            "error" if p.severity.is_some() => Some(Dialect::Gemini),
            "error" => Some(Dialect::Codex),
            "system" | "assistant" | "user" | "stream_event" => Some(Dialect::Claude),
            _ => None,
        };
    }
    if p.method.is_some() || (p.id.is_some() && (p.result.is_some() || p.error.is_some())) {
        return Some(Dialect::CodexAppServer);
    }
    let legacy_event = p.id.is_some() && p.msg.is_some();
    let preamble = p.prompt.is_some()
        || (p.model.is_some()
            && (p.provider.is_some()
                || p.sandbox.is_some()
                || p.approval.is_some()
                || p.workdir.is_some()));
    (legacy_event || preamble).then_some(Dialect::Codex)
}

/// Forwards to the translator of the detected dialect.
#[derive(Default)]
pub struct Detect {
    inner: Option<(Dialect, Box<dyn Translate>)>,
}

impl Detect {
    /// The dialect detected so far.
    pub fn dialect(&self) -> Option<Dialect> {
        self.inner.as_ref().map(|(d, _)| *d)
    }
}

impl Translate for Detect {
    fn line(&mut self, line: &mut [u8], em: &mut Emitter) -> Result<(), LineError> {
        if self.inner.is_none() {
            match classify(line) {
                Some(d) => match for_dialect(d) {
                    Ok(tr) => self.inner = Some((d, tr)),
                    Err(e) => return Err(LineError::Shape(format!("{e:#}"))),
                },
                None => {
                    let v = super::line_json(line).ok_or_else(|| {
                        let err = serde_json::from_slice::<serde::de::IgnoredAny>(line).err();
                        LineError::not_json(line, err)
                    })?;
                    em.unknown("record before the dialect was known");
                    em.raw(v, super::UNDETECTED);
                    return Ok(());
                }
            }
        }
        let (_, tr) = self.inner.as_mut().expect("set above");
        tr.line(line, em)
    }

    fn finish(&mut self, em: &mut Emitter) {
        if let Some((_, tr)) = self.inner.as_mut() {
            tr.finish(em);
        }
    }

    fn source(&self) -> &'static str {
        self.dialect().map_or(super::UNDETECTED, Dialect::name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_records_of_each_dialect() {
        let cases: &[(&str, Option<Dialect>)] = &[
            (
                r#"{"type":"init","timestamp":"t","session_id":"s","model":"auto"}"#,
                Some(Dialect::Gemini),
            ),
            (
                r#"{"type":"message","role":"user","content":"hi"}"#,
                Some(Dialect::Gemini),
            ),
            (
                r#"{"type":"result","status":"success"}"#,
                Some(Dialect::Gemini),
            ),
            (
                r#"{"type":"error","severity":"warning","message":"m"}"#,
                Some(Dialect::Gemini),
            ),
            (
                r#"{"type":"thread.started","thread_id":"t"}"#,
                Some(Dialect::Codex),
            ),
            (r#"{"type":"turn.started"}"#, Some(Dialect::Codex)),
            (
                r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
                Some(Dialect::Codex),
            ),
            (
                r#"{"model":"gpt-5","provider":"openai","sandbox":"read-only","workdir":"/w"}"#,
                Some(Dialect::Codex),
            ),
            (r#"{"prompt":"hello"}"#, Some(Dialect::Codex)),
            (
                r#"{"id":"0","msg":{"type":"task_started"}}"#,
                Some(Dialect::Codex),
            ),
            (
                r#"{"type":"system","subtype":"init","session_id":"s"}"#,
                Some(Dialect::Claude),
            ),
            (
                r#"{"type":"stream_event","event":{}}"#,
                Some(Dialect::Claude),
            ),
            (
                r#"{"session_id":"s","type":"assistant","message":{}}"#,
                Some(Dialect::Claude),
            ),
            (
                r#"{"type":"result","subtype":"success","is_error":false}"#,
                Some(Dialect::Claude),
            ),
            (
                r#"{"id":0,"result":{"userAgent":"codex/0.169.0","platformOs":"linux"}}"#,
                Some(Dialect::CodexAppServer),
            ),
            (
                r#"{"id":3,"error":{"code":-32600,"message":"bad"}}"#,
                Some(Dialect::CodexAppServer),
            ),
            (
                r#"{"method":"turn/started","params":{"threadId":"t"},"emittedAtMs":1}"#,
                Some(Dialect::CodexAppServer),
            ),
            (
                r#"{"method":"item/commandExecution/requestApproval","id":0,"params":{}}"#,
                Some(Dialect::CodexAppServer),
            ),
            (r#"{"type":"something_else"}"#, None),
            (r#"{"hello":"world"}"#, None),
            ("not json", None),
            ("[1,2]", None),
        ];
        for (line, want) in cases {
            assert_eq!(classify(line.as_bytes()), *want, "{line}");
        }
    }
}
