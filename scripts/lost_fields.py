#!/usr/bin/env python3
"""List the fields of recorded input that appear nowhere in the output.

For every recording under the given folders (default: testdata/claude and
testdata/qwen), each leaf value of each input record (a string, number or
boolean, at a path such as `user .tool_result_meta[].id`) is looked for
among the leaf values of the recording's golden output
(`NAME.expected.ndjson`), and inside its strings (a tool call's arguments
are a JSON string). Paths whose values are missing from the output are
printed with how often, and one example:

    python3 scripts/lost_fields.py [DIR...]

A value that happens to appear elsewhere in the output (`null`, `false`,
an id repeated in another record) counts as found: the list shows losses,
not that everything else is kept. Its exit status is 0.
"""

import json
import sys
from collections import defaultdict
from pathlib import Path


def leaves(v, path=""):
    """(path, value) for each leaf of `v`; lists of any length as `[]`."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, f"{path}.{k}")
    elif isinstance(v, list):
        for x in v:
            yield from leaves(x, f"{path}[]")
    elif v is not None:
        yield path, v


def kind(rec):
    """The record's kind: its type, and subtype or stream event type."""
    if not isinstance(rec, dict):
        return "(not an object)"
    k = str(rec.get("type"))
    if isinstance(rec.get("subtype"), str):
        k += " " + rec["subtype"]
    ev = rec.get("event")
    if k == "stream_event" and isinstance(ev, dict):
        k += " " + str(ev.get("type"))
    return k


def output_values(path):
    """Every leaf value of the output, and its strings (also those holding
    JSON, decoded, as a tool call's arguments are)."""
    found, strings = set(), []
    for line in path.read_text().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        for _, v in leaves(ev):
            found.add(json.dumps(v))
            if isinstance(v, str):
                strings.append(v)
                try:
                    for _, w in leaves(json.loads(v)):
                        found.add(json.dumps(w))
                except ValueError:
                    pass
    return found, "\n".join(strings)


def main(dirs):
    lost = defaultdict(lambda: [0, 0, None])  # (kind, path) -> [lost, seen, example]
    for d in dirs:
        for case in sorted(Path(d).rglob("*.jsonl")):
            golden = case.with_name(case.stem + ".expected.ndjson")
            if not golden.exists():
                continue
            found, text = output_values(golden)
            for line in case.read_text(errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                k = kind(rec)
                for p, v in leaves(rec):
                    slot = lost[(k, p)]
                    slot[1] += 1
                    j = json.dumps(v)
                    if j in found or (isinstance(v, str) and len(v) > 3 and v in text):
                        continue
                    slot[0] += 1
                    if slot[2] is None:
                        slot[2] = f"{case}: {j[:80]}"
    for (k, p), (n, seen, ex) in sorted(lost.items()):
        if n:
            print(f"{k:40} {p:60} {n}/{seen}  {ex}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["testdata/claude", "testdata/qwen"])
