"""The client's end of the Agent Client Protocol (ACP): what the CLI modules
that start an agent in its ACP mode (clis/*_acp.py) share.

The agent speaks JSON-RPC 2.0 over stdin and stdout, one message a line.
The recorder plays a client with no file system and no terminal of its
own (so the agent reads, writes and runs commands itself):

    initialize       {protocolVersion: 1, clientCapabilities: {fs: {readTextFile: false,
                      writeTextFile: false}, terminal: false}, clientInfo}
    session/new      {cwd: the working folder, mcpServers: []}
    session/prompt   {sessionId, prompt: [{type: "text", text: the scenario's prompt}]}

and answers the agent's `session/request_permission` requests as the
scenario says, one answer per request in order (scenarios.py): allow() picks
the `allow_once` option, deny() the `reject_once` one, and interrupt() sends
`session/cancel` and then answers the request `cancelled`, as the protocol
asks of a client that cancels. Requests past the scenario's answers are
allowed; any other request of the agent's is refused with -32601. Once the
prompt is answered (or the deadline passes) stdin is closed.

A scenario's second run (`resume_prompt`) is a new process that goes on with
the first run's session: `session/load` {sessionId, cwd, mcpServers: []}
(the agent streams the stored history back before it answers), then the
prompt. A scenario with a `model` has it chosen after `session/new`:
`session/set_config_option` {sessionId, configId: "model", value}; one with
an `effort` has it chosen next, the same way (configId: the id of the
option of category `thought_level`, OpenCode's `effort`). A scenario that needs "page" gets the front end's tools in
`session/new` `mcpServers`: an MCP server over HTTP (pagehttp.py). A module with LOAD_NEXT_MINUTE waits for the next clock minute
after the run before began and after it ended (Gemini CLI finds no session
of the minute it is in). A scenario with a `next_prompt` sends it once the
first prompt is answered, in the same session. One with `load_after` has a
last run (`-load`), a new process that loads the session and asks
nothing: what the agent replays, before and after its answer, until it
has said nothing for LOAD_QUIET seconds. A turn with signal "CANCEL" is cancelled the protocol's way: a few
seconds after the model served it, the client sends `session/cancel`.

The recording (NAME.jsonl) is the transcript: every message of both
directions, one a line, in the order they happened, as `--from acp` reads
it; no NAME.client.txt is written, the client's lines being in it.
"""

import json
import queue
import sys
import time

import attach
import pagehttp
import stdio

# What the ACP recordings cover: the run's shapes a client meets.
SCENARIOS = {"text", "shell", "files", "reasoning", "tool-errors", "http500", "plan", "approval-allow",
             "approval-deny", "approval-interrupt", "resume", "cancel", "page-tool", "page-tools-two",
             "approval-page-tool", "approval-page-tool-together", "image", "audio", "state-update", "history"}

# How long after the model served a turn marked "CANCEL" the client cancels.
CANCEL_AFTER = 3.0

CLIENT_INFO = {"name": "agui-translate-recorder", "title": "agui-translate recorder", "version": "0.1.0"}

# How long a load-only run listens on after the agent's last line.
LOAD_QUIET = 5.0

# How long the client waits for the agent's answer to a setup request.
SETUP_TIMEOUT = 90.0


class Client(stdio.Pipe):
    """One connection: the transcript, and the client's numbered requests."""

    def __init__(self, proc, stdout_file):
        super().__init__(proc, stdout_file, transcript=True)
        self.next_id = 0

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def result(self, rid, result):
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def refuse(self, rid):
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


def _option(options, kind, fallback):
    """The id of the first option of `kind`, else of the first whose id is
    one of `fallback`, else the first option's."""
    for o in options:
        if o.get("kind") == kind:
            return o.get("optionId")
    for o in options:
        if o.get("optionId") in fallback:
            return o.get("optionId")
    return options[0].get("optionId") if options else None


class Session:
    """The prompt turn in progress: the session, and the answers left."""

    def __init__(self, client, ctx, session_id):
        self.client = client
        self.session_id = session_id
        self.answers = list(ctx.scenario.answers)
        self.cancelled = False

    def permission(self, msg):
        params = msg.get("params") or {}
        options = params.get("options") or []
        answer = self.answers.pop(0) if self.answers else {"allow": True}
        if answer.get("interrupt_turn") or answer.get("interrupt"):
            if not self.cancelled:
                self.client.notify("session/cancel", {"sessionId": self.session_id})
                self.cancelled = True
            self.client.result(msg["id"], {"outcome": {"outcome": "cancelled"}})
            return
        if answer.get("allow"):
            chosen = _option(options, "allow_once", ("proceed_once", "allow_once", "once"))
        else:
            chosen = _option(options, "reject_once", ("cancel", "reject_once", "reject"))
        self.client.result(msg["id"], {"outcome": {"outcome": "selected", "optionId": chosen}})

    def handle(self, msg):
        """Answer a request of the agent's."""
        if msg.get("method") == "session/request_permission":
            self.permission(msg)
        else:
            self.client.refuse(msg["id"])


def _wait_for(client, rid, deadline, on_request, tick=None):
    """Messages until the answer to request `rid`; requests on the way go to
    `on_request`, and `tick` is called between messages. Returns the answer,
    or None when the agent stops first."""
    while time.monotonic() < deadline:
        if tick is not None:
            tick()
        try:
            msg = client.messages.get(timeout=0.2)
        except queue.Empty:
            continue
        if msg is None:
            return None
        if "method" in msg and "id" in msg:
            on_request(msg)
        elif "method" not in msg and msg.get("id") == rid:
            return msg
    return None


def converse(proc, ctx, engine, stdout_file, deadline):
    """Play the client until the prompt is answered (or the deadline); the
    transcript is the recording, so nothing is returned for NAME.client.txt."""
    client = Client(proc, stdout_file)
    ctx.state["before"] = ctx.state.get("started")
    ctx.state["started"] = time.time()
    try:
        _play(client, ctx, engine, deadline)
    finally:
        client.end(deadline)
        ctx.state["ended"] = time.time()
    return None


def _first_session(ctx):
    """The session id the first run's `session/new` was answered with."""
    asked = None
    for line in ctx.first_stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        if msg.get("method") == "session/new":
            asked = msg.get("id")
        elif "method" not in msg and asked is not None and msg.get("id") == asked:
            return (msg.get("result") or {}).get("sessionId")
    return None


def _next_minute(ctx):
    """Sleep into the clock minute after the run before began."""
    started = max(ctx.state.get("before") or 0, ctx.state.get("ended") or 0) or time.time()
    until = (int(started) // 60 + 1) * 60 + 1
    if time.time() < until:
        time.sleep(until - time.time())


def _quiet(client, deadline, on_request):
    """Listen until the agent has said nothing for LOAD_QUIET seconds."""
    until = min(deadline, time.monotonic() + LOAD_QUIET)
    while time.monotonic() < until:
        try:
            msg = client.messages.get(timeout=0.2)
        except queue.Empty:
            continue
        if msg is None:
            return
        if "method" in msg and "id" in msg:
            on_request(msg)
        until = min(deadline, time.monotonic() + LOAD_QUIET)


def _canceller(client, engine, session_id):
    """Sends `session/cancel` once, CANCEL_AFTER seconds after the model
    served the turn that asks for it."""
    sent = []

    def tick():
        if (not sent and engine.signal == "CANCEL" and engine.signal_at is not None
                and time.monotonic() > engine.signal_at + CANCEL_AFTER):
            client.notify("session/cancel", {"sessionId": session_id})
            sent.append(True)
    return tick


def _play(client, ctx, engine, deadline):
    setup = min(deadline, time.monotonic() + SETUP_TIMEOUT)
    refuse = lambda msg: client.refuse(msg["id"])  # noqa: E731
    rid = client.request("initialize", {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
        "clientInfo": CLIENT_INFO,
    })
    if _wait_for(client, rid, setup, refuse) is None:
        print("  no answer to initialize", file=sys.stderr)
        return
    if ctx.resume:
        session_id = _first_session(ctx)
        if not session_id:
            print("  the first run made no session", file=sys.stderr)
            return
        if getattr(engine.cli, "LOAD_NEXT_MINUTE", False):
            _next_minute(ctx)
        rid = client.request("session/load", {"sessionId": session_id, "cwd": str(ctx.work), "mcpServers": []})
        answer = _wait_for(client, rid, setup, refuse)
        if answer is None or "error" in answer:
            print("  session/load failed", file=sys.stderr)
            return
        if getattr(ctx, "load_only", False):
            _quiet(client, deadline, refuse)
            return
    else:
        servers = []
        if "page" in ctx.scenario.needs:
            # The front end's tools, over HTTP (pagehttp.py).
            servers = [{"type": "http", "name": pagehttp.SERVER, "url": pagehttp.start(ctx), "headers": []}]
        rid = client.request("session/new", {"cwd": str(ctx.work), "mcpServers": servers})
        answer = _wait_for(client, rid, setup, refuse)
        session_id = ((answer or {}).get("result") or {}).get("sessionId")
        if not session_id:
            print("  no session", file=sys.stderr)
            return
        if ctx.scenario.model:
            rid = client.request("session/set_config_option",
                                 {"sessionId": session_id, "configId": "model", "value": ctx.scenario.model})
            answer = _wait_for(client, rid, setup, refuse)
            if answer is None or "error" in answer:
                print("  the model was not chosen", file=sys.stderr)
                return
        if ctx.scenario.effort:
            options = ((answer or {}).get("result") or {}).get("configOptions") or []
            ids = [o.get("id") for o in options if o.get("category") == "thought_level"]
            if not ids:
                print("  the agent offers no choice of effort", file=sys.stderr)
                return
            rid = client.request("session/set_config_option",
                                 {"sessionId": session_id, "configId": ids[0], "value": ctx.scenario.effort})
            answer = _wait_for(client, rid, setup, refuse)
            if answer is None or "error" in answer:
                print("  the effort was not chosen", file=sys.stderr)
                return
    session = Session(client, ctx, session_id)
    # A scenario's files: image (or audio) blocks before the text.
    images = [{"type": attach.mime(p).split("/")[0], "mimeType": attach.mime(p), "data": attach.b64(p)}
              for p in ctx.files]
    prompts = [images + [{"type": "text", "text": ctx.prompt}]]
    if ctx.scenario.next_prompt and not ctx.resume:
        prompts.append([{"type": "text", "text": ctx.scenario.next_prompt}])
    for prompt in prompts:
        rid = client.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
        if _wait_for(client, rid, deadline, session.handle, _canceller(client, engine, session_id)) is None:
            print("  the prompt was not answered in time", file=sys.stderr)
            return
