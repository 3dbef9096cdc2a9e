"""Red team round 51 (docker11): a live session's container taken for a dead owner's
(docs/security.md, "Red team, round 51: docker11").

Every backend start on the host reaps the containers of dead owners by their labels. An owner was
judged alive by its start time in seconds since the epoch, which psutil derives from the kernel's
``btime``: a step of the wall clock (NTP, a VM resumed; or a few milliseconds across a whole second
of ``btime``) moved it, a live owner's recorded start no longer matched (within 1 s), and the next
start anywhere on the host removed every live session's container (its command's wait then
returned at once: the failure CI saw in ``test_faking_completion_does_not_escape_the_timeout``
is one such shape). The start is now compared in clock ticks since boot, which no clock step moves;
a process this one may not look at is "cannot tell" (kept), never "gone".
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import psutil
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._labels import LABEL_OWNER_PID, LABEL_OWNER_TICKS, judge
from tests._docker_support import BUSYBOX, config, policy, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


async def test_a_clock_step_does_not_make_a_live_owner_dead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        cid = backend.container_id
        assert cid is not None
        client = backend._client  # the daemon's labels, as every start's reap reads them
        assert client is not None
        info = await anyio.to_thread.run_sync(lambda: client.api.inspect_container(cid))
        labels = info["Config"]["Labels"]
        assert judge(labels).reap is False
        # The wall clock stepped after the start (the kernel's btime moves with it; no process's
        # start in ticks since boot does). Only this judgement sees the step: the real reap is
        # not run here, it would judge every other live container on the daemon the same way.
        from psutil import _pslinux

        for step in (1.0, -1.0, 3600.0):
            real = _pslinux.boot_time
            monkeypatch.setattr(_pslinux, "boot_time", lambda real=real, step=step: real() + step)
            verdict = judge(labels)
            monkeypatch.undo()
            assert verdict.reap is False, f"a clock step of {step:g}s: {verdict.reason}"
        # Still exact: the same pid with another start (a recycled pid) is a dead owner's.
        assert labels[LABEL_OWNER_PID] == str(os.getpid())
        recycled = {**labels, LABEL_OWNER_TICKS: str(int(labels[LABEL_OWNER_TICKS]) + 1)}
        assert judge(recycled).reap is True
        # An owner this process may not look at is not known dead (an older shellrt's labels,
        # judged through psutil): kept, not reaped on a guess.
        older = {k: v for k, v in labels.items() if k != LABEL_OWNER_TICKS}
        assert judge(older).reap is False

        def denied(pid: int) -> psutil.Process:
            raise psutil.AccessDenied(pid)

        monkeypatch.setattr(psutil, "Process", denied)
        assert judge(older).reap is False
