"""Red team round 26 (trusted): a session killed before its end kept its write mark open for good.

Every session that runs commands notes its writable roots open, and ended when it closes. A
``shellrt run`` killed by SIGKILL never wrote its end: a guarded start said "it is running" and
refused every change to the workspace for good, since ``shellrt trust add`` keeps open marks (a
running session may still write). The mark's name now says which process owns it
(`shellrt.supervisor.mark_owner`); a start that finds the owner gone ends the mark then.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shellrt.permissions.tree_writes import begin_tree_session, end_tree_session
from shellrt.permissions.trust import record_trust
from shellrt.supervisor._tree_note import note_path
from tests._bwrap_session import require_bwrap
from tests._governance import isolated_workspace
from tests.test_redteam_round25_trusted_unrecorded import _ROOT


def _opened(ws: Path, deadline_s: float = 60.0) -> None:
    """Wait until a session's open mark on ``ws`` is in the note."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if note_path().exists() and f'"root": "{os.path.realpath(ws)}"' in note_path().read_text():
            return
        time.sleep(0.05)
    raise AssertionError("the run never marked its workspace")


def test_a_killed_runs_mark_ends_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed 1 of 1 before: after the run was SIGKILLed and the workspace reviewed, an edit of
    the operator's was refused for good ("it is running")."""
    require_bwrap()
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "app.py").write_text("X = 1\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.Popen(  # noqa: S603 - a real run, killed below by its own pid
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--workspace", str(ws), "--", "sleep 60"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _opened(ws)
        why, _ = begin_tree_session(ws)  # held: a live run's mark refuses
        assert why is not None and "is running" in why, why
    finally:
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
    record_trust(ws)  # the operator reviewed the workspace after the run died
    (ws / "app.py").write_text("X = 2\n")  # and edits it on the host
    why, started = begin_tree_session(ws, session="guarded")
    assert why is None, f"a dead run's mark still refuses: {why}"
    end_tree_session(ws, started, session="guarded")


def test_a_mark_whose_owner_cannot_be_told_stays_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held (fails closed): a mark named without an owner, or by a process of another boot or pid
    namespace, is never taken as dead."""
    from shellrt.supervisor._tree_note import note_roots
    from shellrt.supervisor.mark_owner import owned_mark, owner_gone

    ws = isolated_workspace(tmp_path, monkeypatch)
    mine = owned_mark()
    token, pid, start, boot, namespace = mine.split(":")
    assert not owner_gone(mine) and owner_gone(f"{token}:{pid}:{int(start) + 1}:{boot}:{namespace}")
    for name in ("0123456789abcdef", f"{token}:999999999:1:{'0' * 16}:{namespace}", f"{token}:{pid}:1:{boot}:1"):
        assert not owner_gone(name), name
    note_roots([ws], f"{token}:999999999:1:{'0' * 16}:{namespace}", opening=True)  # another boot
    record_trust(ws)
    (ws / "app.py").write_text("edited\n")
    why, _ = begin_tree_session(ws)
    assert why is not None and "is running" in why, why
