"""Red team round 37, docker: closing the control channel left the attach connection open.

The channel's descriptor was a ``dup`` of the docker SDK's socket, whose own descriptor stayed open
until the garbage collector found the SDK's response object. So ``close()`` of a session closed
nothing the daemon could see: the executor never read EOF (the "owner death ends the container"
path worked only at process exit), and an image that had filled the connection's buffers (its
``/bin/sh`` flooding stderr while the host read, then the host stopped) held dockerd's forced
removal on that connection: the container stayed "removing" for minutes, ``close()`` raised the
SDK's 120 s read timeout, and the session's host directories and uid lease were left behind
(reproduced 3 times in 5 at load ~8, the rest closed in 0.2 s after a collection had run). The
channel now owns the connection's only descriptor (``socket.detach``), and a removal the daemon
does not answer no longer skips the host directories.

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, config, container_exists, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


def _naming(target: str) -> list[int]:
    """This process's descriptors that are ``target`` (a ``socket:[inode]`` link)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == target:
                found.append(int(name))
        except OSError:
            continue
    return found


@contextmanager
def _no_collection() -> Iterator[None]:
    """No garbage collection meanwhile: what closes the connection must be shellrt, not luck."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


async def test_the_channel_owns_the_only_descriptor_of_its_connection(tmp_path: Path) -> None:
    require_docker()
    with _no_collection():
        backend = DockerBackend(config(BUSYBOX), policy(tmp_path))
        await backend.start()
        try:
            session = backend._session
            assert session is not None
            fd = session.channel._fd
            assert fd is not None
            link = os.readlink(f"/proc/self/fd/{fd}")
            assert _naming(link) == [fd], f"the attach connection {link} is open as {_naming(link)}"
            cid = backend.container_id
            assert cid is not None
            session.channel.close()
            assert _naming(link) == [], f"{link} still open after the channel closed"
            # The executor reads EOF and exits: the daemon removes the container by itself.
            with anyio.move_on_after(20):
                while await anyio.to_thread.run_sync(container_exists, cid):
                    await anyio.sleep(0.2)
            assert not container_exists(cid), "the channel closed but the container lives on"
        finally:
            await backend.close()
