"""Gemini CLI in its ACP mode (`gemini --acp`), the recorder its client
(acp.py): the transcript of both directions is the recording, written to
testdata/acp/gemini-VERSION.

The model side (settings, environment and the scripted replies) is the one
of the headless runs (clis/gemini.py), without `--yolo`: the agent asks
before it runs a command, and the scenario's answers decide.
"""

import acp
from clis import gemini
from clis import version as version_of

PACKAGE = gemini.PACKAGE
BIN = gemini.BIN
OUT = "acp/gemini-{version}"
# The front end's tools: an MCP server over HTTP in `session/new` (acp.py).
PAGE_TOOLS = True

classify = gemini.classify
reply = gemini.reply
error = gemini.error
aux = gemini.aux
converse = acp.converse

# The files a scenario sends: image and audio blocks of `session/prompt`, before the
# text (acp.py), as `run --attach` gives them.
FILES = {"image/png", "image/jpeg", "image/gif", "image/webp", "audio/wav"}

# What the ACP recordings cover: the run's shapes a client meets.
SCENARIOS = acp.SCENARIOS

# Gemini CLI's session/load in a new process finds no session of the clock
# minute it is in.
LOAD_NEXT_MINUTE = True


def supports(version, scenario):
    if version_of(version) < (0, 34, 0):
        return "`--acp` from 0.34 on (`--experimental-acp` before)"
    if scenario.name not in SCENARIOS:
        return "not among the ACP scenarios"
    if scenario.needs - {"approval", "plan", "resume", "acp", "page"}:
        return "not over ACP"
    return None


def prepare(ctx):
    argv, env = gemini.prepare(ctx)
    argv = [ctx.bin, "--acp"]
    if "plan" in ctx.scenario.needs:
        argv += ["--model", "gemini-2.5-flash"]
    return argv, env
