"""Qwen Code (npm @qwen-code/qwen-code) against a scripted OpenAI-compatible
server (clis/chat.py): `qwen -p PROMPT --output-format stream-json` with
OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL, authenticated as `openai`.

Scenarios are recorded with --include-partial-messages (the name as is), and
some without it too (-plain).

Scenarios that need "page" run Qwen Code on its stream-json control layer
(`--input-format stream-json`, no `-p`), as `run qwen --page-tools` starts
it: the recorder is its host. It declares the front end's tools as an SDK
MCP server (`sdkMcpServers` in an `initialize` control request) before the
prompt, answers the `mcp_message` requests as clis/claude.py does, and
closes stdin after the `result`. Qwen Code offers MCP tools through its
`tool_search` and `tool_call` bridge: the scripted model selects the page's
tool with `tool_search` (a turn of its own, not counted as a scenario
turn) and calls it through `tool_call`, as a real model does.
"""

import json
import os
import queue
import sys
import time

from clis import chat
from clis import claude
from clis import version as version_of
from scenarios import PAGE_ANSWERS

PACKAGE = "@qwen-code/qwen-code"
BIN = "qwen"
MODEL = "qwen3-coder-plus"

PLAIN_TOO = {"text", "shell", "files", "reasoning"}


def supports(version, scenario):
    if "approval" in scenario.needs:
        return "the recorder does not answer Qwen Code's approvals"
    return None


# `converse` plays the server of the front end's tools (scenarios that need "page").
PAGE_TOOLS = True
PAGE_SERVER = claude.PAGE_SERVER
PAGE_PREFIX = f"mcp__{PAGE_SERVER}__"


def converses(ctx):
    return "page" in ctx.scenario.needs


def variants(version, scenario):
    return ["", "-plain"] if scenario.name in PLAIN_TOO else [""]


def prepare(ctx):
    qdir = ctx.home / ".qwen"
    qdir.mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False},
    }
    if "plan" in ctx.scenario.needs:
        settings["tools"] = {"todoWrite": {"enabled": True}}
    (qdir / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    if converses(ctx):
        # No prompt argument and no approval mode: as `run qwen --page-tools`
        # starts it, the prompt and the server's declaration on stdin.
        argv = [ctx.bin, "--input-format", "stream-json", "--output-format", "stream-json", "--auth-type",
                "openai", "--model", MODEL]
    else:
        argv = [ctx.bin, "-p", ctx.prompt, "--output-format", "stream-json", "--yolo", "--auth-type", "openai",
                "--model", MODEL]
    if ctx.variant != "-plain":
        argv.append("--include-partial-messages")
    if ctx.scenario.max_turns:
        argv += ["--max-session-turns", str(ctx.scenario.max_turns)]
    if ctx.resume:
        argv.append("--continue")
    tmp = ctx.scratch / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(ctx.home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "OPENAI_BASE_URL": ctx.base_url + "/v1",
        "OPENAI_API_KEY": "sk-scripted",
        "OPENAI_MODEL": MODEL,
        "NO_BROWSER": "1",
        "CI": "1",
    }
    return argv, env


# Older versions open the conversation with the environment as a user
# message and this answer to it.
PREAMBLE = ("Got it. Thanks for the context!",)


def classify(method, path, headers, body, ctx):
    who, index = chat.classify(method, path, headers, body, ctx, PREAMBLE)
    if who == "main" and isinstance(body, dict):
        # The model's own `tool_search` turns are not the scenario's.
        index -= len(_searches(body))
    return who, index


def _searches(body):
    """The assistant messages of the request that only select tools."""
    out = []
    for m in body.get("messages") or []:
        calls = m.get("tool_calls") or [] if m.get("role") == "assistant" else []
        if calls and all((c.get("function") or {}).get("name") == "tool_search" for c in calls):
            out.append(m)
    return out


def _tool_results(body):
    """The text of the tool results after the request's last assistant message."""
    texts = []
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "tool":
            break
        texts.insert(0, chat._text(m.get("content")))
    return texts


def _pick(tools, *names):
    for n in names:
        if n in tools:
            return n
    return names[0]


def _call(kind, args, tools, ctx):
    path = lambda p: str(ctx.work / p)  # noqa: E731
    if kind == "shell":
        return _pick(tools, "run_shell_command"), {"command": args["command"], "is_background": False,
                                                     "description": "Run " + args["command"].split()[0]}
    if kind == "write":
        return _pick(tools, "write_file"), {"file_path": path(args["path"]), "content": args["content"]}
    if kind == "edit":
        return _pick(tools, "edit", "replace"), {"file_path": path(args["path"]), "old_string": args["old"],
                                                 "new_string": args["new"]}
    if kind == "read":
        return _pick(tools, "read_file"), {"absolute_path": path(args["path"])} if "read_file" in tools and \
            version_of(ctx.version) < (0, 1, 0) else {"file_path": path(args["path"])}
    if kind == "plan":
        todos = [{"id": str(i + 1), "content": text, "status": status}
                 for i, (text, status) in enumerate(args["items"])]
        return _pick(tools, "todo_write"), {"todos": todos}
    if kind == "search":
        return "tool_search", {"query": args["query"]}
    if kind == "page":
        name = PAGE_PREFIX + args["tool"]
        if name in tools:
            return name, args["args"]
        # Behind the bridge: called through `tool_call`.
        return _pick(tools, "tool_call"), {"name": name, "arguments": args["args"]}
    if kind == "subagent":
        call = {"description": args["description"], "prompt": args["prompt"], "subagent_type": "general-purpose"}
        if version_of(ctx.version) >= (0, 20, 0):
            # Top-level subagents run in the background by default there.
            call["run_in_background"] = False
        return _pick(tools, "agent", "task"), call
    raise ValueError(kind)


def reply(turn, body, who, index, ctx):
    pages = [args["tool"] for kind, args in turn["calls"] if kind == "page"]
    tools = chat.tool_names(body)
    if pages and not _searches(body) and any(PAGE_PREFIX + p not in tools for p in pages):
        # The page's tools are deferred: select them first, as a model does
        # (its call ids marked "q", apart from the scenario's turns').
        query = "select:" + ",".join(PAGE_PREFIX + p for p in pages)
        turn = dict(turn, text=None, thinking=None, calls=[("search", {"query": query})])
        return chat.reply(turn, body, who, index, ctx, _call, tag="q")
    if turn["text"] and PAGE_ANSWERS in turn["text"]:
        got = _tool_results(body)
        want = list(ctx.scenario.page_answers)
        if any(w not in got for w in want):
            print(f"  the model's request carries {got!r}, not the page's answers {want!r}", file=sys.stderr)
        turn = dict(turn, text=turn["text"].replace(PAGE_ANSWERS, "; ".join(got)))
    return chat.reply(turn, body, who, index, ctx, _call)


def error(status, ctx):
    return chat.error(status, ctx)


def aux(method, path, body, ctx):
    return chat.aux(method, path, body, ctx)


# ---- the control layer (scenarios that need "page") ------------------------


# What `run qwen --page-tools` answers a permission question when it does
# not ask (src/converse/control.rs).
DENIED = ("this run asks no approvals: qwen's tools that need one are denied "
          "(--approval auto-edit or yolo, or --allow-tool, lets them run)")


def converse(proc, ctx, engine, stdout_file, deadline):
    """Be the CLI's host until its `result` (or the deadline); returns what
    the host wrote."""
    return claude.converse(proc, ctx, engine, stdout_file, deadline, host=_host)


def _host(pipe, ctx, deadline):
    pipe.send({"type": "control_request", "request_id": "page-server",
               "request": {"subtype": "initialize", "sdkMcpServers": {PAGE_SERVER: {"name": PAGE_SERVER}}}})
    pipe.send({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": ctx.prompt}]}})
    page_answers = list(ctx.scenario.page_answers)
    calls = []  # calls of the page's tools not answered yet
    answer_at = None
    first_call = None
    while time.monotonic() < deadline:
        if calls and time.monotonic() > answer_at:
            for msg in calls:
                claude._answer_call(pipe, msg, page_answers.pop(0) if page_answers else "no answer left")
            calls = []
        try:
            msg = pipe.messages.get(timeout=0.1)
        except queue.Empty:
            continue
        if msg is None:
            return
        kind = msg.get("type")
        if kind == "result":
            if first_call:
                print(f"  result at {time.monotonic() - first_call:.1f} s", file=sys.stderr)
            return
        if kind == "user" and first_call:
            for b in (msg.get("message") or {}).get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    print(f"  tool result {str(b.get('content'))[:60]!r} at {time.monotonic() - first_call:.1f} s",
                          file=sys.stderr)
        if kind != "control_request":
            continue
        request = msg.get("request") or {}
        if request.get("subtype") == "mcp_message":
            if claude._serve_page(pipe, msg, ctx):
                now = time.monotonic()
                first_call = first_call or now
                # When each call came (Qwen Code asks again after its own
                # timeout), for the findings.
                print(f"  tools/call {msg['request']['message'].get('params', {}).get('name')} at "
                      f"{now - first_call:.1f} s", file=sys.stderr)
                if not calls:
                    # The turn's other calls come at once: hold for them, or
                    # answer late as the scenario says.
                    answer_at = now + max(2.0, ctx.scenario.page_delay)
                calls.append(msg)
            continue
        if request.get("subtype") == "can_use_tool":
            # A permission question for one of its own tools: denied, as
            # `run` denies it when it does not ask (`-p` denies it itself).
            pipe.send({"type": "control_response", "response": {"subtype": "success", "request_id": msg.get(
                "request_id"), "response": {"behavior": "deny", "message": DENIED}}})
            continue
        # Anything else: not handled, as by `run`.
        pipe.send({"type": "control_response", "response": {"subtype": "error", "request_id": msg.get("request_id"),
                                                            "error": "not handled"}})
    print("  no result in time", file=sys.stderr)
