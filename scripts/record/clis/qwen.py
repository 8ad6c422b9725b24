"""Qwen Code (npm @qwen-code/qwen-code) against a scripted OpenAI-compatible
server (clis/chat.py): `qwen -p PROMPT --output-format stream-json` with
OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL, authenticated as `openai`.

Scenarios are recorded with --include-partial-messages (the name as is), and
some without it too (-plain).
"""

import json
import os

from clis import chat
from clis import version as version_of

PACKAGE = "@qwen-code/qwen-code"
BIN = "qwen"
MODEL = "qwen3-coder-plus"

PLAIN_TOO = {"text", "shell", "files", "reasoning"}


def supports(version, scenario):
    if "approval" in scenario.needs:
        return "the recorder does not answer Qwen Code's approvals"
    return None


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
    return chat.classify(method, path, headers, body, ctx, PREAMBLE)


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
    if kind == "subagent":
        call = {"description": args["description"], "prompt": args["prompt"], "subagent_type": "general-purpose"}
        if version_of(ctx.version) >= (0, 20, 0):
            # Top-level subagents run in the background by default there.
            call["run_in_background"] = False
        return _pick(tools, "agent", "task"), call
    raise ValueError(kind)


def reply(turn, body, who, index, ctx):
    return chat.reply(turn, body, who, index, ctx, _call)


def error(status, ctx):
    return chat.error(status, ctx)


def aux(method, path, body, ctx):
    return chat.aux(method, path, body, ctx)
