"""Gemini CLI against a scripted Gemini API.

Gemini CLI talks to GOOGLE_GEMINI_BASE_URL when it authenticates with an API
key (`security.auth.selectedType: "gemini-api-key"` in settings and
GEMINI_API_KEY set). The conversation goes through
`POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`; the CLI's own
small calls (model routing, the next-speaker check, loop detection) use
`:generateContent` and are answered as auxiliary, as are `:countTokens` and
anything else. A subagent's conversation is told apart by scenarios.SUB_MARK
in one of its user texts.
"""

import json
import os
import sys
import time

import mock
from clis import version as version_of
from scenarios import PAGE_ANSWERS, SUB_MARK

PACKAGE = "@google/gemini-cli"
BIN = "gemini"

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
STATUS_MESSAGES = {
    400: "Request contains an invalid argument.",
    429: "Resource has been exhausted (e.g. check quota).",
    500: "Internal error encountered.",
    503: "The model is overloaded. Please try again later.",
}



def supports(version, scenario):
    v = version_of(version)
    if "approval" in scenario.needs:
        return "stream-json has no approval channel (approvals need ACP)"
    if "resume" in scenario.needs and v < (0, 20, 0):
        return "no --resume option before 0.20"
    if "subagent" in scenario.needs and v < (0, 30, 0):
        return "no general-purpose subagent (only the codebase investigator, without a shell)"
    return None


def _settings(ctx):
    v = version_of(ctx.version)
    s = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False},
    }
    if v >= (0, 30, 0):
        s["general"] = {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
    if v >= (0, 40, 0):
        # Ten attempts by default; three, as older versions always had.
        s["general"]["maxAttempts"] = 3
    if ctx.scenario.max_turns:
        s["model"] = {"maxSessionTurns": ctx.scenario.max_turns}
    if "plan" in ctx.scenario.needs:
        s["useWriteTodos"] = True
    if "subagent" in ctx.scenario.needs and v < (0, 40, 0):
        # The general-purpose agent is experimental there, off unless named.
        s["experimental"] = {"enableAgents": True}
        s["agents"] = {"overrides": {"generalist": {"enabled": True}}}
    return s


def prepare(ctx):
    gemini_dir = ctx.home / ".gemini"
    gemini_dir.mkdir(parents=True, exist_ok=True)
    (gemini_dir / "settings.json").write_text(json.dumps(_settings(ctx), indent=2) + "\n")
    tmp = ctx.scratch / "tmp"  # error reports land here, not in the machine's /tmp
    tmp.mkdir(exist_ok=True)
    argv = [ctx.bin, "-p", ctx.prompt, "--output-format", "stream-json", "--yolo"]
    if "plan" in ctx.scenario.needs:
        # write_todos is offered to Gemini 2 models only.
        argv += ["--model", "gemini-2.5-flash"]
    if ctx.resume:
        argv += ["--resume", "latest"]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(ctx.home),
        "LANG": "C.UTF-8",
        "GOOGLE_GEMINI_BASE_URL": ctx.base_url,
        "GEMINI_API_KEY": "scripted-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_BROWSER": "true",
        "TMPDIR": str(tmp),
    }
    return argv, env


def _user_texts(contents):
    for c in contents:
        if c.get("role") == "user":
            for p in c.get("parts") or []:
                if isinstance(p, dict) and isinstance(p.get("text"), str):
                    yield p["text"]


def classify(method, path, headers, body, ctx):
    if ":streamGenerateContent" not in path or not isinstance(body, dict):
        return "aux", None
    contents = body.get("contents") or []
    ctx.state["model"] = path.split("/models/", 1)[-1].split(":", 1)[0]
    who = "sub" if any(SUB_MARK in t for t in _user_texts(contents)) else "main"
    return who, sum(1 for c in contents if c.get("role") == "model")


def _declarations(body):
    out = {}
    for t in body.get("tools") or []:
        for d in t.get("functionDeclarations") or []:
            out[d.get("name")] = d
    return out


def _params(decl):
    schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
    return schema.get("properties") or {}


def _first(decls, *names):
    for n in names:
        if n in decls:
            return n
    raise KeyError(f"none of {names} offered (offered: {sorted(decls)})")


def _path_key(decls, name):
    props = _params(decls[name])
    for k in ("file_path", "absolute_path", "path"):
        if k in props:
            return k
    return "file_path"


def _call(kind, args, decls, ctx):
    """(name, args) for an abstract call, from the tools the request offers."""
    path = lambda p: str(ctx.work / p)  # noqa: E731
    if kind == "page":
        # Gemini CLI names an MCP server's tool mcp_SERVER_TOOL.
        return _first(decls, "mcp_page_" + args["tool"]), args["args"]
    if kind == "shell":
        name = _first(decls, "run_shell_command")
        a = {"command": args["command"]}
        if "description" in _params(decls[name]):
            a["description"] = "Run " + args["command"].split()[0]
        return name, a
    if kind == "write":
        name = _first(decls, "write_file")
        return name, {_path_key(decls, name): path(args["path"]), "content": args["content"]}
    if kind == "edit":
        name = _first(decls, "replace")
        a = {_path_key(decls, name): path(args["path"]), "old_string": args["old"], "new_string": args["new"]}
        if "instruction" in _params(decls[name]):
            a["instruction"] = f"Replace {args['old']!r} with {args['new']!r}."
        return name, a
    if kind == "read":
        name = _first(decls, "read_file")
        return name, {_path_key(decls, name): path(args["path"])}
    if kind == "plan":
        name = _first(decls, "write_todos")
        return name, {"todos": [{"description": text, "status": status} for text, status in args["items"]]}
    if kind == "complete":
        decl = decls["complete_task"]
        return "complete_task", _fill(decl.get("parametersJsonSchema") or decl.get("parameters") or {}, args["text"])
    if kind == "subagent":
        if "invoke_agent" in decls:
            return "invoke_agent", {"agent_name": "generalist", "prompt": args["prompt"]}
        name = _first(decls, "generalist")
        key = next(iter(_params(decls[name])), "request")
        return name, {key: args["prompt"]}
    raise ValueError(f"call kind {kind} not supported")


def _fill(schema, text):
    """The schema's required fields, every string among them set to `text`."""
    if str(schema.get("type", "")).lower() == "object":
        props = schema.get("properties") or {}
        return {k: _fill(props[k], text) for k in schema.get("required", list(props)) if k in props}
    return text


def _function_outputs(body):
    """The outputs of the function responses in the request's last content
    (Gemini CLI wraps an MCP tool's text in <untrusted_context>)."""
    contents = (body or {}).get("contents") or []
    outs = []
    for p in (contents[-1].get("parts") or []) if contents else []:
        r = (p.get("functionResponse") or {}).get("response") or {}
        text = str(r.get("output", ""))
        outs.append(text.replace("<untrusted_context>", "").replace("</untrusted_context>", "").strip())
    return outs


def _usage(prompt, out):
    return {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}


def reply(t, body, who, index, ctx):
    decls = _declarations(body)
    if index == 0 and version_of(ctx.version) < (0, 20, 0):
        # 0.11 loads its shell parser in the background when it starts and
        # rejects commands that arrive before it is ready; a real model takes
        # longer than that to answer.
        time.sleep(1.5)
    chunks = []  # the parts of each streamed chunk
    if t["thinking"]:
        chunks += [[{"text": p, "thought": True}] for p in mock.pieces(t["thinking"], 24)]
    if t["text"] and PAGE_ANSWERS in t["text"]:
        got = _function_outputs(body)
        want = list(ctx.scenario.page_answers)
        if any(w not in got for w in want):
            print(f"  the model's request carries {got!r}, not the page's answers {want!r}", file=sys.stderr)
        t = dict(t, text=t["text"].replace(PAGE_ANSWERS, "; ".join(got)))
    if t["text"]:
        chunks += [[{"text": p}] for p in mock.pieces(t["text"])]
    calls = list(t["calls"])
    if who == "sub" and not calls and "complete_task" in decls:
        # A subagent ends by handing its answer to this tool.
        calls.append(("complete", {"text": t["text"] or "Done."}))
    if calls:
        chunks.append([{"functionCall": dict(zip(("name", "args"), _call(kind, args, decls, ctx)))}
                       for kind, args in calls])
    if not chunks:
        chunks.append([{"text": ""}])
    ev = []
    for i, parts in enumerate(chunks):
        cand = {"content": {"role": "model", "parts": parts}, "index": 0}
        data = {"candidates": [cand]}
        if i == len(chunks) - 1:
            # The last chunk carries the finish reason and the usage, as from the real API.
            cand["finishReason"] = "STOP"
            data["usageMetadata"] = _usage(1000 + 100 * index, 10 + 5 * len(chunks))
        data["modelVersion"] = ctx.state.get("model", "gemini-2.5-flash")
        ev.append(mock.sse(data))
    return mock.sse_response(ev)


def error(status, ctx):
    return mock.json_response({"error": {
        "code": status,
        "message": STATUS_MESSAGES.get(status, "Error."),
        "status": STATUS_NAMES.get(status, "UNKNOWN"),
    }}, status=status)


def _value(schema, name=None):
    """A valid value for a response schema, with answers that let the CLI go on."""
    t = str(schema.get("type", "")).lower()
    if name == "complexity_score":
        return 10  # a simple task: the router picks the small model
    if name == "next_speaker":
        return "user"
    if name == "model_choice":
        return "flash" if "flash" in (schema.get("enum") or ["flash"]) else schema["enum"][0]
    if "enum" in schema:
        return schema["enum"][0]
    if t == "object":
        props = schema.get("properties") or {}
        return {k: _value(v, k) for k, v in props.items()}
    if t == "array":
        return []
    if t in ("number", "integer"):
        return schema.get("minimum", 0)
    if t == "boolean":
        return False
    return "scripted"


def aux(method, path, body, ctx):
    if ":countTokens" in path:
        return mock.json_response({"totalTokens": 1000})
    if ":generateContent" in path and isinstance(body, dict):
        cfg = body.get("generationConfig") or {}
        schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
        text = json.dumps(_value(schema)) if schema else "ok"
        return mock.json_response({
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": _usage(50, 5),
        })
    return mock.json_response({})
