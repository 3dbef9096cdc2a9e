"""Red team round 26 (trusted): a FIFO where the tree record or its marks note should be.

A command that could reach shellrt's configuration directory (the local backend, which masks
nothing; any backend before this round's masks) replaced ``workspace-writes.json`` or
``workspace-writes.unmarked`` with a FIFO: the next guarded start opened it to read and hung
for good (no writer), with the record's lock held, so every later start and ``shellrt trust
add`` waited too. Both are now opened without blocking and refused (fail closed) unless they
are regular files.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from shellrt.permissions.tree_writes import begin_tree_session, tree_writes_path
from shellrt.supervisor._tree_note import note_path
from tests._governance import isolated_workspace


@pytest.mark.parametrize("which", ["record", "note"])
def test_a_fifo_in_place_of_the_record_refuses_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """Failed 2 of 2 before: the guarded start blocked in open() until the test wrote the FIFO."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "app.py").write_text("X = 1\n")
    fifo = tree_writes_path() if which == "record" else note_path()
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo, 0o600)
    answer: list[str | None] = []
    start = threading.Thread(target=lambda: answer.append(begin_tree_session(ws)[0]), daemon=True)
    start.start()
    start.join(timeout=10)
    hung = start.is_alive()
    if hung:  # let it go: a writer that closes at once
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        start.join(timeout=10)
    assert not hung, f"a guarded start hung opening a FIFO in place of the {which}"
    assert answer and answer[0] is not None, answer  # refused: nothing vouches for the tree
