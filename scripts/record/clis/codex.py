"""Codex CLI (npm @openai/codex) against the scripted server.

Codex reads a custom model provider from $CODEX_HOME/config.toml and talks
the OpenAI Responses API to it: POST {base_url}/responses, answered as
server-sent events. A request's `input` is the whole conversation so far;
its turn is the number of model turns that input already holds.

Tool calls carry call ids of the form call_<who><turn>_<k>, so the model
turns can be counted in the input even when Codex interleaves each call
with its output.
"""

import json
import os
import re
import threading
import time

import mock
from clis import chat
from clis import version as version_of
from scenarios import PAGE_ANSWERS, SUB_MARK

PACKAGE = "@openai/codex"
BIN = "codex"

API_KEY_ENV = "AGUI_RECORD_MOCK_KEY"

# Per-turn token counts, the same for every turn so totals are easy to check.
USAGE = {"input": 1200, "cached": 1024, "output": 45, "reasoning": 12}

MODEL_ITEMS = {"message", "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


# What differs by version was checked at 0.42.0, 0.44.0 and 0.169.0; the
# boundaries below (0.60, 0.100) only say "older" and "newer" than what was
# checked, not where between them a thing changed.



def _model(version):
    v = version_of(version)
    if v < (0, 60, 0):
        return "gpt-5-codex"
    return "gpt-5.5"


def supports(version, scenario):
    if "approval" in scenario.needs:
        return "`codex exec` asks no host (the app-server's shell-approval recording has approvals)"
    if "max_turns" in scenario.needs:
        return "Codex has no option that limits the number of turns"
    if "subagent" in scenario.needs and version_of(version) < (0, 100, 0):
        return "this version has no subagent tool"
    if "plan" in scenario.needs and version_of(version) < (0, 100, 0):
        return "`codex exec` of this version does not offer the update_plan tool"
    return None


def _extra_config(ctx):
    """Newer versions leave the plan tool and subagents off by default; the
    scenarios that need them turn them on, the others run as configured
    out of the box."""
    if version_of(ctx.version) < (0, 100, 0):
        return ""
    if "plan" in ctx.scenario.needs:
        return "\n[tools.update_plan]\nenabled = true\n"
    return ""


def _last_session(codex_home):
    rollouts = sorted((codex_home / "sessions").rglob("rollout-*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not rollouts:
        raise RuntimeError("the first run left no session to resume")
    m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", rollouts[-1].name)
    return m.group(1)


def setup(ctx):
    """Write $CODEX_HOME/config.toml for the scripted server; returns the
    environment to run Codex in."""
    codex_home = ctx.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    model = _model(ctx.version)
    if "subagent" in ctx.scenario.needs and version_of(ctx.version) >= (0, 100, 0):
        # The models this version has metadata for get the second multi-agent
        # tool set, whose work `exec --json` does not show; a model without
        # metadata gets the first, shown as collab_tool_call items (after a
        # warning that the metadata is missing).
        model = "gpt-5.4"
    config = f"""model = "{model}"
model_provider = "mock"
model_reasoning_summary = "auto"

[model_providers.mock]
name = "mock"
base_url = "{ctx.base_url}/v1"
wire_api = "responses"
env_key = "{API_KEY_ENV}"
request_max_retries = 1
stream_max_retries = 1
stream_idle_timeout_ms = 20000
""" + _extra_config(ctx)
    (codex_home / "config.toml").write_text(config)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(ctx.home),
        "CODEX_HOME": str(codex_home),
        API_KEY_ENV: "sk-mock",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    return env


def prepare(ctx):
    env = setup(ctx)
    codex_home = ctx.home / ".codex"
    argv = [ctx.bin, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    if ctx.resume and version_of(ctx.version) < (0, 100, 0):
        # Here `resume --last PROMPT` reads PROMPT as a session id: name the
        # session the first run wrote instead.
        argv += ["resume", _last_session(codex_home), ctx.prompt]
    elif ctx.resume:
        argv += ["resume", "--last", ctx.prompt]
    else:
        argv.append(ctx.prompt)
    return argv, env


# ---------------------------------------------------------------- requests


def _text_of(item):
    content = item.get("content")
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict):
            for key in ("text", "encrypted_content"):
                if isinstance(part.get(key), str):
                    out.append(part[key])
    return "".join(out)


def _is_sub(body):
    """The request's task holds SUB_MARK. The task is the first user
    message that is not the environment or instructions Codex puts in
    front of it, or the message a parent agent sent to start a helper."""
    for item in body.get("input") or []:
        kind = item.get("type", "message")
        if kind == "agent_message":
            return SUB_MARK in _text_of(item)
        if kind != "message" or item.get("role") != "user":
            continue
        text = _text_of(item).lstrip()
        if text.startswith("<") or text.startswith("# AGENTS.md"):
            continue
        return SUB_MARK in text
    return False


def _tag(item):
    m = re.match(r"call_([ms]\d+)_\d+$", str(item.get("call_id") or ""))
    return m.group(1) if m else None


def _turn_of(body):
    """Groups of consecutive model-output items in the input. A call's
    output does not end its group when more calls of the same turn follow
    it; anything else between model items does."""
    turns = 0
    in_group = False
    after_output = False
    group_tag = None
    for item in body.get("input") or []:
        kind = item.get("type", "message")
        model_item = kind in MODEL_ITEMS and (kind != "message" or item.get("role") == "assistant")
        if model_item:
            tag = _tag(item)
            same = in_group and (not after_output or (tag is not None and tag == group_tag))
            if same and tag is not None and group_tag is not None and tag != group_tag:
                same = False
            if not same:
                turns += 1
                group_tag = None
            in_group = True
            after_output = False
            if tag is not None:
                group_tag = tag
        elif kind in OUTPUT_ITEMS and in_group and _tag(item) is not None and _tag(item) == group_tag:
            after_output = True
        else:
            in_group = False
            after_output = False
            group_tag = None
    return turns


def classify(method, path, headers, body, ctx):
    if method == "POST" and path.rstrip("/").endswith("/responses") and isinstance(body, dict) and "input" in body:
        who = "sub" if _is_sub(body) else "main"
        return who, _turn_of(body)
    return "aux", 0


# ---------------------------------------------------------------- replies


def _tools(body):
    """name -> tool declaration, for the tools the request offers."""
    out = {}
    for t in body.get("tools") or []:
        if t.get("type") == "namespace":
            for inner in t.get("tools") or []:
                out[inner.get("name")] = dict(inner, namespace=t.get("name"))
            continue
        name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
        out[name] = t
    return out


def _params(tool):
    p = tool.get("parameters") or (tool.get("function") or {}).get("parameters") or {}
    return p.get("properties") or {}


def _shell_call(tools, command, call_id, ctx):
    """A function call (or local shell call) that runs `command`."""
    for name in ("exec_command", "shell_command", "shell", "container.exec", "local_shell"):
        tool = tools.get(name)
        if tool is None:
            continue
        if tool.get("type") == "local_shell":
            return {"type": "local_shell_call", "call_id": call_id, "status": "completed",
                    "action": {"type": "exec", "command": ["bash", "-lc", command]}}
        props = _params(tool)
        if "cmd" in props:
            args = {"cmd": command}
        elif props.get("command", {}).get("type") == "array":
            args = {"command": ["bash", "-lc", command]}
        else:
            args = {"command": command}
        return _function_call(name, args, call_id)
    raise RuntimeError(f"no shell tool offered: {sorted(tools)}")


def _function_call(name, args, call_id, tool=None):
    item = {"type": "function_call", "name": name, "arguments": json.dumps(args, ensure_ascii=False),
            "call_id": call_id}
    if tool is not None and tool.get("namespace"):
        item["namespace"] = tool["namespace"]
    return item


def _patch_call(tools, patch, call_id, ctx):
    tool = tools.get("apply_patch")
    if tool is not None and tool.get("type") == "custom":
        return {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": call_id,
                "status": "completed"}
    if tool is not None:
        return _function_call("apply_patch", {"input": patch}, call_id)
    # No patch tool: Codex intercepts apply_patch run through its shell tool.
    return _shell_call(tools, "apply_patch <<'EOF'\n" + patch + "EOF\n", call_id, ctx)


def _add_patch(path, content):
    lines = "".join("+" + line + "\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def _edit_patch(path, old, new, ctx):
    try:
        current = (ctx.work / path).read_text().splitlines()
    except OSError:
        current = [old]
    body = []
    for line in current:
        if old in line:
            body.append("-" + line)
            body.append("+" + line.replace(old, new))
        else:
            body.append(" " + line)
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n" + "\n".join(body) + "\n*** End Patch\n"


def _plan_call(tools, items, call_id):
    plan = [{"step": text, "status": status} for text, status in items]
    return _function_call("update_plan", {"plan": plan}, call_id, tools.get("update_plan"))


def _subagent_call(tools, args, call_id):
    tool = tools.get("spawn_agent")
    if tool is None:
        raise RuntimeError(f"no subagent tool offered: {sorted(tools)}")
    props = _params(tool)
    out = {"message": args["prompt"]}
    if "task_name" in props:
        out["task_name"] = re.sub(r"[^a-z0-9]+", "_", args["description"].lower()).strip("_")
    if "fork_turns" in props:
        # The helper starts from its own prompt, not a copy of the parent's history.
        out["fork_turns"] = "none"
    return _function_call("spawn_agent", out, call_id, tool)


def _call_item(kind, args, tools, call_id, ctx):
    if kind == "shell":
        return _shell_call(tools, args["command"], call_id, ctx)
    if kind == "read":
        return _shell_call(tools, "cat " + args["path"], call_id, ctx)
    if kind == "write":
        return _patch_call(tools, _add_patch(args["path"], args["content"]), call_id, ctx)
    if kind == "edit":
        return _patch_call(tools, _edit_patch(args["path"], args["old"], args["new"], ctx), call_id, ctx)
    if kind == "plan":
        return _plan_call(tools, args["items"], call_id)
    if kind == "subagent":
        return _subagent_call(tools, args, call_id)
    if kind == "page":
        return _function_call(args["tool"], args["args"], call_id, tools.get(args["tool"]))
    raise ValueError(kind)


def _page_answers(turn, body, ctx):
    """The turn with PAGE_ANSWERS in its text replaced by the outputs of the
    calls of the front end's tools the request carries (its answers)."""
    if not turn["text"] or PAGE_ANSWERS not in turn["text"]:
        return turn
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    pages = {t["name"] for t in ctx.scenario.page_tools}
    ids = {i.get("call_id") for i in items if i.get("type") == "function_call" and i.get("name") in pages}
    got = []
    for item in items:
        if item.get("type") == "function_call_output" and item.get("call_id") in ids:
            out = item.get("output")
            if isinstance(out, list):
                out = " ".join(p.get("text", "") for p in out if isinstance(p, dict))
            got.append(str(out))
    return dict(turn, text=turn["text"].replace(PAGE_ANSWERS, "; ".join(got)))


def _added(item):
    """An item as announced by output_item.added: calls without their
    finished arguments, messages without text."""
    added = dict(item)
    added["status"] = "in_progress"
    if added["type"] == "message":
        added["content"] = []
    elif added["type"] == "reasoning":
        added["summary"] = []
    elif added["type"] == "function_call":
        added["arguments"] = ""
    elif added["type"] == "custom_tool_call":
        added["input"] = ""
    return added


def _wait_for_helper(who, index, ctx):
    """The parent's turns after the spawn wait until the helper's last
    scripted turn has been served, so the helper really runs."""
    done = ctx.state.setdefault("helper_done", threading.Event())
    if who == "sub" and index >= len(ctx.scenario.sub_turns) - 1:
        done.set()
    elif who == "main" and ctx.scenario.sub_turns and index >= 1:
        if done.wait(30):
            time.sleep(1.0)


def reply(turn, body, who, index, ctx):
    _wait_for_helper(who, index, ctx)
    turn = _page_answers(turn, body, ctx)
    tools = _tools(body)
    prefix = ("s" if who == "sub" else "m") + str(index)
    resp_id = f"resp_{prefix}"
    seq = [0]

    def ev(kind, **fields):
        data = {"type": kind, "sequence_number": seq[0]}
        data.update(fields)
        seq[0] += 1
        return mock.sse(data, event=kind)

    events = [ev("response.created", response={"id": resp_id, "object": "response", "status": "in_progress",
                                               "model": body.get("model"), "output": []})]
    events.append(ev("response.in_progress", response={"id": resp_id, "object": "response",
                                                       "status": "in_progress"}))
    output = []
    n = 0
    if turn["thinking"]:
        item = {"type": "reasoning", "id": f"rs_{prefix}", "summary": [{"type": "summary_text",
                                                                         "text": turn["thinking"]}]}
        events.append(ev("response.output_item.added", output_index=n, item=_added(item)))
        events.append(ev("response.reasoning_summary_part.added", item_id=item["id"], output_index=n,
                         summary_index=0, part={"type": "summary_text", "text": ""}))
        for piece in mock.pieces(turn["thinking"]):
            events.append(ev("response.reasoning_summary_text.delta", item_id=item["id"], output_index=n,
                             summary_index=0, delta=piece))
        events.append(ev("response.reasoning_summary_text.done", item_id=item["id"], output_index=n,
                         summary_index=0, text=turn["thinking"]))
        events.append(ev("response.reasoning_summary_part.done", item_id=item["id"], output_index=n,
                         summary_index=0, part={"type": "summary_text", "text": turn["thinking"]}))
        events.append(ev("response.output_item.done", output_index=n, item=item))
        output.append(item)
        n += 1
    if turn["text"]:
        item = {"type": "message", "id": f"msg_{prefix}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}]}
        events.append(ev("response.output_item.added", output_index=n, item=_added(item)))
        events.append(ev("response.content_part.added", item_id=item["id"], output_index=n, content_index=0,
                         part={"type": "output_text", "text": "", "annotations": []}))
        for piece in mock.pieces(turn["text"]):
            events.append(ev("response.output_text.delta", item_id=item["id"], output_index=n, content_index=0,
                             delta=piece))
        events.append(ev("response.output_text.done", item_id=item["id"], output_index=n, content_index=0,
                         text=turn["text"]))
        events.append(ev("response.content_part.done", item_id=item["id"], output_index=n, content_index=0,
                         part=item["content"][0]))
        events.append(ev("response.output_item.done", output_index=n, item=item))
        output.append(item)
        n += 1
    for k, (kind, args) in enumerate(turn["calls"]):
        call_id = f"call_{prefix}_{k}"
        item = _call_item(kind, args, tools, call_id, ctx)
        item["id"] = f"fc_{prefix}_{k}"
        events.append(ev("response.output_item.added", output_index=n, item=_added(item)))
        if item["type"] == "function_call":
            events.append(ev("response.function_call_arguments.delta", item_id=item["id"], output_index=n,
                             delta=item["arguments"]))
            events.append(ev("response.function_call_arguments.done", item_id=item["id"], output_index=n,
                             arguments=item["arguments"]))
        elif item["type"] == "custom_tool_call":
            events.append(ev("response.custom_tool_call_input.delta", item_id=item["id"], output_index=n,
                             delta=item["input"]))
            events.append(ev("response.custom_tool_call_input.done", item_id=item["id"], output_index=n,
                             input=item["input"]))
        events.append(ev("response.output_item.done", output_index=n, item=item))
        output.append(item)
        n += 1
    usage = {
        "input_tokens": USAGE["input"],
        "input_tokens_details": {"cached_tokens": USAGE["cached"]},
        "output_tokens": USAGE["output"],
        "output_tokens_details": {"reasoning_tokens": USAGE["reasoning"]},
        "total_tokens": USAGE["input"] + USAGE["output"],
    }
    events.append(ev("response.completed", response={"id": resp_id, "object": "response", "status": "completed",
                                                     "model": body.get("model"), "output": output,
                                                     "usage": usage}))
    return mock.sse_response(events)


def error(status, ctx):
    # The Responses API answers errors in the Chat Completions API's shape.
    return chat.error(status, ctx)


def aux(method, path, body, ctx):
    if method == "GET" and path.split("?")[0].rstrip("/").endswith("/models"):
        return mock.json_response({"object": "list", "data": [], "models": []})
    return mock.json_response({"error": {"message": "not found", "type": "invalid_request_error"}}, status=404)
