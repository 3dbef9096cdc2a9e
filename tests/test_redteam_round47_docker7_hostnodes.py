"""Red team round 47, docker7: the host's own device nodes were in every container.

Round 17 mounted ``/dev/null``, ``zero``, ``full``, ``random``, ``urandom`` and ``tty`` in each
container as read-only binds of the *host's* nodes (so that a root command could not unlink or
chmod them before ``/dev`` was read-only). A read-only mount still takes a lock and a watch, and
both belong to the inode, which every container and the host shared: a task's ``flock``, POSIX or
OFD lock on ``/dev/zero`` was seen (blocked, or listed) by every other tenant's task and by host
processes, and held them off (a channel between tenants of one bit a node a poll, and a way to hang
a host process that locks a node); an inotify watch on ``/dev/null`` saw every open, read and
write of it on the host. Now each container's nodes are its own (runc makes them on the
container's ``/dev``), bound over themselves read-only on a root host.

``/sbin/docker-init`` too: the daemon binds its init binary, the host's file, into every container
(a watch saw every container start on the host; a lock held off every tenant). On a root host it
is covered, once docker-init runs from it, by an empty read-only file of the session's own.

A host process plays the other tenant here (the inode is the same for all).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._devnodes import DEV_NODES
from tests._docker_support import run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt47nodes"):
        yield b


@contextmanager
def _held(paths: list[str]) -> Iterator[list[str]]:
    """An exclusive ``flock`` on each host node that takes one (``/dev/tty`` needs a terminal)."""
    held = []
    with ExitStack() as stack:
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            stack.callback(os.close, fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            held.append(path)
        yield held


async def test_no_host_device_node_is_in_the_container(backend: DockerBackend, tmp_path: Path) -> None:
    nodes = sorted(DEV_NODES)
    host = {f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}:{st.st_ino}": p for p in nodes if (st := os.stat(p))}
    script = "for n in " + " ".join(nodes) + "; do printf '%s ' $n; stat -L -c '%t:%T %d:%i' $n; done"
    code, said = await run_sh(backend, script)
    assert code == 0, said
    shared = []
    for line in said.splitlines():
        name, _rdev, number = line.split()
        dev, ino = number.split(":")
        key = f"{os.major(int(dev))}:{os.minor(int(dev))}:{ino}"
        if key in host:
            shared.append(name)
    assert shared == [], f"the host's own inodes in the container: {shared}"


def _host_init() -> str:
    found = shutil.which("docker-init")
    assert found is not None, "the daemon's init binary (docker info: InitBinary docker-init)"
    return os.path.realpath(found)


async def test_docker_init_is_not_the_hosts_file(backend: DockerBackend) -> None:
    host = os.stat(_host_init())
    code, said = await run_sh(backend, "stat -L -c '%d %i' /sbin/docker-init")
    assert code == 0, said
    dev, ino = (int(v) for v in said.split())
    assert (dev, ino) != (host.st_dev, host.st_ino), "the host's init binary is in the container"


async def test_another_tenants_lock_on_a_node_is_not_seen(backend: DockerBackend) -> None:
    init = _host_init()
    with _held([*sorted(DEV_NODES), init]) as held:
        assert "/dev/null" in held and "/dev/zero" in held and init in held, held
        names = [n if n != init else "/sbin/docker-init" for n in held]
        script = "for n in " + " ".join(names) + "; do flock -n -s $n true || echo blocked $n; done; echo done"
        code, said = await run_sh(backend, script)
    assert code == 0 and said.endswith("done\n"), said
    assert "blocked" not in said, f"a task saw (and was held off by) locks outside its container: {said}"
