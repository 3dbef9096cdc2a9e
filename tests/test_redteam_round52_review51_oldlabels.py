"""Red team, round 52 (review51): an older shellrt's live container reaped on a clock step.

Round 51 judged a container's owner by its start in clock ticks (the label ``shellrt.owner-ticks``)
and left the containers of an older shellrt (no such label) judged by seconds since the epoch, which
a step of the wall clock moves (its Left): during an upgrade, with an older shellrt's session still
running beside a new one, a clock step made the new one's next start remove that live session's
container. Those seconds are now checked against a clock no step moves: the container's own first
process (docker-init, verified as that container's) started after its owner did and before any
process that took the owner's pid once it died.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker import _backend as backend_module
from sandbox.docker._gc import _reap
from sandbox.docker._labels import LABEL_OWNER_PID, LABEL_OWNER_TICKS, judge
from tests._docker_support import BUSYBOX, config, policy, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


async def test_an_older_shellrts_live_container_survives_a_clock_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): under a clock step of 1.5 s the reap (a dry run: it removes nothing)
    named this live session's container, "owner pid … is gone"."""
    require_docker()
    real_labels = backend_module.session_labels

    def older(*args: Any, **kwargs: Any) -> dict[str, str]:  # what an older shellrt labels
        return {k: v for k, v in real_labels(*args, **kwargs).items() if k != LABEL_OWNER_TICKS}

    monkeypatch.setattr(backend_module, "session_labels", older)
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        monkeypatch.undo()
        cid = backend.container_id
        client = backend._client  # the daemon, as every start's reap asks it
        assert cid is not None and client is not None
        info = await anyio.to_thread.run_sync(lambda: client.api.inspect_container(cid))
        labels = info["Config"]["Labels"]
        assert LABEL_OWNER_TICKS not in labels and labels[LABEL_OWNER_PID] == str(os.getpid())

        def reaped() -> list[str]:  # a dry run: judged as every start's reap judges, nothing removed
            return [found.id for found in _reap(client, dry_run=True) if cid.startswith(found.id)]

        assert not await anyio.to_thread.run_sync(reaped), "control: no step, the owner is alive"
        # The wall clock stepped (the kernel's btime moves with it): only psutil's view here, as in
        # round 51's test; the reap is a dry run, so other sessions' containers are judged, not touched.
        from psutil import _pslinux

        for step in (1.5, -3600.0):
            real = _pslinux.boot_time
            monkeypatch.setattr(_pslinux, "boot_time", lambda real=real, step=step: real() + step)
            gone = await anyio.to_thread.run_sync(reaped)
            monkeypatch.undo()
            assert not gone, f"a clock step of {step:g}s reaped a live older session's container"
        # Still a reap: the owner's pid held by a process that started after the container did (a
        # reused pid) is a dead owner's. A child of ours stands in for it, its start read as the
        # owner's under the step.
        later = subprocess.Popen(["sleep", "3052"])
        try:
            reused = {**labels, LABEL_OWNER_PID: str(later.pid)}
            anchor = int(
                Path(f"/proc/{info['State']['Pid']}/stat").read_bytes().rsplit(b") ", 1)[1].split()[19]
            )
            assert judge(reused, anchor_ticks=anchor).reap, "a pid reused after the container started"
        finally:
            later.kill()
            later.wait()
