"""One module per CLI; see record.py for the interface they provide."""

import re


def version(v):
    """A version's numbers for comparing: "0.30.1" -> (0, 30, 1)."""
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])
