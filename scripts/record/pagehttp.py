"""The front end's tools served to a CLI as a page would: an MCP server over
streamable HTTP on 127.0.0.1, for the CLIs that take an MCP server by URL
(Copilot CLI's --additional-mcp-config, OpenCode's OPENCODE_CONFIG_CONTENT).

`start(ctx)` serves the scenario's `page_tools` at a secret path and keeps
the server in ctx.state; every JSON-RPC message but `tools/call` is
answered at once. A `tools/call` is held open (as `agui-translate run
--page-tools` holds it while the page runs the tool) until the turn's calls
have all arrived (as many as `page_answers`, or two seconds after the last
one), then each is answered with the next of `page_answers`. Requests
without the secret path are refused with 404. The server is a daemon
thread; it goes with the recorder.
"""

import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVER = "page"

# How long held calls wait for the rest of the turn's calls.
HOLD = 2.0


class _Page:
    def __init__(self, ctx):
        self.ctx = ctx
        self.secret = secrets.token_hex(16)
        self.answers = list(ctx.scenario.page_answers)
        self.lock = threading.Condition()
        self.held = []  # [event, slot] per held call, in arrival order
        self.last = 0.0
        self.calls = 0
        threading.Thread(target=self._release, daemon=True).start()

    def _release(self):
        while True:
            with self.lock:
                due = self.held and (len(self.held) >= len(self.answers)
                                     or time.monotonic() - self.last > HOLD)
                if due:
                    for event, slot in self.held:
                        slot.append(self.answers.pop(0) if self.answers else "no answer left in the scenario")
                        event.set()
                    self.held = []
            time.sleep(0.05)

    def call(self):
        """Hold a call until its answer is due; the answer."""
        event, slot = threading.Event(), []
        with self.lock:
            self.held.append((event, slot))
            self.last = time.monotonic()
            self.calls += 1
        event.wait(self.ctx.timeout)
        return slot[0] if slot else "the page did not answer"

    def reply(self, rpc):
        """The JSON-RPC reply to `rpc` (None for a notification)."""
        if "id" not in rpc:
            return None
        method = rpc.get("method")
        if method == "initialize":
            result = {"protocolVersion": (rpc.get("params") or {}).get("protocolVersion", "2025-06-18"),
                      "capabilities": {"tools": {}}, "serverInfo": {"name": SERVER, "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": t["name"], "description": t.get("description", ""),
                                 "inputSchema": t.get("parameters") or {"type": "object"},
                                 "annotations": {"readOnlyHint": True}} for t in self.ctx.scenario.page_tools]}
        elif method == "ping":
            result = {}
        elif method == "tools/call":
            text = self.call()
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            return {"jsonrpc": "2.0", "id": rpc["id"], "error": {"code": -32601, "message": f"{method} not found"}}
        return {"jsonrpc": "2.0", "id": rpc["id"], "result": result}


def start(ctx):
    """Serve the scenario's page tools; the URL."""
    page = _Page(ctx)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status, body=b"", kind="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path != "/" + page.secret + "/mcp":
                return self._send(404)
            try:
                rpc = json.loads(body)
            except ValueError:
                return self._send(400)
            reply = page.reply(rpc) if isinstance(rpc, dict) else None
            if reply is None:
                return self._send(202)
            self._send(200, json.dumps(reply).encode())

        def do_GET(self):
            self._send(405)

        def do_DELETE(self):
            self._send(405)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ctx.state["page"] = page
    url = f"http://127.0.0.1:{server.server_address[1]}/{page.secret}/mcp"
    print(f"  the page's tools at 127.0.0.1:{server.server_address[1]}", file=sys.stderr)
    return url


def tool_results(body):
    """The texts of the `role: tool` messages after the request's last
    assistant message (Chat Completions)."""
    messages = (body or {}).get("messages") or []
    texts = []
    for m in reversed(messages):
        if m.get("role") == "assistant":
            break
        if m.get("role") == "tool":
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            texts.append(str(c))
    return list(reversed(texts))


def page_tool(tools, tool):
    """The name the CLI gives the page's `tool` among the request's `tools`
    (the server's name, a separator, the tool's)."""
    for n in tools:
        if n.startswith(SERVER) and n[len(SERVER) + 1:] == tool:
            return n
    return f"{SERVER}_{tool}"
