"""Red team round 17, docker: what a root command does to ``/dev`` where the host cannot freeze it.

Round 16 made ``/dev`` read-only from the host's side, which only a root host can do (it joins the
container's mount namespace). On a non-root host (a ``docker`` group member) ``/dev`` stayed
docker's uid-0 tmpfs, mode 0755: a command run as root (a per-call ``user="root"``, or
``user: "0:0"``) keeps uid 0 without any capability, and owning the directory is enough to unlink
``/dev/null`` and plant a FIFO, a file or a symlink there. The executor's runners open
``/dev/null`` *by path* (``i=/dev/null``, ``2>/dev/null``; dash opens it for every background
job's stdin; ``priv`` opens it for its own streams): a FIFO there hung every later command of the
session, a planted file collected what the executor wrote, ``chmod 000`` broke every other user's
``>/dev/null``.

Fixed for every host: the device nodes the executor and ordinary programs open by name are
read-only binds of the host's own nodes (``sandbox/docker/_devnodes.py``). A mount point cannot be
unlinked, renamed or replaced (``EBUSY``), whoever asks, and a read-only mount refuses ``chmod``
(``EROFS``); a device node on a read-only mount still reads and writes.

The non-root host is simulated by turning runc's read-only ``/dev`` (round 18) off, as round
16's OOM test does (the root host's own freeze is gone since round 19). FAIL, not skip,
under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker import _backend as backend_module
from sandbox.docker._devnodes import DOCKER_READONLY_PATHS
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Generous: a plain command takes milliseconds; before the fix the planted FIFO hung it forever.
_BOUND = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def unfrozen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[DockerBackend]:
    """A session whose ``/dev`` the host did not freeze: what a non-root host gets."""
    require_docker()
    # runc's read-only /dev (round 18) off: what this test judges is the layer below it
    monkeypatch.setattr(backend_module, "READONLY_PATHS", DOCKER_READONLY_PATHS)
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as b:
        rc, out = await run_sh(b, "grep ' /dev ' /proc/self/mountinfo")
        assert "rw" in out.split()[5].split(","), out  # really not frozen
        yield b


async def _plain(backend: DockerBackend, command: str) -> tuple[int | None, str]:
    with anyio.fail_after(_BOUND):  # before the fix: hung here, the session's every later command
        return await run_sh(backend, command)


@pytest.mark.parametrize(
    "trick",
    [
        "rm -f /dev/null; mkfifo -m 666 /dev/null",  # every background job's stdin blocks on it
        "rm -f /dev/null; echo planted > /dev/null; chmod 644 /dev/null",  # collects the executor's output
        "mv /dev/null /dev/old; ln -s /proc/1/fd/0 /dev/null",  # renamed away, a link planted
        "chmod 000 /dev/null",  # every other uid's >/dev/null fails
    ],
)
async def test_a_root_command_cannot_replace_dev_null(unfrozen: DockerBackend, trick: str) -> None:
    await run_sh(unfrozen, trick + "; true", user="root")
    rc, out = await _plain(unfrozen, "echo quiet > /dev/null && cat /dev/null && ls -l /dev/null && echo ok")
    assert rc == 0 and out.rstrip().endswith("ok"), out
    assert out.startswith("c") and "quiet" not in out and "planted" not in out, out  # the character device
    rc, out = await _plain(unfrozen, "sleep 0 & wait; echo again")  # a background job's stdin is /dev/null
    assert rc == 0 and out.strip() == "again", out


@pytest.mark.parametrize("node", ["zero", "full", "random", "urandom"])
async def test_the_other_nodes_hold_too(unfrozen: DockerBackend, node: str) -> None:
    rc, out = await run_sh(
        unfrozen, f"rm -f /dev/{node}; echo x > /dev/{node}; chmod 600 /dev/{node}; true", user="root"
    )
    rc, out = await _plain(unfrozen, f"ls -l /dev/{node} && head -c 3 /dev/{node} | wc -c")
    assert rc == 0 and out.startswith("c") and out.split()[-1] == "3", out
