"""Red team round 13 (host side): the background-task registry read back on reopening.

``<session dir>/tasks.json`` is read when a session is reopened. Commands cannot reach it while
the session directory is theirs to reach only through a redirected path (see
`tests/test_redteam_round13_host_sessionlink.py`, open); there, a FIFO in its place blocked the
reopening for good, and a link made the host read any file. Failed before: ``reopen`` blocked on
the FIFO (the test's thread waited out its 5 s bound) and followed the link. Now the registry is
read only as a regular file, not through a link, non-blocking and bounded.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from shellrt.runtime.task_registry import TASKS_FILE, TaskRegistry
from shellrt.supervisor.tasks import TaskManager


def _reopen(session: Path) -> list[str] | None:
    result: list[list[str]] = []
    worker = threading.Thread(
        target=lambda: result.append(TaskRegistry(session, TaskManager()).reopen()), daemon=True
    )
    worker.start()
    worker.join(5)
    if worker.is_alive():  # unblock it, so the test process can end
        with open(session / TASKS_FILE, "wb", buffering=0) as fh:
            fh.write(b"{}")
        worker.join(5)
        return None
    return result[0]


def test_a_fifo_registry_does_not_block_reopening(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / TASKS_FILE)
    notes = _reopen(tmp_path)
    assert notes is not None, "reopen blocked on a FIFO"
    assert any("unreadable" in n for n in notes), notes


def test_a_linked_registry_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    record = {"task": {"id": "x"}}
    elsewhere.write_text(json.dumps({"version": 1, "tasks": [record]}))
    session = tmp_path / "s"
    session.mkdir()
    (session / TASKS_FILE).symlink_to(elsewhere)
    notes = _reopen(session)
    assert notes is not None and any("unreadable" in n and "regular file" in n for n in notes), notes
