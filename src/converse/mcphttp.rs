//! Tools from the page for the CLIs that reach an MCP server by URL
//! (Copilot CLI and OpenCode in their JSON modes; Gemini CLI, Copilot CLI
//! and OpenCode over ACP, given it in `session/new`): the server of
//! [`crate::converse::mcp`] answered by the `run` process itself over MCP's
//! streamable HTTP.
//!
//! The endpoint listens on the loopback address only (`127.0.0.1`, a port
//! the system picks) at a path made of a fresh random secret
//! ([`Endpoint::url`]); it answers nothing else: a request from a peer that
//! is not loopback, with an `Origin` header (a browser's), to any other
//! path, or by any method but `POST` is refused, and it is gone when the
//! run ends. Each request is one JSON-RPC message answered with one JSON
//! body (`202` for a notification), one request per connection. A
//! `tools/call` is held open: the call is handed to the session
//! ([`Session`]), which shows it, ends the run with the call pending and
//! waits for the page's answer as Claude Code's route does
//! ([`crate::converse::mcp::wait`]); the answer becomes the body of that
//! held response.

use std::io::{self, BufRead, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agui::Emitter;
use crate::converse::ask::{translate_line, Ask, Asker, Pending, Verdict, Waited, Waiting};
use crate::converse::mcp;
use crate::source::Translate;

/// The longest request head read (bytes).
const MAX_HEAD: usize = 16 * 1024;
/// The most headers a request may send.
const MAX_HEADERS: usize = 64;
/// The largest request body read (bytes): a call's arguments, at most.
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// The most connections served at once.
const MAX_CONNECTIONS: usize = 32;
/// How long a request may take to arrive.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A call of a page's tool, and where its answer goes.
struct Held {
    call: mcp::Call,
    reply: Sender<Box<RawValue>>,
}

/// The endpoint, listening until it is dropped.
pub struct Endpoint {
    url: String,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    calls: Option<Receiver<Held>>,
    thread: Option<JoinHandle<()>>,
    /// The server, whose state a call may change.
    shared: Arc<Shared>,
}

impl Endpoint {
    /// Listen on `127.0.0.1` (a port the system picks) for `server`.
    pub fn start(server: mcp::Server) -> io::Result<Endpoint> {
        let mut bytes = [0u8; 24];
        crate::base::uuid::fill_random(&mut bytes)?;
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let url = format!("http://{addr}/{secret}/mcp");
        let path = format!("/{secret}/mcp");
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            path,
            server: std::sync::Mutex::new(server),
            calls: tx,
            live: AtomicUsize::new(0),
            next: AtomicU64::new(1),
        });
        let stopping = stop.clone();
        let accepting = shared.clone();
        let thread = std::thread::spawn(move || accept(&listener, &accepting, &stopping));
        Ok(Endpoint {
            url,
            addr,
            stop,
            calls: Some(rx),
            thread: Some(thread),
            shared,
        })
    }

    /// The URL the CLI is given: it holds the secret.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Held calls are answered (with an error) as their replies go.
        self.calls.take();
        // Wake the accepting thread.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the connections share.
struct Shared {
    path: String,
    server: std::sync::Mutex<mcp::Server>,
    calls: Sender<Held>,
    live: AtomicUsize,
    next: AtomicU64,
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut conn) = conn else { continue };
        if shared.live.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.live.fetch_sub(1, Ordering::SeqCst);
            respond(&mut conn, 503, "too many connections");
            continue;
        }
        let shared = shared.clone();
        std::thread::spawn(move || {
            serve(&mut conn, &shared);
            shared.live.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// A refusal: the status and why.
type Refusal = (u16, &'static str);

/// One request on `conn`, answered.
fn serve(conn: &mut TcpStream, shared: &Shared) {
    match request(conn, shared) {
        Ok(body) => respond_json(conn, &body),
        Err((status, why)) => respond(conn, status, why),
    }
    // What the client still sends (the body of a request refused by its
    // head) is read and dropped: closing with it unread would reset the
    // connection, and the client could lose the answer.
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = conn.set_read_timeout(Some(std::time::Duration::from_millis(200)));
    let _ = io::copy(&mut Read::take(&*conn, 1024 * 1024), &mut io::sink());
}

/// The request read and checked, and its answer's body (empty: `202`).
fn request(conn: &mut TcpStream, shared: &Shared) -> Result<Vec<u8>, Refusal> {
    let peer = conn.peer_addr().map_err(|_| (400, "no peer"))?;
    if !peer.ip().is_loopback() {
        return Err((403, "only the loopback address is served"));
    }
    let _ = conn.set_read_timeout(Some(READ_TIMEOUT));
    let _ = conn.set_write_timeout(Some(READ_TIMEOUT));
    let (head, mut body) = read_head(conn)?;
    if head.origin {
        return Err((403, "a request with an Origin header is refused"));
    }
    if !same(head.path.as_bytes(), shared.path.as_bytes()) {
        return Err((404, "not found"));
    }
    if head.method != "POST" {
        return Err((405, "only POST is served"));
    }
    if head.chunked {
        return Err((411, "a body of a known length (Content-Length) is needed"));
    }
    let length = head
        .length
        .ok_or((411, "a body of a known length (Content-Length) is needed"))?;
    if length > MAX_BODY {
        return Err((413, "the body is too large"));
    }
    if body.len() < length {
        let more = length - body.len();
        let start = body.len();
        body.resize(length, 0);
        conn.read_exact(&mut body[start..start + more])
            .map_err(|_| (400, "the body ended early"))?;
    }
    body.truncate(length);
    let message: Box<RawValue> =
        serde_json::from_slice(&body).map_err(|_| (400, "not a JSON-RPC message"))?;
    #[derive(Deserialize)]
    struct Id<'a> {
        #[serde(default, borrow)]
        id: Option<&'a RawValue>,
    }
    let notification = serde_json::from_str::<Id>(message.get())
        .map_err(|_| (400, "not a JSON-RPC message"))?
        .id
        .is_none_or(|i| i.get() == "null");
    let request_id = format!("http-{}", shared.next.fetch_add(1, Ordering::SeqCst));
    // The lock is let go before a call waits for its answer.
    let reply = shared
        .server
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .message(&request_id, &message);
    match reply {
        mcp::Reply::Now(_) if notification => Ok(Vec::new()),
        mcp::Reply::Now(reply) => Ok(reply.get().as_bytes().to_vec()),
        mcp::Reply::Call(call) => {
            let (tx, rx) = mpsc::channel();
            shared
                .calls
                .send(Held { call, reply: tx })
                .map_err(|_| (503, "the run is over"))?;
            let answer = rx.recv().map_err(|_| (503, "the run is over"))?;
            Ok(answer.get().as_bytes().to_vec())
        }
    }
}

/// Whether `a` is `b`, in a time that does not tell how much of it matched.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// What the endpoint reads of a request's head.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    method: String,
    path: String,
    /// It has an `Origin` header (a browser's request).
    origin: bool,
    /// It has a `Transfer-Encoding` header.
    chunked: bool,
    /// Its `Content-Length`, if it has one.
    length: Option<usize>,
}

/// The head (read up to its blank line, parsed by `httparse`) and the
/// bytes read after it.
fn read_head(conn: &mut TcpStream) -> Result<(Head, Vec<u8>), Refusal> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = conn
            .read(&mut chunk)
            .map_err(|_| (408, "the request did not arrive"))?;
        if n == 0 {
            return Err((400, "the request ended inside its head"));
        }
        // Only the new bytes (and the three before them) are searched for
        // the blank line, so that a head sent a byte at a time costs no more
        // than one sent at once; a blank line after a bare LF ends it too
        // (and is refused with it).
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        let blank = memchr::memmem::find(&buf[from..], b"\n\r\n").map(|i| from + i + 3);
        let bare = memchr::memmem::find(&buf[from..], b"\n\n").map(|i| from + i + 2);
        if let Some(end) = blank.into_iter().chain(bare).min() {
            break end;
        }
        if buf.len() > MAX_HEAD {
            return Err((431, "the request's head is too long"));
        }
    };
    if end > MAX_HEAD {
        return Err((431, "the request's head is too long"));
    }
    let rest = buf.split_off(end);
    Ok((parse_head(&buf)?, rest))
}

/// A whole head (up to and with its blank line), parsed by `httparse`, with
/// anything two readers could take two ways refused: a line that does not
/// end in CR LF, a `Content-Length` that is not decimal digits, or one of
/// the headers that count sent twice.
fn parse_head(bytes: &[u8]) -> Result<Head, Refusal> {
    // httparse takes a bare LF for a line end; HTTP/1.1 wants CR LF.
    if memchr::memchr_iter(b'\n', bytes).any(|i| i == 0 || bytes[i - 1] != b'\r') {
        return Err((400, "a line of the request's head does not end in CR LF"));
    }
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) if n == bytes.len() => {}
        Err(httparse::Error::TooManyHeaders) => {
            return Err((431, "the request has too many headers"))
        }
        _ => return Err((400, "a malformed request head")),
    }
    let all = |name: &'static str| {
        req.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
    };
    for name in ["content-length", "transfer-encoding", "origin", "host"] {
        if all(name).nth(1).is_some() {
            return Err((400, "a header sent twice"));
        }
    }
    let length = match all("content-length").next().map(|h| h.value) {
        Some(v) if !v.is_empty() && v.iter().all(u8::is_ascii_digit) => {
            // Too large for usize is too large for any body.
            Some(std::str::from_utf8(v).map_or(usize::MAX, |v| v.parse().unwrap_or(usize::MAX)))
        }
        Some(_) => return Err((400, "Content-Length is not a number")),
        None => None,
    };
    Ok(Head {
        method: req.method.unwrap_or_default().to_owned(),
        path: req.path.unwrap_or_default().to_owned(),
        origin: all("origin").next().is_some(),
        chunked: all("transfer-encoding").next().is_some(),
        length,
    })
}

fn respond_json(conn: &mut TcpStream, body: &[u8]) {
    let status = if body.is_empty() {
        "202 Accepted"
    } else {
        "200 OK"
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn
        .write_all(head.as_bytes())
        .and_then(|()| conn.write_all(body));
    let _ = conn.flush();
}

fn respond(conn: &mut TcpStream, status: u16, why: &str) {
    let allow = if status == 405 { "Allow: POST\r\n" } else { "" };
    let text = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let head = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n{why}\n",
        why.len() + 1
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.flush();
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The CLI's output ended.
    Eof,
    /// A stop was asked for (a signal, `--timeout`).
    Stopped,
    /// No answer came: the pending calls were answered with this error.
    Expired(String),
}

/// The calls an [`Endpoint`] has taken and where their answers go: what a
/// session that serves the page's tools over HTTP holds (the stream mode's
/// [`Session`], the ACP client's).
pub struct Route {
    url: String,
    arrived: Option<Receiver<Held>>,
    calls: mcp::Calls,
    /// Where each pending call's answer goes, by its request id.
    replies: Vec<(String, Sender<Box<RawValue>>)>,
    /// The server, whose state a call may change.
    shared: Arc<Shared>,
}

impl Endpoint {
    /// The route of the calls this endpoint takes (once: a second route
    /// gets none).
    pub fn route(&mut self) -> Route {
        Route {
            url: self.url.clone(),
            arrived: self.calls.take(),
            calls: mcp::Calls::default(),
            replies: Vec::new(),
            shared: self.shared.clone(),
        }
    }
}

impl Route {
    /// The state a call of the state's tool has changed (answered at once
    /// by the connection's thread) since this was last asked.
    pub fn take_state(&self) -> Option<Box<RawValue>> {
        self.shared
            .server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take_state()
    }

    /// The calls of the state's tool since this was last asked (answered
    /// at once by the connection's thread), shown: each one's input given
    /// to the call the stream shows open without it
    /// ([`Emitter::own_call_input`]: Gemini CLI's over ACP; an input no
    /// such call waits for is the stream's own already), then the state
    /// they changed streamed. Whether there were any.
    pub fn show_state(&self, em: &mut Emitter) -> bool {
        let (inputs, state) = {
            let mut server = self
                .shared
                .server
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (server.take_state_inputs(), server.take_state())
        };
        let any = !inputs.is_empty() || state.is_some();
        for input in inputs {
            em.own_call_input(input.as_deref());
        }
        if let Some(state) = state {
            em.state_update(&state);
        }
        any
    }

    /// The URL the CLI is given: it holds the secret.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The calls that arrived, taken.
    pub fn collect(&mut self) {
        let Some(rx) = self.arrived.as_ref() else {
            return;
        };
        while let Ok(held) = rx.try_recv() {
            self.replies
                .push((held.call.request_id.clone(), held.reply));
            self.calls.push(held.call);
        }
    }

    /// The calls waiting for the page.
    pub fn calls(&mut self) -> &mut mcp::Calls {
        &mut self.calls
    }

    /// Answer `call` with `text` (an error the model reads when
    /// `is_error`): the body of its held response.
    pub fn answer(&mut self, call: &mcp::Call, text: &str, is_error: bool) {
        if let Some(i) = self.replies.iter().position(|(r, _)| *r == call.request_id) {
            let (_, reply) = self.replies.swap_remove(i);
            // A CLI that gave up on the call has closed its request.
            let _ = reply.send(mcp::call_result(call, text, is_error));
        }
    }
}

/// A CLI's stream mode with the page's tools served at an [`Endpoint`]:
/// its lines translated as they come, each call of a page's tool shown and
/// handed to the page.
pub struct Session<'a> {
    route: Route,
    waiting: Waiting<'a>,
    /// Never used: the stream mode has no approvals here.
    pending: Pending<()>,
    line: Vec<u8>,
}

impl<'a> Session<'a> {
    /// `waiting`: the input lines, the tool timeout and the marker.
    pub fn new(endpoint: &mut Endpoint, waiting: Waiting<'a>) -> Self {
        Session {
            route: endpoint.route(),
            waiting,
            pending: Pending::default(),
            line: Vec::new(),
        }
    }

    /// Translate `cli_out` (a reader that gives up now and then with
    /// `WouldBlock`) until it ends, the page's calls ending the run and the
    /// input line answering them.
    pub fn run(
        &mut self,
        cli_out: &mut dyn BufRead,
        tr: &mut dyn Translate,
        em: &mut Emitter,
        out: &mut dyn Write,
        stop: &dyn Fn() -> bool,
    ) -> io::Result<End> {
        let mut none = io::sink();
        loop {
            if stop() {
                return Ok(End::Stopped);
            }
            self.collect(em, out)?;
            match cli_out.read_until(b'\n', &mut self.line) {
                Ok(0) if self.line.is_empty() => {
                    self.collect(em, out)?;
                    return Ok(End::Eof);
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !self.route.calls.due() {
                        continue;
                    }
                    let w = Waiting {
                        input: self.waiting.input,
                        timeout: self.waiting.timeout,
                        marker: self.waiting.marker,
                    };
                    match mcp::wait(self, &w, cli_out, &mut none, tr, em, out, stop)? {
                        Waited::Resumed | Waited::Over => continue,
                        Waited::Eof => return Ok(End::Eof),
                        Waited::Stopped => return Ok(End::Stopped),
                        Waited::Expired(why) => return Ok(End::Expired(why)),
                    }
                }
                Err(e) => return Err(e),
            }
            let line = std::mem::take(&mut self.line);
            self.take(line, &mut none, tr, em)?;
            em.drain_to(out)?;
            out.flush()?;
        }
    }

    /// The calls that arrived, taken, and the state a call changed,
    /// streamed.
    fn collect(&mut self, em: &mut Emitter, out: &mut dyn Write) -> io::Result<()> {
        if let Some(state) = self.route.take_state() {
            em.state_update(&state);
            em.drain_to(out)?;
            out.flush()?;
        }
        self.route.collect();
        Ok(())
    }
}

impl Asker for Session<'_> {
    type Cli = ();

    fn pending(&mut self) -> &mut Pending<()> {
        &mut self.pending
    }

    fn partial(&mut self) -> &mut Vec<u8> {
        &mut self.line
    }

    fn take(
        &mut self,
        line: Vec<u8>,
        _cli_in: &mut dyn Write,
        tr: &mut dyn Translate,
        em: &mut Emitter,
    ) -> io::Result<bool> {
        translate_line(line, &mut self.line, tr, em);
        Ok(false)
    }

    fn answer(&mut self, _: &mut dyn Write, _: &Ask<()>, _: Verdict) -> io::Result<()> {
        Ok(())
    }
}

impl mcp::Host for Session<'_> {
    fn calls(&mut self) -> &mut mcp::Calls {
        self.route.calls()
    }

    fn answer_call(
        &mut self,
        _cli_in: &mut dyn Write,
        call: &mcp::Call,
        text: &str,
        is_error: bool,
    ) -> io::Result<()> {
        self.route.answer(call, text, is_error);
        Ok(())
    }
}

/// How long a CLI is told to wait for a call (its own request timeout):
/// past the tool timeout, so that the page's error answer reaches it.
pub fn cli_timeout(tool_timeout: Duration) -> Duration {
    tool_timeout + Duration::from_secs(60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Head, Refusal> {
        parse_head(text.as_bytes())
    }

    #[test]
    fn a_plain_request_parses() {
        let h =
            head("POST /s3cret HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12\r\n\r\n").unwrap();
        assert_eq!(
            h,
            Head {
                method: "POST".into(),
                path: "/s3cret".into(),
                origin: false,
                chunked: false,
                length: Some(12),
            }
        );
        let h = head("POST / HTTP/1.1\r\nOrigin: x\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        assert!(h.origin && h.chunked && h.length.is_none());
    }

    #[test]
    fn malformed_or_ambiguous_heads_are_refused() {
        for (text, status, says) in [
            ("POST / HTTP/1.1\nContent-Length: 2\n\n", 400, "CR LF"),
            ("POST / HTTP/1.1\r\nContent-Length: 2\n\r\n", 400, "CR LF"),
            ("\r\n\r\n", 400, "malformed"),
            ("POST /\x01 HTTP/1.1\r\n\r\n", 400, "malformed"),
            (
                "POST / HTTP/1.1\r\nContent Length: 2\r\n\r\n",
                400,
                "malformed",
            ),
            ("POST / HTTP/1.1\r\nHost : x\r\n\r\n", 400, "malformed"),
            (
                "POST / HTTP/1.1\r\nContent-Length: +2\r\n\r\n",
                400,
                "not a number",
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n",
                400,
                "not a number",
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
                400,
                "not a number",
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 3\r\n\r\n",
                400,
                "sent twice",
            ),
            (
                "POST / HTTP/1.1\r\nOrigin: a\r\nOrigin: b\r\n\r\n",
                400,
                "sent twice",
            ),
        ] {
            assert_eq!(head(text).map_err(|(s, _)| s), Err(status), "{text:?}");
            assert!(head(text).unwrap_err().1.contains(says), "{text:?}");
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: y\r\n")).collect();
        let text = format!("POST / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(head(&text).unwrap_err().0, 431);
    }
}
