"""Red team round 39 (lead): the inputs a session keeps to tell a resent call from a reused id.

A session keeps the name and input of its last 2,000 calls (`_started`, `_recorded`: round 19), refused
ones too. Round 39 (review6, review9) bounded one input at 4 Mi characters; review9's Left: 2,000 calls
just under the bound still held 8-32 GB of the shellrt process for good, chosen by the model alone.
Here 48 refused calls of 1 Mi characters each must not stay in memory, while a resend of the same
large call is still answered from its record and a reused id with another large input still refused.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import anyio

from shellrt.runtime import Runtime

_CALLS = 48
_CHARS = 1024 * 1024


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _read(use_id: str, junk: str) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": use_id,
        "name": "Read",
        "input": {"file_path": "/nonexistent", "junk": junk},
    }


def test_refused_large_inputs_are_not_kept_whole(tmp_path: Path) -> None:
    async def main() -> tuple[int, int, list[Any]]:
        async with Runtime(tmp_path, "local", session_dir=tmp_path / "s") as rt:
            first = await rt.run({"role": "assistant", "content": [_read("warm", "w" * _CHARS)]})
            gc.collect()
            before = _rss()
            for i in range(_CALLS):
                await rt.run(
                    {"role": "assistant", "content": [_read(f"c{i}", chr(0x61 + i % 26) * _CHARS + str(i))]}
                )
            gc.collect()
            after = _rss()
            again = await rt.run({"role": "assistant", "content": [_read("warm", "w" * _CHARS)]})
            other = await rt.run({"role": "assistant", "content": [_read("warm", "v" * _CHARS)]})
            return before, after, [first, again, other]

    before, after, (first, again, other) = anyio.run(main)
    grown = (after - before) / 2**20
    assert grown < _CALLS * _CHARS / 2**20 / 4, (
        f"{grown:.0f} MiB kept after {_CALLS} refused 1 Mi-character calls"
    )
    assert first["content"][0]["is_error"], first
    assert again["content"] == first["content"], "a resend of the same call is answered from its record"
    assert "named another" in str(other["content"][0]["content"]), other
