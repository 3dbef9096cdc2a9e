"""Red team, round 20 (files): a command's change made while Edit or Write works is never lost unseen.

Edit and Write check that the session's last Read is current, then write a temp file (a 3 MiB one
takes milliseconds to write and fsync) and rename it over the target. A command that rewrote the
file in that window -- in place (``echo > f``), by a rename over it (``sed -i``), or by creating
a file the Write was creating -- had its change replaced by the model's content, and the result
said the edit was made: the stale-Read rule held at the check but not at the rename. Now the
target must still be the file that was read (inode, size, times) right before the rename, and a
new file is linked in (never replaces one that appeared).

The racer is a separate process watching for the tool's temp file, as a background command of the
session would: it changes the target once the temp file exists. Whatever the order, the file must
end up holding the racer's content (it wrote last, or the tool refused).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import shellrt
from tests._calls import block_text as _text
from tests._calls import one_call as _one

pytestmark = pytest.mark.anyio

#: Waits for the tool's temp file next to argv[2], then changes argv[2] once as argv[3] says.
RACER = r"""
import os, sys, time
d, name, how = sys.argv[1], sys.argv[2], sys.argv[3]
target = os.path.join(d, name)
open(os.path.join(d, "racer.ready"), "w").close()
while True:
    names = os.listdir(d)
    if any(f.startswith("." + name) and f.endswith(".tmp") for f in names):
        break
    if "racer.stop" in names:
        sys.exit(4)  # missed: the tool was done before its temp file was seen
if how == "inplace":  # same size: only the times can tell
    with open(target, "r+b") as fh:
        fh.write(b"RACER!")
elif how == "rename":
    with open(target + ".new", "wb") as fh:
        fh.write(b"RACER! renamed over\n")
    os.rename(target + ".new", target)
else:  # create
    try:
        with open(target, "xb") as fh:
            fh.write(b"RACER! created\n")
    except FileExistsError:
        sys.exit(4)  # too late: the tool's file is there

"""

BIG = b"model\n" * (512 * 1024)  # 3 MiB: the temp file's write and fsync take milliseconds


def _wait_for(path: Path, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def _racer(ws: Path, name: str, how: str) -> subprocess.Popen[bytes]:
    for marker in ("racer.ready", "racer.stop"):
        (ws / marker).unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", RACER, str(ws), name, how])
    _wait_for(ws / "racer.ready")
    return proc


def _finish(proc: subprocess.Popen[bytes], ws: Path) -> bool:
    """True when the racer changed the file (False: it missed the tool's temp file, or came too late)."""
    (ws / "racer.stop").touch()
    try:
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code in (0, 4), f"the racer failed ({code})"
    return code == 0


@pytest.mark.parametrize("how", ["inplace", "rename"])
async def test_edit_never_replaces_a_change_made_after_the_read(tmp_path: Path, how: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "big.txt"
    lost, refused = [], 0
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="acceptEdits", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        for n in range(8):
            target.write_bytes(b"first line\n" + BIG)
            assert not (await _one(rt, "Read", file_path=str(target), limit=5))["is_error"]
            racer = _racer(ws, target.name, how)
            try:
                block = await _one(
                    rt, "Edit", file_path=str(target), old_string="first line", new_string="EDITED"
                )
            finally:
                raced = _finish(racer, ws)
            if block["is_error"]:
                # A racer that came just after the rename is told too (the target holds its file).
                assert "changed after it was read" in _text(block) or "now holds that file" in _text(block), (
                    block
                )
                refused += "changed after it was read" in _text(block)
            if raced and not target.read_bytes().startswith(b"RACER!"):
                lost.append(f"try {n}: the racer's change was replaced ({_text(block)[:100]!r})")
            if refused:
                break  # proved: the racer changed the file in the window, and the tool refused
    assert not lost, lost
    assert refused, "the racer never changed the file before the rename: the test proved nothing"
    assert not [p for p in ws.iterdir() if p.name.endswith(".tmp")], "a temp file was left behind"


async def test_write_never_replaces_a_file_created_after_the_check(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    content = BIG.decode()
    lost, refused = [], 0
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="acceptEdits", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        for n in range(8):
            target = ws / f"new{n}.txt"
            racer = _racer(ws, target.name, "create")
            try:
                block = await _one(rt, "Write", file_path=str(target), content=content)
            finally:
                raced = _finish(racer, ws)
            if block["is_error"]:
                # A racer that came just after the rename is told too (the target holds its file).
                assert "changed after it was read" in _text(block) or "now holds that file" in _text(block), (
                    block
                )
                refused += "changed after it was read" in _text(block)
            if raced and target.read_bytes() != b"RACER! created\n":
                lost.append(f"{target.name}: the racer's file was replaced ({_text(block)[:100]!r})")
            if refused:
                break
    assert not lost, lost
    assert refused, "the racer never created the file before the tool's: the test proved nothing"
    assert not [p for p in ws.iterdir() if p.name.endswith(".tmp")], "a temp file was left behind"
