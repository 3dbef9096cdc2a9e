"""Red team, round 42 (supervisor2): a spool made over an earlier one's file of the same name.

A session directory outlives its Supervisor: a reopened runtime session, or two shellrt processes
serving one session id (round 17), write their spools beside the earlier ones. The names were
random but short (a 24-bit tag for a Supervisor's commands, ~60 M task ids), and a spool was made
by renaming a spare over its name, by a create that truncated, or for an empty output by a
create that truncated: the name's earlier file was replaced or emptied, and the earlier result's
``output_path`` (a transcript, a task list) then showed another command's output, or nothing.
A spool now never takes a name that exists (its output is reported lost instead: fail closed),
names are long enough not to meet, and a task id is not one whose files are on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor import tasks as tasks_module
from tests import _nonroot
from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio

_EARLIER = b"the earlier command's output\n"


async def test_a_command_never_replaces_an_earlier_spool(tmp_path: Path) -> None:
    """Failed before: the earlier session's files (same tag) were replaced and emptied."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        shell = tmp_path / "s" / "shell"
        earlier = [shell / f"cmd-{sup._session_tag}-{n:04d}.out" for n in (1, 2)]
        for path in earlier:
            path.write_bytes(_EARLIER)
        printed = await sup.run("echo mine", timeout_s=30)  # made at its first byte
        silent = await sup.run("true", timeout_s=30)  # an empty output: a link, or a new file
    for path in earlier:
        assert path.read_bytes() == _EARLIER, f"{path.name} of an earlier session was overwritten"
    assert "mine" in printed.preview
    assert silent.exit_code == 0
    assert printed.saved_bytes == 0, "the command's bytes went into the earlier file"


async def test_a_task_never_replaces_an_earlier_tasks_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: a task whose id an earlier task of the directory had truncated its output.
    (The id generator is made to repeat an id on disk: the birthday odds over a long-lived
    session directory, ~0.8 expected repeats in 10,000 tasks, made deterministic.)"""
    ws = tmp_path / "ws"
    ws.mkdir()
    tasks_dir = tmp_path / "s" / "tasks"
    tasks_dir.mkdir(parents=True)
    (tasks_dir / "bzzzzz.out").write_bytes(_EARLIER)
    ids = iter(["bzzzzz"])
    real = tasks_module.new_task_id
    monkeypatch.setattr(tasks_module, "new_task_id", lambda: next(ids, None) or real())
    async with local_supervisor(ws, tmp_path / "s") as sup:
        task = await sup.start_background("echo mine")
        await sup.tasks.wait(task.id)
        assert "mine" in (await sup.tasks.read_new(task.id)).text
    assert (tasks_dir / "bzzzzz.out").read_bytes() == _EARLIER, "an earlier task's output was overwritten"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (the local backend's subreaper in place of the session cgroup, the
    registry in that uid's place)."""
    _nonroot.held_as_nobody(
        __file__,
        "test_a_command_never_replaces_an_earlier_spool",
        "test_a_task_never_replaces_an_earlier_tasks_output",
    )
