#!/usr/bin/env python3
"""Time the round trip of a call of the page's tool through `serve`.

    scripts/bench/roundtrip.py [--rounds 30] [--bin PATH] [--clis claude,copilot]

For each CLI it starts `agui-translate serve CLI` (no token, a scratch state
directory) whose runs start the test suite's stand-in CLI (tests/fake/cli)
replaying that CLI's real `page-tool` recording: no model and no model time,
so what is measured is this program's own share. Each round is one thread:

  1. the page posts the first request (the page's tool `pick_branch`); the
     run ends with the call pending (not timed: it includes starting the
     run and the CLI);
  2. the page posts its answer (a `role: "tool"` message), and the clock
     starts just before the request's first byte goes out;
  3. the stand-in notes when the answer reaches it (Claude Code's: the
     `control_response` on its stdin; Copilot CLI's: the response to its
     `tools/call` over the loopback MCP server), and the page notes when
     the resumed run's first two events arrive (RUN_STARTED, then the
     first event made of what the CLI printed once it had the result).

It reports the median and 95th percentile, in milliseconds, of the time
from the answer's POST to each of these, over the rounds. The times are
wall-clock readings taken by two processes of one machine.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RECORDINGS = {
    "claude": ("testdata/claude/2.1.332/page-tool.jsonl", "FAKE_CONTROL"),
    "copilot": ("testdata/copilot/1.0.102/page-tool.jsonl", "FAKE_MCP_HTTP"),
}
TOOL = {"name": "pick_branch", "description": "Ask the user which git branch to use.",
        "parameters": {"type": "object", "properties": {"branches": {"type": "array", "items": {"type": "string"}}}}}


def request(thread, run, messages):
    return {"threadId": thread, "runId": run, "protocolVersion": "1.0.0", "state": {}, "context": [],
            "forwardedProps": {}, "tools": [TOOL], "messages": messages}


def post(addr, body, first_event=None):
    """POST `body`; the SSE events of the response. `first_event`, a list,
    gets the times at which the first two events arrived."""
    host, port = addr.rsplit(":", 1)
    data = json.dumps(body).encode()
    conn = socket.create_connection((host, int(port)))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(b"POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                 % (addr.encode(), len(data)) + data)
    buf = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
        if first_event is not None:
            now = time.time()
            first_event.extend([now] * (min(2, buf.count(b"\ndata: ")) - len(first_event)))
    conn.close()
    return [json.loads(line[6:]) for line in buf.decode().splitlines() if line.startswith("data: ")]


def start(binary, cli, scratch, answered):
    recording, var = RECORDINGS[cli]
    env = {"PATH": "/usr/bin:/bin", var: str(ROOT / recording), "FAKE_ANSWERED": str(answered)}
    proc = subprocess.Popen(
        [binary, "serve", cli, "--listen", "127.0.0.1:0", "--no-token", "--state-dir", str(scratch / cli),
         "--", "--cli", str(ROOT / "tests/fake/cli")],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if " on http://" in line:
            addr = line.split(" on http://", 1)[1].split()[0].rstrip("/")
            return proc, addr
    sys.exit(f"serve {cli} did not start")


def one_round(addr, cli, i, answered):
    thread = f"bench-{cli}-{i}"
    user = {"id": "m1", "role": "user", "content": "Which branch should I work on?"}
    first = post(addr, request(thread, "r1", [user]))
    pending = (first[-1].get("outcome") or {}).get("pendingToolCallIds") or []
    if len(pending) != 1:
        sys.exit(f"{cli}: round {i}: no pending call: {first[-1]}")
    call = pending[0]
    messages = [user,
                {"id": "a1", "role": "assistant", "toolCalls": [
                    {"id": call, "type": "function", "function": {"name": "pick_branch", "arguments": "{}"}}]},
                {"id": "t1", "role": "tool", "toolCallId": call, "content": "dev"}]
    before = len(answered.read_text().splitlines()) if answered.exists() else 0
    got = []
    sent = time.time()
    second = post(addr, request(thread, "r2", messages), got)
    if second[-1].get("type") != "RUN_FINISHED":
        sys.exit(f"{cli}: round {i}: the resumed run did not finish: {second[-1]}")
    times = answered.read_text().splitlines()[before:]
    if len(times) != 1:
        sys.exit(f"{cli}: round {i}: the stand-in noted {len(times)} answers")
    return (float(times[0]) - sent) * 1000, (got[0] - sent) * 1000, (got[1] - sent) * 1000


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--bin", default=str(ROOT / "target/release/agui-translate"))
    ap.add_argument("--clis", default="claude,copilot")
    a = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="agui-roundtrip-"))
    print(f"{a.rounds} rounds, {a.bin}\n")
    print("| CLI (route) | answer → the CLI has the result: median | p95 "
          "| → the resumed run's first event (RUN_STARTED): median | p95 "
          "| → its first event from the CLI's output: median | p95 |")
    print("|---|---|---|---|---|---|---|")
    try:
        for cli in a.clis.split(","):
            answered = scratch / f"{cli}.answered"
            proc, addr = start(a.bin, cli, scratch, answered)
            try:
                one_round(addr, cli, "warm-up", answered)
                cli_ms, event_ms, next_ms = zip(*(one_round(addr, cli, i, answered) for i in range(a.rounds)))
            finally:
                proc.terminate()
                proc.wait()
            route = {"claude": "control protocol", "copilot": "loopback MCP over HTTP"}[cli]
            cells = " | ".join(f"{statistics.median(xs):.2f} ms | {p95(xs):.2f} ms" for xs in (cli_ms, event_ms, next_ms))
            print(f"| {cli} ({route}) | {cells} |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
