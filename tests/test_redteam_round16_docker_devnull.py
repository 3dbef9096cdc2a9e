"""Red team round 16, docker: a root command replaced ``/dev/null`` and forged the OOM flag.

docker gives every container a ``/dev`` tmpfs owned by uid 0, mode 0755, writable. A command run
as root (a per-call ``user="root"``: Inspect's ``exec(user="root")``, a batch command's ``user``)
keeps uid 0 without any capability, and owning ``/dev`` is enough to unlink and create there.
The executor and its runners redirect to ``/dev/null`` everywhere (``2>/dev/null``, a command's
stdin when it has none, the helper's ``supervise``), as their own identity with
``DAC_OVERRIDE``, ``SYS_PTRACE``: a planted regular file collected what they wrote there (and
every later command's ``>/dev/null`` output, truncated by the executor's next redirection), a
symlink to ``/proc/<runner>/fd/0`` hung the session: every later command timed out.

Same class: ``/sys/fs/cgroup`` is a root-owned tmpfs too (mode 0555, but its owner may ``chmod``);
a planted ``memory.events`` made the host report a plain ``kill -9`` as an OOM kill.

Fixed: on a root host ``/dev`` and ``/sys/fs/cgroup`` themselves are made read-only in the container's mount namespace before
the first command (its own mount only: ``/dev/shm``, ``/dev/mqueue``, ``/dev/pts`` stay as they
were); a device node on a read-only mount still reads and writes. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker import _backend as backend_module
from sandbox.docker._devnodes import DOCKER_READONLY_PATHS
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: A root command plants the v2 counter file on a v1 host's /sys/fs/cgroup tmpfs, bumps it while
#: it runs, then ends by a plain SIGKILL (no OOM at all).
_PLANT = (
    "chmod 755 /sys/fs/cgroup; printf 'oom_kill 1\\n' > /sys/fs/cgroup/memory.events; "
    "chmod 644 /sys/fs/cgroup/memory.events; "
    "(sleep 0.3; printf 'oom_kill 2\\n' > /sys/fs/cgroup/memory.events) & sleep 1; kill -9 $$"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    require_docker()
    if os.geteuid() != 0:
        pytest.skip("the host joins the container's mount namespace only as root (documented)")
    ws = tmp_path_factory.mktemp("rt16devnull")
    async with DockerBackend(config(BUSYBOX), policy(ws)) as b:
        yield b


async def test_a_root_command_cannot_replace_dev_null(backend: DockerBackend) -> None:
    rc, out = await run_sh(
        backend,
        "rm -f /dev/null; echo planted > /dev/null; ln -s /proc/1/fd/0 /dev/zero2; "
        "mkdir /dev/x; ls -l /dev/null",
        user="root",
    )
    last = out.rstrip().splitlines()[-1]
    assert last.endswith("/dev/null") and last.startswith("c"), out  # still the character device
    assert "planted" not in out
    rc, out = await run_sh(
        backend, "ls -d /dev/zero2 /dev/x 2>&1; echo quiet > /dev/null; cat /dev/null; echo rc=$?"
    )
    assert "No such file" in out and out.count("No such file") == 2, out
    assert out.rstrip().endswith("rc=0") and "quiet" not in out, out


async def test_a_root_command_cannot_forge_the_oom_flag(backend: DockerBackend) -> None:
    """The executor reads its OOM count from ``/sys/fs/cgroup/memory.events`` (v2) before the v1
    file: a root command owning that tmpfs planted one, and a plain ``kill -9`` came back as
    ``oom_killed`` (real OOMs hidden the other way round)."""
    proc = await backend.exec(
        ExecRequest(argv=("sh", "-c", _PLANT), cwd="/workspace", env={"PATH": "/bin:/usr/bin"}, user="root")
    )
    status = await proc.wait()
    assert status.exit_code == 137, status
    assert not status.oom_killed, status
    rc, out = await run_sh(
        backend, "ls /sys/fs/cgroup/memory.events 2>&1; grep ' /sys/fs/cgroup ' /proc/self/mountinfo"
    )
    assert "No such file" in out, out
    assert "ro" in out.splitlines()[-1].split()[5].split(","), out


async def test_dev_submounts_and_devices_still_work(backend: DockerBackend) -> None:
    rc, out = await run_sh(
        backend,
        "echo a > /dev/shm/f && cat /dev/shm/f && head -c 4 /dev/zero | wc -c && echo b > /dev/null && echo ok",
    )
    assert rc == 0 and out.split() == ["a", "4", "ok"], out


async def test_dev_is_mounted_read_only(backend: DockerBackend) -> None:
    rc, out = await run_sh(backend, "grep ' /dev ' /proc/self/mountinfo")
    assert rc == 0, out
    # The top one (runc's read-only bind of round 18 lies over docker's tmpfs): no other's parent.
    entries = [line.split() for line in out.splitlines()]
    top = [f for f in entries if f[0] not in {g[1] for g in entries}]
    assert len(top) == 1, out
    options = top[0][5].split(",")
    assert "ro" in options, out


async def test_the_executor_ignores_a_planted_oom_file_without_the_freeze(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-root host cannot freeze ``/sys/fs/cgroup`` (nor a root one that fails to): the
    executor chose its counter file at its start, before any command, so a planted one counts
    for nothing there either."""
    require_docker()
    # runc's read-only /dev (round 18) off: what this test judges is the layer below it
    monkeypatch.setattr(backend_module, "READONLY_PATHS", DOCKER_READONLY_PATHS)
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as b:
        rc, out = await run_sh(b, "grep ' /sys/fs/cgroup ' /proc/self/mountinfo")
        assert "rw" in out.split()[5].split(","), out  # really not frozen
        proc = await b.exec(
            ExecRequest(
                argv=("sh", "-c", _PLANT), cwd="/workspace", env={"PATH": "/bin:/usr/bin"}, user="root"
            )
        )
        status = await proc.wait()
    assert status.exit_code == 137 and not status.oom_killed, status
