//! The HTTP/1.1 that `serve` speaks: one request read from a connection
//! before a deadline, its head parsed by `httparse` with anything ambiguous
//! refused, its body read as it arrives; responses written, and connections
//! closed so that a client reads the answer rather than a reset.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Request line and headers, at most.
pub const MAX_HEAD: usize = 64 * 1024;
/// Headers in one request, at most.
const MAX_HEADERS: usize = 64;

/// A request refused: the status to answer with, and why.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub u16, pub &'static str);

/// A request's head, and whatever of its body came with it.
pub struct Head {
    pub method: String,
    /// Names in lower case, values as sent (visible ASCII and spaces).
    headers: Vec<(String, String)>,
    /// The announced length of the body (0 without `Content-Length`).
    pub content_length: usize,
    /// Bytes read past the head: the start of the body.
    rest: Vec<u8>,
}

impl Head {
    /// The value of the header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Time left before `deadline`, as a read timeout; `None` once it passed.
fn left(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

const LATE: Refused = Refused(408, "the request did not arrive in time");

/// One read before `deadline`: the bytes read, 0 at the end of the input.
fn read_before(conn: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, Refused> {
    loop {
        conn.set_read_timeout(Some(left(deadline).ok_or(LATE)?))
            .map_err(|_| LATE)?;
        match conn.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(LATE)
            }
            Err(_) => return Err(Refused(400, "the connection failed")),
        }
    }
}

/// Reads a request head before `deadline`. `Ok(None)`: the client closed
/// the connection without sending anything.
pub fn read_head(conn: &mut TcpStream, deadline: Instant) -> Result<Option<Head>, Refused> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = read_before(conn, &mut chunk, deadline)?;
        if n == 0 {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(Refused(400, "the request ended inside its head"));
        }
        // Only the new bytes (and the three before them) are searched for
        // the blank line, so that a head sent a byte at a time costs no more
        // than one sent at once.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = memchr::memmem::find(&buf[from..], b"\n\r\n") {
            break from + i + 3;
        }
        if let Some(i) = memchr::memmem::find(&buf[from..], b"\n\n") {
            break from + i + 2;
        }
        if buf.len() > MAX_HEAD {
            return Err(Refused(431, "the request's head is too long"));
        }
    };
    if end > MAX_HEAD {
        return Err(Refused(431, "the request's head is too long"));
    }
    let mut head = parse_head(&buf[..end])?;
    head.rest = buf.split_off(end);
    Ok(Some(head))
}

/// Parses a whole head (up to and with its blank line).
fn parse_head(bytes: &[u8]) -> Result<Head, Refused> {
    // httparse takes a bare LF for a line end; HTTP/1.1 wants CR LF, and a
    // server that reads lines otherwise than a proxy in front of it is open
    // to request smuggling.
    if memchr::memchr_iter(b'\n', bytes).any(|i| i == 0 || bytes[i - 1] != b'\r') {
        return Err(Refused(
            400,
            "a line of the request's head does not end in CR LF",
        ));
    }
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) if n == bytes.len() => {}
        Ok(_) => return Err(Refused(400, "a malformed request head")),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Refused(431, "the request has too many headers"))
        }
        Err(_) => return Err(Refused(400, "a malformed request head")),
    }
    let method = req.method.unwrap_or_default().to_owned();
    let mut headers = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .ok()
            .filter(|v| v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
            .ok_or(Refused(400, "a header value that is not text"))?;
        headers.push((h.name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut head = Head {
        method,
        headers,
        content_length: 0,
        rest: Vec::new(),
    };
    if head.header("transfer-encoding").is_some() {
        return Err(Refused(411, "send the body with Content-Length"));
    }
    // Sent twice, any of these would be read one way here and maybe
    // another by a proxy in front.
    for name in SINGLE {
        if head
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .nth(1)
            .is_some()
        {
            return Err(Refused(400, "a header sent twice"));
        }
    }
    if let Some(v) = head.header("content-length") {
        head.content_length = content_length(v)?;
    }
    Ok(head)
}

/// The headers a request may send once only.
const SINGLE: [&str; 5] = [
    "host",
    "content-length",
    "content-type",
    "authorization",
    "origin",
];

/// A `Content-Length` value: decimal digits only (no sign, no list).
fn content_length(v: &str) -> Result<usize, Refused> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refused(400, "Content-Length is not a number"));
    }
    // Too large for usize is too large for any body.
    Ok(v.parse().unwrap_or(usize::MAX))
}

/// Reads the body of `head` before `deadline`, as it arrives: memory grows
/// with what was sent, never with what was announced.
pub fn read_body(
    conn: &mut TcpStream,
    head: &mut Head,
    deadline: Instant,
) -> Result<Vec<u8>, Refused> {
    let len = head.content_length;
    let mut body = std::mem::take(&mut head.rest);
    if body.len() > len {
        return Err(Refused(400, "more bytes than Content-Length"));
    }
    let mut chunk = [0u8; 16 * 1024];
    while body.len() < len {
        let want = (len - body.len()).min(chunk.len());
        let n = read_before(conn, &mut chunk[..want], deadline)?;
        if n == 0 {
            return Err(Refused(400, "the request body ended early"));
        }
        if body.capacity() - body.len() < n {
            // Doubling, but never past the announced length.
            let more = body.len().max(n).min(len - body.len());
            body.reserve_exact(more);
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(body)
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    }
}

/// Writes a whole response: `headers` are lines each ending in CR LF.
pub fn respond(
    conn: &mut TcpStream,
    status: u16,
    headers: &str,
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\n{headers}Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    conn.flush()
}

/// How long a closing connection's unread input is drained, at most.
const LINGER: Duration = Duration::from_secs(1);
/// How much of it, at most.
const LINGER_BYTES: usize = 1024 * 1024;

/// Closes a connection after its response: the sending side first, then
/// what the client is still sending is read and dropped for a moment,
/// because closing a socket with unread input resets the connection, and
/// a client may then lose the response.
pub fn close(conn: &mut TcpStream) {
    let _ = conn.shutdown(Shutdown::Write);
    let until = Instant::now() + LINGER;
    let mut chunk = [0u8; 16 * 1024];
    let mut drained = 0;
    while drained < LINGER_BYTES {
        match read_before(conn, &mut chunk, until) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(head: &str) -> Result<Head, Refused> {
        parse_head(head.as_bytes())
    }

    #[test]
    fn a_plain_request_parses() {
        let h = parse("POST /agent HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nX-A:  b \r\n\r\n")
            .unwrap();
        assert_eq!(h.method, "POST");
        assert_eq!(h.content_length, 12);
        assert_eq!(h.header("x-a"), Some("b"));
        assert_eq!(h.header("host"), Some("x"));
    }

    #[test]
    fn ambiguous_heads_are_refused() {
        for head in [
            "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
            "POST / HTTP/1.1\nContent-Length: 5\n\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\n\r\n",
            "POST / HTTP/1.1\r\nX-A: b\r\n c\r\n\r\n",
            "POST / HTTP/1.1\r\nX-A: \x01\r\n\r\n",
            "POST  / HTTP/1.1\r\n\r\n",
            "POST / HTTP/2.0\r\n\r\n",
        ] {
            assert_eq!(parse(head).err().map(|r| r.0), Some(400), "{head:?}");
        }
        let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(parse(chunked).err().map(|r| r.0), Some(411));
    }

    #[test]
    fn a_header_that_counts_is_sent_once() {
        for name in ["Host", "Origin", "Authorization", "Content-Type"] {
            let head = format!("POST / HTTP/1.1\r\n{name}: a\r\n{name}: a\r\n\r\n");
            assert_eq!(parse(&head).err().map(|r| r.0), Some(400), "{head:?}");
        }
        let h = parse("POST / HTTP/1.1\r\nAccept: a\r\nAccept: b\r\n\r\n").unwrap();
        assert_eq!(h.header("accept"), Some("a"));
    }
}
