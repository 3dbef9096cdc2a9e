"""Red team round 11 (file tools): ripgrep inside the sandbox runs in the directory Grep/Glob judged.

On bwrap, Grep and Glob run ripgrep inside the sandbox (it sees what commands see), started in
the searched directory *by its sandbox path*. The tool had opened and judged that directory
(anchored fd, `validate`'s identity), but a bwrap start takes tens of milliseconds: a background
command exchanging ``ws/pub`` and ``ws/priv`` (``renameat2(RENAME_EXCHANGE)`` in a loop) had
ripgrep search ``priv`` under ``pub``'s name, so a Grep judged on ``ws/pub`` returned
``ws/priv``'s lines. Now ripgrep starts behind a check of its cwd (``stat -L``: the device and
inode the host's ``fstat`` of the opened directory gave) and a changed one is refused ("changed
since it was checked; try again"). Failed before (the raced Greps printed ``PRIVATE``).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from shellrt.protocol import ToolContext
from shellrt.tools.glob import GlobInput, GlobTool
from shellrt.tools.grep import GrepInput, GrepTool
from tests.conftest import require
from tests.test_redteam_round11_tools_swap import (
    _outcome,
    _start_exchanger,
    _stop_exchanger,
    _with_exchanger,
    base,
)

pytestmark = pytest.mark.anyio

__all__ = ["base"]  # the fixture, shared

_RACE_S = 3.0


def _tree(ws: Path) -> None:
    (ws / "pub").mkdir(parents=True)
    (ws / "priv").mkdir()
    (ws / "pub" / "notes.txt").write_text("needle: public\n")
    (ws / "priv" / "notes.txt").write_text("needle: PRIVATE\n")
    (ws / "priv" / "secret-plans.txt").write_text("needle: PRIVATE plans\n")


async def _raced(ws: Path, tool: object, make: object) -> list[str]:
    async def body(ctx: ToolContext, backend: object) -> list[str]:
        seen: list[str] = []
        deadline = time.monotonic() + _RACE_S
        while time.monotonic() < deadline:
            inputs = [make() for _ in range(10)]  # type: ignore[operator]
            for tool_input in inputs:  # judged with pub in place; the race is the calls'
                await tool.validate(tool_input, ctx)  # type: ignore[attr-defined]
            process = await _start_exchanger(backend, ws)  # type: ignore[arg-type]
            try:
                for tool_input in inputs:
                    seen.append(await _outcome(tool, tool_input, ctx))
            finally:
                await _stop_exchanger(process, ws)
        return seen

    return await _with_exchanger(ws, body)  # type: ignore[no-any-return]


def _check(seen: list[str], leak: str) -> None:
    leaked = [s for s in seen if leak in s]
    assert not leaked, (
        f"{len(leaked)} of {len(seen)} raced searches showed the exchanged directory: {leaked[0]}"
    )
    refused = [s for s in seen if s.startswith("refused")]
    assert all("changed since it was checked" in s and "try again" in s for s in refused), refused[:3]
    assert len(seen) >= 10 and len(refused) < len(seen), (len(seen), len(refused))


async def test_a_raced_grep_searches_only_the_directory_it_judged(base: Path) -> None:
    require(shutil.which("rg") is not None, "ripgrep is not installed (apt-get install ripgrep)")
    ws = base / "ws"
    _tree(ws)
    seen = await _raced(
        ws, GrepTool(), lambda: GrepInput(pattern="needle", path=str(ws / "pub"), output_mode="content")
    )
    _check(seen, "PRIVATE")


async def test_a_raced_glob_lists_only_the_directory_it_judged(base: Path) -> None:
    require(shutil.which("rg") is not None, "ripgrep is not installed (apt-get install ripgrep)")
    ws = base / "ws"
    _tree(ws)
    seen = await _raced(ws, GlobTool(), lambda: GlobInput(pattern="*.txt", path=str(ws / "pub")))
    _check(seen, "secret-plans")
