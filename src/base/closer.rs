//! Closing a JSON text that was cut short.
//!
//! Tool arguments stream as pieces of one JSON document (Claude's
//! `input_json_delta`). When the stream is cut mid-call (a killed CLI, a
//! retry), the pieces sent so far are not valid JSON, and AG-UI wants a tool
//! call's ARGS to join into JSON. [`Closer`] follows the text as it is sent
//! and knows the shortest suffix that completes it: `{"command": "ls -l` needs
//! `"}`, `{"a": [1, ` needs `null]}`.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Obj {
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,`: a key.
    Key,
    /// Inside a key string.
    InKey,
    /// After a key: `:`.
    Colon,
    /// After `:`: a value.
    Value,
    /// After a value: `,` or `}`.
    After,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Arr {
    /// After `[`: a value or `]`.
    ValueOrEnd,
    /// After `,`: a value.
    Value,
    /// After a value: `,` or `]`.
    After,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ctx {
    Obj(Obj),
    Arr(Arr),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scalar {
    None,
    /// A string; `esc` is 0 (none), 1 (after `\`) or 2..=5 (after `\u` and
    /// that many hex digits minus 2).
    Str {
        esc: u8,
    },
    /// A number, with its last byte.
    Num(u8),
    /// A literal (`true`, `false`, `null`) and how much of it was seen.
    Lit(&'static [u8], usize),
}

/// Follows a JSON text piece by piece.
#[derive(Debug)]
pub struct Closer {
    stack: Vec<Ctx>,
    scalar: Scalar,
    /// A whole top-level value was seen.
    done: bool,
    /// Nothing but whitespace was seen.
    empty: bool,
    /// The text is not JSON, whatever follows.
    broken: bool,
}

impl Clone for Closer {
    fn clone(&self) -> Self {
        let mut c = Closer::default();
        c.clone_from(self);
        c
    }

    /// Reuses `self`'s stack allocation.
    fn clone_from(&mut self, other: &Self) {
        self.stack.clone_from(&other.stack);
        self.scalar = other.scalar;
        self.done = other.done;
        self.empty = other.empty;
        self.broken = other.broken;
    }
}

impl Default for Closer {
    fn default() -> Self {
        Closer {
            stack: Vec::new(),
            scalar: Scalar::None,
            done: false,
            empty: true,
            broken: false,
        }
    }
}

impl Closer {
    /// Start over, keeping the allocation.
    pub fn reset(&mut self) {
        self.clone_from(&Closer::default());
    }

    /// Whether what was fed so far can still become JSON.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Feed `value`, a whole JSON value known to be valid (parsed already,
    /// or written by this program): when nothing was fed before, it completes
    /// the text without a look at its bytes; otherwise it is followed as any
    /// piece is (a second value breaks the text).
    pub fn feed_whole(&mut self, value: &str) {
        if self.empty && !self.broken {
            debug_assert!(serde_json::from_str::<serde::de::IgnoredAny>(value).is_ok());
            self.empty = false;
            self.done = true;
        } else {
            self.feed(value);
        }
    }

    pub fn feed(&mut self, text: &str) {
        for &b in text.as_bytes() {
            if self.broken {
                return;
            }
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        match self.scalar {
            Scalar::Str { esc } => {
                self.scalar = match (esc, b) {
                    (0, b'\\') => Scalar::Str { esc: 1 },
                    (0, b'"') => {
                        self.scalar = Scalar::None;
                        return self.string_done();
                    }
                    // A control character must be escaped inside a string.
                    (0, c) if c >= 0x20 => Scalar::Str { esc: 0 },
                    (1, b'u') => Scalar::Str { esc: 2 },
                    (1, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                        Scalar::Str { esc: 0 }
                    }
                    (2..=4, h) if h.is_ascii_hexdigit() => Scalar::Str { esc: esc + 1 },
                    (5, h) if h.is_ascii_hexdigit() => Scalar::Str { esc: 0 },
                    _ => {
                        self.broken = true;
                        return;
                    }
                };
                return;
            }
            Scalar::Num(_)
                if b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-') =>
            {
                self.scalar = Scalar::Num(b);
                return;
            }
            Scalar::Num(_) => {
                self.scalar = Scalar::None;
                self.value_done();
                // The byte that ended the number is structural.
            }
            Scalar::Lit(word, seen) => {
                if word.get(seen) == Some(&b) {
                    if seen + 1 == word.len() {
                        self.scalar = Scalar::None;
                        self.value_done();
                    } else {
                        self.scalar = Scalar::Lit(word, seen + 1);
                    }
                } else {
                    self.broken = true;
                }
                return;
            }
            Scalar::None => {}
        }
        if b.is_ascii_whitespace() {
            return;
        }
        self.empty = false;
        if self.done {
            self.broken = true;
            return;
        }
        let expecting_value = matches!(
            self.stack.last(),
            None | Some(Ctx::Obj(Obj::Value)) | Some(Ctx::Arr(Arr::ValueOrEnd | Arr::Value))
        );
        if expecting_value {
            match b {
                b'{' => return self.stack.push(Ctx::Obj(Obj::KeyOrEnd)),
                b'[' => return self.stack.push(Ctx::Arr(Arr::ValueOrEnd)),
                b'"' => return self.scalar = Scalar::Str { esc: 0 },
                b'-' | b'0'..=b'9' => return self.scalar = Scalar::Num(b),
                b't' => return self.scalar = Scalar::Lit(b"true", 1),
                b'f' => return self.scalar = Scalar::Lit(b"false", 1),
                b'n' => return self.scalar = Scalar::Lit(b"null", 1),
                b']' if self.stack.last() == Some(&Ctx::Arr(Arr::ValueOrEnd)) => {
                    self.stack.pop();
                    return self.value_done();
                }
                _ => {
                    self.broken = true;
                    return;
                }
            }
        }
        let top = self
            .stack
            .last_mut()
            .expect("not expecting a value, so inside a container");
        match (*top, b) {
            (Ctx::Obj(Obj::KeyOrEnd | Obj::Key), b'"') => {
                *top = Ctx::Obj(Obj::InKey);
                self.scalar = Scalar::Str { esc: 0 };
            }
            (Ctx::Obj(Obj::KeyOrEnd | Obj::After), b'}') | (Ctx::Arr(Arr::After), b']') => {
                self.stack.pop();
                self.value_done();
            }
            (Ctx::Obj(Obj::Colon), b':') => *top = Ctx::Obj(Obj::Value),
            (Ctx::Obj(Obj::After), b',') => *top = Ctx::Obj(Obj::Key),
            (Ctx::Arr(Arr::After), b',') => *top = Ctx::Arr(Arr::Value),
            _ => self.broken = true,
        }
    }

    fn string_done(&mut self) {
        match self.stack.last_mut() {
            Some(top @ Ctx::Obj(Obj::InKey)) => *top = Ctx::Obj(Obj::Colon),
            _ => self.value_done(),
        }
    }

    fn value_done(&mut self) {
        match self.stack.last_mut() {
            None => self.done = true,
            Some(top @ Ctx::Obj(_)) => *top = Ctx::Obj(Obj::After),
            Some(top @ Ctx::Arr(_)) => *top = Ctx::Arr(Arr::After),
        }
    }

    /// What to append to make the text valid JSON: `None` when nothing is
    /// needed (the text is complete or empty) or nothing can help (it is not
    /// JSON).
    pub fn closing(&self) -> Option<String> {
        if self.broken || (self.empty && self.scalar == Scalar::None) {
            return None;
        }
        let mut s = String::new();
        let mut stack = self.stack.clone();
        match self.scalar {
            Scalar::None => {}
            Scalar::Str { esc } => {
                match esc {
                    1 => s.push('\\'),
                    2..=5 => s.extend(std::iter::repeat_n('0', usize::from(6 - esc))),
                    _ => {}
                }
                s.push('"');
                if let Some(top @ Ctx::Obj(Obj::InKey)) = stack.last_mut() {
                    *top = Ctx::Obj(Obj::Colon);
                } else {
                    after_value(&mut stack);
                }
            }
            Scalar::Num(last) => {
                if !last.is_ascii_digit() {
                    s.push('0');
                }
                after_value(&mut stack);
            }
            Scalar::Lit(word, seen) => {
                s.push_str(std::str::from_utf8(&word[seen..]).expect("ASCII"));
                after_value(&mut stack);
            }
        }
        while let Some(ctx) = stack.pop() {
            s.push_str(match ctx {
                Ctx::Obj(Obj::KeyOrEnd | Obj::After) => "}",
                Ctx::Obj(Obj::Key) => "\"\":null}",
                Ctx::Obj(Obj::InKey | Obj::Colon) => ":null}",
                Ctx::Obj(Obj::Value) => "null}",
                Ctx::Arr(Arr::ValueOrEnd | Arr::After) => "]",
                Ctx::Arr(Arr::Value) => "null]",
            });
            after_value(&mut stack);
        }
        (!s.is_empty()).then_some(s)
    }
}

fn after_value(stack: &mut [Ctx]) {
    match stack.last_mut() {
        Some(top @ Ctx::Obj(_)) => *top = Ctx::Obj(Obj::After),
        Some(top @ Ctx::Arr(_)) => *top = Ctx::Arr(Arr::After),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(text: &str) -> Option<String> {
        let mut c = Closer::default();
        c.feed(text);
        c.closing()
    }

    #[test]
    fn every_prefix_of_a_document_can_be_closed() {
        let docs = [
            r#"{"command": "echo \"hi\" \\ \u00e9 ok", "n": -12.5e+3, "flags": [true, false, null, {"x": []}], "empty": {}}"#,
            r#"[1, "two", {"three": [3.0]}, -0]"#,
            r#""just a string""#,
            "12345",
            "  {  }  ",
        ];
        for doc in docs {
            for cut in 0..=doc.len() {
                if !doc.is_char_boundary(cut) {
                    continue;
                }
                let prefix = &doc[..cut];
                let mut c = Closer::default();
                // Feed in two pieces to cross piece boundaries too.
                let mid = (0..=prefix.len())
                    .rev()
                    .find(|&i| prefix.is_char_boundary(i) && i <= prefix.len() / 2)
                    .unwrap();
                c.feed(&prefix[..mid]);
                c.feed(&prefix[mid..]);
                let whole = format!("{prefix}{}", c.closing().unwrap_or_default());
                if prefix.trim().is_empty() {
                    assert!(c.closing().is_none(), "{prefix:?}");
                    continue;
                }
                assert!(
                    serde_json::from_str::<serde_json::Value>(&whole).is_ok(),
                    "{prefix:?} closed as {whole:?}"
                );
            }
        }
    }

    /// A whole value fed into a fresh text completes it, as feeding it byte
    /// by byte would; fed after anything, it is followed as any piece is.
    #[test]
    fn a_whole_value_completes_a_fresh_text_and_is_followed_after_one() {
        let value = r#"{"a": [1, "}"], "b": {}}"#;
        let mut whole = Closer::default();
        whole.feed_whole(value);
        let mut bytes = Closer::default();
        bytes.feed(value);
        assert_eq!(
            (whole.done, whole.empty, whole.broken, whole.closing()),
            (bytes.done, bytes.empty, bytes.broken, bytes.closing())
        );
        whole.feed_whole("{}");
        assert!(whole.is_broken(), "a second value");

        let mut started = Closer::default();
        started.feed(r#"{"a": "#);
        started.feed_whole("[1]");
        assert!(!started.is_broken());
        assert_eq!(started.closing().as_deref(), Some("}"));
    }

    #[test]
    fn complete_and_broken_texts_need_nothing() {
        assert_eq!(close(r#"{"a": 1}"#), None);
        assert_eq!(close(""), None);
        assert_eq!(close("{oops"), None);
        assert_eq!(close(r#"{"a": 1}}"#), None);
        assert_eq!(close(r#"{"command": "ls -l"#).as_deref(), Some(r#""}"#));
        assert_eq!(close(r#"{"a": [1, "#).as_deref(), Some("null]}"));
        assert_eq!(close(r#"{"a": tr"#).as_deref(), Some("ue}"));
        assert_eq!(close(r#"{"a": "x\"#).as_deref(), Some(r#"\"}"#));
        assert_eq!(close(r#"{"a": "\u00"#).as_deref(), Some(r#"00"}"#));
    }

    #[test]
    fn raw_control_characters_and_bad_escapes_break_a_string() {
        for text in [
            "{\"comma\nd\": \"x\"}",
            "{\"a\": \"tab\there\"}",
            r#"{"a": "\q"}"#,
        ] {
            let mut c = Closer::default();
            c.feed(text);
            assert!(c.is_broken(), "{text:?}");
        }
        let mut c = Closer::default();
        c.feed(r#"{"a": "\n\t\/\b\f\r\"\\ ok"}"#);
        assert!(!c.is_broken());
    }
}
