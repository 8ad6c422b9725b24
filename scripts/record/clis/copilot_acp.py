"""GitHub Copilot CLI in its ACP mode (`copilot --acp`), the recorder its
client (acp.py): the transcript of both directions is the recording,
written to testdata/acp/copilot-VERSION.

The model side (the environment that points it at the scripted
OpenAI-compatible server without a GitHub sign-in, and the scripted
replies) is the one of the headless runs (clis/copilot.py), without
`--allow-all`: the agent asks before it runs a command, and the scenario's
answers decide.
"""

import acp
from clis import copilot

PACKAGE = copilot.PACKAGE
BIN = copilot.BIN
OUT = "acp/copilot-{version}"
# The front end\'s tools: an MCP server over HTTP in `session/new` (acp.py).
PAGE_TOOLS = True

classify = copilot.classify
reply = copilot.reply
error = copilot.error
aux = copilot.aux
timeout = copilot.timeout
converse = acp.converse

# The files a scenario sends: image blocks of `session/prompt`, before the
# text (acp.py), as `run --attach` gives them over ACP.
FILES = {"image/png", "image/jpeg", "image/gif", "image/webp"}

# What the ACP recordings cover: the run's shapes a client meets.
SCENARIOS = acp.SCENARIOS


def supports(version, scenario):
    if scenario.name not in SCENARIOS:
        return "not among the ACP scenarios"
    if "plan" in scenario.needs:
        return copilot.supports(version, scenario)
    return None


def prepare(ctx):
    _, env = copilot.prepare(ctx)
    return [ctx.bin, "--acp", "--model", copilot.MODEL, "--log-level", "none"], env
