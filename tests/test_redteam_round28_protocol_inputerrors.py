"""Round 28, protocol: the error a hostile model gets for bad input stays small.

An invalid input's error listed every problem whole: a Read call with 200,000 parameters it does not
have got a 7.5 MB error back (2.4 s), sent to the model whole (Read opts out of persisting its
results, errors too); a parameter name of 1 MB, or a tool name of 5 MB, was echoed whole too. Now at
most 10 problems are listed (then how many more), and a name is echoed cut at 100 characters.
Every other error that quotes the input (a Read of a 1 MB path was refused with the path whole) keeps
the head and tail of a message over 20,000 characters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blocks: list[tuple[str, Any]]) -> list[str]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()

    async def go() -> list[str]:
        async with Runtime(ws, "local", session_dir=tmp_path / "session") as rt:
            uses = [
                {"type": "tool_use", "id": f"t{i}", "name": n, "input": v} for i, (n, v) in enumerate(blocks)
            ]
            user = await rt.run({"role": "assistant", "content": uses})
            return [str(r["content"]) for r in user["content"]]

    return anyio.run(go)


def test_bad_input_gets_a_short_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wide = {"file_path": "/x", **{f"k{i}": i for i in range(2_000)}}
    long_key = {"file_path": "/x", "K" * 200_000: 1}
    path = "/" + "a" * 200_000
    texts = _run(
        tmp_path,
        monkeypatch,
        [("Read", wide), ("Read", long_key), ("N" * 200_000, {}), ("Read", {"file_path": path})],
    )
    for text in texts[:3]:
        assert len(text) < 2_000 and "Output too large" not in text, text[:300]
    # An error quoting a long input keeps its head and tail (Read's results are never persisted).
    assert len(texts[3]) < 20_000 and "characters of this error message cut" in texts[3], len(texts[3])
    assert "`k0` is not a parameter of Read" in texts[0] and "and 1,990 more" in texts[0], texts[0]
    assert "`KKKK" in texts[1] and "…" in texts[1], texts[1]
    assert texts[2].startswith("Unknown tool 'NNNN") and "Available tools: Bash" in texts[2], texts[2]
