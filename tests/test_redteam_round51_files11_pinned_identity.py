"""Red team, round 51 (files11): a file is known by (device, inode) only while something holds it.

Two more places compared a (device, inode) taken from a file nothing held any more:

- the write's exchange (`confine._exchanged`) keeps what it displaced only when that is the file
  read (its inode, size and modification time). Nothing held the file read: a command could unlink
  it, make a file that took its freed inode number, give it the same size and modification time
  (``utime``), and rename it over the target. That file was displaced, taken for the one read and
  removed: the command's change was lost unseen and the write reported made.
- `confine.open_file` looks at a name through an ``O_PATH`` fd, closes it, opens the name and
  compares the two (device, inode) pairs. A regular file unlinked in between was freed by that
  close, and a FIFO made next could take its number and be opened as a regular file.

The "command" acts at hook points (no timing): it unlinks the file, then makes files until one
takes the freed number (bounded by a count of creates), as ext4 hands one out at once.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sandbox import confine
from sandbox.confine import ConfinementError, Mount, View
from tests.conftest import require
from tests.test_redteam_round51_files11_inode_reuse import TRIES, _reuses_freed_numbers


def _take_number(d: Path, ino: int, make: Callable[[Path], None]) -> Path | None:
    """Make entries in ``d`` (with ``make``) until one has inode number ``ino``; that one, or None."""
    made: list[Path] = []
    found = None
    for n in range(TRIES):
        p = d / f"again{n}"
        make(p)
        if p.lstat().st_ino == ino:
            found = p
            break
        made.append(p)
    for p in made:
        p.unlink()
    return found


def _view(ws: Path) -> View:
    return View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True)])


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    require(
        _reuses_freed_numbers(ws), f"the filesystem of {ws} does not reuse freed inode numbers (ext4 does)"
    )
    return ws


def test_the_exchange_never_takes_a_file_with_the_read_files_number_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path)
    target = ws / "f.txt"
    target.write_bytes(b"read\n")
    read = target.stat()
    base = confine.stamp(read)
    real = confine._exchange
    took: list[Path | None] = []

    def command_then_exchange(parent: int, a: bytes, b: bytes) -> None:
        if not took:  # the command, between the staleness check and the exchange
            target.unlink()
            impostor = _take_number(ws, read.st_ino, lambda p: p.write_bytes(b"cmd!\n"))
            took.append(impostor)
            if impostor is None:  # the number is held: the command's file has another
                impostor = ws / "other"
                impostor.write_bytes(b"cmd!\n")
            os.utime(impostor, ns=(read.st_atime_ns, read.st_mtime_ns))
            os.rename(impostor, target)
        real(parent, a, b)

    monkeypatch.setattr(confine, "_exchange", command_then_exchange)
    try:
        confine.write_file(_view(ws), str(target), b"model\n", base=base)
    except ConfinementError as exc:
        assert "changed after it was read" in str(exc), exc
        assert target.read_bytes() == b"cmd!\n", "a refused write did not leave the command's file"
    else:
        pytest.fail(
            f"the write replaced the command's file unseen and said it was made (the command's file "
            f"took the read file's number: {took[0] is not None}; {target.name} holds {target.read_bytes()!r})"
        )
    assert took, "the hook never ran: the test proved nothing"
    assert took[0] is None, "a file took the number of the file read while the write held it"


class _CloseHook(ModuleType):
    """``os`` for confine, with a ``close`` that lets the command act right after the ``O_PATH`` fd
    of inode ``ino`` (the file looked at) closes."""

    def __init__(self, ino: int, act: Callable[[], None]) -> None:
        super().__init__("os")
        self._ino = ino
        self._act = act

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def close(self, fd: int) -> None:
        probe = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_PATH and os.fstat(fd).st_ino == self._ino
        os.close(fd)
        if probe:
            self._act()


def test_open_file_never_opens_a_special_file_with_the_looked_at_files_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO: ext4 gives a new FIFO the lowest free number of its directory's group, as a file. (A
    directory, which ext4 places in another group, is refused by the same check: the opened fd
    must be a regular file.)"""
    ws = _workspace(tmp_path)
    target = ws / "f.txt"
    target.write_bytes(b"regular\n")
    ino = target.stat().st_ino
    took: list[Path | None] = []

    def command() -> None:
        if took:
            return
        target.unlink()
        made = _take_number(ws, ino, os.mkfifo)
        took.append(made)
        if made is not None:
            os.rename(made, target)

    monkeypatch.setattr(confine, "os", _CloseHook(ino, command))
    try:
        fd, _ = confine.open_file(_view(ws), str(target))
    except (OSError, ConfinementError):
        pass  # refused: nothing special was opened
    else:
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        assert stat.S_ISREG(mode), (
            f"open_file returned {confine.file_kind(mode)} that took the number of the regular file it looked at"
        )
    assert took, "the hook never ran: the test proved nothing"
