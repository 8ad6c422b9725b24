//! The line splitter: one reusable buffer, lines handed out as borrowed
//! `&mut [u8]` slices, no allocation per line.
//!
//! A line is everything up to a `\n`; a trailing `\r` is removed (CRLF input),
//! a UTF-8 byte-order mark at the very start of the stream is skipped, and a
//! last line without a newline is still a line. Lines can be of any length: the
//! buffer doubles until the longest line fits and is never shrunk below that,
//! so memory is bounded by the longest line, not by the size of the input.

use std::io::{self, Read};

/// 64 KiB: one read usually holds many events.
const INITIAL_CAPACITY: usize = 64 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

pub struct Lines<R> {
    rdr: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes.
    pos: usize,
    /// End of the valid bytes.
    end: usize,
    /// Bytes from `pos` up to here are known to hold no `\n`: a long line
    /// arriving in many reads is searched once, not once per read.
    searched: usize,
    /// Bytes handed to `memchr` so far (to test that nothing is rescanned).
    #[cfg(test)]
    scanned: u64,
    eof: bool,
    /// Nothing has been read yet (the BOM check is still to be done).
    at_start: bool,
}

impl<R: Read> Lines<R> {
    pub fn new(rdr: R) -> Self {
        Self::with_capacity(INITIAL_CAPACITY, rdr)
    }

    pub fn with_capacity(capacity: usize, rdr: R) -> Self {
        Lines {
            rdr,
            buf: vec![0; capacity.max(1)],
            pos: 0,
            end: 0,
            searched: 0,
            #[cfg(test)]
            scanned: 0,
            eof: false,
            at_start: true,
        }
    }

    /// The next line, without its `\n` (and `\r`), or `None` at the end of input.
    pub fn next_line(&mut self) -> io::Result<Option<&mut [u8]>> {
        Ok(self.next_with_end()?.map(|(line, _)| line))
    }

    /// Like [`next_line`](Self::next_line), also saying whether the line ended
    /// with a newline (a last line without one may have been cut short).
    pub fn next_with_end(&mut self) -> io::Result<Option<(&mut [u8], bool)>> {
        loop {
            if self.at_start {
                if self.end - self.pos < BOM.len() && !self.eof {
                    self.refill()?;
                    continue;
                }
                self.at_start = false;
                if self.buf[self.pos..self.end].starts_with(BOM) {
                    self.pos += BOM.len();
                }
            }
            let from = self.searched.max(self.pos);
            #[cfg(test)]
            {
                self.scanned += (self.end - from) as u64;
            }
            if let Some(i) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let start = self.pos;
                let nl = from + i;
                self.pos = nl + 1;
                self.searched = self.pos;
                return Ok(Some((trim_cr(&mut self.buf[start..nl]), true)));
            }
            self.searched = self.end;
            if self.eof {
                if self.pos == self.end {
                    return Ok(None);
                }
                let start = std::mem::replace(&mut self.pos, self.end);
                return Ok(Some((trim_cr(&mut self.buf[start..self.end]), false)));
            }
            self.refill()?;
        }
    }

    /// Whether a complete line is already buffered, so that the next call to
    /// [`next_line`](Self::next_line) will not read (and so cannot block).
    pub fn has_buffered_line(&self) -> bool {
        memchr::memchr(b'\n', &self.buf[self.searched.max(self.pos)..self.end]).is_some()
            || (self.eof && self.pos < self.end)
    }

    /// Whether the input is known to have ended.
    pub fn at_eof(&self) -> bool {
        self.eof && self.pos == self.end
    }

    /// Move the partial line to the front, grow the buffer if the partial line
    /// fills it, and read once more (retrying on EINTR).
    fn refill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.searched -= self.pos.min(self.searched);
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let len = self.buf.len() * 2;
            self.buf.resize(len, 0);
        }
        loop {
            match self.rdr.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

fn trim_cr(line: &mut [u8]) -> &mut [u8] {
    match line {
        [head @ .., b'\r'] => head,
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `n` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        n: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let k = self.n.min(buf.len()).min(self.data.len());
            buf[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            Ok(k)
        }
    }

    fn split(input: &[u8], per_read: usize, cap: usize) -> Vec<Vec<u8>> {
        let mut lines = Lines::with_capacity(
            cap,
            Trickle {
                data: input,
                n: per_read,
            },
        );
        let mut got = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            got.push(line.to_vec());
        }
        got
    }

    /// What the splitter should give: split on `\n`, no empty last piece,
    /// a trailing `\r` removed, a leading BOM removed.
    fn reference(input: &[u8]) -> Vec<Vec<u8>> {
        let input = input.strip_prefix(BOM).unwrap_or(input);
        if input.is_empty() {
            return vec![];
        }
        let input = input.strip_suffix(b"\n").unwrap_or(input);
        input
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec())
            .collect()
    }

    #[test]
    fn matches_reference_for_every_read_size() {
        let long = vec![b'x'; 1000];
        let mut with_long = b"a\n".to_vec();
        with_long.extend_from_slice(&long);
        with_long.extend_from_slice(b"\nb\n");
        let cases: Vec<&[u8]> = vec![
            b"",
            b"\n",
            b"\n\n",
            b"a",
            b"a\n",
            b"a\nb",
            b"a\r\nb\r\n",
            b"\xff",
            b"\xEF\xBB\xBF{\"a\":1}\n",
            b"\xEF\xBB",
            b"x\xEF\xBB\xBF\n",
            b"\r",
            b"a\n\nb\n",
            &with_long,
        ];
        for input in cases {
            for per_read in [1, 2, 3, 7, 4096] {
                for cap in [1, 2, 16, 4096] {
                    assert_eq!(
                        split(input, per_read, cap),
                        reference(input),
                        "input {input:?} per_read {per_read} cap {cap}"
                    );
                }
            }
        }
    }

    #[test]
    fn buffered_line_is_seen_without_reading() {
        let mut lines = Lines::new(Trickle {
            data: b"one\ntwo\nthr",
            n: 100,
        });
        assert_eq!(lines.next_line().unwrap().unwrap(), b"one");
        assert!(lines.has_buffered_line());
        assert_eq!(lines.next_line().unwrap().unwrap(), b"two");
        assert!(!lines.has_buffered_line());
        assert_eq!(lines.next_line().unwrap().unwrap(), b"thr");
        assert!(lines.next_line().unwrap().is_none());
        assert!(lines.at_eof());
    }

    #[test]
    fn a_long_line_in_many_reads_is_searched_once() {
        let mut input = vec![b'x'; 1 << 20];
        input.extend_from_slice(b"\nshort\n");
        let mut lines = Lines::with_capacity(
            16,
            Trickle {
                data: &input,
                n: 4096,
            },
        );
        assert_eq!(lines.next_line().unwrap().unwrap().len(), 1 << 20);
        assert_eq!(lines.next_line().unwrap().unwrap(), b"short");
        assert!(lines.next_line().unwrap().is_none());
        // Each byte is searched at most twice (the old splitter searched the
        // partial line again after every read: ~128 MiB here).
        assert!(
            lines.scanned <= 2 * input.len() as u64,
            "searched {} bytes of {}",
            lines.scanned,
            input.len()
        );
    }

    #[test]
    fn memory_is_bounded_by_the_longest_line() {
        let mut input = Vec::new();
        for _ in 0..10_000 {
            input.extend_from_slice(b"0123456789012345678901234567890123456789\n");
        }
        let mut lines = Lines::with_capacity(64, &input[..]);
        let mut n = 0;
        while lines.next_line().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 10_000);
        assert!(lines.buf.len() <= 128, "buffer grew to {}", lines.buf.len());
    }
}
