#!/usr/bin/env python3
"""Benchmark agui-translate against the pipe itself and a jq program.

    scripts/bench/bench.py [--sizes 256M,1G] [--dialects gemini,codex,...] [--rounds 5] [--bin PATH]
                           [--baseline PATH] [--no-extras]

For each dialect and size it builds an input from the recordings (gen.py;
the `-small` dialects keep only records of at most 400 bytes, the
live-streaming case where the cost is per line, not per byte),
then times, with the commands interleaved round by round so that machine
noise hits them alike:

  cat FILE | cat                      the pipe's limit on this machine
  cat FILE | agui-translate --from X  a live pipeline
  agui-translate --from X FILE        reading a file
  jq -c -f jq/X.jq FILE               what a user would write instead

(output to /dev/null), reporting the median input MB/s, events/s, peak RSS
and the ratios. With `--baseline PATH` (a release build of an earlier
commit), that binary reading the file is timed in the same rounds, its row
beside the current one's, and the current one's speed is given as a ratio
to it (the `vs baseline` column: above 1, faster; the median of the
ratios of the two runs of each round, which run next to each other, every
other round in the opposite order); a dialect the baseline has no
translator for gets no baseline row. It also measures start-up on a one-event input and the
added latency of one event on a live pipe, and the shapes that once took
quadratic time (40,000 tool calls left open; one 64 MiB line from a file and
through a pipe; `--no-extras` leaves these out). Results go to stdout as
Markdown.
"""
import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.path.join(ROOT, "target", "release", "agui-translate")
DIALECT_FLAG = {
    "gemini": "gemini",
    "codex": "codex",
    "codex-legacy": "codex",
    "claude": "claude",
    "claude-partial": "claude",
    "gemini-small": "gemini",
    "codex-small": "codex",
    "codex-legacy-small": "codex",
    "claude-partial-small": "claude",
    "qwen": "qwen",
    "copilot": "copilot",
    "opencode": "opencode",
    "qwen-small": "qwen",
    "copilot-small": "copilot",
    "opencode-small": "opencode",
}


def run_timed(cmd):
    """Run a shell command with its output to /dev/null; return seconds."""
    start = time.perf_counter()
    proc = subprocess.run(["bash", "-c", cmd], stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"command failed ({proc.returncode}): {cmd}")
    return elapsed


def peak_rss_kib(cmd):
    """Peak RSS of the last command of a pipeline, by GNU time."""
    with tempfile.NamedTemporaryFile("r", delete=False) as f:
        out = f.name
    head, _, last = cmd.rpartition("| ")
    timed = f"{head}| /usr/bin/time -f %M -o {out} {last}" if head else f"/usr/bin/time -f %M -o {out} {cmd}"
    subprocess.run(["bash", "-c", timed], stdout=subprocess.DEVNULL)
    with open(out) as f:
        kib = int(f.read().strip().splitlines()[-1])
    os.unlink(out)
    return kib


def count_events(flag, path):
    out = subprocess.run(
        f"{BIN} --from {flag} {path} | wc -l", shell=True, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def translates(binary, flag, path):
    """Whether `binary` has a translator for `--from flag` (an earlier build
    may have none): it must take the input's first lines."""
    with open(path, "rb") as f:
        head = b"".join(f.readline() for _ in range(20))
    proc = subprocess.run([binary, "--from", flag], input=head, capture_output=True)
    return proc.returncode == 0


def median(xs):
    return statistics.median(xs)


def startup(rounds=200):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write('{"type":"init","timestamp":"2026-01-01T00:00:00Z","session_id":"s","model":"m"}\n')
        path = f.name
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([BIN, "--from", "gemini", path], stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    os.unlink(path)
    return median(times)


def latency(lines=400, gap=0.005):
    """Write one delta every `gap` seconds; time until its event is read."""
    proc = subprocess.Popen(
        [BIN, "--from", "gemini"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    arrived = []

    def reader():
        for line in proc.stdout:
            if b"TEXT_MESSAGE_CONTENT" in line:
                arrived.append(time.perf_counter())

    t = threading.Thread(target=reader)
    t.start()
    proc.stdin.write(b'{"type":"init","timestamp":"2026-01-01T00:00:00Z","session_id":"s","model":"m"}\n')
    sent = []
    for i in range(lines):
        line = b'{"type":"message","timestamp":"2026-01-01T00:00:01Z","role":"assistant","content":"token %d ","delta":true}\n' % i
        sent.append(time.perf_counter())
        proc.stdin.write(line)
        time.sleep(gap)
    proc.stdin.close()
    t.join()
    proc.wait()
    delays = sorted(a - s for s, a in zip(sent, arrived))
    return median(delays), delays[int(len(delays) * 0.99) - 1], len(arrived)


def shapes(tmp, rounds=3):
    """The inputs that used to take time quadratic in their size: many tool
    calls left open, and one very long line read from a file and through a
    pipe. Returns median seconds for each."""
    init = '{"type":"init","timestamp":"2026-01-01T00:00:00Z","session_id":"s","model":"m"}\n'
    calls = os.path.join(tmp, "agui-bench-open-calls.jsonl")
    with open(calls, "w") as f:
        f.write(init)
        for i in range(40000):
            f.write('{"type":"tool_use","timestamp":"2026-01-01T00:00:01Z","tool_name":"run_shell_command",'
                    f'"tool_id":"call-{i}","parameters":{{"command":"true"}}}}\n')
    long_line = os.path.join(tmp, "agui-bench-long-line.jsonl")
    with open(long_line, "w") as f:
        f.write(init)
        f.write('{"type":"message","timestamp":"2026-01-01T00:00:01Z","role":"assistant","content":"')
        f.write("x" * (64 << 20))
        f.write('"}\n')
    cmds = {
        "calls": f"{BIN} --from gemini {calls}",
        "line-file": f"{BIN} --from gemini {long_line}",
        "line-pipe": f"cat {long_line} | {BIN} --from gemini",
    }
    times = {k: [] for k in cmds}
    for _ in range(rounds):
        for name, cmd in cmds.items():
            times[name].append(run_timed(cmd))
    os.unlink(calls)
    os.unlink(long_line)
    return {k: median(v) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="256M")
    ap.add_argument("--dialects", default=",".join(DIALECT_FLAG))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-jq", action="store_true", help="skip the jq program (slow on large inputs)")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--bin", help="the binary to time (default: build target/release's)")
    ap.add_argument("--baseline", help="an earlier build to time beside it, in the same rounds")
    ap.add_argument("--no-extras", action="store_true",
                    help="only the table: no start-up, latency or quadratic shapes")
    args = ap.parse_args()
    base = os.path.abspath(args.baseline) if args.baseline else None

    global BIN
    if args.bin:
        BIN = os.path.abspath(args.bin)
    else:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"date {time.strftime('%Y-%m-%d')}; command: {' '.join(sys.argv)}\n")
    if base:
        print(f"Baseline: `{base}` (the rows `baseline --from …`).\n")
        print("| dialect | size | command | MB/s | events/s | peak RSS | vs pipe | vs jq | vs baseline |")
        print("|---|---|---|---|---|---|---|---|---|")
    else:
        print("| dialect | size | command | MB/s | events/s | peak RSS | vs pipe | vs jq |")
        print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        for dialect in args.dialects.split(","):
            flag = DIALECT_FLAG[dialect]
            path = os.path.join(args.tmp, f"agui-bench-{dialect}-{size}.jsonl")
            if not os.path.exists(path):
                subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), dialect, size, path], check=True)
            nbytes = os.path.getsize(path)
            events = count_events(flag, path)
            cmds = {
                "cat FILE | cat": f"cat {path} | cat",
                f"cat FILE | agui-translate --from {flag}": f"cat {path} | {BIN} --from {flag}",
                f"agui-translate --from {flag} FILE": f"{BIN} --from {flag} {path}",
            }
            base_name = f"baseline --from {flag} FILE"
            if base and translates(base, flag, path):
                cmds[base_name] = f"{base} --from {flag} {path}"
            jq_prog = os.path.join(HERE, "jq", f"{flag}.jq")
            if not args.no_jq and shutil.which("jq") and os.path.exists(jq_prog):
                cmds[f"jq -c -f jq/{flag}.jq FILE"] = f"jq -c -f {jq_prog} {path}"
            times = {k: [] for k in cmds}
            rss = {k: peak_rss_kib(cmd) for k, cmd in cmds.items()}
            for r in range(args.rounds):
                # Every other round backwards: a command is not always the
                # one run right after another.
                order = list(cmds.items())
                for name, cmd in order if r % 2 == 0 else reversed(order):
                    times[name].append(run_timed(cmd))
            med = {k: median(v) for k, v in times.items()}
            pipe = med["cat FILE | cat"]
            jq = next((v for k, v in med.items() if k.startswith("jq")), None)
            for name, t in med.items():
                mbs = nbytes / t / 1e6
                evs = "" if name.startswith(("cat FILE | cat", "jq")) else f"{events / t:,.0f}"
                vs_pipe = f"{pipe / t:.2f}×"
                vs_jq = f"{jq / t:.1f}×" if jq and "agui-translate" in name else ""
                row = f"| {dialect} | {size} | `{name}` | {mbs:,.0f} | {evs} | {rss[name] / 1024:.1f} MiB | {vs_pipe} | {vs_jq} |"
                if base:
                    ours = name == f"agui-translate --from {flag} FILE"
                    # The median of each round's ratio: the two ran next
                    # to each other, so a machine that slows down for a
                    # while slows both.
                    vs_base = ""
                    if ours and base_name in med:
                        ratios = [b / o for o, b in zip(times[name], times[base_name])]
                        vs_base = f"{median(ratios):.2f}×"
                    row += f" {vs_base} |"
                print(row)
            sys.stdout.flush()
    if args.no_extras:
        return
    s = startup()
    med, p99, n = latency()
    print(f"\nStart-up plus a one-event input: {s * 1000:.2f} ms (median of 200 runs).")
    print(f"Added latency on a live pipe: median {med * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms "
          f"({n} deltas, one every 5 ms, measured from write to read).")
    sh = shapes(args.tmp)
    print(f"40,000 tool calls left open: {sh['calls']:.2f} s. One 64 MiB line: "
          f"{sh['line-file']:.2f} s from a file, {sh['line-pipe']:.2f} s through a pipe "
          f"({sh['line-pipe'] / sh['line-file']:.1f}×).")


if __name__ == "__main__":
    main()
