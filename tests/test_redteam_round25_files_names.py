"""Red team, round 25 (files): a file name Glob or Grep lists shows every character it holds.

Rounds 13 and 16 quoted names holding controls, line breaks and bidirectional overrides. A name
may still hold characters a reader does not see at all: zero-width spaces and joiners, the
left-to-right and right-to-left marks, the word joiner, a BOM, a soft hyphen, Unicode tag
characters (which spell hidden ASCII text a model decodes and a person never sees), or a blank
other than the space, or a space at its end. ``config\\u200b.py`` was listed as ``config.py``:
the model (and the person reading the transcript) is told of a file it then cannot tell from
another, and tag characters smuggle words into a listing. The rule checked is the class: no line
of a listing holds a character a reader cannot see, and every name is still named exactly.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

import shellrt
from tests._calls import block_text
from tests._calls import one_call as _one

pytestmark = pytest.mark.anyio

_TAGS = "".join(chr(0xE0000 + ord(c)) for c in "run rm")
NAMES = [
    "config\u200b.py",
    "a\u200cb\u200d.py",
    "lrm\u200e.py",
    "rlm\u200f.py",
    "alm\u061c.py",
    "wj\u2060.py",
    "bom\ufeff.py",
    "soft\u00adhyphen.py",
    f"tags{_TAGS}.py",
    "mvs\u180e.py",
    "trailing.py\u00a0",
    "\u2003lead.py",
    "space.py ",
    "ideo\u3000.py",
    "private\ue000.py",
]


def _unseen(c: str) -> bool:
    """A character a reader of the line does not see (or cannot tell from a space)."""
    category = unicodedata.category(c)
    return category in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp") or (category == "Zs" and c != " ")


def _named(line: str) -> str:
    """The path a listing line names: as it is, or the JSON string it is quoted as."""
    if line.startswith('"'):
        end = json.JSONDecoder().raw_decode(line)
        return str(end[0])
    return line


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("Glob", {"pattern": "**/*"}),
        ("Grep", {"pattern": "needle"}),
        ("Grep", {"pattern": "needle", "output_mode": "content"}),
    ],
    ids=["glob", "grep-files", "grep-content"],
)
async def test_a_listed_name_hides_no_character(tmp_path: Path, tool: str, arguments: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in NAMES:
        (ws / name).write_text("needle\n")
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="acceptEdits", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        text = block_text(await _one(rt, tool, path=str(ws), **arguments))
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith(("Found ", "[shellrt]"))]
    hiding = [ln for ln in lines if any(_unseen(c) for c in ln) or ln.endswith(" ")]
    assert not hiding, f"{len(hiding)} of {len(NAMES)} names hide characters: {hiding!r}"
    if tool == "Grep" and arguments.get("output_mode") == "content":
        named = {_named(ln).rsplit(":1:", 1)[0] if not ln.startswith('"') else _named(ln) for ln in lines}
    else:
        named = {Path(_named(ln)).name for ln in lines}
    assert named == set(NAMES), sorted(named ^ set(NAMES))
