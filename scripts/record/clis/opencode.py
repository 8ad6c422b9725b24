"""OpenCode (npm opencode-ai, a native binary) against a scripted
OpenAI-compatible server (clis/chat.py): `opencode run --format json
--thinking [--auto] -m scripted/MODEL PROMPT`, with a custom provider in the
working folder's opencode.json (`@ai-sdk/openai-compatible` at the server's
base URL) and the environment switches that keep it off the network (no
models.dev catalogue, no update check, no default plugins, no LSP
downloads).
"""

import json
import os
import subprocess

from clis import chat
import pagehttp

PACKAGE = "opencode-ai"
BIN = "opencode"
PROVIDER = "scripted"
MODEL = "scripted-coder"
# The files a scenario sends: `--file=FILE` each after the message, as `run
# --attach` gives them; the model's configuration says it takes them.
FILES = {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}
# The front end's tools: served over HTTP (pagehttp.py), named to OpenCode
# by OPENCODE_CONFIG_CONTENT, as `run --page-tools` does.
PAGE_TOOLS = True


def supports(version, scenario):
    if "max_turns" in scenario.needs:
        return "OpenCode has no option that limits the number of turns"
    return None


def prepare(ctx):
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": ctx.base_url + "/v1", "apiKey": "sk-scripted"},
                "models": {MODEL: {"name": "Scripted Coder", "reasoning": True, "tool_call": True,
                                   "limit": {"context": 128000, "output": 8192}}},
            }
        },
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
    }
    if ctx.files:
        model = config["provider"][PROVIDER]["models"][MODEL]
        model["attachment"] = True
        model["modalities"] = {"input": ["text", "image", "pdf"], "output": ["text"]}
    if ctx.scenario.model.startswith(PROVIDER + "/"):
        # A second model of the provider, for a client that chooses it.
        other = ctx.scenario.model.split("/", 1)[1]
        config["provider"][PROVIDER]["models"][other] = {
            "name": "Scripted Other", "reasoning": True, "tool_call": True,
            "limit": {"context": 128000, "output": 8192}}
    (ctx.work / "opencode.json").write_text(json.dumps(config, indent=2) + "\n")
    argv = [ctx.bin, "run", "--format", "json", "--thinking", "-m", f"{PROVIDER}/{MODEL}"]
    if _has_auto(ctx.bin):
        # Approves what it would ask for (older releases have no such option).
        argv.append("--auto")
    if ctx.resume:
        session = _session_of(ctx.first_stdout)
        argv += ["--session", session] if session else ["--continue"]
    argv.append(ctx.prompt)
    argv += [f"--file={p}" for p in ctx.files]
    tmp = ctx.scratch / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(ctx.home),
        "XDG_CONFIG_HOME": str(ctx.home / ".config"),
        "XDG_DATA_HOME": str(ctx.home / ".local" / "share"),
        "XDG_CACHE_HOME": str(ctx.home / ".cache"),
        "XDG_STATE_HOME": str(ctx.home / ".local" / "state"),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "CI": "1",
    }
    if "page" in ctx.scenario.needs:
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(
            {"mcp": {pagehttp.SERVER: {"type": "remote", "url": pagehttp.start(ctx), "oauth": False}}})
    # The provider package is fetched from npm at the first run; point npm
    # at the same registry as the installer.
    for key in ("npm_config_registry", "NPM_CONFIG_REGISTRY", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"):
        if key in os.environ:
            env[key] = os.environ[key]
    return argv, env


_AUTO = {}


def _has_auto(exe):
    if exe not in _AUTO:
        out = subprocess.run([exe, "run", "--help"], capture_output=True, text=True, timeout=120,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent",
                                  "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"})
        _AUTO[exe] = "--auto" in out.stdout + out.stderr
    return _AUTO[exe]


def _session_of(stdout):
    for line in stdout.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("sessionID"), str):
            return rec["sessionID"]
    return None


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
        return _pick(tools, "bash"), {"command": args["command"], "description": "Run a command"}
    if kind == "write":
        return _pick(tools, "write"), {"filePath": path(args["path"]), "content": args["content"]}
    if kind == "edit":
        return _pick(tools, "edit"), {"filePath": path(args["path"]), "oldString": args["old"],
                                      "newString": args["new"]}
    if kind == "read":
        return _pick(tools, "read"), {"filePath": path(args["path"])}
    if kind == "plan":
        todos = [{"content": t, "status": s, "priority": "medium", "id": str(i + 1)}
                 for i, (t, s) in enumerate(args["items"])]
        return _pick(tools, "todowrite"), {"todos": todos}
    if kind == "subagent":
        return _pick(tools, "task"), {"description": args["description"], "prompt": args["prompt"],
                                      "subagent_type": "general"}
    raise ValueError(kind)


def reply(turn, body, who, index, ctx):
    return chat.reply(turn, body, who, index, ctx, _call)


def error(status, ctx):
    return chat.error(status, ctx)


def aux(method, path, body, ctx):
    return chat.aux(method, path, body, ctx)
