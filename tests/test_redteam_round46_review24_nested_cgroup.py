"""Red team, round 46 (review24): a second reader of round 45's cgroup per local command.

Local backend, root caller (`sandbox._session_cgroup`). Round 45 empties an ended command's cgroup
(``c<n>``) at its end, whatever else of the session runs. It emptied that one directory only: a
command that puts a process in a cgroup of its own below its one (``cgcreate``/``cgexec``, a test
harness or build tool limiting a job: the pids hierarchy is the command's to divide, and the
process never leaves the command's subtree) left a process that ran on while a background task
kept the session busy, as before round 45; only the idle sweep and close walk nested cgroups. And
the ended command's cgroup, holding the nested one, was never removed while busy.
"""

from __future__ import annotations

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


def _nested(token: str, depth: int) -> str:
    """Shell text: a ``sleep <token>`` out of its group, marker scrubbed, moved into a cgroup ``depth`` levels below
    the command's own pids cgroup, then the command ends."""
    own = "/sys/fs/cgroup/pids$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup)"
    sub = "/".join(f"job{i}" for i in range(depth))
    return (
        f'g="{own}/{sub}"; mkdir -p "$g" || exit 3; (setsid env -i sleep {token} &); '
        f'until p=$(pgrep -fx "sleep {token}"); do sleep 0.01; done; echo "$p" > "$g/cgroup.procs" || exit 4'
    )


@pytest.mark.parametrize("depth", [1, 2])
async def test_a_leftover_in_a_cgroup_below_its_commands_ends_with_it_while_a_task_runs(
    tmp_path: Path,
    depth: int,
    tokens: list[str],  # noqa: F811
) -> None:
    token, busy = _token(), _token()
    tokens += [token, busy]
    (tmp_path / "ws").mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path / "ws"))
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        cgroup = backend._runner.session_cgroup
        assert cgroup is not None
        task = await sup.start_background(f"sleep {busy}")
        result = await sup.run(_nested(token, depth), timeout_s=20)
        assert result.exit_code == 0, result
        gone = await anyio.to_thread.run_sync(_gone_within, token, 5.0)
        left, still = _running(token), _running(busy)
        kept = sorted(str(p.relative_to(cgroup.path)) for p in cgroup.path.rglob("job0"))
        await sup.tasks.stop(task.id)
    assert gone, f"{left} (in a cgroup below its command's) ran on after its command while a task ran"
    assert still, "the background task must not be killed by another command's end"
    assert not kept, f"the ended command's nested cgroups stayed while the session was busy: {kept}"
