"""Red team, round 51 (files11): a freed inode number never vouches for a write.

A confined write checks, by (device, inode), that its temp name and then its target still hold the
temp file it wrote (round 19: a command renames its own file over the temp name while the data is
written). Those checks ran after the temp file's fd was closed: a temp file a command had renamed
over was freed by that close, and the command's next file could take the freed inode number (ext4
hands it out again at once). Both checks then passed and the command's content was reported as the
model's write (CI139 met it by chance in round 19's 200-swap test; the fix, 4d894a73, keeps the fd
open until the last check).

This test forces the reuse instead of waiting for it: the "command" acts at two hook points of the
write path (after the data is written: rename its file over the temp name; at the first check:
create files until one gets the temp file's inode number, and rename that one over the temp name).
Reuse is possible only while the temp file's inode is free, so it is bounded by a count of creates,
not by time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox import confine
from sandbox.confine import ConfinementError, Mount, View
from tests.conftest import require

#: Files the "command" creates at most while looking for the temp file's inode number.
TRIES = 256


def _reuses_freed_numbers(d: Path) -> bool:
    """Whether the filesystem of ``d`` gives a new file the inode number a closed, unlinked one freed.

    Asked up to 5 times: another process's file (a parallel test) can take a freed number first."""
    return any(_reused_once(d) for _ in range(5))


def _reused_once(d: Path) -> bool:
    fd = os.open(d / "probe", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    ino = os.fstat(fd).st_ino
    os.unlink(d / "probe")
    os.close(fd)
    for n in range(TRIES):
        p = d / f"probe{n}"
        p.touch()
        if p.stat().st_ino == ino:
            break
    else:
        n = -1
    for p in d.glob("probe*"):
        p.unlink()
    return n >= 0


class Command:
    """The hostile command, acting at hook points of the write path (the same process, no timing)."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self.mine: tuple[int, int] | None = None
        self.tmp: bytes | None = None
        self.reused = False

    def after_data(self, real: Callable[..., int]) -> Callable[..., int]:
        def hook(fd: int, *args: object) -> int:
            st = os.fstat(fd)
            self.mine = (st.st_dev, st.st_ino)
            (tmp,) = [p for p in os.listdir(self.ws) if p.startswith(".f.txt.") and p.endswith(".tmp")]
            self.tmp = os.fsencode(tmp)
            (self.ws / "evil.new").write_bytes(b"EVIL\n")
            os.rename(self.ws / "evil.new", self.ws / tmp)  # the temp file now has no name
            return real(fd, *args)

        return hook

    def at_check(self, real: Callable[[int, bytes], tuple[int, int] | None]) -> Callable[..., object]:
        def hook(parent: int, name: bytes) -> tuple[int, int] | None:
            if name == self.tmp and not self.reused and self.mine is not None:
                self._take_the_number()
            return real(parent, name)

        return hook

    def _take_the_number(self) -> None:
        assert self.tmp is not None and self.mine is not None
        made = []
        for n in range(TRIES):
            p = self.ws / f"again{n}"
            p.write_bytes(b"EVIL AGAIN\n")
            made.append(p)
            st = p.stat()
            if (st.st_dev, st.st_ino) == self.mine:
                os.rename(p, self.ws / os.fsdecode(self.tmp))
                made.pop()
                self.reused = True
                break
        for p in made:
            p.unlink()


@pytest.mark.parametrize("case", ["new file", "replace", "replace what was read", "create exclusively"])
def test_a_freed_temp_inode_number_never_passes_the_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    require(
        _reuses_freed_numbers(ws), f"the filesystem of {ws} does not reuse freed inode numbers (ext4 does)"
    )
    target = ws / "f.txt"
    if case.startswith("replace"):
        target.write_bytes(b"before\n")
    base = confine.stamp(target.stat()) if case == "replace what was read" else None
    before = target.read_bytes() if target.exists() else None
    command = Command(ws)
    monkeypatch.setattr(confine, "_owned_as_wanted", command.after_data(confine._owned_as_wanted))
    monkeypatch.setattr(confine, "_inode_at", command.at_check(confine._inode_at))
    view = View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True)])
    data = b"model\n" * 1000
    try:
        confine.write_file(view, str(target), data, base=base, exclusive=case == "create exclusively")
    except ConfinementError as exc:
        assert "temporary copy was replaced" in str(exc), exc
        assert "was left as it was" in str(exc), exc
        now = target.read_bytes() if target.exists() else None
        assert now == before, f"a refused write changed {target.name}: {now!r}"
    else:
        held = target.read_bytes()
        assert held == data, (
            f"the write reported success with the command's file at its target ({held[:12]!r}; "
            f"the command's file took the temp file's freed inode number: {command.reused})"
        )
    assert command.mine is not None, "the hook after the data never ran: the test proved nothing"
    assert not command.reused, "a file took the number of a temp file this write still held open"
