"""Round 35 (lead): a guard's count of the uid's watches no longer holds the grant lock.

Round 34 made the guards of one process take their grants under one lock, and counted the uid's
watches (a walk of ``/proc``, ~5 ms for 100 processes) inside it: every guard of the process
waited for another's walk. The count now runs before the lock, and what the process's other guards
added meanwhile is added under it, so the shared ceiling still holds.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import shellrt.supervisor._inotify as inotify


def _dirs(root: Path, name: str, n: int) -> list[str]:
    out = []
    for i in range(n):
        d = root / f"{name}{i}"
        d.mkdir()
        out.append(str(d))
    return out


def test_a_slow_count_does_not_hold_another_guards_grant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: the second guard waited the whole first count (it held the lock)."""
    a, b = inotify.Inotify.open(), inotify.Inotify.open()
    assert a is not None and b is not None
    counting, release = threading.Event(), threading.Event()

    def count(uid: int | None = None) -> int:
        if threading.current_thread().name == "slow":
            counting.set()
            release.wait(10)
        return len(a._paths) + len(b._paths)

    try:
        monkeypatch.setattr(inotify, "uid_watches", count)
        monkeypatch.setenv("SHELLRT_GUARD_UID_WATCHES", "100000")
        slow = threading.Thread(target=a.add, args=(str(tmp_path),), name="slow", daemon=True)
        slow.start()
        assert counting.wait(10)
        done = threading.Event()
        b_dir = _dirs(tmp_path, "b", 1)[0]

        def grow_b() -> None:
            b.add(b_dir)
            done.set()

        fast = threading.Thread(target=grow_b, daemon=True)
        fast.start()
        granted_meanwhile = done.wait(2)
        release.set()
        slow.join(10)
        fast.join(10)
        assert granted_meanwhile, "a guard's grant waited for another guard's count of the uid's watches"
        assert len(a._paths) == 1 and len(b._paths) == 1
    finally:
        release.set()
        a.close()
        b.close()


def test_watches_added_during_a_count_are_not_missed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A count that could not see another guard's new watches would grant room they hold."""
    a, b = inotify.Inotify.open(), inotify.Inotify.open()
    assert a is not None and b is not None
    b_dirs = _dirs(tmp_path, "b", 400)
    state = {"stale": True, "b_added": 0}

    def count(uid: int | None = None) -> int:
        now = len(a._paths) + len(b._paths)
        if threading.current_thread().name == "stale" and state["stale"]:
            # while a counts, b is granted and fills 400 watches the stale count never sees
            state["stale"] = False
            state["b_added"] = sum(b.add(d) for d in b_dirs)
        return now

    try:
        monkeypatch.setattr(inotify, "uid_watches", count)
        monkeypatch.setenv("SHELLRT_GUARD_UID_WATCHES", "1000")
        t = threading.Thread(target=a.add, args=(str(tmp_path),), name="stale", daemon=True)
        t.start()
        t.join(30)
        assert state["b_added"] == 400
        grant = a._granted
        held = len(b._paths) + len(a._paths)
        promised = max(0, b._granted - len(b._paths))
        assert held + promised + max(0, grant - len(a._paths)) <= 1000, (
            f"granted past the ceiling: {held} held, a granted {grant}, b's unused room {promised}"
        )
    finally:
        a.close()
        b.close()
