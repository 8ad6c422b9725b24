"""Codex's app-server (`codex app-server`, npm @openai/codex): the recorder
is its client.

The server speaks JSON-RPC over stdin and stdout. The recorder plays the
client an IDE would be: `initialize`, `initialized`, `thread/start` (or
`thread/resume` with the first run's thread for a scenario's second run),
`turn/start` with the prompt; it answers the server's approval requests,
sends `turn/interrupt` where the scenario would signal a CLI, and closes
stdin once its turn has completed. The server's stdout is kept byte for
byte (NAME.jsonl), what the client wrote as NAME.client.txt.

The model side (provider configuration and the scripted replies) is the
one `codex exec` uses: see clis/codex.py.
"""

import dataclasses
import json
import queue
import sys
import time

import attach
import stdio
from clis import codex
from clis import version as version_of

PACKAGE = codex.PACKAGE
BIN = codex.BIN

classify = codex.classify
reply = codex.reply
error = codex.error
aux = codex.aux

CLIENT_INFO = {"name": "agui_translate_recorder", "title": "agui-translate recorder", "version": "0.1.0"}

# Requests the client answers, and the answer it gives.
APPROVALS = {
    "item/commandExecution/requestApproval": {"decision": "accept"},
    "item/fileChange/requestApproval": {"decision": "accept"},
    # The older protocol's requests, still sent by some versions.
    "execCommandApproval": {"decision": "approved"},
    "applyPatchApproval": {"decision": "approved"},
}

def _policies(version, approval):
    """The thread's approval policy and sandbox, as this version spells
    them: camelCase up to 0.66.0, kebab-case from 0.72.0 (the next
    release) on."""
    if version_of(version) < (0, 72, 0):
        return ("unlessTrusted" if approval else "never"), "dangerFullAccess"
    return ("untrusted" if approval else "never"), "danger-full-access"


# How long the client waits for the server's answer to a setup request.
SETUP_TIMEOUT = 60.0


# The files a scenario sends: `data:` URL image items of `turn/start`, before
# the text, as `run --attach` gives them.
FILES = {"image/png", "image/jpeg", "image/gif", "image/webp"}

# `converse` gives the front end's tools as the thread's `dynamicTools` and
# answers their calls (scenarios that need "page").
PAGE_TOOLS = True

# How long the client holds a call of the front end's tools for the turn's
# other calls.
PAGE_HOLD = 2.0


def supports(version, scenario):
    if "page" in scenario.needs and version_of(version) < (0, 169, 0):
        return "the front end's tools (dynamicTools) are recorded from 0.169 on"
    if "approval" in scenario.needs and not _accepts(scenario):
        return "its approvals are recorded in the shell scenario's -approval variant"
    if "subagent" in scenario.needs and version_of(version) < (0, 169, 0):
        # Checked at 0.100.0 (not offered) and 0.169.0 (offered).
        return "this version's app-server offers no subagent tool"
    # `codex exec` asks no host; the app-server's client answers here.
    return codex.supports(version, dataclasses.replace(scenario, needs=scenario.needs - {"approval"}))


def _accepts(scenario):
    """Whether the client's answers are the scenario's: it accepts every
    approval, so a scenario with the front end's tools whose answers all
    allow is recorded (its commands needing approval)."""
    return "page" in scenario.needs and all(a.get("allow") and not a.get("edits") for a in scenario.answers)


def variants(version, scenario):
    """The shell scenario once more with every command needing approval,
    so the recording shows the server's approval requests and the
    client's answers."""
    if scenario.name == "shell":
        return ["", "-approval"]
    return [""]


def prepare(ctx):
    return [ctx.bin, "app-server"], codex.setup(ctx)


def _thread_of(stdout):
    """The thread id the first run's `thread/start` answer (id 1) named."""
    for line in stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("id") == 1 and "method" not in msg:
            return ((msg.get("result") or {}).get("thread") or {}).get("id")
    raise RuntimeError("the first run started no thread to resume")


class Client(stdio.Pipe):
    """The client side of one connection (see stdio.Pipe), numbering its
    requests."""

    def __init__(self, proc, stdout_file):
        super().__init__(proc, stdout_file)
        self.next_id = 0

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"id": rid, "method": method, "params": params})
        return rid

    def answer(self, msg):
        """Answer a server→client request: approvals are accepted, anything
        else is refused as not handled."""
        decision = APPROVALS.get(msg["method"])
        if decision is not None:
            self.send({"id": msg["id"], "result": decision})
        else:
            self.send({"id": msg["id"], "error": {"code": -32601, "message": "not handled by this client"}})


def _wait_for(client, rid, deadline):
    """Messages until the answer to request `rid`; requests on the way are
    answered. Returns the answer, or None when the server stops first."""
    while time.monotonic() < deadline:
        try:
            msg = client.messages.get(timeout=0.2)
        except queue.Empty:
            continue
        if msg is None:
            return None
        if "method" in msg and "id" in msg:
            client.answer(msg)
        elif "method" not in msg and msg.get("id") == rid:
            return msg
    return None


def converse(proc, ctx, engine, stdout_file, deadline):
    """Play the client until the turn completes (or the deadline); returns
    what the client wrote."""
    client = Client(proc, stdout_file)
    try:
        _play(client, ctx, engine, deadline)
    finally:
        sent = client.end(deadline)
    return sent


def _play(client, ctx, engine, deadline):
    setup = min(deadline, time.monotonic() + SETUP_TIMEOUT)
    page = "page" in ctx.scenario.needs
    # dynamicTools is an experimental field of thread/start.
    rid = client.request("initialize", {"clientInfo": CLIENT_INFO, "capabilities": {"experimentalApi": page}})
    if _wait_for(client, rid, setup) is None:
        return
    client.send({"method": "initialized"})
    policy, sandbox = _policies(ctx.version, ctx.variant == "-approval" or "approval" in ctx.scenario.needs)
    if ctx.resume:
        params = {"threadId": _thread_of(ctx.first_stdout), "cwd": str(ctx.work), "approvalPolicy": policy,
                  "sandbox": sandbox}
        rid = client.request("thread/resume", params)
    else:
        params = {"cwd": str(ctx.work), "approvalPolicy": policy, "sandbox": sandbox}
        if page:
            params["dynamicTools"] = [{"name": t["name"], "description": t.get("description", ""),
                                       "inputSchema": t.get("parameters") or {"type": "object"}}
                                      for t in ctx.scenario.page_tools]
        rid = client.request("thread/start", params)
    answer = _wait_for(client, rid, setup)
    thread = ((answer or {}).get("result") or {}).get("thread") or {}
    if not thread.get("id"):
        return
    images = [{"type": "image", "url": attach.data_url(p)} for p in ctx.files]
    rid = client.request("turn/start", {"threadId": thread["id"], "input": images + [
        {"type": "text", "text": ctx.prompt, "text_elements": []}]})
    answer = _wait_for(client, rid, setup)
    turn = ((answer or {}).get("result") or {}).get("turn") or {}
    if not turn.get("id"):
        return
    interrupted = False
    answers = list(ctx.scenario.page_answers)
    calls, hold_until = [], None
    while time.monotonic() < deadline:
        now = time.monotonic()
        if calls and (len(calls) >= len(answers) or now > hold_until):
            for call in calls:
                text = answers.pop(0) if answers else "no answer left in the scenario"
                client.send({"id": call["id"], "result": {"contentItems": [{"type": "inputText", "text": text}],
                                                          "success": True}})
            calls = []
        if not interrupted and engine.signal_at is not None and now > engine.signal_at + 2.0:
            client.request("turn/interrupt", {"threadId": thread["id"], "turnId": turn["id"]})
            interrupted = True
        try:
            msg = client.messages.get(timeout=0.1)
        except queue.Empty:
            continue
        if msg is None:
            return
        if msg.get("method") == "item/tool/call" and "id" in msg:
            calls.append(msg)
            hold_until = time.monotonic() + PAGE_HOLD
        elif "method" in msg and "id" in msg:
            client.answer(msg)
        elif msg.get("method") == "turn/completed":
            params = msg.get("params") or {}
            if params.get("threadId") == thread["id"] and (params.get("turn") or {}).get("id") == turn["id"]:
                return
    print("  the turn did not complete in time", file=sys.stderr)
