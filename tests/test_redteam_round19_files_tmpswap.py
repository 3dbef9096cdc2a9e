"""Red team, round 19 (files): a command cannot pass its own file off as a Write's.

Write and Edit write a temp file (``.<name>.<random>.tmp``) in the target's directory and rename it
over the target. That directory is one commands may write: a background command watching it renamed
its own file over the temp name while the data was written, and the tool's rename then put the
command's file at the target -- while the result said the model's content was written there (and
the read state recorded the model's hash for it). The write now checks that the temp name is still
its own file before the rename (nothing lands) and that the target is after it (an error says so).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import confine
from sandbox.confine import ConfinementError, Mount, View
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Renames a file of its own over every temp name Write leaves in its directory, as fast as it can.
SWAPPER = r"""
import os, sys
d = sys.argv[1]
open(os.path.join(d, "swapper.ready"), "w").close()
while True:
    for f in os.listdir(d):
        if f.startswith(".f") and f.endswith(".tmp"):
            try:
                with open(os.path.join(d, "evil.new"), "w") as fh:
                    fh.write("EVIL\n")
                os.rename(os.path.join(d, "evil.new"), os.path.join(d, f))
            except OSError:
                pass
"""

CONTENT = "model\n" * (512 * 1024)  # 3 MiB: the write and its fsync take a few ms


async def _one(rt: shellrt.Runtime, id_: str, name: str, **raw: Any) -> dict[str, Any]:
    user = await rt.run([{"type": "tool_use", "id": id_, "name": name, "input": raw}])
    block: dict[str, Any] = user["content"][0]
    return block


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


def _wait_for(path: Path, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


async def test_a_background_command_cannot_land_its_file_as_a_writes(tmp_path: Path) -> None:
    """bwrap, acceptEdits: the swapper runs as a background command of the session itself."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "swap.py").write_text(SWAPPER)
    lies: list[str] = []
    refused = 0
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="bwrap",
        mode="acceptEdits",
        session_dir=tmp_path / "session",
        settings_files=(),
        allow=("Bash",),
    ) as rt:
        started = await _one(rt, "bg", "Bash", command=f"python3 swap.py {ws}", run_in_background=True)
        assert not started["is_error"], started
        _wait_for(ws / "swapper.ready")
        for n in range(12):
            target = ws / f"f{n}.txt"
            block = await _one(rt, f"w{n}", "Write", file_path=str(target), content=CONTENT)
            if block["is_error"]:
                assert "temporary copy was replaced" in _text(block), block
                refused += 1
            elif target.read_text() != CONTENT:
                lies.append(f"{target.name}: {_text(block)[:120]!r} but it holds {target.read_text()[:20]!r}")
    assert not lies, lies
    assert refused, "the swapper never won a race: the test proved nothing"


def test_the_check_holds_200_swaps_in_a_row(tmp_path: Path) -> None:
    """The same race at the confinement layer against a separate process: no write ever reports
    success with another file at its target, and what it refuses leaves the target as it was."""
    ws = tmp_path / "ws"
    ws.mkdir()
    view = View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True)])
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws)])
    try:
        _wait_for(ws / "swapper.ready")
        target = ws / "f.txt"
        target.write_bytes(b"before\n")
        data = b"model\n" * (64 * 1024)
        wrote = refused = 0
        for _ in range(200):
            before = target.read_bytes()
            try:
                confine.write_file(view, str(target), data)
            except ConfinementError as exc:
                refused += 1
                if "was left as it was" in str(exc):
                    assert target.read_bytes() == before
                continue
            wrote += 1
            assert target.read_bytes() == data, "a write reported success with another file at its target"
        assert wrote + refused == 200
    finally:
        swapper.kill()
        swapper.wait()
    assert not [p for p in os.listdir(ws) if p.startswith(".f.txt.") and not _swapped_in(ws / p)]


def _swapped_in(path: Path) -> bool:
    """A leftover temp name holds the swapper's file (it renames onto names already gone): never ours."""
    return path.read_bytes() == b"EVIL\n"
