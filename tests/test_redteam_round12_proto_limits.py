"""Red team round 12 (protocol): limits the model sets get answers it can act on.

A Grep ``offset`` past the last result (``10**30``) answered "Showing lines
1000000000000000000000000000001-1000000000000000000000000000000 of 1." — a range that ends before
it starts, and no hint of the offsets that have results. It now says the offset is past the end
and which offsets to use.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

import shellrt

pytestmark = pytest.mark.anyio


async def _grep(rt: shellrt.Runtime, tool_input: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "g-" + secrets.token_hex(6), "name": "Grep", "input": tool_input}
    result: dict[str, Any] = (await rt.run([block]))["content"][0]
    return result


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
async def test_an_offset_past_the_end_says_which_offsets_have_results(tmp_path: Path, mode: str) -> None:
    """Failed on the old code: "Showing lines 10^30+1-10^30 of 2." and nothing else."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("needle one\nneedle two\n")
    (ws / "b.txt").write_text("needle three\n")
    async with shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", use_settings=False) as rt:
        for offset in (10**30, 3 if mode == "content" else 2):
            result = await _grep(rt, {"pattern": "needle", "output_mode": mode, "offset": offset})
            text = result["content"]
            assert isinstance(text, str)
            assert f"offset {offset} is past the end" in text, text
            assert "offset=0" in text, text
        inside = await _grep(rt, {"pattern": "needle", "output_mode": mode, "offset": 1})
        assert "past the end" not in inside["content"], inside
