"""A stand-in for Copilot CLI or OpenCode given the page's MCP server by
URL (tests/fake/cli runs it for FAKE_MCP_HTTP=FILE): it finds the server
where the real CLI would (Copilot CLI: the file of
`--additional-mcp-config=@FILE`; OpenCode: OPENCODE_CONFIG_CONTENT),
initializes it and lists its tools, then prints FILE, a recording of the
CLI calling the page's tools. Before the line that shows a page tool's
result (Copilot CLI's `tool.execution_complete`, OpenCode's completed
`tool_use`), it calls the tool (`tools/call` with the recorded arguments)
and waits for the answer; a run of such lines calls them all at once.
FAKE_SENT=FILE gets the tools listed, then each answer's JSON-RPC result
with the tool's name (`tool`), one per line; FAKE_MCP_URL=FILE the server's URL;
FAKE_ANSWERED=FILE the wall-clock time at which each call's answer came.
"""

import json
import os
import sys
import threading
import time
import urllib.request


def url_of(argv):
    for a in argv:
        if a.startswith("--additional-mcp-config=@"):
            with open(a.split("@", 1)[1]) as f:
                return json.load(f)["mcpServers"]["page"]["url"]
    content = os.environ.get("OPENCODE_CONFIG_CONTENT")
    if content:
        return json.loads(content)["mcp"]["page"]["url"]
    sys.exit("no page server given")


def rpc(url, message):
    req = urllib.request.Request(url, data=json.dumps(message).encode(), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(req, timeout=120) as r:
        body = r.read()
        return json.loads(body) if body else None


def sent(value):
    path = os.environ.get("FAKE_SENT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(value) + "\n")


def opencode_call(rec):
    """(name, arguments) of the page tool call whose result `rec` shows."""
    part = rec.get("part") or {}
    if rec.get("type") == "tool_use" and str(part.get("tool", "")).startswith("page_"):
        return part["tool"][len("page_"):], (part.get("state") or {}).get("input") or {}
    return None


class Call:
    """A `tools/call` on a thread of its own."""

    def __init__(self, url, rid, name, args):
        self.result = None
        self.thread = threading.Thread(target=self._run, args=(url, rid, name, args))
        self.thread.start()

    def _run(self, url, rid, name, args):
        self.name = name
        self.result = rpc(url, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                "params": {"name": name, "arguments": args}})
        if os.environ.get("FAKE_ANSWERED"):
            with open(os.environ["FAKE_ANSWERED"], "a") as f:
                f.write(f"{time.time():.6f}\n")

    def join(self):
        self.thread.join()
        r = self.result
        sent(dict(r["result"], tool=self.name) if r and "result" in r else r)


def main():
    url = url_of(sys.argv[1:])
    if os.environ.get("FAKE_MCP_URL"):
        with open(os.environ["FAKE_MCP_URL"], "w") as f:
            f.write(url)
    rpc(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fake"}}})
    rpc(url, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = rpc(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    sent({"tools": listed["result"]["tools"]})
    with open(os.environ["FAKE_MCP_HTTP"]) as f:
        lines = f.read().splitlines()
    n = 2
    copilot = {}  # Copilot CLI's calls of the page's tools, by id
    i = 0
    while i < len(lines):
        try:
            rec = json.loads(lines[i])
        except ValueError:
            rec = {}
        data = rec.get("data") or {}
        if rec.get("type") == "tool.execution_start" and data.get("mcpServerName") == "page":
            print(lines[i], flush=True)
            copilot[data["toolCallId"]] = Call(url, n, data["mcpToolName"], data.get("arguments") or {})
            n += 1
            i += 1
            continue
        if rec.get("type") == "tool.execution_complete" and data.get("toolCallId") in copilot:
            copilot.pop(data["toolCallId"]).join()
            print(lines[i], flush=True)
            i += 1
            continue
        # OpenCode shows a call with its result: a run of them is called at once.
        j = i
        calls = []
        while j < len(lines):
            try:
                call = opencode_call(json.loads(lines[j]))
            except ValueError:
                call = None
            if not call:
                break
            calls.append(Call(url, n, *call))
            n += 1
            j += 1
        for c in calls:
            c.join()
        for line in lines[i:max(j, i + 1)]:
            print(line, flush=True)
        i = max(j, i + 1)


if __name__ == "__main__":
    main()
