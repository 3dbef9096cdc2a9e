"""The spawner of per-command bwraps for a root caller: unprivileged, unreachable, fail-closed.

One bwrap per command, run as root, is started by a spawner process (in the
holder's mount namespace) instead of ``prlimit`` + ``nsenter`` exec'd per
command. The spawner runs on the host, so these probes check it holds nothing a
command could use: it is the sandbox uid with no capability, no groups, no core
dumps, not dumpable; commands cannot see or signal it; killing it leaves the
commands running as the sandbox uid (FAILS, not skips, under CI=true).
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._proctree import pids_with_marker
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import supervised
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]


@pytest.fixture
async def per_command(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(os.geteuid() == 0, "the spawner serves a root caller only (CI runs as root)")
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        yield backend, sup


def _spawner_pid(backend: BwrapBackend) -> int:
    spawner = backend._spawner
    assert spawner is not None and spawner.alive, "as root, per command runs through the spawner"
    pid = spawner.host_pid
    assert pid is not None
    return pid


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


async def test_the_spawner_holds_no_privilege(per_command: tuple[BwrapBackend, Supervisor]) -> None:
    backend, _sup = per_command
    pid = _spawner_pid(backend)
    status = _status(pid)
    assert backend.sandbox_ids is not None  # the session's leased uid and gid
    uid, gid = map(str, backend.sandbox_ids)
    assert status["Uid"].split() == [uid] * 4
    assert status["Gid"].split() == [gid] * 4
    assert status["Groups"] == ""
    for caps in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[caps], 16) == 0, (caps, status[caps])
    # Not dumpable: its /proc files stay root's although it runs as the sandbox uid.
    assert os.stat(f"/proc/{pid}/mem").st_uid == 0
    core = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if "core" in line)
    # 1 byte (round 14): no core file, and unlike 0 no core_pattern pipe handler either.
    assert core.split()[4:6] == ["1", "1"], core


async def test_commands_under_the_spawner_keep_every_hardening(
    per_command: tuple[BwrapBackend, Supervisor],
) -> None:
    backend, sup = per_command
    pid = _spawner_pid(backend)
    result = await sup.run(
        f"id -u; ulimit -c -H; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; "
        f"ls /proc/self/fd; kill -0 {pid} 2>&1 || echo no-spawner",
        timeout_s=20,
    )
    assert result.exit_code == 0, result.preview
    lines = result.preview.split()
    assert backend.sandbox_ids is not None and lines[0] == str(backend.sandbox_ids[0])
    assert lines[1] == "0"  # no core dumps, and no way to raise the limit
    status = dict(zip(lines[2:10:2], lines[3:10:2], strict=True))
    assert int(status["CapEff:"], 16) == 0 and int(status["CapBnd:"], 16) == 0
    assert status["NoNewPrivs:"] == "1" and status["Seccomp:"] == "2"
    # stdio and the fd ls opened for itself: not the spawner's bwrap fds (seccomp, json status).
    assert lines[10:14] == ["0", "1", "2", "3"]
    assert lines[-1] == "no-spawner"  # not in the command's pid namespace: cannot be signalled


async def test_a_killed_command_leaves_nothing(per_command: tuple[BwrapBackend, Supervisor]) -> None:
    backend, sup = per_command
    helpers = set(pids_with_marker(backend.marker_prefix, prefix=True))  # the holder and the spawner
    result = await sup.run("setsid sleep 300 & sleep 300", timeout_s=1)
    assert result.exit_code != 0
    assert set(pids_with_marker(backend.marker_prefix, prefix=True)) == helpers  # no bwrap, no sleep left
    after = await sup.run("echo still", timeout_s=20)
    assert after.exit_code == 0 and after.preview.strip() == "still"


async def test_without_its_spawner_commands_still_run_unprivileged(
    per_command: tuple[BwrapBackend, Supervisor],
) -> None:
    """Fail closed: a dead spawner makes commands start through ``nsenter --setuid`` again."""
    backend, sup = per_command
    os.kill(_spawner_pid(backend), signal.SIGKILL)
    spawner = backend._spawner
    assert spawner is not None
    with anyio.fail_after(10):
        while spawner.alive:
            await anyio.sleep(0.05)
    result = await sup.run("id -u; ulimit -c -H", timeout_s=20)
    assert result.exit_code == 0, result.preview
    assert backend.sandbox_ids is not None
    assert result.preview.split() == [str(backend.sandbox_ids[0]), "0"]
