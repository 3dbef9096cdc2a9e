"""Red team round 18, docker: what a root command does to ``/dev`` on a host that cannot freeze it.

Round 17 bound the device nodes programs open by name (``/dev/null``, ``zero``, ...) read-only,
and left ``/dev`` itself writable on a non-root host (one that cannot join the container's mount
namespace to freeze it, as a root host does since round 16). There a command run as root (a
per-call ``user="root"``, ``user: "0:0"``) owns docker's ``/dev`` tmpfs without any capability:
it added names and replaced the links every program trusts. Measured before: ``/dev/fd`` made a
directory of its own, so another user's bash ``<(...)`` read what the root command planted
(``forged``); ``/dev/stdout`` made a file of the root command's, so another user's
``>/dev/stdout`` went there instead of to its caller; ``/dev/stdin``, ``stderr``, ``ptmx``
likewise. Now runc itself makes ``/dev`` (and ``/sys/fs/cgroup``) read-only, on every host, after
its devices and links are in place and before the executor starts (``HostConfig.ReadonlyPaths``,
`sandbox/docker/_devnodes.py`); ``/dev/shm``, ``/dev/mqueue`` and ``/dev/pts`` stay writable.

Since round 19 the root host no longer freezes ``/dev`` and image VOLUMEs itself (round 16's
``_volumes``, duplicated by this): every host gets exactly what a non-root host gets, so these
tests need no simulation. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, build_image, config, policy, require_docker, run_sh
from tests.test_redteam_round8_docker_image import _VOLUME_DOCKERFILE, VOLUMED

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_BOUND = 30.0  # generous: each command takes milliseconds; a planted FIFO would hang one

_TRICKS = (
    "rm -f /dev/fd; mkdir /dev/fd; echo forged > /dev/fd/63; chmod -R a+rwx /dev/fd",
    "rm -f /dev/stdout; : > /dev/stdout; chmod 666 /dev/stdout",
    "rm -f /dev/stdin /dev/stderr; ln -s /tmp/in /dev/stdin; ln -s /tmp/err /dev/stderr",
    "rm -f /dev/ptmx; ln -s /tmp/ptmx /dev/ptmx",
    "touch /dev/planted; mkdir /dev/more",
)

_VIEW = "for f in fd stdin stdout stderr ptmx; do echo $f $(readlink /dev/$f); done; ls -A /dev"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def unfrozen(tmp_path: Path) -> AsyncIterator[DockerBackend]:
    """A session on any host: ReadonlyPaths alone (what a non-root host always had)."""
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        yield b


async def _sh(backend: DockerBackend, command: str, user: str | None = None) -> tuple[int | None, str]:
    with anyio.fail_after(_BOUND):
        return await run_sh(backend, command, user=user)


async def test_a_root_command_cannot_change_dev(unfrozen: DockerBackend) -> None:
    """Before: every trick worked (failed 1 of 1: the listing changed, bash read ``forged``)."""
    rc, before = await _sh(unfrozen, _VIEW)
    assert rc == 0 and "fd /proc/self/fd" in before, before
    for trick in _TRICKS:
        await _sh(unfrozen, trick + "; true", user="root")
    rc, after = await _sh(unfrozen, _VIEW)
    assert rc == 0 and after == before, (before, after)
    rc, out = await _sh(unfrozen, "bash -c 'cat <(echo good)'")
    assert rc == 0 and out.split() == ["good"], out
    rc, out = await _sh(unfrozen, "touch /dev/x /sys/fs/cgroup/memory.events", user="root")
    assert rc != 0 and out.count("Read-only file system") == 2, out
    # What must stay writable: shared memory and message queues (the reset wipes them).
    rc, out = await _sh(unfrozen, "echo x > /dev/shm/a && cat /dev/shm/a && rm /dev/shm/a")
    assert rc == 0 and out.strip() == "x", out


async def test_an_image_volume_is_read_only_without_the_freeze(tmp_path: Path) -> None:
    """Round 16 left image VOLUMEs writable on a non-root host: a root command rewrote the
    ``/etc/passwd`` (``VOLUME /etc``) the executor resolves per-call users from, so a later
    ``user="app"`` could be anyone. runc makes them read-only now (failed 1 of 1 before)."""
    require_docker()
    build_image(VOLUMED, _VOLUME_DOCKERFILE)
    async with DockerBackend(config(VOLUMED), policy(tmp_path)) as b:
        rc, out = await _sh(
            b, "echo 'evil:x:0:0::/:/bin/sh' >> /etc/passwd; touch /data/planted; cat /data/f", user="root"
        )
        assert out.count("Read-only file system") == 2 and out.rstrip().endswith("image-content"), out
        rc, out = await _sh(b, "grep -c evil /etc/passwd; ls /data")
        assert out.split() == ["0", "f"], out
