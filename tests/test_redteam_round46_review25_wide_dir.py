"""Red team round 46, review25: one wide directory against round 45's guard walk.

Round 45 runs a walk of the directories (`_gitignore.odd_ignore_file`) in the shellrt process
beside every ripgrep that obeys ignore files. It listed each directory whole into memory -- every
file's `os.DirEntry` -- before it looked at the first one, and checked its deadline only after:
a flat directory of 300,000 files cost the host process 57 MB a search (ripgrep: 8 MB, in its own
process), and a command can make the directory as wide as it likes (3 million: about 0.6 GB and
seconds past the walk's deadline, for every Glob and Grep under way at once).
"""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from shellrt.tools import _gitignore

_FILES = 5_000


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(os.path.realpath(tmp_path_factory.mktemp("wide"))) / "ws"
    (root / "flat").mkdir(parents=True)
    (root / "flat/sub").mkdir()
    dir_fd = os.open(root / "flat", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(_FILES):
            os.close(os.open(f"f{i:06d}-{'x' * 40}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=dir_fd))
    finally:
        os.close(dir_fd)
    os.symlink("../../keys", root / "flat/sub/.ignore")  # the guard still finds what it is for
    return root


def test_the_guard_walk_holds_no_file_entries(wide: Path) -> None:
    tracemalloc.start()
    try:
        odd = _gitignore.odd_ignore_file(wide)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert odd == str(wide / "flat/sub/.ignore")
    assert peak < 200_000, peak  # ~0.9 MB before: every file's entry at once


def test_the_guard_walk_stops_at_its_deadline_inside_a_listing(wide: Path) -> None:
    deadline = time.monotonic() - 1  # passed: it must not list the whole directory first
    seen = 0
    real = os.scandir

    class Counting:
        def __init__(self, fd: int) -> None:
            self.it = real(fd)

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *exc: object) -> None:
            self.it.close()

        def __iter__(self) -> Counting:
            return self

        def __next__(self) -> os.DirEntry[str]:
            nonlocal seen
            seen += 1
            return next(self.it)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_gitignore.os, "scandir", Counting)
        with pytest.raises(_gitignore.WalkTimeoutError):
            _gitignore.odd_ignore_file(wide / "flat", deadline=deadline)
    assert seen < 1_100, seen  # at most a batch of the wide directory (all of it before)
