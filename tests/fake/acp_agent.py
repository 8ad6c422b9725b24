#!/usr/bin/env python3
"""A small agent that speaks the Agent Client Protocol (ACP) on stdio, for
the tests of `run acp`, `run gemini --transport acp` and `serve`.

Driven by the environment:
  ACP_SENT=FILE     append every line the client sends to FILE
  ACP_PID=FILE      write the agent's PID to FILE
  ACP_STARTS=FILE   append the agent's PID to FILE, one line per process
  ACP_VERSION=TEXT  what --version prints (default 0.61.0)
  ACP_REPLAY=FILE   play the agent's side of FILE, a recorded transcript
                    (testdata/acp/…): each client line of the transcript
                    waits for a line from the client (and is appended to
                    ACP_RECORDED=FILE, to compare with ACP_SENT), each agent
                    line is printed; the replay ends when the client stops
                    sending. Given the page's MCP server in session/new (an
                    `http` server), it initializes it and lists its tools,
                    and before the line that shows a call of a page tool
                    completed (Gemini CLI's `NAME (page MCP Server)`, Copilot
                    CLI's `page-NAME`, OpenCode's `page_NAME`, Qwen Code's
                    `_meta.toolName` `mcp__page__NAME`) it calls the
                    tool with the recorded arguments (`tools/call`) and waits
                    for the answer; a run of such lines calls them all at
                    once. ACP_PAGE_SENT=FILE gets the tools listed, then each
                    answer's JSON-RPC result with the tool's name (`tool`)
  ACP_ENV=FILE      write the value of OPENCODE_PERMISSION to FILE
  ACP_ARGV=FILE     write the arguments to FILE, one a line
  ACP_MODE=garbage  print a line that is not JSON-RPC and exit
  ACP_MODE=refuse   answer session/new with a JSON-RPC error
  ACP_MODE=noload   answer session/load with a JSON-RPC error
  ACP_MODE=nocaps   say no loadSession in the initialize answer
  ACP_MODE=noimage  say no promptCapabilities.image in the initialize answer
  ACP_MODE=noaudio  say promptCapabilities.image but not .audio
  ACP_MODE=models   offer the models a/one and a/two in session/new's
                    configOptions, and the efforts of the model (a/one: low,
                    high; a/two: low, max) as the option `effort` of category
                    thought_level; session/set_config_option refuses any
                    other, and says the efforts of the model chosen
  ACP_MODE=mute     answer nothing at all (read until stdin closes)
  ACP_MODE=mutenew  answer initialize, then nothing (session/new and
                    session/load go unanswered)

Otherwise the prompt's words say what the turn does:
  tool      a tool call streamed with its input and its output, then text
  ask       a tool call that asks permission (allow_once, allow_always,
            reject_once); the answer decides, a cancel ends the turn
  noallow   a permission request that offers no allow_once option
  exit      a chunk of text, then exit with status 3 in the middle of the turn
  error     the prompt answered with a JSON-RPC error
  hang      wait for session/cancel, then end the turn cancelled
  (else)    a text answer in two chunks
session/load replays a user and an agent chunk before its answer and one
more agent chunk after it, as Gemini CLI does.
"""

import json
import os
import sys
import threading
import time

from mcp_http import rpc as page_rpc

SENT = os.environ.get("ACP_SENT")


def read():
    line = sys.stdin.readline()
    if not line:
        return None
    if SENT:
        with open(SENT, "a") as f:
            f.write(line if line.endswith("\n") else line + "\n")
    return json.loads(line)


def send(msg):
    msg = dict(msg)
    msg.setdefault("jsonrpc", "2.0")
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def update(session, u):
    send({"method": "session/update", "params": {"sessionId": session, "update": u}})


def chunk(session, text, kind="agent_message_chunk"):
    update(session, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})


# Replay -------------------------------------------------------------------


def page_sent(value):
    path = os.environ.get("ACP_PAGE_SENT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(value) + "\n")


class Page:
    """The page's MCP server as the agent reaches it, and the calls of its
    tools the transcript shows (by toolCallId: title, arguments)."""

    def __init__(self):
        self.url = None
        self.calls = {}

    def given(self, msg):
        """The client's session/new (or session/load): the server, if any."""
        for s in ((msg or {}).get("params") or {}).get("mcpServers") or []:
            if s.get("type") == "http" and s.get("name") == "page":
                self.url = s["url"]
                page_rpc(self.url, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                               "clientInfo": {"name": "acp-agent", "version": "1"}}})
                page_rpc(self.url, {"jsonrpc": "2.0", "method": "notifications/initialized"})
                listed = page_rpc(self.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                page_sent(listed["result"])

    def seen(self, msg):
        """Note a call's title and arguments, from an update or a permission
        request."""
        params = msg.get("params") or {}
        call = params.get("toolCall") or params.get("update") or {}
        cid = call.get("toolCallId")
        if not cid:
            return
        title, args = self.calls.get(cid, (None, None))
        # Qwen Code names an MCP call in `_meta.toolName` (its title is the
        # arguments): `mcp__page__NAME`.
        meta = (call.get("_meta") or {}).get("toolName") or ""
        title = meta if meta.startswith("mcp__page__") else title or call.get("title")
        if call.get("rawInput"):
            args = call["rawInput"]
        elif args is None and msg.get("method") == "session/request_permission":
            # Gemini CLI shows an MCP call's arguments as its content.
            for c in call.get("content") or []:
                try:
                    args = json.loads(((c.get("content") or {}).get("text")) or "")
                except ValueError:
                    pass
        self.calls[cid] = (title, args)

    def tool(self, msg):
        """The page's tool a completed update shows a call of, and its
        arguments; None for any other line."""
        u = (msg.get("params") or {}).get("update") or {}
        if self.url is None or u.get("status") != "completed":
            return None
        self.seen(msg)
        title, args = self.calls.get(u.get("toolCallId"), (None, None))
        title = title or ""
        for prefix in ("page-", "page_", "mcp__page__"):
            if title.startswith(prefix):
                return title[len(prefix):], args or {}
        if title.endswith(" (page MCP Server)"):
            return title[: -len(" (page MCP Server)")], args or {}
        return None

    def call_all(self, tools):
        """Call the tools at once, and wait for every answer."""
        results = [None] * len(tools)

        def one(i, name, args):
            results[i] = page_rpc(self.url, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                                             "params": {"name": name, "arguments": args}})

        threads = [threading.Thread(target=one, args=(i, n, a)) for i, (n, a) in enumerate(tools)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for (name, _), r in zip(tools, results):
            page_sent(dict((r or {}).get("result") or {"error": (r or {}).get("error")}, tool=name))

CLIENT_METHODS = {"initialize", "authenticate", "session/new", "session/load", "session/resume",
                  "session/prompt", "session/cancel", "session/set_mode", "session/set_model",
                  "session/set_config_option"}


def replay(path):
    """Each line is the client's or the agent's: a request by its method, an
    answer by the side of the latest unanswered request with its id (an
    answer with a stopReason answers the client's prompt)."""
    pending = []  # (side, id), in order
    page = Page()
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    called = 0  # the lines whose page tools are called already
    for n, line in enumerate(lines):
        msg = json.loads(line)
        if "method" in msg:
            side = "client" if msg["method"] in CLIENT_METHODS else "agent"
            if "id" in msg:
                pending.append((side, msg["id"]))
        else:
            stop = isinstance(msg.get("result"), dict) and "stopReason" in msg["result"]
            asker = None
            for i in range(len(pending) - 1, -1, -1):
                s, rid = pending[i]
                if rid == msg.get("id") and (not stop or s == "client"):
                    asker = s
                    del pending[i]
                    break
            side = "agent" if asker == "client" else "client"
        if side == "client":
            got = read()
            if got is None:
                return
            if got.get("method") in ("session/new", "session/load"):
                page.given(got)
            if os.environ.get("ACP_RECORDED"):
                with open(os.environ["ACP_RECORDED"], "a") as f:
                    f.write(line + "\n")
        else:
            page.seen(msg)
            if n >= called and page.tool(msg):
                tools = []
                for later in lines[n:]:
                    tool = page.tool(json.loads(later))
                    if tool is None:
                        break
                    tools.append(tool)
                called = n + len(tools)
                page.call_all(tools)
            send(msg)
    # The client closes its end once the prompt is answered.
    while read() is not None:
        pass


# Scripted turns -----------------------------------------------------------

MODELS = {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "a/one",
          "options": [{"value": "a/one", "name": "One"}, {"value": "a/two", "name": "Two"}]}
# The efforts each model offers.
EFFORTS = {"a/one": ["low", "high"], "a/two": ["low", "max"]}


def config_options(model, effort="low"):
    """The session's configOptions: its model and the model's efforts."""
    efforts = {"id": "effort", "name": "Effort", "category": "thought_level", "type": "select",
               "currentValue": effort, "options": [{"value": e, "name": e} for e in EFFORTS[model]]}
    return [dict(MODELS, currentValue=model), efforts]


OPTIONS = [
    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
    {"optionId": "always", "name": "Allow always", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


class Turn:
    def __init__(self, session, rid):
        self.session = session
        self.rid = rid
        self.cancelled = False
        self.next_id = 0

    def ask(self, call, options):
        """A permission request, and the option chosen (None: cancelled)."""
        rid = self.next_id
        self.next_id += 1
        send({"id": rid, "method": "session/request_permission",
              "params": {"sessionId": self.session, "toolCall": call, "options": options}})
        while True:
            msg = read()
            if msg is None:
                sys.exit(0)
            if msg.get("method") == "session/cancel":
                self.cancelled = True
            elif msg.get("id") == rid and "method" not in msg:
                outcome = msg.get("result", {}).get("outcome", {})
                if outcome.get("outcome") == "selected":
                    return outcome.get("optionId")
                return None

    def end(self, reason="end_turn"):
        send({"id": self.rid, "result": {"stopReason": reason,
                                           "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}})


def prompt(session, rid, text):
    t = Turn(session, rid)
    s = session
    if "error" in text:
        send({"id": rid, "error": {"code": -32603, "message": "the model is unavailable"}})
        return
    if "exit" in text:
        chunk(s, "Starting")
        sys.exit(3)
    if "hang" in text:
        chunk(s, "Working")
        while True:
            msg = read()
            if msg is None:
                sys.exit(0)
            if msg.get("method") == "session/cancel":
                t.end("cancelled")
                return
    if "tool" in text:
        chunk(s, "Reading the notes.")
        update(s, {"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "notes.txt",
                   "kind": "read", "status": "pending", "rawInput": {"path": "notes.txt"}})
        update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "in_progress"})
        update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "one\ntwo"}}]})
        chunk(s, "The notes say one and two.")
        t.end()
        return
    if "ask" in text or "noallow" in text:
        chunk(s, "I will run a command.")
        call = {"toolCallId": "call_ask", "title": "echo hi", "kind": "execute", "status": "pending",
                "rawInput": {"command": "echo hi"}}
        update(s, dict(call, sessionUpdate="tool_call"))
        options = OPTIONS if "ask" in text else [o for o in OPTIONS if o["kind"] != "allow_once"]
        chosen = t.ask(call, options)
        if chosen is None or t.cancelled:
            update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "call_ask", "status": "failed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "cancelled"}}]})
            t.end("cancelled")
            return
        if chosen in ("yes", "always"):
            update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "call_ask", "status": "completed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "hi"}}]})
            chunk(s, "It printed hi.")
        else:
            update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "call_ask", "status": "failed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "rejected"}}]})
            chunk(s, "The command was refused.")
        t.end()
        return
    chunk(s, "Hello from ")
    chunk(s, "the test agent.")
    t.end()


def main():
    if sys.argv[1:2] == ["--version"]:
        print(os.environ.get("ACP_VERSION", "0.61.0"))
        return
    if os.environ.get("ACP_ARGV"):
        with open(os.environ["ACP_ARGV"], "w") as f:
            f.write("".join(a + "\n" for a in sys.argv[1:]))
    if os.environ.get("ACP_ENV"):
        with open(os.environ["ACP_ENV"], "w") as f:
            f.write(os.environ.get("OPENCODE_PERMISSION", ""))
    if os.environ.get("ACP_PID"):
        with open(os.environ["ACP_PID"], "w") as f:
            f.write(str(os.getpid()))
    if os.environ.get("ACP_STARTS"):
        with open(os.environ["ACP_STARTS"], "a") as f:
            f.write("%d\n" % os.getpid())
    if os.environ.get("ACP_REPLAY"):
        replay(os.environ["ACP_REPLAY"])
        return
    mode = os.environ.get("ACP_MODE", "")
    if mode == "garbage":
        print("this agent does not speak ACP")
        return
    session = "sess-%d" % os.getpid()
    chosen = {"model": "a/one", "effort": "low"}
    while True:
        msg = read()
        if msg is None:
            return
        method, rid = msg.get("method"), msg.get("id")
        if mode == "mute" or (mode == "mutenew" and method != "initialize"):
            continue
        if method == "initialize":
            caps = {} if mode == "nocaps" else {"loadSession": True}
            if mode == "noaudio":
                caps["promptCapabilities"] = {"image": True}
            elif mode != "noimage":
                caps["promptCapabilities"] = {"image": True, "audio": True}
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": caps,
                                        "authMethods": []}})
        elif method == "session/new":
            if mode == "refuse":
                send({"id": rid, "error": {"code": -32000, "message": "no sessions today"}})
            elif mode == "models":
                chosen = {"model": "a/one", "effort": "low"}
                send({"id": rid, "result": {"sessionId": session, "configOptions": config_options("a/one")}})
            else:
                send({"id": rid, "result": {"sessionId": session}})
        elif method == "session/set_config_option" and mode == "models":
            value, which = msg["params"].get("value"), msg["params"].get("configId")
            if which == "model" and value in EFFORTS:
                chosen = {"model": value, "effort": "low"}
                send({"id": rid, "result": {"configOptions": config_options(value)}})
            elif which == "effort" and value in EFFORTS[chosen["model"]]:
                chosen["effort"] = value
                send({"id": rid, "result": {"configOptions": config_options(chosen["model"], value)}})
            else:
                send({"id": rid, "error": {"code": -32602, "message": "Invalid params",
                                           "data": {"message": "Model not found: " + str(value)}}})
        elif method == "session/load" and mode == "noload":
            send({"id": rid, "error": {"code": -32603, "message": "Internal error",
                                       "data": {"details": "No previous sessions found for this project."}}})
        elif method == "session/load":
            session = msg["params"]["sessionId"]
            update(session, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "earlier"}})
            chunk(session, "Earlier answer.")
            send({"id": rid, "result": {}})
            time.sleep(0.05)
            chunk(session, "Earlier answer, replayed late.")
        elif method == "session/prompt":
            text = " ".join(b.get("text", "") for b in msg["params"]["prompt"])
            prompt(msg["params"]["sessionId"], rid, text)
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})


main()
