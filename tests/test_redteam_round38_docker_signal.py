"""Red team round 38, docker: a command spelled "killed by a signal" with its own exit code.

The runner reported the helper's ``$?``, and the host read any exit code from 129 to 159 as a death
by signal ``rc - 128``: a command's ``exit 137`` came back as ``signal=9`` (a background task's
record then says "killed by signal SIGKILL sent from outside shellrt", `TaskStatus.KILLED`), and
while any other command of the container was OOM-killed, as ``oom_killed`` too. bwrap and local
take the signal from ``waitpid``. The helper (priv.c) knows: it now writes how the command ended
into the runner's file no command can open, and the X event carries a signal only when it said so.

A real container (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_ENV = {"PATH": "/bin:/usr/bin"}


@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
async def test_an_exit_code_is_not_a_signal(tmp_path: Path, image: str) -> None:
    require_docker()
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        seen = {}
        for script in ("exit 137", "exit 143", "exit 129", "exit 159", "sh -c 'kill -9 $$'; exit $?"):
            proc = await backend.exec(ExecRequest(argv=("sh", "-c", script), cwd="/workspace", env=_ENV))
            status = await proc.wait()
            seen[script] = (status.exit_code, status.signal, status.oom_killed)
        assert seen == {
            "exit 137": (137, None, False),
            "exit 143": (143, None, False),
            "exit 129": (129, None, False),
            "exit 159": (159, None, False),
            # its child was killed; the command itself exited with that child's $?
            "sh -c 'kill -9 $$'; exit $?": (137, None, False),
        }, seen


@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
async def test_a_death_by_signal_is_still_one(tmp_path: Path, image: str) -> None:
    require_docker()
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        seen = {}
        for sig in ("TERM", "KILL", "SEGV", "HUP"):
            proc = await backend.exec(
                ExecRequest(argv=("sh", "-c", f"kill -{sig} $$"), cwd="/workspace", env=_ENV)
            )
            status = await proc.wait()
            seen[sig] = (status.exit_code, status.signal)
        assert seen == {"TERM": (143, 15), "KILL": (137, 9), "SEGV": (139, 11), "HUP": (129, 1)}, seen
