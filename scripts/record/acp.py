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

The recording (NAME.jsonl) is the transcript: every message of both
directions, one a line, in the order they happened, as `--from acp` reads
it; no NAME.client.txt is written, the client's lines being in it.
"""

import queue
import sys
import time

import stdio

CLIENT_INFO = {"name": "agui-translate-recorder", "title": "agui-translate recorder", "version": "0.1.0"}

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


def _wait_for(client, rid, deadline, on_request):
    """Messages until the answer to request `rid`; requests on the way go to
    `on_request`. Returns the answer, or None when the agent stops first."""
    while time.monotonic() < deadline:
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
    try:
        _play(client, ctx, deadline)
    finally:
        client.end(deadline)
    return None


def _play(client, ctx, deadline):
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
    rid = client.request("session/new", {"cwd": str(ctx.work), "mcpServers": []})
    answer = _wait_for(client, rid, setup, refuse)
    session_id = ((answer or {}).get("result") or {}).get("sessionId")
    if not session_id:
        print("  no session", file=sys.stderr)
        return
    session = Session(client, ctx, session_id)
    rid = client.request("session/prompt", {"sessionId": session_id,
                                            "prompt": [{"type": "text", "text": ctx.prompt}]})
    if _wait_for(client, rid, deadline, session.handle) is None:
        print("  the prompt was not answered in time", file=sys.stderr)
