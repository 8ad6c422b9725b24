//! What `run` copies from the CLI's stderr into RUN_ERROR goes to front ends
//! and logs: credentials are taken out first. Redacted, each replaced by
//! [`MASK`]:
//!
//! - the value of every environment variable whose name looks like a
//!   credential (see [`credential_name`]), wherever it appears, when it is at
//!   least 8 bytes long;
//! - the value after such a name followed by `=` or `:` (`GEMINI_API_KEY=…`,
//!   `"api_key": "…"`, `Authorization: Bearer …`);
//! - the token after `Bearer` or `Basic`;
//! - tokens of the common key shapes: `sk-…`, `AIza…`, `ghp_…`, `gho_…`,
//!   `github_pat_…`, `xoxb-…`, `xoxp-…`, `AKIA…`.
//!
//! Our own stderr, where the CLI's stderr is passed through, is the user's
//! terminal: it is left as it is.

use std::borrow::Cow;

/// What a secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// The words that make a name a credential's, matched case-insensitively
/// anywhere in it.
const CREDENTIAL_WORDS: [&str; 9] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "AUTH",
    "CREDENTIAL",
    "COOKIE",
    "SESSION",
];

/// Token shapes: a prefix, and how many token characters must follow it.
const SHAPES: [(&str, usize); 8] = [
    ("sk-", 16),
    ("AIza", 30),
    ("ghp_", 30),
    ("gho_", 30),
    ("github_pat_", 30),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("AKIA", 16),
];

/// Whether an environment variable or a field of this name holds a secret.
pub fn credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CREDENTIAL_WORDS.iter().any(|w| upper.contains(w))
}

/// Takes credentials out of text.
#[derive(Debug, Default)]
pub struct Redactor {
    /// Values of credential environment variables, longest first.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor that knows the credentials in our environment.
    pub fn from_env() -> Redactor {
        Redactor::with_env(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// A redactor that knows the credentials among these variables.
    pub fn with_env(vars: impl IntoIterator<Item = (String, String)>) -> Redactor {
        let mut secrets: Vec<String> = vars
            .into_iter()
            .filter(|(k, v)| credential_name(k) && v.len() >= 8)
            .map(|(_, v)| v)
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with its credentials replaced by [`MASK`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for s in &self.secrets {
            if text.contains(s.as_str()) {
                text = Cow::Owned(text.replace(s.as_str(), MASK));
            }
        }
        match shapes(&text) {
            Cow::Borrowed(_) => {}
            Cow::Owned(t) => text = Cow::Owned(t),
        }
        text
    }
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

/// The named values, the tokens after an auth scheme, and the key shapes.
fn shapes(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    // Byte ranges to mask, in order and not overlapping.
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_word(b[i]) || (i > 0 && is_word(b[i - 1])) {
            i += 1;
            continue;
        }
        // A word starts at i.
        let mut end = i;
        while end < b.len() && is_word(b[end]) {
            end += 1;
        }
        let word = &text[i..end];
        if let Some(len) = SHAPES
            .iter()
            .find(|(p, _)| word.starts_with(p))
            .map(|(p, n)| (p, *n))
            .and_then(|(p, n)| (word.len() - p.len() >= n).then_some(word.len()))
        {
            cuts.push((i, i + len));
            i = end;
            continue;
        }
        let scheme = word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic");
        let named = credential_name(word);
        if scheme || named {
            let mut j = end;
            if named {
                // `NAME=`, `NAME: `, `"NAME": "`.
                if j < b.len() && matches!(b[j], b'"' | b'\'') {
                    j += 1;
                }
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                if j < b.len() && matches!(b[j], b'=' | b':') {
                    j += 1;
                } else {
                    i = end;
                    continue;
                }
            }
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j < b.len() && matches!(b[j], b'"' | b'\'') {
                j += 1;
            }
            // `Authorization: Bearer TOKEN`: the scheme stays, the token goes.
            let mut k = j;
            while k < b.len() && is_word(b[k]) {
                k += 1;
            }
            let after_scheme = named
                && (text[j..k].eq_ignore_ascii_case("bearer")
                    || text[j..k].eq_ignore_ascii_case("basic"))
                && k < b.len()
                && b[k] == b' ';
            if after_scheme {
                j = k;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
            }
            let mut k = j;
            while k < b.len() && is_token(b[k]) {
                k += 1;
            }
            let long_enough = if scheme { k - j >= 8 } else { k > j };
            if long_enough {
                cuts.push((j, k));
            }
            i = k.max(end);
            continue;
        }
        i = end;
    }
    if cuts.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (s, e) in cuts {
        out.push_str(&text[at..s]);
        out.push_str(MASK);
        at = e;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> String {
        Redactor::with_env([
            ("MY_SERVICE_TOKEN".to_owned(), "tok-3f9a8b7c6d".to_owned()),
            ("HOME".to_owned(), "/home/someone".to_owned()),
            ("SHORT_KEY".to_owned(), "abc".to_owned()),
        ])
        .redact(text)
        .into_owned()
    }

    #[test]
    fn credentials_are_masked() {
        for (text, want) in [
            (
                "GEMINI_API_KEY=AIzaSyA1234567890abcdefghijklmnopqrstu is invalid",
                "GEMINI_API_KEY=[REDACTED] is invalid",
            ),
            (
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
                "Authorization: Bearer [REDACTED]",
            ),
            ("bearer abcdefgh12345678", "bearer [REDACTED]"),
            (
                "key sk-proj-AbCdEfGh1234567890XyZ rejected",
                "key [REDACTED] rejected",
            ),
            (
                "used AIzaSyA1234567890abcdefghijklmnopqrstu here",
                "used [REDACTED] here",
            ),
            (
                r#"{"api_key": "hunter2hunter2"}"#,
                r#"{"api_key": "[REDACTED]"}"#,
            ),
            ("password: s3cret", "password: [REDACTED]"),
            (
                "the token tok-3f9a8b7c6d expired",
                "the token [REDACTED] expired",
            ),
            (
                "export AWS_SECRET_ACCESS_KEY='x/y+z'",
                "export AWS_SECRET_ACCESS_KEY='[REDACTED]'",
            ),
        ] {
            assert_eq!(r(text), want, "{text}");
        }
    }

    #[test]
    fn ordinary_text_stays() {
        for text in [
            "Error: stream disconnected before completion",
            "see https://example.com/docs: it says so",
            "HOME is /home/someone",
            "a task-list with sk-short and Bearer x",
            "Please set an Auth method in your settings.json",
            "ünïcödé: fine",
            "",
        ] {
            assert_eq!(r(text), text);
        }
    }
}
