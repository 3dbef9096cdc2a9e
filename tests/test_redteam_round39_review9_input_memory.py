"""Red team round 39 (review9): an input cheap to send and count was expensive to keep.

Review6 bounded a tool input at 4 Mi "characters": strings' and keys' characters, and one per
container and per member. The session keeps each call's input (its last 2,000, refused ones too)
to tell a resend from a reused id. A member counted one character but costs Python far more: a
list of 1.4 M empty lists (4.2 MB of JSON, counted 2.8 M) held 96 MiB, 1.4 M empty objects 84 MiB,
1.4 M distinct floats 41 MiB -- about 24 times what the bound meant (a 4 MiB string), and kept for
the session's next 2,000 calls. Now each container, member and number counts as `ITEM_CHARS`
characters (about what one holds in memory per character of a string), so such an input is cut
and refused as a huge string is; an input of ordinary shape is counted as before.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.runtime.input_size import MAX_INPUT_CHARS, input_chars
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio
_ids = itertools.count()
_N = 1_400_000

_SHAPES = {
    "empty_lists": lambda: "[" + ",".join(["[]"] * _N) + "]",
    "empty_objects": lambda: "[" + ",".join(["{}"] * _N) + "]",
    "floats": lambda: "[" + ",".join(f"{i}.5" for i in range(_N)) + "]",
    "nested_objects": lambda: "[" + ",".join(['{"a":[]}'] * (_N // 2)) + "]",
}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


@pytest.mark.parametrize("shape", sorted(_SHAPES))
async def test_many_small_members_are_refused_not_kept(ws: Path, shape: str) -> None:
    (ws / "f.txt").write_text("a\n")
    junk = json.loads(_SHAPES[shape]())  # as a server parses the line: distinct objects
    async with shellrt.Runtime(ws, "local", session_dir=ws.parent / "s") as rt:
        block = ToolUseBlock(
            id=f"r39mem{next(_ids)}", name="Read", input={"file_path": "f.txt", "junk": junk}
        )
        del junk
        [envelope] = await rt.run_envelopes([block])
        kept = [entry[1] for entry in rt._started.values()]
    assert envelope.is_error
    text = envelope.model.text()
    assert f"more than {MAX_INPUT_CHARS:,} characters" in text and "Edit" in text, text
    # repr: a kept form is the canonical text or a digest (round 40 review14), never the caller's dict
    assert all(len(repr(entry)) < 1000 for entry in kept), "the session kept the input's members"


def test_an_ordinary_input_counts_its_text() -> None:
    """A Write's file text counts its characters; a list of 100,000 short names still fits."""
    content = "x" * (MAX_INPUT_CHARS - 4096)
    assert input_chars({"file_path": "/w/big.txt", "content": content}) < MAX_INPUT_CHARS
    assert input_chars({"paths": [f"src/f{i}.py" for i in range(100_000)]}) < MAX_INPUT_CHARS


def test_a_huge_number_counts_its_size() -> None:
    """The Python API takes an int of a million digits (a server's JSON parser refuses it)."""
    assert input_chars({"n": 10**1_000_000 * 7}) > MAX_INPUT_CHARS // 16
