"""Claude Code against a scripted Anthropic Messages API.

Claude Code talks to ANTHROPIC_BASE_URL with `POST /v1/messages` (SSE when
`stream` is true). The main agent's and a subagent's requests carry tools;
a subagent's first user message holds scenarios.SUB_MARK. Requests without
tools (titles, quota checks) and token counting are answered as auxiliary.

Scenarios that need "approval" run Claude Code in its control-protocol
mode (`--input-format stream-json --permission-prompt-tool stdio`, the
default permission mode): the recorder is its host. It writes the prompt
as a stream-json user message, answers each `control_request`
`can_use_tool` as the scenario says (allow with the input as asked, allow
with an edited input, deny with a message), refuses any other request, and
closes stdin after the `result`.
"""

import json
import os
import queue
import sys
import time

import attach
import mock
import stdio
from clis import version as version_of
from scenarios import PAGE_ANSWERS, SUB_MARK

PACKAGE = "@anthropic-ai/claude-code"
BIN = "claude"
MODEL = "claude-sonnet-4-5"
SIGNATURE = "EqQBCkYIBxgCKkBscriptedSignatureAAAAbbbbCCCCddddEEEE0123456789+/=="

# Scenarios recorded twice: with partial messages (the name as is) and without (-plain).
PLAIN_TOO = {"text", "shell", "files", "reasoning", "subagent", "approval-allow", "approval-edit",
             "approval-deny"}


def supports(version, scenario):
    if "approval" in scenario.needs and version_of(version) < (2, 0, 0):
        return "the control protocol's permission questions are recorded from 2.0 on"
    return None


# `converse` plays the server of the front end's tools (scenarios that need "page").
PAGE_TOOLS = True
PAGE_SERVER = "page"


# The files a scenario sends: content blocks of the stream-json user
# message, before the text, as `run --attach` writes them.
FILES = {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}


def converses(ctx):
    return bool({"approval", "page"} & ctx.scenario.needs) or bool(ctx.files)


def _content(ctx):
    """The user message's content: the files' blocks, then the prompt."""
    blocks = []
    for path in ctx.files:
        kind = attach.mime(path)
        blocks.append({"type": "document" if kind == "application/pdf" else "image",
                       "source": {"type": "base64", "media_type": kind, "data": attach.b64(path)}})
    return blocks + [{"type": "text", "text": ctx.prompt}]


def variants(version, scenario):
    return ["", "-plain"] if scenario.name in PLAIN_TOO else [""]


def prepare(ctx):
    if converses(ctx):
        # No prompt argument: it comes on stdin. No permission option: the
        # default mode asks before Bash runs a command that changes files.
        argv = [ctx.bin, "-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
                "--model", MODEL]
        if "approval" in ctx.scenario.needs:
            argv += ["--permission-prompt-tool", "stdio"]
        if "page" in ctx.scenario.needs:
            # An MCP server the host answers over the control protocol, its
            # tools allowed: as `run --page-tools` starts it.
            config = {"mcpServers": {PAGE_SERVER: {"type": "sdk", "name": PAGE_SERVER}}}
            argv += ["--mcp-config", json.dumps(config, separators=(",", ":")),
                     "--allowedTools", "mcp__" + PAGE_SERVER]
    else:
        argv = [ctx.bin, "-p", ctx.prompt, "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions", "--model", MODEL]
    if ctx.variant != "-plain":
        argv.append("--include-partial-messages")
    if ctx.scenario.max_turns:
        argv += ["--max-turns", str(ctx.scenario.max_turns)]
    if ctx.resume:
        argv.append("--continue")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(ctx.home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": ctx.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_MAX_RETRIES": "2",
        "IS_SANDBOX": "1",
    }
    return argv, env


def _first_user_text(messages):
    for m in messages:
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            return " ".join(b.get("text", "") for b in c if isinstance(b, dict))
    return ""


def classify(method, path, headers, body, ctx):
    if not path.startswith("/v1/messages") or "count_tokens" in path or not isinstance(body, dict):
        return "aux", None
    if not body.get("tools"):
        return "aux", None
    messages = body.get("messages") or []
    who = "sub" if SUB_MARK in _first_user_text(messages) else "main"
    return who, sum(1 for m in messages if m.get("role") == "assistant")


def _tool(tools, *names):
    for t in tools:
        if t.get("name") in names:
            return t
    return None


def _tool_call(kind, args, tools, ctx):
    """(name, input) for an abstract call, from the tools the request offers."""
    path = lambda p: str(ctx.work / p)  # noqa: E731
    if kind == "shell":
        return "Bash", {"command": args["command"], "description": "Run " + args["command"].split()[0]}
    if kind == "write":
        return "Write", {"file_path": path(args["path"]), "content": args["content"]}
    if kind == "edit":
        return "Edit", {"file_path": path(args["path"]), "old_string": args["old"], "new_string": args["new"]}
    if kind == "read":
        return "Read", {"file_path": path(args["path"])}
    if kind == "plan":
        tool = _tool(tools, "TodoWrite")
        props = ((tool or {}).get("input_schema") or {}).get("properties", {})
        item_props = (props.get("todos", {}).get("items") or {}).get("properties", {})
        todos = []
        for i, (text, status) in enumerate(args["items"]):
            todo = {"content": text, "status": status}
            if "activeForm" in item_props:
                todo["activeForm"] = text + " (doing)"
            if "priority" in item_props:
                todo["priority"] = "medium"
            if "id" in item_props:
                todo["id"] = str(i + 1)
            todos.append(todo)
        return "TodoWrite", {"todos": todos}
    if kind == "page":
        return f"mcp__{PAGE_SERVER}__{args['tool']}", args["args"]
    if kind == "subagent":
        name = "Agent" if _tool(tools, "Agent") else "Task"
        return name, {"description": args["description"], "prompt": args["prompt"],
                      "subagent_type": "general-purpose"}
    raise ValueError(kind)


def _tool_results(body):
    """The text of the tool results in the request's last message."""
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages else None
    texts = []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            c = b.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            # Claude Code adds a reminder of its own after a result.
            texts.append(str(c).split("<system-reminder>")[0].strip())
    return texts


def _blocks(t, body, who, index, ctx):
    tools = body.get("tools") or []
    blocks = []
    if t["thinking"]:
        blocks.append({"type": "thinking", "thinking": t["thinking"], "signature": SIGNATURE})
    if t["text"]:
        text = t["text"]
        if PAGE_ANSWERS in text:
            got = _tool_results(body)
            want = list(ctx.scenario.page_answers)
            if any(w not in got for w in want):
                print(f"  the model's request carries {got!r}, not the page's answers {want!r}", file=sys.stderr)
            text = text.replace(PAGE_ANSWERS, "; ".join(got))
        blocks.append({"type": "text", "text": text})
    for k, (kind, args) in enumerate(t["calls"]):
        name, inp = _tool_call(kind, args, tools, ctx)
        tag = "s" if who == "sub" else "m"
        blocks.append({"type": "tool_use", "id": f"toolu_{tag}{index:02d}{k:02d}scripted", "name": name, "input": inp})
    return blocks


def _usage(output_tokens):
    return {"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "output_tokens": output_tokens}


def reply(t, body, who, index, ctx):
    blocks = _blocks(t, body, who, index, ctx)
    # Every response has its own id, as from the real API (a retry too).
    ctx.state["responses"] = ctx.state.get("responses", 0) + 1
    msg_id = f"msg_scripted_{ctx.state['responses']:02d}_{who}_turn{index}"
    stop = "tool_use" if t["calls"] else "end_turn"
    if not body.get("stream"):
        return mock.json_response({"id": msg_id, "type": "message", "role": "assistant", "model": body.get("model", MODEL),
                                   "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": _usage(20)})
    ev = [mock.sse({"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": body.get("model", MODEL), "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": _usage(1)}}, "message_start")]
    for i, b in enumerate(blocks):
        if b["type"] == "thinking":
            ev.append(mock.sse({"type": "content_block_start", "index": i,
                                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}, "content_block_start"))
            for p in mock.pieces(b["thinking"]):
                ev.append(mock.sse({"type": "content_block_delta", "index": i,
                                    "delta": {"type": "thinking_delta", "thinking": p}}, "content_block_delta"))
            ev.append(mock.sse({"type": "content_block_delta", "index": i,
                                "delta": {"type": "signature_delta", "signature": SIGNATURE}}, "content_block_delta"))
        elif b["type"] == "text":
            ev.append(mock.sse({"type": "content_block_start", "index": i,
                                "content_block": {"type": "text", "text": ""}}, "content_block_start"))
            for p in mock.pieces(b["text"]):
                ev.append(mock.sse({"type": "content_block_delta", "index": i,
                                    "delta": {"type": "text_delta", "text": p}}, "content_block_delta"))
        else:
            ev.append(mock.sse({"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}, "content_block_start"))
            args = json.dumps(b["input"], ensure_ascii=False)
            for p in mock.pieces_keeping(args, [str(ctx.work), str(ctx.home)]):
                ev.append(mock.sse({"type": "content_block_delta", "index": i,
                                    "delta": {"type": "input_json_delta", "partial_json": p}}, "content_block_delta"))
        ev.append(mock.sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    ev.append(mock.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 20}}, "message_delta"))
    ev.append(mock.sse({"type": "message_stop"}, "message_stop"))
    return mock.sse_response(ev)


ERRORS = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
          500: "api_error", 529: "overloaded_error"}


def error(status, ctx):
    kind = ERRORS.get(status, "api_error")
    headers = {"retry-after": "1"} if status == 429 else None
    return mock.json_response({"type": "error", "error": {"type": kind, "message": f"Scripted {kind} ({status})"}},
                              status, headers)


def aux(method, path, body, ctx):
    if "count_tokens" in path:
        return mock.json_response({"input_tokens": 100})
    if isinstance(body, dict) and body.get("stream"):
        return reply({"text": "Scripted", "thinking": None, "calls": []}, body, "aux", 0, ctx)
    return mock.json_response({"id": "msg_scripted_aux", "type": "message", "role": "assistant", "model": MODEL,
                               "content": [{"type": "text", "text": "Scripted"}], "stop_reason": "end_turn",
                               "stop_sequence": None, "usage": _usage(1)})


# ---- control protocol (scenarios that need "approval") -------------------


def _decision(answer, request):
    """The `control_response`'s inner response for a `can_use_tool` request."""
    if not answer["allow"]:
        deny = {"behavior": "deny", "message": answer["message"]}
        if answer["interrupt"]:
            deny["interrupt"] = True
        return deny
    tool_input = dict(request.get("input") or {})
    tool_input.update(answer["edits"])
    return {"behavior": "allow", "updatedInput": tool_input}


def converse(proc, ctx, engine, stdout_file, deadline, host=None):
    """Be the CLI's host (`host`, Claude Code's by default) until its
    `result` (or the deadline); returns what the host wrote."""
    pipe = stdio.Pipe(proc, stdout_file)
    try:
        (host or _host)(pipe, ctx, deadline)
    finally:
        sent = pipe.end(deadline)
    return sent


# How long a host holding its answers (a scenario's `together`) waits for
# the rest of the questions.
HOLD = 10.0


def _host(pipe, ctx, deadline):
    pipe.send({"type": "user", "message": {"role": "user", "content": _content(ctx)}})
    if not {"approval", "page"} & ctx.scenario.needs:
        # The one message, then end of input: as `run --attach` writes it.
        pipe.close()
    answers = list(ctx.scenario.answers)
    page_answers = list(ctx.scenario.page_answers)
    calls = []  # calls of the page's tools not answered yet
    held = []  # questions not answered yet
    hold_until = None
    while time.monotonic() < deadline:
        if calls and ((len(calls) >= len(page_answers) and not ctx.scenario.page_delay)
                      or time.monotonic() > hold_until):
            for msg in calls:
                _answer_call(pipe, msg, page_answers.pop(0))
            calls = []
        if held and (len(held) >= len(answers) or time.monotonic() > hold_until):
            for msg in held:
                _answer(pipe, msg, answers)
            held = []
        try:
            msg = pipe.messages.get(timeout=0.1)
        except queue.Empty:
            continue
        if msg is None:
            return
        kind = msg.get("type")
        if kind == "result":
            return
        if kind != "control_request":
            continue
        if (msg.get("request") or {}).get("subtype") == "mcp_message":
            if _serve_page(pipe, msg, ctx):
                calls.append(msg)
                # The turn's other calls come at once: hold for them.
                hold_until = time.monotonic() + max(2.0, ctx.scenario.page_delay)
            continue
        if ctx.scenario.together and (msg.get("request") or {}).get("subtype") == "can_use_tool":
            if not held:
                hold_until = time.monotonic() + HOLD
            held.append(msg)
        else:
            _answer(pipe, msg, answers)
    print("  no result in time", file=sys.stderr)


def _serve_page(pipe, msg, ctx):
    """Answer a message to the page's MCP server at once; True for a
    `tools/call`, which waits for its answer."""
    rid = msg.get("request_id")
    request = msg.get("request") or {}
    rpc = request.get("message") or {}
    method = rpc.get("method")
    if request.get("server_name") != PAGE_SERVER:
        result = {"jsonrpc": "2.0", "id": rpc.get("id"), "error": {"code": -32601, "message": "no such server"}}
    elif "id" not in rpc:
        result = {"jsonrpc": "2.0", "result": {}}
    elif method == "initialize":
        result = {"jsonrpc": "2.0", "id": rpc["id"], "result": {
            "protocolVersion": (rpc.get("params") or {}).get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": PAGE_SERVER, "version": "1"}}}
    elif method == "tools/list":
        tools = [{"name": t["name"], "description": t.get("description", ""),
                  "inputSchema": t.get("parameters") or {"type": "object"},
                  "annotations": {"readOnlyHint": True}} for t in ctx.scenario.page_tools]
        result = {"jsonrpc": "2.0", "id": rpc["id"], "result": {"tools": tools}}
    elif method == "tools/call":
        return True
    else:
        result = {"jsonrpc": "2.0", "id": rpc["id"], "error": {"code": -32601, "message": f"{method} not found"}}
    pipe.send({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                                                        "response": {"mcp_response": result}}})
    return False


def _answer_call(pipe, msg, text):
    """Answer a held `tools/call` with the page's answer."""
    rpc = (msg.get("request") or {}).get("message") or {}
    result = {"jsonrpc": "2.0", "id": rpc.get("id"),
              "result": {"content": [{"type": "text", "text": text}], "isError": False}}
    pipe.send({"type": "control_response", "response": {"subtype": "success", "request_id": msg.get("request_id"),
                                                        "response": {"mcp_response": result}}})


def _answer(pipe, msg, answers):
    """Answer a control request: a permission question as the scenario's
    next answer says, anything else as not handled."""
    rid = msg.get("request_id")
    request = msg.get("request") or {}
    if request.get("subtype") == "can_use_tool" and answers and answers[0].get("interrupt_turn"):
        answers.pop(0)
        pipe.send({"type": "control_request", "request_id": "host-interrupt-1", "request": {"subtype": "interrupt"}})
        return
    if request.get("subtype") == "can_use_tool" and answers:
        response = {"subtype": "success", "request_id": rid, "response": _decision(answers.pop(0), request)}
    else:
        why = "no answer left in the scenario" if request.get("subtype") == "can_use_tool" else "not handled"
        response = {"subtype": "error", "request_id": rid, "error": why}
    pipe.send({"type": "control_response", "response": response})
