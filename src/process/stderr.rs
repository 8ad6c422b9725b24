//! The CLI's stderr as `run` keeps it for RUN_ERROR.

use std::collections::VecDeque;

use crate::process::redact::Redactor;

/// The last lines of the CLI's stderr, as RUN_ERROR gives them: without
/// escape sequences or blank lines, credentials redacted, each line cut at
/// [`Tail::LINE_BYTES`]. Memory stays bounded whatever the CLI writes, and
/// only the lines that can end up in the tail are looked at.
#[derive(Default)]
pub struct Tail {
    /// Lines without escape sequences, at most [`Tail::KEEP`] bytes each.
    lines: VecDeque<String>,
    /// The line being written (its first bytes only).
    partial: Vec<u8>,
    redactor: Redactor,
}

impl Tail {
    const LINES: usize = 20;
    const LINE_BYTES: usize = 2000;
    /// What is kept of a line: more than is shown, so that a credential
    /// across the cut is still recognized.
    const KEEP: usize = Self::LINE_BYTES + 256;

    pub fn new(redactor: Redactor) -> Tail {
        Tail {
            redactor,
            ..Tail::default()
        }
    }

    /// More of the CLI's stderr.
    pub fn feed(&mut self, bytes: &[u8]) {
        let Some(last) = memchr::memrchr(b'\n', bytes) else {
            self.keep(bytes);
            return;
        };
        // The lines this chunk completes, newest first, up to as many as
        // the tail holds: older ones would only be pushed out again.
        let complete = &bytes[..last];
        let mut newest: Vec<String> = Vec::new();
        let mut end = complete.len();
        let mut first = None;
        while newest.len() < Self::LINES {
            match memchr::memrchr(b'\n', &complete[..end]) {
                Some(nl) => {
                    newest.extend(clean(&complete[nl + 1..end]));
                    end = nl;
                }
                None => {
                    first = Some(&complete[..end]);
                    break;
                }
            }
        }
        match first {
            // The first line of the chunk ends the partial one.
            Some(rest) => {
                self.keep(rest);
                let line = std::mem::take(&mut self.partial);
                if let Some(line) = clean(&line) {
                    self.push(line);
                }
            }
            None => self.lines.clear(),
        }
        for line in newest.into_iter().rev() {
            self.push(line);
        }
        self.partial.clear();
        self.keep(&bytes[last + 1..]);
    }

    /// Add to the partial line, up to what a line keeps.
    fn keep(&mut self, bytes: &[u8]) {
        let room = Self::KEEP.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn push(&mut self, line: String) {
        if self.lines.len() == Self::LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The lines kept, the partial one last, redacted and cut.
    pub fn text(&self) -> String {
        let partial = clean(&self.partial);
        let skip = usize::from(partial.is_some() && self.lines.len() == Self::LINES);
        let mut out = String::new();
        for line in self.lines.iter().skip(skip).chain(partial.as_ref()) {
            let line = self.redactor.redact(line);
            if !out.is_empty() {
                out.push('\n');
            }
            if line.len() > Self::LINE_BYTES {
                let mut cut = Self::LINE_BYTES;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.push_str(&line[..cut]);
                out.push('…');
            } else {
                out.push_str(&line);
            }
        }
        out
    }
}

/// A line as the tail keeps it (its first [`Tail::KEEP`] bytes, escape
/// sequences and trailing space gone), or `None` when that leaves nothing.
fn clean(line: &[u8]) -> Option<String> {
    let line = String::from_utf8_lossy(&line[..line.len().min(Tail::KEEP)]);
    let line = strip_ansi(&line);
    let line = line.trim_end();
    (!line.trim_start().is_empty()).then(|| line.to_owned())
}

/// A line without its terminal escape sequences: CLIs colour their errors
/// (Gemini CLI's untrusted-folder message is red), and RUN_ERROR is read by
/// a UI, not a terminal. CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or
/// `ESC \\`) and the other `ESC …` sequences go.
pub fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\x1b') {
        return line.into();
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            // `ESC ( B` and the like: intermediate bytes, then a final one.
            Some(c) if (' '..='/').contains(&c) => {
                for c in chars.by_ref() {
                    if !(' '..='/').contains(&c) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_leave_the_stderr_tail() {
        assert_eq!(strip_ansi("plain"), "plain");
        assert_eq!(
            strip_ansi("\x1b[31mnot trusted\x1b[0m: see \x1b]8;;https://x\x07link\x1b]8;;\x1b\\ \x1b(Bdone"),
            "not trusted: see link done"
        );
        assert_eq!(strip_ansi("cut \x1b[1;3"), "cut ");
        let mut t = Tail::default();
        t.feed(b"\x1b[2K\x1b[0m\n");
        t.feed(b"\x1b[31mError: boom\x1b[0m\n");
        assert_eq!(t.text(), "Error: boom");
    }

    #[test]
    fn a_line_without_its_newline_counts() {
        let mut t = Tail::default();
        t.feed(b"first\nWaiting for authentication...");
        assert_eq!(t.text(), "first\nWaiting for authentication...");
    }

    #[test]
    fn a_long_line_is_cut_and_memory_bounded() {
        let mut t = Tail::default();
        for _ in 0..1000 {
            t.feed(&[b'x'; 4096]);
        }
        assert!(t.partial.len() <= Tail::KEEP);
        t.feed(b"\n");
        let text = t.text();
        assert!(text.ends_with('…') && text.len() < Tail::LINE_BYTES + 8);
    }

    #[test]
    fn only_the_last_lines_stay() {
        let mut t = Tail::default();
        t.feed(b"partial start ");
        t.feed(b"ends here\n\n\x1b[0m\n");
        assert_eq!(t.text(), "partial start ends here");
        let many: String = (0..100).map(|i| format!("line {i}\n\n")).collect();
        t.feed(many.as_bytes());
        let want: Vec<String> = (80..100).map(|i| format!("line {i}")).collect();
        assert_eq!(t.text(), want.join("\n"));
        t.feed(b"tail without newline");
        let want: Vec<String> = (81..100)
            .map(|i| format!("line {i}"))
            .chain(["tail without newline".to_owned()])
            .collect();
        assert_eq!(t.text(), want.join("\n"));
    }

    #[test]
    fn credentials_leave_the_tail() {
        let mut t = Tail::new(Redactor::default());
        t.feed(b"Error: GEMINI_API_KEY=AIzaSyA1234567890abcdefghijklmnopqrstu rejected\n");
        assert_eq!(t.text(), "Error: GEMINI_API_KEY=[REDACTED] rejected");
    }
}
