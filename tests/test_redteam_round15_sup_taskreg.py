"""Red team, round 15: the background-task registry stays readable whatever the model's commands are.

``tasks.json`` held every task ever started in the session with its whole command text (up to
100,000 characters, written ASCII-escaped: six bytes per control character) and was refused on
reopening above 16 MiB. Thirty background calls of a 100,000-character command (a comment of
``\x01``) made it ~18 MiB: a reopened session then listed none of its tasks (the running ones of a
dead owner were neither reported nor killed), and each change of the session rewrote the whole
file on the event loop. Records are now bounded (command, description and note cut, with a note
of the cut) and so is their number (the oldest ended tasks are dropped first).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.runtime.task_registry import MAX_REGISTRY_BYTES, TASKS_FILE, TaskRegistry
from shellrt.supervisor import Supervisor
from shellrt.supervisor.tasks import TaskManager


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def supervisor(tmp_path: Path) -> AsyncIterator[Supervisor]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with (
        LocalBackend(policy=SandboxPolicy(workspace=workspace)) as backend,
        Supervisor(backend, session_dir=tmp_path / "session") as sup,
    ):
        yield sup


@pytest.mark.anyio
async def test_long_commands_cannot_make_the_registry_unreadable(
    supervisor: Supervisor, tmp_path: Path
) -> None:
    session = tmp_path / "reg"
    session.mkdir()
    registry = TaskRegistry(session, supervisor.tasks)
    command = "true # " + "\x01" * 99_990
    ids = []
    for _ in range(30):
        task = await supervisor.start_background(command, description="d" * 5_000)
        ids.append(task.id)
    for task_id in ids:
        await supervisor.tasks.wait(task_id)
    registry.save()
    size = (session / TASKS_FILE).stat().st_size
    assert size < MAX_REGISTRY_BYTES // 4, f"{size:,} bytes of registry for 30 tasks"

    reopened = TaskRegistry(session, TaskManager())
    notes = reopened.reopen()
    assert not any("unreadable" in n for n in notes), notes
    listed = {t.id: t for t in reopened.tasks.list()}
    assert set(ids) <= set(listed)
    shown = listed[ids[0]]
    assert shown.command.startswith("true # \x01\x01") and len(shown.command) < 5_000
    assert "characters" in shown.command  # the cut is said, not silent


@pytest.mark.anyio
async def test_the_number_of_records_is_bounded_running_tasks_kept(
    supervisor: Supervisor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shellrt.runtime import task_registry

    monkeypatch.setattr(task_registry, "MAX_RECORDS", 12)  # the rule, at a size a test affords
    session = tmp_path / "reg"
    session.mkdir()
    registry = TaskRegistry(session, supervisor.tasks)
    running = await supervisor.start_background("sleep 30")
    try:
        ended = []
        for _ in range(task_registry.MAX_RECORDS + 5):
            ended.append((await supervisor.start_background("true")).id)
        for task_id in ended:
            await supervisor.tasks.wait(task_id)
        registry.save()
        records = json.loads((session / TASKS_FILE).read_text())["tasks"]
        kept = [r["task"]["id"] for r in records]
        assert len(kept) == task_registry.MAX_RECORDS
        assert running.id in kept
        assert ended[0] not in kept and ended[-1] in kept  # the oldest ended ones went first
    finally:
        await supervisor.tasks.stop(running.id)
