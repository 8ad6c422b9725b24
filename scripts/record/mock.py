"""A scripted model server on 127.0.0.1.

The server knows nothing of any API by itself: each CLI module tells it
which requests belong to the conversation (and at which turn) and how a
scripted turn is written on the wire. The server keeps the attempt counts
that make "fail once, then answer" possible, logs every request, and notes
when a turn that asks for a signal has been served.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attach
from scenarios import FILES_RECEIVED
from scenarios import turn as make_turn


class Response:
    """What the server answers: a status, headers, and a body in chunks.

    A streamed response is sent chunk by chunk with a short pause between
    chunks, and ends by closing the connection. `broken` cuts it after
    about half of its chunks.
    """

    def __init__(self, status=200, body=b"", content_type="application/json", chunks=None, headers=None):
        self.status = status
        self.body = body
        self.content_type = content_type
        self.chunks = chunks
        self.headers = headers or {}
        self.broken = False


def json_response(obj, status=200, headers=None):
    return Response(status, json.dumps(obj).encode(), headers=headers)


def sse(data, event=None):
    """One server-sent event with a JSON payload."""
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data, ensure_ascii=False) + "\n\n").encode()


def sse_response(events):
    return Response(200, content_type="text/event-stream", chunks=list(events))


def pieces(text, size=12):
    """Text cut into deltas of about `size` characters."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def pieces_keeping(text, keep, size=24):
    """Like pieces(), but never cutting inside one of the `keep` strings
    (scratch paths, which the recorder rewrites after the run)."""
    out, i = [], 0
    while i < len(text):
        j = min(i + size, len(text))
        for k in keep:
            start = text.find(k, max(0, i - len(k)))
            while start != -1 and start < j:
                if start < j < start + len(k):
                    j = start + len(k)
                start = text.find(k, start + 1)
        out.append(text[i:j])
        i = j
    return out or [""]


class Engine:
    def __init__(self, cli, scenario, ctx, log_path):
        self.cli = cli
        self.scenario = scenario
        self.ctx = ctx
        self.attempts = {}
        self.lock = threading.Lock()
        self.signal = None
        self.signal_at = None
        self.log = open(log_path, "a", encoding="utf-8")

    def handle(self, method, path, headers, body):
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        who, index = self.cli.classify(method, path, headers, data, self.ctx)
        with self.lock:
            key = (who, index)
            self.attempts[key] = self.attempts.get(key, 0) + 1
            attempt = self.attempts[key]
            self.log.write(json.dumps({"method": method, "path": path, "who": who, "turn": index,
                                       "attempt": attempt, "body": data if data is not None else body.decode("utf-8", "replace")},
                                      ensure_ascii=False) + "\n")
            self.log.flush()
        if who == "aux":
            return self.cli.aux(method, path, data, self.ctx)
        script = self.scenario.sub_turns if who == "sub" else self.scenario.turns
        t = script[index] if index < len(script) else make_turn(text="Done.")
        if t["error"] and (t["times"] is None or attempt <= t["times"]):
            return self.cli.error(t["error"], self.ctx)
        if t["text"] and FILES_RECEIVED in t["text"]:
            t = dict(t, text=t["text"].replace(FILES_RECEIVED, attach.received(data, self.ctx)))
        resp = self.cli.reply(t, data, who, index, self.ctx)
        if t["broken"] and attempt == 1:
            resp.broken = True
        elif t["signal"] and self.signal is None:
            self.signal = t["signal"]
            self.signal_at = time.monotonic()
        return resp


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "gzip":
            import gzip

            body = gzip.decompress(body)
        elif self.headers.get("Content-Encoding") == "zstd":
            body = b""
        resp = self.server.engine.handle(self.command, self.path, dict(self.headers), body)
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        for k, v in resp.headers.items():
            self.send_header(k, v)
        if resp.chunks is None:
            self.send_header("Content-Length", str(len(resp.body)))
            self.end_headers()
            self.wfile.write(resp.body)
            return
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunks = resp.chunks
        if resp.broken:
            chunks = chunks[: max(2, len(chunks) // 2)]
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
                time.sleep(0.005)
            if resp.broken:
                # Cut the connection at once, as a failing network would.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_POST = _serve
    do_GET = _serve
    do_PUT = _serve


def start(engine):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.engine = engine
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
