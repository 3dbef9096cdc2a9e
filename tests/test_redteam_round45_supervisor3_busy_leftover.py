"""Red team, round 45 (supervisor3): a leftover outlived its command while the session was busy.

Local backend, root caller (the session cgroup, `sandbox._session_cgroup`). A command's leftover
that leaves its process group and clears its marker (``setsid env -i sleep``) was a member of the
session's one cgroup, which was emptied only when no command of the session ran: while a
background task (or any other command) ran, the leftover ran on, for as long as the session
stayed busy -- hours, for a watcher or a server started in the background (round 42's Left).
Now each command starts in a cgroup of its own below the session's: at its end its cgroup is
emptied whatever else runs.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests.test_local_orphans import _gone_within, _running, _started_within, _token, tokens  # noqa: F401

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(os.geteuid() != 0, reason="the session cgroup is made for a root caller only"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _backend(workspace: Path) -> LocalBackend:
    workspace.mkdir()
    return LocalBackend(policy=SandboxPolicy(workspace=workspace))


def _leaves(token: str) -> str:
    """A command that leaves ``sleep <token>`` out of its group, marker scrubbed, and ends once it runs."""
    wait = f'until ps -eo args= | grep -qx "sleep {token}"; do sleep 0.01; done'
    return f"(setsid env -i sleep {token} &) ; {wait}; exit"


async def test_a_foreground_leftover_ends_with_its_command_while_a_task_runs(
    tmp_path: Path,
    tokens: list[str],  # noqa: F811
) -> None:
    """Failed before: the leftover ran until the background task ended (here: the session's close)."""
    token, busy = _token(), _token()
    tokens += [token, busy]
    backend = _backend(tmp_path / "ws")
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        assert backend._runner.session_cgroup is not None
        task = await sup.start_background(f"sleep {busy}")
        result = await sup.run(_leaves(token), timeout_s=20)
        assert result.exit_code == 0, result
        # it ran: the command ends only once it does (`_leaves`)
        gone = await anyio.to_thread.run_sync(_gone_within, token, 5.0)
        left, still = _running(token), _running(busy)
        await sup.tasks.stop(task.id)
    assert gone, f"{left} still running while the session's background task ran"
    assert still, "the background task must not be killed by another command's end"


async def test_a_tasks_leftover_ends_with_the_task_while_a_command_runs(
    tmp_path: Path,
    tokens: list[str],  # noqa: F811
) -> None:
    """Failed before: a background task's leftover ran on while a foreground command ran."""
    token, busy = _token(), _token()
    tokens += [token, busy]
    backend = _backend(tmp_path / "ws")
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        long = await sup.start_background(f"sleep {busy}")
        task = await sup.start_background(_leaves(token))
        assert (await sup.tasks.wait(task.id)).exit_code == 0
        # it ran: the command ends only once it does (`_leaves`)
        gone = await anyio.to_thread.run_sync(_gone_within, token, 5.0)
        left, still = _running(token), _running(busy)
        await sup.tasks.stop(long.id)
    assert gone, f"{left} still running after its task ended, while another task ran"
    assert still, "the other task must not be killed by this one's end"


async def test_a_leftover_of_one_of_two_concurrent_commands_ends_with_it(
    tmp_path: Path,
    tokens: list[str],  # noqa: F811
) -> None:
    """Failed before: two commands at once (the scheduler runs read-only ones together): the first
    one's leftover ran until the second ended."""
    token, busy = _token(), _token()
    tokens += [token, busy]
    backend = _backend(tmp_path / "ws")
    gone: list[list[int]] = []
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:

        async def first() -> None:
            result = await sup.run(_leaves(token), timeout_s=20)
            assert result.exit_code == 0, result
            await anyio.to_thread.run_sync(_gone_within, token, 5.0)
            gone.append(_running(token))
            assert _running(busy), "the other command must not be killed by this one's end"
            for pid in _running(busy):
                os.kill(pid, 9)

        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(sup.run, f"sleep {busy}; true", timeout_s=30))
            await anyio.to_thread.run_sync(_started_within, busy, 5.0)
            tg.start_soon(first)
    assert gone == [[]], f"{gone} still running while another command of the session ran"


async def test_command_cgroups_do_not_pile_up(tmp_path: Path, tokens: list[str]) -> None:  # noqa: F811
    """Each command's cgroup is removed once it ended and is empty; close removes the session's."""
    backend = _backend(tmp_path / "ws")
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        cgroup = backend._runner.session_cgroup
        assert cgroup is not None
        task = await sup.start_background("sleep 60")
        for _ in range(30):
            assert (await sup.run("true", timeout_s=10)).exit_code == 0
        await sup.tasks.stop(task.id)
        assert (await sup.run("true", timeout_s=10)).exit_code == 0
        made = [p for p in cgroup.path.iterdir() if p.is_dir()]
        path = cgroup.path
    assert len(made) <= 4, f"{len(made)} command cgroups kept after 32 ended commands: {made}"
    assert not path.exists(), f"{path} outlived its session"
