#!/usr/bin/env python3
"""Build a large benchmark input for one dialect from the real recordings.

The recordings of a dialect are concatenated over and over until the output
reaches SIZE; in copy N every id-like value (session, thread, tool call,
message, item ids) gets the suffix `-cN`, so each copy is a distinct run, as
in a day of CI logs.

    gen.py DIALECT SIZE OUT      e.g. gen.py gemini 256M /tmp/gemini-256M.jsonl

DIALECT: gemini, codex, codex-legacy, claude, claude-partial, qwen,
copilot, opencode, or one of those with `-small`: only the records of at
most 400 bytes (deltas and other small events, the live-streaming case,
where the cost is per line).
"""
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "..", "..", "testdata")

SOURCES = {
    "gemini": ("gemini/0.61.0/*.jsonl", None),
    "codex": ("codex/0.169.0/*.jsonl", None),
    "codex-legacy": ("codex/0.42.0-legacy/*.jsonl", None),
    "claude": ("claude/2.1.328/*.jsonl", lambda p: "partial" not in p),
    "claude-partial": ("claude/2.1.328/*.jsonl", lambda p: "partial" in p),
    "qwen": ("qwen/0.5.2/*.jsonl", None),
    "copilot": ("copilot/1.0.102/*.jsonl", None),
    "opencode": ("opencode/1.18.33/*.jsonl", None),
}

ID_KEYS = (
    "session_id|thread_id|tool_id|tool_use_id|parent_tool_use_id|call_id|id|uuid|message_id"
)
# Copilot CLI's and OpenCode's id keys too (only for their inputs, so that
# the inputs of the other dialects stay as they were).
MORE_ID_KEYS = (
    "parentId|turnId|sessionID|toolCallId|messageId|interactionId|messageID|agentId"
    "|originatingMessageId|apiCallId|parentAgentTaskId|sessionId|parentToolCallId|callID"
    "|reasoningId"
)
ID_RE = re.compile(rb'"(' + ID_KEYS.encode() + rb')":"([^"\\]+)"')
MORE_ID_RE = re.compile(rb'"(' + (ID_KEYS + "|" + MORE_ID_KEYS).encode() + rb')":"([^"\\]+)"')


SMALL = 400


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def main():
    name = sys.argv[1] if len(sys.argv) == 4 else ""
    small = name.endswith("-small")
    dialect = name.removesuffix("-small")
    if dialect not in SOURCES:
        sys.exit(__doc__)
    target, out = size(sys.argv[2]), sys.argv[3]
    pattern, keep = SOURCES[dialect]
    paths = sorted(p for p in glob.glob(os.path.join(TESTDATA, pattern)) if keep is None or keep(p))
    if not paths:
        sys.exit(f"no recordings for {dialect} under {TESTDATA}")
    sessions = []
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        if not data.endswith(b"\n"):
            data += b"\n"
        if small:
            data = b"".join(l for l in data.splitlines(keepends=True) if len(l) <= SMALL)
        sessions.append(data)
    id_re = MORE_ID_RE if dialect in ("copilot", "opencode") else ID_RE
    written = 0
    copy = 0
    with open(out, "wb") as f:
        while written < target:
            copy += 1
            suffix = b"-c%d" % copy
            for data in sessions:
                chunk = id_re.sub(lambda m: b'"%s":"%s%s"' % (m.group(1), m.group(2), suffix), data)
                f.write(chunk)
                written += len(chunk)
    print(f"{out}: {written} bytes, {copy} copies of {len(paths)} recordings", file=sys.stderr)


if __name__ == "__main__":
    main()
