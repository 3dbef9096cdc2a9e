"""Docker containers started by a root host in copy mode run their commands under a leased uid of their own.

Every container's commands used to run as uid 65534: one host uid for all, so
the kernel's per-user limits (inotify instances, pipe pages, processes) were
shared by every container and with the host's own ``nobody``. Real containers
(FAIL, not skip, under CI=true): distinct uids, the workspace copy owned by the
session's uid, a container holding every inotify instance and pipe page of its
uid leaves another untouched (while two containers on one configured ``user``
show the starvation), and the lease is freed with the container.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from sandbox._uid_lease import DEFAULT_POOL_SIZE, DEFAULT_POOL_START, lease_uid
from sandbox.docker import DockerBackend
from shellrt.supervisor import Supervisor
from tests._docker_support import DEBIAN, config, policy, require_docker
from tests._ucount_probe import build_probe
from tests._uid_leases import lease_file_free, output_of
from tests.conftest import require
from tests.test_session_uid import hog_then_ask

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Test-only uids above the default pool and the bwrap suite's (no session leases them).
SPARE = DEFAULT_POOL_START + DEFAULT_POOL_SIZE + 100


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_probe(tmp_path_factory.mktemp("probe"))


class Containers:
    """Started copy-mode docker backends with a Supervisor each, all closed on exit."""

    def __init__(self, stack: AsyncExitStack, tmp: Path) -> None:
        self.stack, self.tmp, self.count = stack, tmp, 0

    async def open(self, probe: Path | None = None, **kw: object) -> tuple[DockerBackend, Supervisor]:
        self.count += 1
        ws = self.tmp / f"ws{self.count}"
        ws.mkdir()
        if probe is not None:
            shutil.copy2(probe, ws / "probe")
        backend = DockerBackend(config(DEBIAN, **kw), policy(ws))
        self.stack.push_async_callback(backend.close)
        await backend.start()
        sup = Supervisor(backend, session_dir=self.tmp / f"session{self.count}")
        self.stack.push_async_callback(sup.close)
        return backend, sup


@pytest.fixture
async def containers(tmp_path: Path) -> AsyncIterator[Containers]:
    require_docker()
    require(os.geteuid() == 0, "leased container uids are a root host's (CI runs as root)")
    async with AsyncExitStack() as stack:
        yield Containers(stack, tmp_path)


async def test_concurrent_containers_run_under_distinct_leased_uids(containers: Containers) -> None:
    opened = [await containers.open(), await containers.open()]
    seen: list[int] = []
    for backend, sup in opened:
        uid, gid = (int(v) for v in (await output_of(sup, "id -u; id -g; touch made")).split())
        assert uid == gid and backend.command_ids == (uid, gid) and backend.user == f"{uid}:{gid}"
        assert DEFAULT_POOL_START <= uid < DEFAULT_POOL_START + DEFAULT_POOL_SIZE
        assert not lease_file_free(uid)
        made = backend.to_host_path("/workspace/made")
        assert made is not None and os.stat(made).st_uid == uid  # the copy is the session uid's
        seen.append(uid)
    assert seen[0] != seen[1]
    for backend, _sup in opened:
        await backend.close()
    assert all(lease_file_free(uid) for uid in seen)


@pytest.mark.parametrize("shared", [False, True], ids=["leased", "one-configured-user"])
async def test_a_container_exhausting_per_user_limits_leaves_another_untouched(
    containers: Containers, probe: Path, shared: bool
) -> None:
    """Leased: B gets an inotify instance and a grown pipe while A holds all its uid may have.
    Two containers on one configured user (as every container on uid 65534 was): B starved of pipe
    pages and queues; neither gets inotify (a shared uid, red team round 22)."""
    held = lease_uid(SPARE, 1, widen="-") if shared else None
    try:
        kw: dict[str, object] = {"user": f"{held.uid}:{held.gid}"} if held is not None else {}
        _, sup_a = await containers.open(probe, **kw)
        _, sup_b = await containers.open(probe, **kw)
        hog, b_inotify, b_pipe, b_mqueue = await hog_then_ask(sup_a, sup_b, "./probe")
    finally:
        if held is not None:
            held.release()
    instances, why, pipes, pipe_why, queues, queue_why = hog.split()
    assert int(queues) > 0 and queue_why == "EMFILE", hog  # RLIMIT_MSGQUEUE, counted per uid
    assert int(pipes) > 0 and pipe_why == "EPERM", hog
    if shared:
        # A uid the host shares gets no inotify at all (priv's second filter, red team round 22).
        assert (instances, why, b_inotify) == ("0", "ENOSYS", "ENOSYS"), (hog, b_inotify)
        assert (b_pipe.split()[1], b_mqueue) == ("EPERM", "EMFILE"), (b_pipe, b_mqueue)
    else:
        assert int(instances) > 0 and why == "EMFILE", hog
        assert (b_inotify, b_pipe, b_mqueue) == ("ok", "65536 ok", "ok"), (b_inotify, b_pipe, b_mqueue)


async def test_bind_mode_leases_too_and_keeps_the_workspace_owners_on_disk(containers: Containers) -> None:
    """Bind mode (red team round 8): a leased uid over an idmapped workspace, files stay the owner's."""
    backend, sup = await containers.open(workspace_mode="bind")
    ws = backend.policy.workspace
    owner = os.stat(ws)
    assert backend._lease is not None
    assert await output_of(sup, "id -u; touch made") == str(backend._lease.uid)
    assert os.stat(ws / "made").st_uid == owner.st_uid
