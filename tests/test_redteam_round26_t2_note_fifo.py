"""Red team round 26, wave 3 (trusted-2): a FIFO in place of the marks note hung a session's close.

The note (``workspace-writes.unmarked``) is appended to by every session's open and close
(`shellrt.supervisor._tree_note.note_roots`). Its reader opened non-blocking since round 26
(trusted), the writer did not: a FIFO planted there by a command that reaches the directory (the
local backend masks nothing) blocked the writer in ``open()`` for good (no reader), so the
session never closed. Now the writer opens non-blocking and writes only to a regular file; the
reader then marks every path (a note that is not a regular file folds to "every path").
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from shellrt.permissions.tree_marks import fold_unmarked
from shellrt.supervisor._tree_note import COMPACT_BYTES, _compact, note_path, note_roots
from tests._governance import isolated_workspace


def _returns(target: Callable[[], object], seconds: float = 5) -> bool:
    """Whether ``target()`` returned within ``seconds``; a hung call is released by a writer."""
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    hung = worker.is_alive()
    if hung:  # let it go: open the FIFO's other end once and close it
        for flags in (os.O_WRONLY, os.O_RDONLY):
            try:
                os.close(os.open(note_path(), flags | os.O_NONBLOCK))
            except OSError:
                pass
        worker.join(timeout=10)
    return not hung


@pytest.mark.parametrize("opening", [True, False], ids=["open", "end"])
def test_a_fifo_note_does_not_hang_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opening: bool) -> None:
    """Failed 2 of 2 before: note_roots blocked in open() on the FIFO (the session's close hung)."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    note = note_path()
    note.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(note, 0o600)
    assert _returns(lambda: note_roots([ws], "s1", opening=opening)), "the note writer hung on a FIFO"
    assert note.exists() and not note.is_file()  # left as found: the reader refuses it
    data: dict[str, object] = {}
    fold_unmarked(data)  # fails closed: every path is marked
    assert data, data


def test_a_fifo_note_with_a_reader_gets_no_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed 1 of 1 before: with a process holding the FIFO open to read, the writer wrote its
    line into the pipe (to whoever planted it) instead of refusing a note that is no file."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    note = note_path()
    note.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(note, 0o600)
    reader = os.open(note, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert _returns(lambda: note_roots([ws], "s1", opening=True))
        try:
            got = os.read(reader, 4096)
        except BlockingIOError:
            got = b""
        assert got == b"", got
    finally:
        os.close(reader)


def test_compacting_a_fifo_does_not_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed 1 of 1 before: `_compact` opened the note to read, blocking on a FIFO without a writer."""
    isolated_workspace(tmp_path, monkeypatch)
    note = note_path()
    note.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(note, 0o600)
    assert COMPACT_BYTES > 0
    assert _returns(lambda: _compact(note)), "compacting hung on a FIFO"
    assert not note.is_file()
