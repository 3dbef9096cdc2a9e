"""Red team round 48, docker8: ``/sys``'s root-only files, which a per-call root command read.

A per-call ``user="root"`` command is host uid 0 (no user namespace) without any capability, so a
file guarded by its mode alone (0400, root's) is open to it. Round 47 masked this host's root-only
top-level ``/proc`` entries by a walk, and ``/sys``'s by name (``/sys/kernel/slab``, DAMON) only.
What was left includes ``/sys/class/zram-control/hot_add``, whose *read* makes a new zram block
device on the host (``zram_add()``, no capability check): host kernel state that outlives the
command, the container and shellrt, one device a read, as many as the command likes.

The first test reads it (and removes from the host whatever it added); the second lists every
root-only regular file a root command still sees below ``/sys`` (masked ones are ``/dev/null``'s
character device or an empty tmpfs, so ``find -type f`` does not list them).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_HOT_ADD = Path("/sys/class/zram-control/hot_add")
_HOT_REMOVE = Path("/sys/class/zram-control/hot_remove")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt48sys"):
        yield b


def _zram_devices() -> set[str]:
    return {name for name in os.listdir("/sys/block") if name.startswith("zram")}


async def test_a_root_command_cannot_add_a_host_block_device(backend: DockerBackend) -> None:
    if not _HOT_ADD.exists() or os.geteuid() != 0:
        pytest.skip("needs the host's zram-control (zram built in or loaded) and a root host to clean up")
    before = _zram_devices()
    try:
        code, said = await run_sh(backend, f"head -c 32 {_HOT_ADD}; echo; echo done", user="root")
    finally:
        added = _zram_devices() - before
        for name in sorted(added):  # the host's own clean-up of what the command made
            with contextlib.suppress(OSError):
                _HOT_REMOVE.write_text(name.removeprefix("zram") + "\n")
    assert code == 0 and "done" in said, said
    assert not added, f"a root command's read of {_HOT_ADD} made host block devices {sorted(added)}: {said!r}"


async def test_no_root_only_sys_file_is_readable_by_a_root_command(backend: DockerBackend) -> None:
    script = "find /sys -xdev -type f -perm -u+r ! -perm -o+r 2>/dev/null; echo done"
    code, said = await run_sh(backend, script, user="root")
    assert code == 0 and said.rstrip().endswith("done"), said
    found = [line for line in said.splitlines() if line.startswith("/sys/")]
    assert not found, f"{len(found)} root-only /sys files a root command can read, e.g. {found[:5]}"


async def test_no_root_only_proc_entry_outside_the_processes_is_readable(backend: DockerBackend) -> None:
    """``/proc``'s side: round 47 masked the top level's; below it ``/proc/sys/vm/stat_refresh``
    (0600: its read runs vmstat work on every host CPU, outside the container's cgroup),
    ``/proc/sys/fs`` and ``kernel`` root-only values, ``/proc/tty/driver`` (0500) stayed readable.
    The processes' directories, the reader's own and its network namespace's are not the host's."""
    script = (
        "find /proc -xdev \\( -path '/proc/[0-9]*' -o -path /proc/self -o -path /proc/thread-self"
        " -o -path /proc/net -o -path /proc/sys/net \\) -prune"
        " -o \\( -type f -perm -u+r ! -perm -o+r -print \\) -o \\( -type d ! -perm -o+rx -print \\) 2>/dev/null;"
        " [ -f /proc/sys/vm/stat_refresh ] && head -c 1 /proc/sys/vm/stat_refresh >/dev/null 2>&1 && echo refreshed;"
        " echo done"
    )
    code, said = await run_sh(backend, script, user="root")
    assert code == 0 and said.rstrip().endswith("done"), said
    found = [line for line in said.splitlines() if line.startswith("/proc/") or line == "refreshed"]
    assert not found, f"root-only /proc entries a root command reads: {found[:8]}"
