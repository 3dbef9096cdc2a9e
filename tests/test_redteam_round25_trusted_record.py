"""Red team round 25 (trusted): the workspace's record loses a "changed" mark to another session.

`shellrt.permissions.tree_writes` keeps one entry per workspace in ``workspace-writes.json``,
read-modified-written by every session that has a hook or a server loading the workspace whole.
Round 24 left it: several sessions on one workspace shared one entry, with no lock and no notion
of who joined it, so a clean session's end dropped the entry another session still needed.
"""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path
from typing import Any

import pytest

import shellrt.permissions.tree_writes as tree_writes
from shellrt.permissions.tree_writes import begin_tree_session, end_tree_session
from tests._governance import isolated_workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)  # the trust store and the record outside it
    (ws / "app.py").write_text("X = 1\n")
    return ws


def test_a_clean_session_ending_first_does_not_drop_a_running_sessions_record(ws: Path) -> None:
    """Failed 1 of 1 before: A and B start on one tree; B ends clean and dropped the entry; A's
    command plants a module and A dies (killed); the next session trusted the planted tree."""
    assert begin_tree_session(ws)[0] is None  # A
    why_b, at_b = begin_tree_session(ws)  # B, same tree: joins
    assert why_b is None
    end_tree_session(ws, at_b)  # B ends, nothing changed in its view
    (ws / "sitecustomize.py").write_text("import os\n")  # A's command; A never ends
    why, _ = begin_tree_session(ws)
    assert why is not None and "earlier session" in why, "a session's plant was trusted by the next session"


def test_a_start_during_a_clean_end_is_not_lost(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed 1 of 1 before: B's end read the record, A's start joined it, B's end wrote the
    record without A (driven to that interleaving by a hook in the read, no sleeps); A's command
    planted a module and A died; the next session trusted it. With the lock A waits for B."""
    b_read, go_b, a_moved = threading.Event(), threading.Event(), threading.Event()
    real_read, real_flock = tree_writes._read, fcntl.flock
    names: dict[int, str] = {}

    def read() -> Any:
        out = real_read()
        if names.get(threading.get_ident()) == "B" and not go_b.is_set():
            b_read.set()
            assert go_b.wait(30), "A neither finished nor waited"
        return out

    def flock(fd: int, op: int) -> None:
        try:
            real_flock(fd, op)
        except BlockingIOError:
            if names.get(threading.get_ident()) == "A":
                a_moved.set()  # A waits for B's lock
            raise

    why_b, at_b = begin_tree_session(ws)  # B runs alone first
    assert why_b is None
    monkeypatch.setattr(tree_writes, "_read", read)
    monkeypatch.setattr(fcntl, "flock", flock)
    results: dict[str, Any] = {}

    def run(name: str) -> None:
        names[threading.get_ident()] = name
        if name == "B":
            results[name] = end_tree_session(ws, at_b)  # B ends clean
        else:
            results[name] = begin_tree_session(ws)
            a_moved.set()

    b = threading.Thread(target=run, args=("B",))
    b.start()
    assert b_read.wait(30)
    a = threading.Thread(target=run, args=("A",))
    a.start()
    assert a_moved.wait(30)
    go_b.set()
    b.join(30)
    a.join(30)
    assert results["A"][0] is None, results
    (ws / "sitecustomize.py").write_text("import os\n")  # A's command; A dies
    why, _ = begin_tree_session(ws)
    assert why is not None and "earlier session" in why, "a session lost to a concurrent end was trusted"


def test_the_lock_fails_closed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock held elsewhere past the bound, or a lock file that is not a private one of the
    caller's, refuses (begin) instead of writing unlocked; `shellrt trust add` says so."""
    from shellrt.permissions.tree_writes import TreeRecordBusy, clear_tree_writes, tree_writes_path

    monkeypatch.setattr(tree_writes, "LOCK_TIMEOUT_S", 0.05)
    tree_writes_path().parent.mkdir(parents=True)
    lock = tree_writes_path().with_name("workspace-writes.json.lock")
    lock.touch(mode=0o600)
    with open(lock, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # another process's read-modify-write, stuck
        why, _ = begin_tree_session(ws)
        assert why is not None and "held by another process" in why, why
        with pytest.raises(TreeRecordBusy):
            clear_tree_writes(ws)
    lock.chmod(0o666)
    assert "not a private file" in str(begin_tree_session(ws)[0])
    lock.unlink()
    lock.symlink_to(ws / "elsewhere")
    assert "cannot be opened" in str(begin_tree_session(ws)[0])


def test_trust_add_while_a_session_runs_keeps_its_later_writes_refused(ws: Path) -> None:
    """Failed 1 of 1 before: ``shellrt trust add`` dropped the entry of a session still running;
    that session's command planted a module after the review, and a session started next
    recorded the plant as its own start and let its server load it."""
    from shellrt.permissions.trust import record_trust

    why_a, at_a = begin_tree_session(ws)  # A runs
    assert why_a is None
    (ws / "notes.txt").write_text("reviewed\n")  # A's first command: the operator reviews it
    record_trust(ws)
    (ws / "sitecustomize.py").write_text("import os\n")  # A's command after the review
    why, _ = begin_tree_session(ws)  # B starts while A runs
    assert why is not None and "earlier session" in why, "a write after the review was trusted"


def test_trust_add_while_a_session_runs_then_nothing_changes(ws: Path) -> None:
    """The way back holds: what the operator reviewed mid-session is what A leaves; A's end
    drops the record and the next session starts its servers."""
    from shellrt.permissions.trust import record_trust

    _, at_a = begin_tree_session(ws)
    (ws / "notes.txt").write_text("reviewed\n")
    record_trust(ws)
    end_tree_session(ws, at_a)
    assert begin_tree_session(ws)[0] is None
