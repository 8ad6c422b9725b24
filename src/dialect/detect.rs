//! `--from auto`: tell the dialect from the stream itself.
//!
//! The first record that only one CLI writes decides (each dialect's table
//! says which records those are: see [`crate::dialect`]), and from then on
//! the lines go to that CLI's translator. Nothing is buffered: the deciding
//! line is translated at once, and lines before it (noise that is not JSON,
//! a record every dialect could have written) go out as RAW, as they would
//! with `--from`. One line is almost always enough.

use super::{classify, for_dialect, Dialect};
use crate::agui::Emitter;
use crate::source::{self, LineError, Translate};

/// Forwards to the translator of the detected dialect.
#[derive(Default)]
pub struct Detect {
    inner: Option<(Dialect, Box<dyn Translate>)>,
}

impl Clone for Detect {
    fn clone(&self) -> Self {
        Detect {
            inner: self.inner.as_ref().map(|(d, tr)| (*d, tr.fork())),
        }
    }
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
                    let v = source::line_json(line).ok_or_else(|| {
                        let err = serde_json::from_slice::<serde::de::IgnoredAny>(line).err();
                        LineError::not_json(line, err)
                    })?;
                    em.unknown("record before the dialect was known");
                    em.raw(v, source::UNDETECTED);
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
        self.dialect().map_or(source::UNDETECTED, |d| d.name())
    }

    fn carried(&self) -> Option<String> {
        self.inner.as_ref().and_then(|(_, tr)| tr.carried())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_records_of_each_dialect() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                r#"{"type":"init","timestamp":"t","session_id":"s","model":"auto"}"#,
                Some("gemini"),
            ),
            (
                r#"{"type":"message","role":"user","content":"hi"}"#,
                Some("gemini"),
            ),
            (r#"{"type":"result","status":"success"}"#, Some("gemini")),
            (
                r#"{"type":"error","severity":"warning","message":"m"}"#,
                Some("gemini"),
            ),
            (
                r#"{"type":"thread.started","thread_id":"t"}"#,
                Some("codex"),
            ),
            (r#"{"type":"turn.started"}"#, Some("codex")),
            (
                r#"{"type":"session.skills_loaded","data":{"skills":[]},"id":"i","timestamp":"t","parentId":null}"#,
                Some("copilot"),
            ),
            (
                r#"{"type":"assistant.turn_start","data":{"turnId":"0"},"id":"i","timestamp":"t","parentId":"p"}"#,
                Some("copilot"),
            ),
            (
                r#"{"type":"result","timestamp":"t","sessionId":"s","exitCode":0}"#,
                Some("copilot"),
            ),
            (
                r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
                Some("codex"),
            ),
            (
                r#"{"model":"gpt-5","provider":"openai","sandbox":"read-only","workdir":"/w"}"#,
                Some("codex"),
            ),
            (r#"{"prompt":"hello"}"#, Some("codex")),
            (r#"{"id":"0","msg":{"type":"task_started"}}"#, Some("codex")),
            (
                r#"{"type":"system","subtype":"init","session_id":"s"}"#,
                Some("claude"),
            ),
            (r#"{"type":"stream_event","event":{}}"#, Some("claude")),
            (
                r#"{"type":"system","subtype":"init","session_id":"s","permission_mode":"yolo","qwen_code_version":"0.24.4"}"#,
                Some("qwen"),
            ),
            (
                r#"{"session_id":"s","type":"assistant","message":{}}"#,
                Some("claude"),
            ),
            (
                r#"{"type":"result","subtype":"success","is_error":false}"#,
                Some("claude"),
            ),
            (
                r#"{"id":0,"result":{"userAgent":"codex/0.169.0","platformOs":"linux"}}"#,
                Some("codex-app-server"),
            ),
            (
                r#"{"id":3,"error":{"code":-32600,"message":"bad"}}"#,
                Some("codex-app-server"),
            ),
            (
                r#"{"method":"turn/started","params":{"threadId":"t"},"emittedAtMs":1}"#,
                Some("codex-app-server"),
            ),
            (
                r#"{"method":"item/commandExecution/requestApproval","id":0,"params":{}}"#,
                Some("codex-app-server"),
            ),
            (
                r#"{"type":"step_start","timestamp":1795661939190,"sessionID":"ses_1","part":{}}"#,
                Some("opencode"),
            ),
            (
                r#"{"type":"tool_use","timestamp":1795661939190,"sessionID":"ses_1","part":{}}"#,
                Some("opencode"),
            ),
            (
                r#"{"type":"tool_use","timestamp":"t","tool_name":"ls","tool_id":"x","parameters":{}}"#,
                Some("gemini"),
            ),
            (
                r#"{"type":"error","timestamp":1795661939190,"sessionID":"ses_1","error":{"name":"APIError"}}"#,
                Some("opencode"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
                Some("acp"),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}"#,
                Some("acp"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
                Some("acp"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"m"}}"#,
                Some("acp"),
            ),
            (r#"{"jsonrpc":"2.0"}"#, None),
            (r#"{"type":"something_else"}"#, None),
            (r#"{"hello":"world"}"#, None),
            ("not json", None),
            ("[1,2]", None),
        ];
        for (line, want) in cases {
            assert_eq!(classify(line.as_bytes()).map(|d| d.name()), *want, "{line}");
        }
    }
}
