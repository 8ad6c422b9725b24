"""OpenCode in its ACP mode (`opencode acp`), the recorder its client
(acp.py): the transcript of both directions is the recording, written to
testdata/acp/opencode-VERSION.

The model side (the provider in the working folder's opencode.json, the
environment and the scripted replies) is the one of `opencode run`
(clis/opencode.py). OpenCode asks before a command only when its
permission configuration says so: OPENCODE_PERMISSION makes `bash` ask.
"""

import json

import acp
from clis import opencode
from clis import version as version_of

PACKAGE = opencode.PACKAGE
BIN = opencode.BIN
OUT = "acp/opencode-{version}"
# The front end\'s tools: an MCP server over HTTP in `session/new` (acp.py).
PAGE_TOOLS = True

classify = opencode.classify
reply = opencode.reply
error = opencode.error
aux = opencode.aux
converse = acp.converse

# The files a scenario sends: image blocks of `session/prompt`, before the
# text (acp.py), as `run --attach` gives them over ACP.
FILES = {"image/png", "image/jpeg", "image/gif", "image/webp"}

# What the ACP recordings cover: the run's shapes a client meets.
SCENARIOS = acp.SCENARIOS


def supports(version, scenario):
    if scenario.model and version_of(version) < (1, 18, 33):
        return "the model is chosen in the session (a configOptions entry `model`) as checked from 1.18.33"
    if scenario.effort and version_of(version) < (1, 18, 33):
        return "the effort is chosen in the session (a configOptions entry `effort`) as checked from 1.18.33"
    if scenario.name not in SCENARIOS and not scenario.model and not scenario.effort:
        return "not among the ACP scenarios"
    return None


def prepare(ctx):
    _, env = opencode.prepare(ctx)
    env["OPENCODE_PERMISSION"] = json.dumps({"bash": "ask"})
    return [ctx.bin, "acp"], env
