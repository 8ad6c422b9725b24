"""GitHub Copilot CLI (npm @github/copilot, a native binary) against a
scripted OpenAI-compatible server (clis/chat.py):
`copilot -p PROMPT --output-format json --allow-all` with
COPILOT_PROVIDER_BASE_URL, COPILOT_PROVIDER_TYPE=openai, COPILOT_MODEL and
COPILOT_OFFLINE=true (no GitHub sign-in, telemetry or update checks).
"""

import json
import os

from clis import chat
import pagehttp
from clis import version as version_of

PACKAGE = "@github/copilot"
# The front end's tools: served over HTTP (pagehttp.py), named to Copilot
# CLI by --additional-mcp-config and allowed by --allow-tool, as `run
# --page-tools` does.
PAGE_TOOLS = True
BIN = "copilot"
MODEL = "gpt-4.1"
# The files a scenario sends: `--attachment=FILE` each, as `run --attach`
# gives them.
FILES = {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}


def supports(version, scenario):
    if "approval" in scenario.needs:
        return "the recorder does not answer Copilot CLI's approvals"
    if "max_turns" in scenario.needs:
        return "Copilot CLI has no option that limits the number of turns"
    if "plan" in scenario.needs:
        return "Copilot CLI offers no to-do tool in prompt mode (it keeps to-dos in its sql tool)"
    return None


def timeout(version, scenario):
    # An HTTP 500 is retried five times; 1.0.11 waits 20 to 35 s before
    # each retry, so its run takes over three minutes.
    if scenario.name == "http500":
        return max(scenario.timeout, 420.0)
    return scenario.timeout


def prepare(ctx):
    argv = [ctx.bin, "-p", ctx.prompt, "--output-format", "json", "--allow-all", "--no-ask-user",
            "--model", MODEL, "--log-level", "none"]
    if ctx.resume:
        argv.append("--continue")
    argv += [f"--attachment={p}" for p in ctx.files]
    if "page" in ctx.scenario.needs:
        config = {"mcpServers": {pagehttp.SERVER: {"type": "http", "url": pagehttp.start(ctx), "tools": ["*"]}}}
        (ctx.scratch / "page-mcp.json").write_text(json.dumps(config))
        argv += ["--additional-mcp-config=@" + str(ctx.scratch / "page-mcp.json"),
                 "--allow-tool=" + pagehttp.SERVER]
    tmp = ctx.scratch / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(ctx.home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": ctx.base_url + "/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "sk-scripted",
        "COPILOT_MODEL": MODEL,
        "COPILOT_AUTO_UPDATE": "false",
        "CI": "1",
    }
    return argv, env


def classify(method, path, headers, body, ctx):
    return chat.classify(method, path, headers, body, ctx)


def _pick(tools, *names):
    for n in names:
        if n in tools:
            return n
    return names[0]


def _call(kind, args, tools, ctx):
    path = lambda p: str(ctx.work / p)  # noqa: E731
    if kind == "page":
        return pagehttp.page_tool(tools, args["tool"]), args["args"]
    if kind == "shell":
        return _pick(tools, "bash", "shell"), {"command": args["command"], "description": "Run a command",
                                                "mode": "sync", "initial_wait": 60}
    if kind == "write":
        return _pick(tools, "create"), {"path": path(args["path"]), "file_text": args["content"]}
    if kind == "edit":
        return _pick(tools, "edit", "str_replace"), {"path": path(args["path"]), "old_str": args["old"],
                                                     "new_str": args["new"]}
    if kind == "read":
        return _pick(tools, "view"), {"path": path(args["path"])}
    if kind == "plan":
        lines = ["- [x] " + t if s == "completed" else "- [ ] " + t for t, s in args["items"]]
        return _pick(tools, "update_todo"), {"todos": "\n".join(lines)}
    if kind == "subagent":
        return _pick(tools, "task"), {"description": args["description"], "prompt": args["prompt"],
                                      "agent_type": "general-purpose", "name": "helper"}
    raise ValueError(kind)


def reply(turn, body, who, index, ctx):
    return chat.reply(turn, body, who, index, ctx, _call)


def error(status, ctx):
    return chat.error(status, ctx)


def aux(method, path, body, ctx):
    return chat.aux(method, path, body, ctx)
