#!/usr/bin/env python3
"""Write the compatibility matrix (docs/compatibility.md) from the test results.

    scripts/matrix.py            run the golden and conformance tests, then
                                 rewrite the matrix in docs/compatibility.md
    scripts/matrix.py --check --results FILE
                                 compare docs/compatibility.md with the matrix
                                 FILE gives (exit 1 if it differs)

The tests append a verdict per recording to $AGUI_RESULTS (see
tests/golden.rs and tests/conformance.rs). A cell passes when the
recording's translation matches its golden file, keeps the AG-UI rules
(`agui-translate check`) and passes the official AG-UI 1.0 checks.
One table per folder of testdata/ that holds versions (a CLI, or a CLI's
other output mode such as codex-app-server, or a protocol such as acp,
whose folders are CLI-VERSION). Rows are the recorder's
scenarios (scripts/record/scenarios.py), columns the versions under
testdata/<cli>/; recordings from elsewhere are
counted in a last row.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "compatibility.md"
sys.path.insert(0, str(ROOT / "scripts" / "record"))
from scenarios import SCENARIOS  # noqa: E402

START = "<!-- matrix:start (scripts/matrix.py writes this part) -->"
END = "<!-- matrix:end -->"
# The order of the tables; any other testdata/<name>/ holding versions
# follows, by name.
CLIS = ["gemini", "codex", "claude", "qwen", "copilot", "opencode"]
# Suffixes the recorder adds: a second run (resume), a recording without
# partial messages, and one where every command needs approval.
SUFFIXES = ["", "-plain", "-2", "-plain-2", "-approval"]


def run_tests(results):
    env = dict(os.environ, AGUI_RESULTS=str(results))
    subprocess.run(["cargo", "test", "--locked", "--test", "golden", "--test", "conformance"],
                   cwd=ROOT, env=env, check=False)


def read_results(path):
    verdicts = {}
    for line in Path(path).read_text().splitlines():
        kind, rel, verdict = line.split("\t")
        case = rel[: -len(".expected.ndjson")] + ".jsonl" if kind == "conformance" else rel
        ok = verdict == "ok"
        prev = verdicts.get(case, {})
        prev[kind] = prev.get(kind, True) and ok
        verdicts[case] = prev
    return verdicts


def is_version(name):
    """A folder of recordings of one version: VERSION, or CLI-VERSION (a
    protocol's recordings, testdata/acp/gemini-0.61.0)."""
    return re.match(r"([a-z][a-z-]*-)?\d", name) is not None


def version_key(v):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.-]", v)]


def cell(verdict):
    if verdict is None:
        return "**untested**"
    ok = verdict.get("golden") and verdict.get("conformance")
    return "pass" if ok else "**FAIL**"


def recorded():
    """The folders of testdata/ that hold recorded versions (a version's
    folder of `.jsonl` recordings; a CLI's own transcripts are not), in
    table order."""
    found = {d.name for d in (ROOT / "testdata").iterdir()
             if d.is_dir() and any(v.is_dir() and is_version(v.name) and any(v.glob("*.jsonl"))
                                   for v in d.iterdir())}
    return [c for c in CLIS if c in found] + sorted(found - set(CLIS))


def matrix(verdicts):
    order = []
    for s in SCENARIOS:
        order += [s.name + suffix for suffix in SUFFIXES]
    out = []
    for cli in recorded():
        base = ROOT / "testdata" / cli
        versions = sorted((d.name for d in base.iterdir() if d.is_dir() and is_version(d.name)), key=version_key)
        cases = {v: {p.stem for p in (base / v).glob("*.jsonl")} for v in versions}
        names = [n for n in order if any(n in cases[v] for v in versions)]
        out.append(f"**{cli}**\n")
        out.append("| scenario | " + " | ".join(versions) + " |")
        out.append("|---|" + "---|" * len(versions))
        for n in names:
            row = [cell(verdicts.get(f"testdata/{cli}/{v}/{n}.jsonl")) if n in cases[v] else "–" for v in versions]
            out.append(f"| {n} | " + " | ".join(row) + " |")
        others = []
        for v in versions:
            rest = sorted(cases[v] - set(order))
            passed = sum(cell(verdicts.get(f"testdata/{cli}/{v}/{n}.jsonl")) == "pass" for n in rest)
            others.append(f"{passed}/{len(rest)} pass" if rest else "–")
        if any(o != "–" for o in others):
            out.append("| other recordings | " + " | ".join(others) + " |")
        out.append("")
    cases_dirs = sum(1 for cli in CLIS if (ROOT / "testdata" / cli / "cases").is_dir())
    if cases_dirs:
        total = {k: v for k, v in verdicts.items() if "/cases/" in k}
        passed = sum(cell(v) == "pass" for v in total.values())
        out.append(f"Hand-written edge cases (`testdata/<cli>/cases/`): {passed}/{len(total)} pass.\n")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", help="verdicts written by the tests (AGUI_RESULTS); default: run the tests")
    p.add_argument("--check", action="store_true", help=f"only compare {DOC.relative_to(ROOT)} with the matrix")
    args = p.parse_args()
    if args.results:
        verdicts = read_results(args.results)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            results = Path(tmp) / "results.tsv"
            run_tests(results)
            if not results.exists():
                sys.exit("the tests wrote no results")
            verdicts = read_results(results)
    name = str(DOC.relative_to(ROOT))
    readme = DOC.read_text()
    if START not in readme or END not in readme:
        sys.exit(f"{name} has no {START} ... {END} section")
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    new = head + START + "\n\n" + matrix(verdicts) + "\n" + END + tail
    if args.check:
        if new != readme:
            sys.stderr.write(f"{name}: the compatibility matrix is not what the tests say; run scripts/matrix.py\n")
            import difflib

            sys.stderr.writelines(difflib.unified_diff(readme.splitlines(True), new.splitlines(True), name, "matrix"))
            sys.exit(1)
        return
    DOC.write_text(new)


if __name__ == "__main__":
    main()
