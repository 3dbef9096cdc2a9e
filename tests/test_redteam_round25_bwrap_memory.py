"""Red team, round 25 (bwrap), second wave: a root caller's session had no memory ceiling.

Without ``limits.memory_bytes`` the session cgroup held only the default pids cap: what a command
pinned outside its processes -- tmpfs pages and inodes in the session's /tmp (1 GiB by default)
and /dev/shm, pipe buffers, socket queues, dentries, page cache -- was bounded by per-uid counts
only, and what it left in /tmp stayed there after it ended, for the whole session. Docker's
backend always had a ceiling (`sandbox._hostmem`); a bwrap session now gets
`BwrapConfig.default_memory_bytes` (``"auto"``: the same three quarters of the host's memory)
on its session cgroup, which the kernel charges for its tmpfs pages and kernel objects too.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from sandbox import BwrapConfig, SandboxPolicy
from sandbox import config as sandbox_config
from sandbox._hostmem import MIN_DEFAULT_MEMORY, default_memory_ceiling
from sandbox.bwrap import BwrapBackend
from sandbox.policy import ResourceLimits
from shellrt.supervisor import Supervisor
from shellrt.supervisor.models import CommandResult
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

_CEILING = 256 << 20

#: Pins 160 MiB of tmpfs pages in the session's /tmp (1 GiB by default), left there at its end.
_FILL = "head -c 160M /dev/zero > /tmp/fill; echo status $?"
#: Holds 320 MiB of shared memory (a memfd: no file, no process's heap) while it runs.
_MEMFD = """
import os
fd = os.memfd_create("hog")
for _ in range(320):
    os.write(fd, bytes(1 << 20))
print("held", os.fstat(fd).st_size >> 20, flush=True)
"""
#: What the session still has in /tmp (a command must still be able to run to tell).
_LEFT = "stat -c %s /tmp/fill && rm /tmp/fill"


class _Session:
    """A live session on a blocking portal's loop: each test runs its commands through it."""

    def __init__(self, backend: BwrapBackend, sup: Supervisor, portal: BlockingPortal) -> None:
        self.backend, self.sup, self.portal = backend, sup, portal

    def run(self, command: str, *, python: bool = False) -> CommandResult:
        if python:
            command = f"echo {base64.b64encode(command.encode()).decode()} | base64 -d | python3 -"

        async def main() -> CommandResult:
            return await self.sup.run(command, timeout_s=60)

        return self.portal.call(main)


@pytest.fixture(scope="module")
def root_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Session]:
    """One root caller's bwrap session with a small default ceiling (no ``memory_bytes``)."""
    require_bwrap()
    require(os.geteuid() == 0, "a root caller's session cgroup needs root")
    base = tmp_path_factory.mktemp("mem")
    (base / "ws").mkdir()
    config = BwrapConfig(persistent=True, default_memory_bytes=_CEILING)
    backend = BwrapBackend(config, SandboxPolicy(workspace=base / "ws"))
    held: list[Supervisor] = []

    async def hold(started: anyio.Event, done: anyio.Event) -> None:
        async with supervised(backend, base / "s") as sup:
            held.append(sup)
            started.set()
            await done.wait()

    with start_blocking_portal() as portal:
        started, done = portal.call(anyio.Event), portal.call(anyio.Event)
        future = portal.start_task_soon(hold, started, done)
        portal.call(started.wait)
        try:
            yield _Session(backend, held[0], portal)
        finally:
            portal.call(done.set)
            future.result(timeout=60)


def test_session_without_memory_bytes_has_the_default_ceiling(tmp_path: Path) -> None:
    """Measured: before, a root caller's session cgroup had no memory controller at all."""
    assert sandbox_config.MIN_DEFAULT_MEMORY == MIN_DEFAULT_MEMORY  # two copies: config loads no _hostmem
    with pytest.raises(ValueError, match="at least"):
        BwrapConfig(default_memory_bytes=MIN_DEFAULT_MEMORY - 1)
    require(os.geteuid() == 0, "a root caller's session cgroup needs root")
    (tmp_path / "ws").mkdir()
    backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=tmp_path / "ws"))
    backend.cgroup_open()
    try:
        group = backend._cgroup
        assert group is not None and group.memory is not None, "no memory cgroup for the session"
        directory, version = group.memory
        name = "memory.limit_in_bytes" if version == 1 else "memory.max"
        page = os.sysconf("SC_PAGE_SIZE")
        assert int((directory / name).read_text()) == default_memory_ceiling() // page * page
    finally:
        backend.cgroup_close()
    # A policy's own limit still wins over the default.
    limited = BwrapBackend(
        BwrapConfig(), SandboxPolicy(workspace=tmp_path / "ws", limits=ResourceLimits(memory_bytes=96 << 20))
    )
    limited.cgroup_open()
    try:
        assert limited._cgroup is not None and limited._cgroup.memory is not None
        directory, version = limited._cgroup.memory
        name = "memory.limit_in_bytes" if version == 1 else "memory.max"
        assert int((directory / name).read_text()) == 96 << 20
    finally:
        limited.cgroup_close()


def test_pinned_memory_stops_at_the_ceiling_and_the_session_stays_usable(root_session: _Session) -> None:
    """Before: all 160 MiB written and kept in /tmp after the command (with a ceiling as large as
    /tmp, every later command was OOM-killed at its start: the session wedged); the memfd held
    320 MiB. Now /tmp takes a quarter of the ceiling, and the memfd is OOM-killed at it."""
    fill = root_session.run(_FILL)
    assert "status 1" in fill.preview and "No space left" in fill.preview, fill
    left = root_session.run(_LEFT)
    assert left.exit_code == 0 and int(left.preview.split()[0]) <= _CEILING // 4, left
    hog = root_session.run(_MEMFD, python=True)
    assert hog.oom_killed and "held" not in hog.preview, hog  # told why (`OOM_NOTE`)
    after = root_session.run("echo alive")
    assert after.exit_code == 0 and after.preview.strip() == "alive", after
    group = root_session.backend._cgroup
    assert group is not None and group.memory is not None
    directory, version = group.memory
    usage = "memory.max_usage_in_bytes" if version == 1 else "memory.peak"
    assert int((directory / usage).read_text()) <= _CEILING
