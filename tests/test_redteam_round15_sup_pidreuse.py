"""Red team, round 15: a kill after the command's root was reaped must not reach whoever got its pid.

`sandbox._proctree.ProcessTree` killed the run's process group with ``killpg(root_pid)`` and
recorded "descendants" as the children of whatever process had ``root_pid`` -- also after the
root had exited and been reaped. A command whose shell exits while a ``setsid`` child keeps the
output pipe open (the foreground drain, ~1 s, then a tree kill), a timeout that fires as the
command ends, a TaskStop of a task that just ended: each sent SIGKILL to the process group whose
id was the root's old pid. Pids are reused (``pid_max`` is 32768 here): an unrelated host process
group led by a process that got the number was killed.

The race is forced, not waited for: as root the test writes ``/proc/sys/kernel/ns_last_pid`` so
the next fork gets the reaped root's pid (retried when another fork on the machine comes first).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox._proctree import ProcessTree
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _can_place_pids() -> bool:
    return os.geteuid() == 0 and os.access(NS_LAST_PID, os.W_OK)


def _place(pid: int, argv: list[str], *, within_s: float = 2.5) -> subprocess.Popen[bytes] | None:
    """Start ``argv`` as a session leader whose pid is ``pid``: None when other forks kept winning,
    or at once when another process already holds the pid (CI's other workers fork all the time, so
    the reaped pid can be a live host process's before the test gets to it: the caller tries its
    scenario again with a new pid)."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not _gone(pid):
            return None
        with open(NS_LAST_PID, "w") as f:
            f.write(str(pid - 1))
        proc = subprocess.Popen(argv, start_new_session=True)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def _require_pid_placement() -> None:
    if os.geteuid() != 0:
        pytest.skip("placing a process at a chosen pid needs root (ns_last_pid)")
    if not _can_place_pids():
        if os.environ.get("CI") == "true":
            pytest.fail("needs root and a writable ns_last_pid to force pid reuse")
        pytest.skip("needs root and a writable ns_last_pid to force pid reuse")


def test_a_tree_whose_root_was_reaped_never_signals_the_pids_new_owner() -> None:
    """`kill_group`/`kill_all` after the root's reap: the new group leader at that pid (and its
    own child, which `record` would adopt as a descendant) live on."""
    _require_pid_placement()
    for _attempt in range(8):  # another fork on the machine may take the pid first: try anew
        root = subprocess.Popen(["sleep", "0.05"], start_new_session=True)
        tree = ProcessTree(root.pid, f"rt15-{secrets.token_hex(4)}")
        root.wait()
        victim = _place(root.pid, ["sh", "-c", "sleep 30 & wait"])
        if victim is not None:
            break
    else:
        pytest.fail("could not place a process at the reaped root's pid in 8 tries")
    try:
        time.sleep(0.05)  # its child forked
        tree.kill_group()
        tree.kill_all(deadline_s=0.3)
        time.sleep(0.05)
        assert victim.poll() is None, "the unrelated process that got the root's pid was killed"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()


@pytest.fixture(params=["reaper", "cgroup"])
async def supervisor(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Supervisor]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=workspace))
    backend.session_cgroup = request.param == "cgroup"
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        yield sup


@pytest.mark.anyio
async def test_the_drain_sweep_after_the_shell_exited_spares_the_pids_new_owner(
    supervisor: Supervisor, tmp_path: Path
) -> None:
    """A task's shell exits while a ``setsid`` child holds its output, in a busy session (another
    task runs, so leftovers are not swept at once): ~1 s later the tree kill came, the shell long
    reaped. A host process group placed at the shell's pid meanwhile was killed."""
    _require_pid_placement()
    pidfile = tmp_path / "root.pid"
    token = f"{secrets.randbelow(9000) + 1000}.{secrets.randbelow(10**6):06d}"
    placed: list[subprocess.Popen[bytes]] = []
    busy = await supervisor.start_background("sleep 30")
    try:
        # Placing a process at the reaped pid loses to CI's other workers now and then (another
        # fork takes the pid first): the scenario is tried again with a new shell, a few times.
        for _attempt in range(8):
            pidfile.unlink(missing_ok=True)
            task = await supervisor.start_background(f"echo $$ > {pidfile}; setsid sleep {token} & exit 0")
            while not pidfile.exists() or not pidfile.read_text().strip():
                await anyio.sleep(0.005)
            pid = int(pidfile.read_text())
            while not _gone(pid):
                await anyio.sleep(0.005)
            proc = await anyio.to_thread.run_sync(_place, pid, ["sleep", "30"])
            if proc is not None:
                break
            await supervisor.tasks.wait(task.id)
        else:
            pytest.fail("could not place a process at the reaped shell's pid in 8 tries")
        placed.append(proc)
        ended = await supervisor.tasks.wait(task.id)
        assert ended.exit_code == 0, ended
        time.sleep(0.05)
        assert proc.poll() is None, "the host process that got the shell's pid was killed"
    finally:
        await supervisor.tasks.stop(busy.id)
        for proc in placed:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.anyio
async def test_the_session_cgroups_kill_spares_a_member_pid_reused_since_the_listing(
    tmp_path: Path,
) -> None:
    """`SessionCgroup.kill_members` listed the members, then ``kill(pid)`` each: a member that
    exited in between is reaped by init and its pid may be a host process's by the kill. The
    listing is made stale on purpose (a member that ended and whose pid a host process took)."""
    _require_pid_placement()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=workspace))
    backend.session_cgroup = True
    async with backend:
        cgroup = backend._runner.session_cgroup
        if cgroup is None:
            pytest.fail("no session cgroup (root with an owner cgroup expected)")
        for _attempt in range(8):  # another fork on the machine may take the pid first: try anew
            member = cgroup.start(lambda: subprocess.Popen(["sleep", "0.02"]))
            member.wait()
            cgroup.ended(member.pid)
            victim = _place(member.pid, ["sleep", "30"])
            if victim is not None:
                break
        else:
            pytest.fail("could not place a process at an ended member's pid in 8 tries")
        stale = [member.pid]
        real = cgroup.members
        calls = iter([stale])
        cgroup.members = lambda: next(calls, None) or real()  # type: ignore[method-assign]
        try:
            assert cgroup.kill_members(deadline_s=1.0)
            time.sleep(0.05)
            assert victim.poll() is None, "a host process that got a former member's pid was killed"
        finally:
            victim.kill()
            victim.wait()


def _alive_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.anyio
async def test_what_the_command_left_in_its_group_still_dies_with_it(supervisor: Supervisor) -> None:
    """The safe group kill keeps its reach: a same-group leftover without the marker (``env -i``)
    in a busy session (no idle sweep) dies when its command ends, though the root is reaped."""
    token = f"{secrets.randbelow(9000) + 1000}.{secrets.randbelow(10**6):06d}"
    busy = await supervisor.start_background("sleep 30")
    try:
        result = await supervisor.run(f"env -i sleep {token} >/dev/null 2>&1 & exit 0", timeout_s=20)
        assert result.exit_code == 0, result
        end = time.monotonic() + 10.0  # ends when it is gone; a survivor fails (2 s: a loaded lane's kill)
        while _alive_with(token) and time.monotonic() < end:
            await anyio.sleep(0.02)
        assert not _alive_with(token), "the command's group leftover outlived it"
    finally:
        await supervisor.tasks.stop(busy.id)
        for pid in _alive_with(token):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


class _Owner:
    """A stand-in for the Runtime a `LeftoverTasks` watches (weakly referenced)."""


@pytest.mark.anyio
async def test_a_task_noted_after_its_shell_was_reaped_is_not_noted_as_the_pids_new_owner(
    supervisor: Supervisor, tmp_path: Path
) -> None:
    """A dropped Runtime kills its tasks' noted processes (`LeftoverTasks`), a reopened session
    those recorded in ``tasks.json`` (`TaskRegistry`): both took the pid's start time whenever the
    session changed, also after the task's shell was reaped (the task still "running" while its
    output drains). A host process placed at that pid was noted, and killed with its group."""
    from shellrt.runtime.leftovers import LeftoverTasks
    from shellrt.runtime.task_registry import TaskRegistry

    _require_pid_placement()
    pidfile = tmp_path / "root.pid"
    token = f"{secrets.randbelow(9000) + 1000}.{secrets.randbelow(10**6):06d}"
    busy = await supervisor.start_background("sleep 30")
    victim: subprocess.Popen[bytes] | None = None
    try:
        # The task drains for 1 s after its shell exits (then its strays are swept and it ends):
        # placing a process at the pid took longer at CI's load (CI56), so the scenario is tried
        # again until the placement lands while the task still drains.
        # A placement that another fork on the machine won (the pid taken first) is tried again
        # the same way.
        for _attempt in range(8):
            pidfile.unlink(missing_ok=True)
            task = await supervisor.start_background(f"echo $$ > {pidfile}; setsid sleep {token} & exit 0")
            while not pidfile.exists() or not pidfile.read_text().strip():
                await anyio.sleep(0.005)
            pid = int(pidfile.read_text())
            while not _gone(pid):
                await anyio.sleep(0.005)
            victim = await anyio.to_thread.run_sync(_place, pid, ["sleep", "30"])
            if victim is None:
                continue
            if supervisor.tasks.get(task.id).status.value == "running":  # still draining
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()
            victim = None
        else:
            pytest.fail("in 8 tries, no process was placed at the shell's pid while its task still drained")
        owner = _Owner()
        leftovers = LeftoverTasks(owner)
        leftovers.note(supervisor.tasks)
        registry = TaskRegistry(tmp_path / "reg", supervisor.tasks)
        (tmp_path / "reg").mkdir()
        registry.save()
        recorded = {
            r["task"]["id"]: r["process"]
            for r in __import__("json").loads((tmp_path / "reg" / "tasks.json").read_text())["tasks"]
        }
        assert recorded[task.id] is None or recorded[task.id]["pid"] != pid, recorded[task.id]
        leftovers.kill()
        time.sleep(0.05)
        assert victim.poll() is None, "the host process that got the task's pid was killed"
    finally:
        await supervisor.tasks.stop(busy.id)
        if victim is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()
