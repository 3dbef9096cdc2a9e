"""Red team round 47, docker7: ``/proc`` files that show the whole host to a container.

Rounds 42-46 left the host-wide ``/proc`` files a container reads (``locks``, ``stat``,
``loadavg``...) as channels. Two kinds are more than counters:

* ``/proc/locks`` lists open file description (OFD) locks of every process on the host: the kernel
  hides a POSIX or ``flock`` lock whose owner is outside the reader's PID namespace, but an OFD lock
  has no owner pid (``-1``) and is always shown, with the file's device and inode and the byte range
  its taker chose (two 64-bit numbers a lock, any number of locks): another tenant's task, or a host
  process, is read from any container, and what a task locks is read by every other tenant.
* ``/proc``'s (and ``/sys/kernel``'s) root-only files (mode 0400: ``kpageflags``, ``kpagecount``, ``kpagecgroup``: every
  physical page's flags, map count and memory cgroup; ``slabinfo``, ``pagetypeinfo``,
  ``vmallocinfo``) are guarded by their mode alone. A per-call ``user="root"`` command is host uid 0
  (no user namespace), so holds no capability and still reads them: the host's memory, page by page,
  with which cgroup (tenant) owns each page.

Here a host process holds the OFD lock (the other tenant: the kernel shows every namespace's the
same way), and the root-only files are whatever this host's ``/proc`` has without a read bit for
others.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: ``F_OFD_SETLK`` (linux/fcntl.h); struct flock: type, whence, start, len, pid (x86-64 and arm64).
_F_OFD_SETLK = 37
_FLOCK = struct.Struct("hhxxxxqqixxxx")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt47proc"):
        yield b


async def test_another_tenants_ofd_locks_are_not_listed(backend: DockerBackend, tmp_path: Path) -> None:
    start = 4_700_000_000_000 + secrets.randbelow(10**9)
    fd = os.open(tmp_path / "held", os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.fcntl(fd, _F_OFD_SETLK, _FLOCK.pack(fcntl.F_RDLCK, os.SEEK_SET, start, 1, 0))
        with open("/proc/locks", encoding="ascii") as fh:
            assert f" {start} {start}" in fh.read(), "the control: the host lists the lock"
        code, said = await run_sh(backend, "cat /proc/locks; echo read")
    finally:
        os.close(fd)
    assert code == 0 and said.endswith("read\n"), said
    assert str(start) not in said, f"a container listed another tenant's OFD lock: {said[-300:]}"


def _root_only() -> list[str]:
    """This host's ``/proc`` entries (not a process's) that only their owner, root, may read."""
    names = []
    for name in sorted(os.listdir("/proc")):
        if name.isdigit():  # a process's, which may end between the listing and the lstat
            continue
        st = os.lstat(f"/proc/{name}")
        if not stat.S_ISLNK(st.st_mode) and not st.st_mode & stat.S_IROTH:
            names.append(name)
    return names


async def test_a_root_command_reads_none_of_the_hosts_root_only_proc_files(backend: DockerBackend) -> None:
    names = _root_only()
    assert "kpageflags" in names or "slabinfo" in names, names  # what this host has to hide
    script = " ".join(f"printf '%s %s\\n' {n} $(head -c 64 /proc/{n} 2>/dev/null | wc -c);" for n in names)
    code, said = await run_sh(backend, script, user="root")
    assert code == 0, said
    read = {n: int(c) for n, c in (line.split() for line in said.splitlines())}
    assert {n: c for n, c in read.items() if c} == {}, "bytes a capability-less root command read"


async def test_a_root_command_finds_no_root_only_file_below_sys_kernel(backend: DockerBackend) -> None:
    """The sysfs side: ``/sys/kernel/slab`` (every cache's counters, root-only statistics) and
    ``/sys/kernel/mm/damon`` (a monitored host pid, its address ranges) where the kernel has them."""
    code, said = await run_sh(backend, "find /sys/kernel -type f -perm -u=r ! -perm -o=r 2>/dev/null | head -5; echo found", user="root")
    assert code == 0 and said.endswith("found\n"), said
    assert said == "found\n", f"root-only files a root command reaches below /sys/kernel: {said}"
