"""The session zygote's warm pool: prepared namespaces serve one command each and die with their owner.

Inits are made ahead (before any command asks for them), so two properties must hold
however the pool is used: no two commands ever share a pid, mount or IPC namespace
(an init, pooled or made on request, serves one command and ends), and nothing of the
pool outlives the process that owns the session, even one killed outright (no close).
FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap, zygote_session
from tests.conftest import require
from tests.test_sandbox_bwrap import zygote_family

# Serial: a host socket any parallel test binds meanwhile retires the zygote (by design: it is
# masked only at a zygote's start), and these tests follow one zygote's inits and messages.
pytestmark = [pytest.mark.anyio, pytest.mark.bwrap, pytest.mark.serial]

#: What a command prints: its own pid (the shell is pid 2, under its init) and its namespaces.
_WHO = "echo $$ $(readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/ipc)"
#: A command that counts the System V shared memory segments of its IPC namespace, then leaves
#: one there: a namespace that served an earlier command shows that one's segment.
_LEAVE_A_SEGMENT = "ipcs -m | grep -c '^0x'; ipcmk -M 4096 >/dev/null && echo $$"


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    async with zygote_session(tmp_path) as made:
        yield made


def _namespaces(preview: str) -> tuple[str, tuple[str, ...]]:
    pid, *links = preview.split()
    assert len(links) == 3 and all(link.startswith(("pid:[", "mnt:[", "ipc:[")) for link in links), preview
    return pid, tuple(links)


async def test_no_two_commands_share_a_prepared_namespace(session: tuple[BwrapBackend, Supervisor]) -> None:
    """Back to back (more commands than the pool holds): each command's IPC namespace is empty,
    whatever the one before left in its own; side by side: no two running commands share a pid,
    mount or IPC namespace (a namespace's number is reused only once it is gone)."""
    require(shutil.which("ipcmk") is not None, "util-linux's ipcmk is not installed")
    backend, sup = session
    for _ in range(3 * backend.warm_pool + 2):
        result = await sup.run(_LEAVE_A_SEGMENT, timeout_s=10)
        assert result.preview.split() == ["0", "2"], (
            f"not a fresh IPC namespace, or not pid 2: {result.preview}"
        )
    side_by_side: list[str] = []

    async def one() -> None:
        side_by_side.append((await sup.run(f"{_WHO}; sleep 1", timeout_s=10)).preview)

    async with anyio.create_task_group() as tg:
        for _ in range(backend.warm_pool + 2):  # more than are ready: some inits made on request
            tg.start_soon(one)
    seen = [_namespaces(preview) for preview in side_by_side]
    assert [pid for pid, _ in seen] == ["2"] * len(seen), seen
    for kind in range(3):
        links = [triple[kind] for _, triple in seen]
        assert len(set(links)) == len(links), f"a namespace served two commands at once: {links}"


_OWNER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from sandbox import BwrapConfig, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from shellrt.supervisor import Supervisor
    from tests.test_sandbox_bwrap import until_count

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=Path(sys.argv[1])))
        await backend.start()
        sup = Supervisor(backend, session_dir=Path(sys.argv[2]))
        assert (await sup.run("true", timeout_s=10)).exit_code == 0
        task = await sup.start_background("sleep 1093")
        zygote = backend._zygote
        assert zygote is not None and zygote.host_pid is not None
        family = await until_count(zygote.host_pid, 2 + backend.warm_pool)  # zygote, busy init, pool
        print(zygote.host_pid, *family, flush=True)
        await anyio.sleep(3600)

    anyio.run(main)
    """
)


async def test_the_pool_dies_with_an_owner_killed_outright(tmp_path: Path) -> None:
    """SIGKILL to the owning process (no close, no cleanup code): its bwrap, zygote, running and
    pooled inits all end with it (bwrap dies with its parent, each init with the zygote)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(ws), str(tmp_path / "session")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,
    )
    try:
        assert owner.stdout is not None
        with anyio.fail_after(30):
            line = await anyio.to_thread.run_sync(owner.stdout.readline)
        pids = [int(word) for word in line.split()]
        if not pids:
            owner.kill()
            require(False, f"the owner did not start its session: {owner.communicate()[1][-2000:]}")
        bwrap_pid, family = pids[0], pids[1:]
        assert len(family) >= 3, f"zygote, busy init and at least one ready init expected: {family}"
        assert sorted(family) == zygote_family(bwrap_pid), "the family changed before the kill"
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    deadline = time.monotonic() + 10
    left = [pid for pid in (bwrap_pid, *family) if _alive(pid)]
    while left and time.monotonic() < deadline:
        await anyio.sleep(0.05)
        left = [pid for pid in left if _alive(pid)]
    assert left == [], f"outlived their owner: {left}"


def _alive(pid: int) -> bool:
    """Running (a zombie left for a reaper that is itself gone counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
