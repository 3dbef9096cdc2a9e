"""Red team round 13 (host side): names that are not UTF-8, from the disk to the model.

Glob and Grep decode the names ripgrep (or the walker) lists with ``surrogateescape``, and the
session's cwd notes quote the directory the sandbox reported the same way: a file a command (or
the repository) named ``bad\\xff.txt`` put a lone surrogate into the result, which no UTF-8
encoder takes -- the MCP front end's pydantic refuses to serialise it (checked below), so the
whole result was lost, on every Glob or Grep over that tree. Failed before: the results were not
encodable. Now such a name is shown in bash's ``$'...'`` quoting (``$'/ws/bad\\xff.txt'``): exact,
one line, and what Bash takes back.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import shellrt
from tests._rt13_host import bypass_runtime, host_ws, tool_result

pytestmark = pytest.mark.anyio


class _Wire(BaseModel):
    text: str


async def _call(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> str:
    return (await tool_result(rt, name, tool_input))[0]


def _sendable(text: str) -> None:
    text.encode("utf-8")
    _Wire(text=text).model_dump_json()  # what the MCP SDK does with a result's text


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from host_ws(tmp_path, monkeypatch, "rt13-names-")


def test_a_lone_surrogate_is_not_sendable() -> None:
    """Why it matters: the text the tools produced before could not be sent."""
    with pytest.raises(Exception, match="surrogates not allowed"):
        _sendable("bad\udcff.txt")


async def test_file_names_that_are_not_utf8_reach_the_model(ws: Path, tmp_path: Path) -> None:
    with open(os.fsencode(ws) + b"/bad\xff.txt", "wb") as fh:
        fh.write(b"needle\n")
    (ws / "ok.txt").write_text("needle\n")
    async with bypass_runtime(ws, tmp_path) as rt:
        calls = [
            ("Glob", {"pattern": "**/*.txt"}, f"$'{ws}/bad\\xff.txt'"),
            ("Grep", {"pattern": "needle"}, f"$'{ws}/bad\\xff.txt'"),
            ("Grep", {"pattern": "needle", "output_mode": "content"}, "$'bad\\xff.txt':1:needle"),
            ("Grep", {"pattern": "needle", "output_mode": "count"}, "$'bad\\xff.txt':1"),
        ]
        for name, tool_input, shown in calls:
            text = await _call(rt, name, tool_input)
            _sendable(text)
            assert shown in text.splitlines(), (name, text)
            assert "ok.txt" in text, text
        # The name as shown works in Bash.
        listed = await _call(rt, "Bash", {"command": f"cat {calls[0][2]}"})
        assert listed.strip() == "needle", listed


async def test_a_vanished_cwd_that_is_not_utf8_is_named_sendably(ws: Path, tmp_path: Path) -> None:
    async with bypass_runtime(ws, tmp_path) as rt:
        await _call(rt, "Bash", {"command": "mkdir $'gone\\xff' && cd $'gone\\xff'"})
        text = await _call(rt, "Bash", {"command": 'rmdir "$PWD"'})
        _sendable(text)
        assert f"$'{ws}/gone\\xff' no longer exists" in text, text
