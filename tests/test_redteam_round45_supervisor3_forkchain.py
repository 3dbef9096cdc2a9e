"""Red team, round 45 (supervisor3): a leftover that forks and exits faster than the kill walks.

A leftover out of its group, marker scrubbed, that forks a child and exits at once, for ever (a
"fork chain": never more than one or two processes, each living well under a millisecond) is
always someone new by the time a listing of the cgroup is killed: each pass killed a process that
had already gone. Now the cgroup's ``pids.max`` is set to 0 before it is emptied, so the chain's
next fork fails, and its last link is killed (and reset after, for the spawner's own cgroup).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests.test_local_orphans import _running, _token, tokens  # noqa: F401

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(os.geteuid() != 0, reason="the session cgroup is made for a root caller only"),
]

#: The chain; every 50th link writes its number at the start of the file named by its argument.
_CHAIN = (
    "import os,sys\nos.setsid()\nn=0\nfd=os.open(sys.argv[1],os.O_WRONLY)\nwhile True:\n"
    "    n+=1\n    n%50 or os.pwrite(fd,b'%12d'%n,0)\n    if os.fork():\n        os._exit(0)\n"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _stopped(beat: Path, within: float) -> bool:
    """The chain's count stands still for half a second (a look at /proc misses most links: each
    lives well under a millisecond)."""
    end, last = time.monotonic() + within, beat.read_bytes()
    while time.monotonic() < end:
        time.sleep(0.5)
        now = beat.read_bytes()
        if now == last:
            return True
        last = now
    return False


@pytest.mark.parametrize("busy", [False, True])
async def test_a_fork_chain_ends_with_its_command(
    tmp_path: Path,
    tokens: list[str],  # noqa: F811
    busy: bool,
) -> None:
    """Failed before (idle and busy): the chain outlived the command's end (and the kill's 5 s)."""
    token, other = _token(), _token()
    tokens += [token, other]
    (tmp_path / "ws").mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path / "ws"))
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        if busy:
            task = await sup.start_background(f"sleep {other}")
        beat = tmp_path / "ws" / "beat"
        beat.write_bytes(b"%12d" % 0)
        (tmp_path / "ws" / "chain.py").write_text(_CHAIN)
        command = (
            f"env -i {sys.executable} chain.py {beat} {token} &"
            f" until [ $(cat {beat}) -gt 500 ]; do sleep 0.01; done; exit 0"
        )
        result = await sup.run(command, timeout_s=20)
        assert result.exit_code == 0, result
        gone = await anyio.to_thread.run_sync(_stopped, beat, 10.0)
        left = beat.read_bytes()
        if busy:
            assert _running(other), "the other task must not be killed"
            await sup.tasks.stop(task.id)
    assert gone, f"the fork chain still ran 10 s after its command ended ({int(left)} links)"


async def test_the_session_starts_commands_after_a_chain_was_killed(
    tmp_path: Path,
    tokens: list[str],  # noqa: F811
) -> None:
    """The limit that stops a chain is the dead command's cgroup's alone: the session starts
    commands after it, in the spawner's cgroup too (its limit given back)."""
    (tmp_path / "ws").mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path / "ws"))
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        beat = tmp_path / "ws" / "beat"
        beat.write_bytes(b"%12d" % 0)
        (tmp_path / "ws" / "chain.py").write_text(_CHAIN)
        token = _token()
        tokens.append(token)
        command = f"env -i {sys.executable} chain.py {beat} {token} & until [ $(cat {beat}) -gt 100 ]; do sleep 0.01; done"
        assert (await sup.run(command, timeout_s=20)).exit_code == 0
        assert await anyio.to_thread.run_sync(_stopped, beat, 10.0)
        result = await sup.run("(sleep 0.01 & wait); echo forked", timeout_s=20)
        assert result.exit_code == 0 and result.preview.strip() == "forked", result
        cgroup = backend._runner.session_cgroup
        assert cgroup is not None
        limits = {
            p.name: (p / "pids.max").read_text().strip()
            for p in [cgroup.path, *cgroup.path.iterdir()]
            if p.is_dir()
        }
        assert set(limits.values()) == {"max"}, limits


async def test_a_fork_chain_of_a_running_task_ends_at_close(
    tmp_path: Path,
    tokens: list[str],  # noqa: F811
) -> None:
    """Close empties every cgroup of the session with no fork allowed: the chain's last link dies."""
    (tmp_path / "ws").mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path / "ws"))
    beat = tmp_path / "ws" / "beat"
    beat.write_bytes(b"%12d" % 0)
    (tmp_path / "ws" / "chain.py").write_text(_CHAIN)
    token = _token()
    tokens.append(token)
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        await sup.start_background(f"env -i {sys.executable} chain.py {beat} {token} & sleep 60")
        with anyio.fail_after(10):  # it runs
            while int(beat.read_bytes()) <= 100:
                await anyio.sleep(0.01)
    assert await anyio.to_thread.run_sync(_stopped, beat, 10.0), "the chain outlived its session"
