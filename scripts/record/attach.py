"""Files sent with the prompt (a scenario's `files`), and the model's check
that it got their bytes.

The recorder copies each file into the run's scratch folder, outside the
working folder (as `serve` keeps a page's files in a private directory of
its own), named as `serve` names them: 1.png, 2.pdf, ... Each CLI module
hands them to its CLI by the route `run --attach` takes (see docs/run.md).

The scripted model looks for them in the request the CLI sends: any string
of the request's JSON that is base64 (bare, as in Anthropic's image source
or Gemini's inlineData, or a `data:` URL, as in OpenAI's image_url) and
decodes to a file's bytes. A turn whose text holds FILES_RECEIVED has it
replaced by what it found, e.g. "image/png received: 75 bytes, sha256 …";
a file that did not arrive unchanged is a failure of the recording, told
on stderr and by the recorder's exit status.
"""

import base64
import hashlib
import re
import shutil
import sys
from pathlib import Path

# The files scenarios send, kept where the tests read them too.
FOLDER = Path(__file__).resolve().parent.parent.parent / "testdata" / "files"

TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
         ".pdf": "application/pdf", ".wav": "audio/wav"}

# What a file of each kind begins with: how an altered copy is recognised.
MAGIC = {"image/png": b"\x89PNG", "image/jpeg": b"\xff\xd8\xff", "image/gif": b"GIF8", "image/webp": b"RIFF",
         "application/pdf": b"%PDF", "audio/wav": b"RIFF"}

BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")


def place(ctx):
    """Copy the scenario's files into the scratch folder; their paths."""
    folder = ctx.scratch / "files"
    folder.mkdir(exist_ok=True)
    paths = []
    for k, name in enumerate(ctx.scenario.files):
        src = FOLDER / name
        dst = folder / f"{k + 1}{src.suffix}"
        shutil.copyfile(src, dst)
        paths.append(dst)
    return paths


def mime(path):
    return TYPES[Path(path).suffix.lower()]


def data_url(path):
    return f"data:{mime(path)};base64," + base64.b64encode(Path(path).read_bytes()).decode()


def b64(path):
    return base64.b64encode(Path(path).read_bytes()).decode()


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _decoded(body):
    """Every base64 payload of the request, decoded."""
    for s in _strings(body):
        if s.startswith("data:") and ";base64," in s[:100]:
            s = s.split(",", 1)[1]
        if BASE64.fullmatch(s):
            try:
                yield base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
            except ValueError:
                continue


def _describe(data):
    return f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}"


def received(body, ctx):
    """What the request carries of the scenario's files, one sentence each;
    a file not carried unchanged is noted in ctx.state["failures"]."""
    found = list(_decoded(body))
    ctx.state["files_checked"] = True
    said = []
    for path in ctx.files:
        want, kind = Path(path).read_bytes(), mime(path)
        if want in found:
            said.append(f"{kind} received: {_describe(want)}.")
            continue
        like = [d for d in found if d.startswith(MAGIC[kind])]
        if like:
            what = f"{kind} altered: {_describe(like[0])} instead of {_describe(want)}."
        else:
            what = f"{kind} not received."
        said.append(what)
        ctx.state.setdefault("failures", []).append(what)
        print(f"  {what}", file=sys.stderr)
    return " ".join(said) or "no file was sent."
