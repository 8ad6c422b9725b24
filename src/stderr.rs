//! The CLI's stderr as `run` keeps it for RUN_ERROR.

use std::collections::VecDeque;

use crate::redact::Redactor;

/// The last lines of the CLI's stderr, as RUN_ERROR gives them: without
/// escape sequences, credentials redacted, each line cut at
/// [`Tail::LINE_BYTES`]. Memory stays bounded whatever the CLI writes.
#[derive(Default)]
pub struct Tail {
    lines: VecDeque<String>,
    /// The line being written (its first bytes only).
    partial: Vec<u8>,
    redactor: Redactor,
}

impl Tail {
    const LINES: usize = 20;
    const LINE_BYTES: usize = 2000;

    pub fn new(redactor: Redactor) -> Tail {
        Tail {
            redactor,
            ..Tail::default()
        }
    }

    /// More of the CLI's stderr.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(nl) = memchr::memchr(b'\n', bytes) {
            self.keep(&bytes[..nl]);
            let line = std::mem::take(&mut self.partial);
            self.push(&String::from_utf8_lossy(&line));
            bytes = &bytes[nl + 1..];
        }
        self.keep(bytes);
    }

    /// Add to the partial line, up to what a line keeps (and a little more,
    /// so that a cut line is seen as cut).
    fn keep(&mut self, bytes: &[u8]) {
        let room = (Self::LINE_BYTES + 4).saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn push(&mut self, line: &str) {
        let line = strip_ansi(line);
        let line = self.redactor.redact(&line);
        if line.trim().is_empty() {
            return;
        }
        if self.lines.len() == Self::LINES {
            self.lines.pop_front();
        }
        let mut l = line.trim_end().to_owned();
        if l.len() > Self::LINE_BYTES {
            let mut cut = Self::LINE_BYTES;
            while !l.is_char_boundary(cut) {
                cut -= 1;
            }
            l.truncate(cut);
            l.push('…');
        }
        self.lines.push_back(l);
    }

    /// The lines kept, the partial one last.
    pub fn text(&self) -> String {
        let mut t = Tail {
            lines: self.lines.clone(),
            partial: Vec::new(),
            redactor: Redactor::default(),
        };
        if !self.partial.is_empty() {
            let partial = String::from_utf8_lossy(&self.partial);
            let partial = strip_ansi(&partial);
            t.push(&self.redactor.redact(&partial));
        }
        t.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
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
        assert!(t.partial.len() <= Tail::LINE_BYTES + 4);
        t.feed(b"\n");
        let text = t.text();
        assert!(text.ends_with('…') && text.len() < Tail::LINE_BYTES + 8);
    }

    #[test]
    fn credentials_leave_the_tail() {
        let mut t = Tail::new(Redactor::default());
        t.feed(b"Error: GEMINI_API_KEY=AIzaSyA1234567890abcdefghijklmnopqrstu rejected\n");
        assert_eq!(t.text(), "Error: GEMINI_API_KEY=[REDACTED] rejected");
    }
}
