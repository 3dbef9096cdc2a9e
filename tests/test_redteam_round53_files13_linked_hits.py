"""Red team round 53 (files13): Grep's walker reused one file's hits for another file.

The Python walker (`_grep_python._Linked`) searches a file with several names once a call and
gives its other names the same hits, keyed by (device, inode, size, modification time). Nothing
holds the file searched once its fd is closed, so its inode number is free as soon as a command
removes its names; ext4 hands the number to the next file made. A command that, between two names
of the walk, removed both names of the searched file and made another file with that number, the
same size and the modification time put back (``utime``), linked under the later name: Grep said
that file held the first file's lines, which it never held. The key now is the file's full
`confine.Stamp`, its change time included, which only the kernel sets (as `_binary_judge` keys its
NUL checks since round 52).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.tools import _grep_python
from shellrt.tools._search_types import GrepQuery
from tests.conftest import require
from tests.test_redteam_round51_files11_inode_reuse import TRIES, _reuses_freed_numbers

_SEEN = b"token = needle-from-the-first-file\n"
_OTHER = b"plain words only, nothing to find!\n"


def _remade_with_number(d: Path, ino: int, data: bytes, mtime_ns: int) -> Path | None:
    """A new file in ``d`` holding ``data`` with inode number ``ino`` and modification time
    ``mtime_ns`` (at most `TRIES` creates), or None."""
    made: list[Path] = []
    found = None
    for n in range(TRIES):
        p = d / f"made{n}"
        p.write_bytes(data)
        if p.stat().st_ino == ino:
            found = p
            break
        made.append(p)
    for p in made:
        p.unlink()
    if found is not None:
        os.utime(found, ns=(mtime_ns, mtime_ns))
    return found


def test_a_file_remade_with_a_searched_files_number_is_searched_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(_SEEN) == len(_OTHER)
    ws = tmp_path / "ws"
    ws.mkdir()
    require(_reuses_freed_numbers(ws), f"the filesystem of {ws} does not reuse freed inode numbers (ext4 does)")
    spare = tmp_path / "spare"  # the remade file's second name, outside the searched tree
    spare.mkdir()
    names = [ws / "one.txt", ws / "two.txt"]  # two names of one file; the walk's order is the disk's
    names[0].write_bytes(_SEEN)
    os.link(names[0], names[1])
    searched = names[0].stat()
    real_open_at = _grep_python._open_at
    opened: list[str] = []
    remade: list[Path | None] = []

    def command_between_names(name: str, dir_fd: int | None) -> int | None:
        opened.append(name)
        if len(opened) == 2:
            # The command: the searched file's names gone (its number free), another file takes it.
            for p in names:
                p.unlink()
            # Made in the same directory: ext4 takes a new file's number from its directory's group.
            other = _remade_with_number(ws, searched.st_ino, _OTHER, searched.st_mtime_ns)
            remade.append(other)
            if other is not None:
                os.link(other, spare / "second_name")
                os.rename(other, ws / name)
        return real_open_at(name, dir_fd)

    monkeypatch.setattr(_grep_python, "_open_at", command_between_names)
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        hits = _grep_python.python_search(GrepQuery(pattern="needle", root=ws, root_fd=fd))
    finally:
        os.close(fd)
    require(len(remade) == 1 and remade[0] is not None, "no new file took the freed inode number")
    first, later = ws / opened[0], ws / opened[1]
    st = later.stat()
    # The premise: the walker's old key matches the remade file.
    assert (st.st_ino, st.st_size, st.st_mtime_ns) == (searched.st_ino, searched.st_size, searched.st_mtime_ns)
    assert later.read_bytes() == _OTHER
    assert first.name in hits, hits  # searched while it was there
    assert later.name not in hits, f"{later.name} reported with another file's lines: {hits[later.name].lines}"
