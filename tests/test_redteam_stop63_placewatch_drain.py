"""Stop 63 (lead): the shared inotify drain is bounded however fast events arrive.

`sandbox._placewatch._Shared.drain` read the queue until it was empty, under the lock every
`PathWatch.changed` takes before a command starts. A command renaming names in a watched directory
as fast as they were read kept it reading: a 300 s hang was seen in a loaded run of round 26's
cwdswap test (round 50's suitetime helper). The race is made certain here, not waited for: each
read the drain makes is preceded by a real rename in the watched directory, so the queue is never
empty when the drain looks again.

Each test has an inotify instance of its own (`_own_queue`): the process's shared one also carries
the events of every other watch an earlier test in the same worker left open, and a queue that
overflowed there marks every watch changed (fail closed), a fresh one too (CI141: both tests failed
so on one xdist worker).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox import _placewatch


class _RenamingOs:
    """`os` for `_placewatch`, but every `read` first renames a file in ``directory`` (the attack)."""

    def __init__(self, directory: Path, ceiling: int) -> None:
        self.directory = directory
        self.ceiling = ceiling
        self.reads = 0

    def read(self, fd: int, size: int) -> bytes:
        self.reads += 1
        if self.reads > self.ceiling:
            raise AssertionError(f"the drain made more than {self.ceiling} reads: it is unbounded")
        a, b = self.directory / "a", self.directory / "b"
        os.rename(a, b) if a.exists() else os.rename(b, a)
        return os.read(fd, size)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


@pytest.fixture(autouse=True)
def _own_queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    shared = _placewatch._Shared()
    monkeypatch.setattr(_placewatch, "_SHARED", shared)
    yield
    if shared.fd is not None:
        os.close(shared.fd)


def test_a_queue_refilled_as_fast_as_it_is_read_ends_the_drain_and_marks_the_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "place").mkdir()
    (tmp_path / "a").write_bytes(b"")
    watch = _placewatch.PathWatch([str(tmp_path / "place" / "cache")])
    try:
        assert not watch.changed()
        renaming = _RenamingOs(tmp_path, ceiling=10_000)
        (tmp_path / "other").write_bytes(b"")  # an event that matters to no watch: the queue is not empty
        with monkeypatch.context() as patched:
            patched.setattr(_placewatch, "os", renaming)
            changed = watch.changed()
        assert renaming.reads <= _placewatch._DRAIN_READS, renaming.reads
        # Cut short, the drain cannot tell whether a name that matters went by: it says changed.
        assert changed
    finally:
        watch.close()


def test_a_short_queue_of_names_that_do_not_matter_still_reads_as_unchanged(tmp_path: Path) -> None:
    (tmp_path / "place").mkdir()
    watch = _placewatch.PathWatch([str(tmp_path / "place" / "cache")])
    try:
        for n in range(50):
            (tmp_path / f"other{n}").write_bytes(b"")
        assert not watch.changed()
        (tmp_path / "place" / "cache").mkdir()
        assert watch.changed()
    finally:
        watch.close()
