"""Qwen Code in its ACP mode (`qwen --acp`), the recorder its client
(acp.py): the transcript of both directions is the recording, written to
testdata/acp/qwen-VERSION.

The model side (settings, environment and the scripted replies) is the one
of the headless runs (clis/qwen.py), with `--approval-mode default`: over
ACP Qwen Code's own default lets an automatic classifier decide, and
`default` asks before every command, so the scenario's answers decide.
"""

import acp
from clis import qwen

PACKAGE = qwen.PACKAGE
BIN = qwen.BIN
OUT = "acp/qwen-{version}"
# The front end's tools: an MCP server over HTTP in `session/new` (acp.py).
PAGE_TOOLS = True

classify = qwen.classify
reply = qwen.reply
error = qwen.error
aux = qwen.aux
converse = acp.converse

# What the ACP recordings cover: the run's shapes a client meets.
SCENARIOS = acp.SCENARIOS

# No FILES: Qwen Code 0.24.4 says promptCapabilities.audio (and .image),
# but the `audio` scenario's block, recorded with FILES = {"audio/wav"},
# did not reach the model ("audio/wav not received."); `serve` refuses
# files for it.


def supports(version, scenario):
    if scenario.name not in SCENARIOS:
        return "not among the ACP scenarios"
    return None


def timeout(version, scenario):
    # An HTTP 500 is retried for about 100 s.
    if scenario.name == "http500":
        return max(scenario.timeout, 300.0)
    return scenario.timeout


def prepare(ctx):
    argv, env = qwen.prepare(ctx)
    return [ctx.bin, "--acp", "--auth-type", "openai", "--model", qwen.MODEL, "--approval-mode", "default"], env
