"""`unregister_writable` runs from a backend's `weakref.finalize`, so from any garbage collection,
including one inside `host_path`'s locked section on the thread holding the lock. It waited for the
lock there: the thread deadlocked itself, and every later caller with it (CI57 hung in a Bash call's
git query). It must never wait, and the roots must still be forgotten."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sandbox import _hostpath
from sandbox._hostpath import host_path, register_writable, unregister_writable


def test_an_unregister_inside_the_locked_section_returns_and_takes_effect(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "bin").mkdir(parents=True)
    entry = str(root / "bin")
    token = register_writable([root])
    assert entry not in host_path(f"{entry}{os.pathsep}/usr/bin").split(os.pathsep)
    done = threading.Event()

    def collect_inside_the_lock() -> None:  # what a finalizer run by a collection there does
        with _hostpath._lock:
            unregister_writable(token)
        done.set()

    threading.Thread(target=collect_inside_the_lock, daemon=True).start()
    assert done.wait(10), "unregister_writable waited for a lock its own thread holds"
    # Forgotten by the next holder of the lock: the entry is no longer a written root's.
    assert entry in host_path(f"{entry}{os.pathsep}/usr/bin").split(os.pathsep)
    assert token not in _hostpath._roots
