"""`Inotify.drain` asks the descriptor before reading (issue 22, local latency): a quiet workspace's
check, four drains a command, then makes no read that fails with EAGAIN. What a drain returns is
unchanged: every queued event, across reads, and a full scan when the descriptor is unusable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.supervisor import _inotify
from shellrt.supervisor._inotify import Inotify


def _watch(path: Path) -> Inotify:
    watch = Inotify.open()
    assert watch is not None, "inotify is available on every host these tests run on"
    assert watch.add(str(path))
    return watch


def test_a_quiet_drain_reads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    watch = _watch(tmp_path)
    reads: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        if fd == watch.fd:
            reads.append(fd)
        return real_read(fd, n)

    monkeypatch.setattr(_inotify.os, "read", counting_read)
    try:
        events = watch.drain()
        assert (events.dirs, events.new_dirs, events.full_scan) == (set(), [], False)
        assert reads == []
        (tmp_path / "f").write_text("x")
        assert watch.drain().dirs == {str(tmp_path)}
        assert len(reads) == 1  # the events, then nothing left: no failing read after them
        assert watch.drain().dirs == set()
    finally:
        watch.close()


def test_every_queued_event_is_drained_across_reads(tmp_path: Path) -> None:
    watch = _watch(tmp_path)
    try:
        # ~3,000 events of 16+ bytes plus names: more than one 64 KiB read holds.
        for i in range(1500):
            (tmp_path / f"file-with-a-long-name-{i:05d}").write_text("x")
        (tmp_path / "sub").mkdir()
        events = watch.drain()
        assert events.dirs == {str(tmp_path)}
        assert events.new_dirs == [(str(tmp_path), "sub")]
        assert not events.full_scan
        assert watch.drain().dirs == set()
    finally:
        watch.close()


def test_a_closed_watch_asks_for_a_full_scan(tmp_path: Path) -> None:
    watch = _watch(tmp_path)
    watch.close()
    assert watch.drain().full_scan
