#!/usr/bin/env python3
"""Record a coding-agent CLI's real stream against a scripted model server.

    scripts/record/record.py CLI VERSION [SCENARIO ...] [--out DIR]

installs CLI (gemini, codex, codex-app-server, claude, qwen, copilot or
opencode, or gemini-acp, opencode-acp, copilot-acp or qwen-acp: the CLI in
its Agent Client Protocol mode, see acp.py) at VERSION from npm into a cache folder, starts a scripted model
server on 127.0.0.1 and runs each scenario (all by default; see
scenarios.py) headless in a fresh HOME and working folder. For each scenario it writes NAME.jsonl (the CLI's stdout, byte for
byte), NAME.exit (its exit status; 128+N when killed by signal N) and
NAME.stderr into DIR (default testdata/CLI/VERSION, or the module's OUT). The scratch folder's
paths are rewritten to /scratch/... and /home/user, the server's port to
8700; nothing else is edited.

A CLI module (clis/NAME.py) provides:
  PACKAGE, BIN                      the npm package and its command
  supports(version, scenario)       None, or why the scenario can't run
  prepare(ctx) -> (argv, env)       the command line and environment
  classify(method, path, headers, body, ctx) -> (who, turn)
                                    who is "main", "sub" or "aux"
  reply(turn, body, who, index, ctx) -> mock.Response
  error(status, ctx) -> mock.Response
  aux(method, path, body, ctx) -> mock.Response
and may provide
  PAGE_TOOLS                        True when the module plays the MCP
                                    server of a scenario's page_tools
                                    (`converse`, or `prepare` starting
                                    pagehttp.py's server over HTTP)
  OUT                               where its recordings go under
                                    testdata, "{version}" standing for the
                                    version (default "CLI/{version}")
  converse(proc, ctx, engine, stdout, deadline) -> bytes
                                    for a CLI driven over stdin (started
                                    with pipes): play its client until the
                                    deadline, copy every byte it writes to
                                    `stdout` and return what the client
                                    wrote (kept as NAME.client.txt)
  converses(ctx) -> bool            whether `converse` drives this
                                    scenario (default: always); the others
                                    run headless
  variants(version, scenario) -> [suffix, ...]
                                    record the scenario once per suffix
                                    (default [""]), e.g. with and without
                                    an output option; ctx.variant tells which
  timeout(version, scenario) -> seconds
                                    how long a run may take before it is
                                    killed (default: the scenario's timeout)
  FILES                             the types of the files (a scenario's
                                    `files`, attach.py) the module gives
                                    its CLI, e.g. {"image/png"}; without
                                    it, scenarios with files are skipped
ctx carries version, bin, home, work, base_url, port, scenario, timeout, prompt,
resume (True on a scenario's second run, and on its load-only run),
load_only (True on a scenario's load-only run, acp.py), variant, first_stdout, files (the
paths of the scenario's files) and a free `state` dict.

A scenario whose files did not reach the model byte for byte is written
all the same (its text says what arrived), and the recorder exits with 1.
"""

import argparse
import importlib
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import attach  # noqa: E402
import mock  # noqa: E402
from scenarios import SCENARIOS  # noqa: E402

ROOT = HERE.parent.parent
PORT_IN_FIXTURES = 8700


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agui-record"


def install(cli, version):
    """npm install PACKAGE@VERSION into the cache, once; returns the command's path."""
    folder = cache_dir() / "cli" / f"{cli.BIN}-{version}"
    exe = folder / "node_modules" / ".bin" / cli.BIN
    if not (folder / "installed").exists():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text('{"private": true}\n')
        print(f"installing {cli.PACKAGE}@{version} ...", file=sys.stderr)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", f"{cli.PACKAGE}@{version}"],
            cwd=folder,
            check=True,
        )
        (folder / "installed").write_text("")
    return exe, folder


def rewrite(data, replacements):
    for old, new in replacements:
        data = data.replace(old.encode(), new.encode())
    return data


def exit_status(code):
    return 128 - code if code < 0 else code


def conversing(cli, ctx):
    """Whether the CLI is driven over stdin in this scenario."""
    return hasattr(cli, "converse") and getattr(cli, "converses", lambda ctx: True)(ctx)


def converse_once(cli, ctx, engine, argv, env, out, err):
    """Run a server the module talks to as its client; returns what the
    client wrote and the exit status."""
    proc = subprocess.Popen(argv, cwd=ctx.work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=err, start_new_session=True)
    client = cli.converse(proc, ctx, engine, out, time.monotonic() + ctx.timeout)
    proc.wait()
    return client, proc


def run_once(cli, ctx, engine, out_base, replacements):
    argv, env = cli.prepare(ctx)
    stdout_path = ctx.scratch / (out_base + ".stdout")
    stderr_path = ctx.scratch / (out_base + ".stderr")
    client = None
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        if conversing(cli, ctx):
            client, proc = converse_once(cli, ctx, engine, argv, env, out, err)
            code = exit_status(proc.returncode)
        else:
            proc, code = run_headless(ctx, engine, argv, env, out, err, out_base)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything the CLI left behind
    except ProcessLookupError:
        pass
    stdout = rewrite(stdout_path.read_bytes(), replacements)
    stderr = rewrite(stderr_path.read_bytes(), replacements)
    if client is not None:
        client = rewrite(client, replacements)
    return stdout, stderr, code, client


def run_headless(ctx, engine, argv, env, out, err, out_base):
    """Run a CLI with its prompt on the command line; signals it where the
    scenario says. Returns the process and its exit status."""
    proc = subprocess.Popen(argv, cwd=ctx.work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                            start_new_session=True)
    deadline = time.monotonic() + ctx.timeout
    signalled = False
    while proc.poll() is None:
        now = time.monotonic()
        # Two seconds after the turn that asks for it was served, once the
        # CLI has written something (a CLI that writes a record only when a
        # step ends can be that slow on a busy machine), or ten seconds on.
        wrote = os.fstat(out.fileno()).st_size > 0
        if (not signalled and engine.signal_at is not None
                and now > engine.signal_at + (2.0 if wrote else 10.0)):
            sig = signal.SIGINT if engine.signal == "INT" else signal.SIGTERM
            os.killpg(proc.pid, sig)
            signalled = True
            deadline = min(deadline, now + 30)
        if now > deadline:
            print(f"  {out_base}: timed out, killed", file=sys.stderr)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.05)
    return proc, exit_status(proc.returncode)


def record_one(cli, version, exe, install_dir, scenario, variant, scratch_root, out_dir, keep):
    name = scenario.name + variant
    scratch = scratch_root / name
    home, work = scratch / "home", scratch / "work"
    for d in (home, work):
        d.mkdir(parents=True, exist_ok=True)
    for path, content in scenario.home_files.items():
        (home / path).write_text(content)
    timeout = getattr(cli, "timeout", lambda version, scenario: scenario.timeout)(version, scenario)
    ctx = types.SimpleNamespace(version=version, bin=str(exe), home=home, work=work, scratch=scratch,
                                scenario=scenario, timeout=timeout, prompt=scenario.prompt, resume=False, variant=variant,
                                first_stdout=b"", state={}, port=0, base_url="", files=[], load_only=False)
    ctx.files = attach.place(ctx)
    engine = mock.Engine(cli, scenario, ctx, scratch / "requests.jsonl")
    server = mock.start(engine)
    ctx.port = server.server_address[1]
    ctx.base_url = f"http://127.0.0.1:{ctx.port}"
    replacements = [
        (str(home), "/home/user"),
        (str(install_dir), "/opt/agui-record/" + cli.BIN),
        (str(scratch), "/scratch"),
        # The same, relative to the file system's root (OpenCode's tool titles).
        (str(scratch).lstrip("/"), "scratch"),
        # Shortened to "..." and its end (Copilot CLI's tool titles).
        *[("..." + str(scratch)[k:], "/scratch") for k in range(1, len(str(scratch)) - 8)],
        (f"127.0.0.1:{ctx.port}", f"127.0.0.1:{PORT_IN_FIXTURES}"),
        (f"localhost:{ctx.port}", f"localhost:{PORT_IN_FIXTURES}"),
    ]
    runs = [name]
    if scenario.resume_prompt:
        runs.append(name + "-2")
    if scenario.load_after:
        runs.append(name + "-load")
    for i, base in enumerate(runs):
        if base.endswith("-2"):
            ctx.resume = True
            ctx.prompt = scenario.resume_prompt
        if base.endswith("-load"):
            ctx.resume = True
            ctx.load_only = True
        started = time.monotonic()
        stdout, stderr, code, client = run_once(cli, ctx, engine, base, replacements)
        if i == 0:
            ctx.first_stdout = stdout
        (out_dir / f"{base}.jsonl").write_bytes(stdout)
        if client is not None:
            (out_dir / f"{base}.client.txt").write_bytes(client)
        (out_dir / f"{base}.stderr").write_bytes(stderr)
        (out_dir / f"{base}.exit").write_text(f"{code}\n")
        lines = stdout.count(b"\n")
        print(f"{base}: exit {code}, {lines} lines, {time.monotonic() - started:.1f} s", file=sys.stderr)
    server.shutdown()
    server.server_close()
    if not keep:
        shutil.rmtree(scratch, ignore_errors=True)
    failures = ctx.state.get("failures", [])
    if ctx.files and not ctx.state.get("files_checked"):
        failures.append("the model was never asked the turn that checks the files")
    return [f"{name}: {f}" for f in failures]


def record(cli_name, version, names, out_dir, keep):
    cli = importlib.import_module("clis." + cli_name.replace("-", "_"))
    exe, install_dir = install(cli, version)
    scenarios = [s for s in SCENARIOS if not names or s.name in names]
    unknown = set(names) - {s.name for s in SCENARIOS}
    if unknown:
        sys.exit(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    scratch_root = cache_dir() / "runs" / f"{cli_name}-{version}-{os.getpid()}"
    out_dir.mkdir(parents=True, exist_ok=True)
    variants = getattr(cli, "variants", lambda version, scenario: [""])
    failures = []
    for scenario in scenarios:
        why = cli.supports(version, scenario)
        if why is None and "acp" in scenario.needs and not cli_name.endswith("-acp"):
            why = "only a client of the Agent Client Protocol cancels so"
        if why is None and "page" in scenario.needs and not getattr(cli, "PAGE_TOOLS", False):
            why = "the front end's tools are recorded only where the CLI module plays their server"
        if why is None:
            why = _no_files(cli, scenario)
        if why:
            print(f"{scenario.name}: skipped ({why})", file=sys.stderr)
            continue
        for variant in variants(version, scenario):
            failures += record_one(cli, version, exe, install_dir, scenario, variant, scratch_root, out_dir, keep)
    if not keep:
        shutil.rmtree(scratch_root, ignore_errors=True)
    else:
        print(f"scratch kept in {scratch_root}", file=sys.stderr)
    return failures


def _no_files(cli, scenario):
    """Why the module cannot give its CLI the scenario's files, or None."""
    takes = getattr(cli, "FILES", set())
    missing = sorted({attach.mime(f) for f in scenario.files} - set(takes))
    if missing:
        return "the module gives its CLI no " + ", ".join(missing)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cli", choices=["gemini", "codex", "codex-app-server", "claude", "qwen", "copilot", "opencode",
                                   "gemini-acp", "opencode-acp", "copilot-acp", "qwen-acp"])
    p.add_argument("version", help="an npm version of the CLI, e.g. 0.61.0")
    p.add_argument("scenarios", nargs="*", help="scenario names (default: all)")
    p.add_argument("--out", type=Path, help="output folder (default: testdata/CLI/VERSION)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folders and request logs")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = p.parse_args()
    if args.list:
        for s in SCENARIOS:
            print(s.name)
        return
    cli = importlib.import_module("clis." + args.cli.replace("-", "_"))
    folder = cli.OUT.format(version=args.version) if hasattr(cli, "OUT") else f"{args.cli}/{args.version}"
    out = args.out or ROOT / "testdata" / folder
    failures = record(args.cli, args.version, args.scenarios, out, args.keep)
    if failures:
        print("FAILED: a file did not reach the model as sent:", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
