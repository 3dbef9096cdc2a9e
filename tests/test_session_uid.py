"""Each root-run bwrap session runs its commands under a uid of its own (`sandbox._uid_lease`).

The kernel counts inotify instances, pipe pages, processes and more per uid:
sessions that shared one sandbox uid shared those limits, and one session's
command could exhaust them for all. These tests run real bubblewrap sessions
as root (FAIL, not skip, under CI=true): concurrent sessions get distinct uids;
a session holding every inotify instance and pipe page of its uid leaves
another session able to make them (and the same two sessions on one fixed
``sandbox_uid`` -- the old default -- show the starvation); a killed holder's
lease is reclaimed (its leftover processes killed); a full pool says which
setting widens it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, BwrapConfig, DockerConfig, ExecRequest, SandboxPolicy
from sandbox._uid_lease import (
    DEFAULT_POOL_SIZE,
    DEFAULT_POOL_START,
    LEASE_DIR,
    UidPoolExhaustedError,
    _pids_of,
    lease_uid,
)
from sandbox.bwrap import BwrapBackend
from shellrt.batch import Task
from shellrt.batch.floor import TaskFloor, TaskRefused
from shellrt.supervisor import Supervisor
from tests._ucount_probe import build_probe
from tests._uid_leases import lease_file_free, output_of
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

#: Test-only uids just above the default pool (still in the range systemd leaves unused):
#: no real session leases them, so a test's own lease of one cannot race a session's.
SPARE = DEFAULT_POOL_START + DEFAULT_POOL_SIZE


def _require_root_bwrap() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(os.geteuid() == 0, "per-session uids are a root caller's (CI runs as root)")


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_probe(tmp_path_factory.mktemp("probe"))


class Sessions:
    """Started bwrap backends with a Supervisor each, all closed on exit."""

    def __init__(self, stack: AsyncExitStack, tmp: Path) -> None:
        self.stack, self.tmp, self.count = stack, tmp, 0

    async def open(self, config: BwrapConfig, probe: Path | None = None) -> tuple[BwrapBackend, Supervisor]:
        self.count += 1
        ws = self.tmp / f"ws{self.count}"
        ws.mkdir()
        if probe is not None:
            shutil.copy2(probe, ws / "probe")
        backend = BwrapBackend(config, SandboxPolicy(workspace=ws))
        try:
            await backend.start()
        except BackendUnavailableError as exc:
            require(False, f"bwrap unusable here: {exc}")
        self.stack.push_async_callback(backend.close)
        sup = Supervisor(backend, session_dir=self.tmp / f"session{self.count}")
        self.stack.push_async_callback(sup.close)
        return backend, sup


@pytest.fixture
async def sessions(tmp_path: Path) -> AsyncIterator[Sessions]:
    _require_root_bwrap()
    async with AsyncExitStack() as stack:
        yield Sessions(stack, tmp_path)


async def test_concurrent_sessions_run_under_distinct_leased_uids(sessions: Sessions) -> None:
    opened = [
        await sessions.open(BwrapConfig(persistent=True)),
        await sessions.open(BwrapConfig(persistent=True)),
        await sessions.open(BwrapConfig(persistent=False)),  # one bwrap per command: leased too
    ]
    seen: list[int] = []
    for backend, sup in opened:
        uid, gid = (int(v) for v in (await output_of(sup, "id -u; id -g")).split())
        assert backend.sandbox_ids == (uid, gid) and uid == gid
        assert DEFAULT_POOL_START <= uid < DEFAULT_POOL_START + DEFAULT_POOL_SIZE
        assert not lease_file_free(uid)
        assert (LEASE_DIR / str(uid)).read_text().strip() == str(os.getpid())
        # Files the command makes in the workspace land owned by the workspace's owner (idmapped);
        # in its /tmp they are the leased uid's (removed with the session).
        await output_of(sup, "echo hi > made; echo hi > /tmp/made")
        ws = backend.policy.workspace
        assert (os.stat(ws / "made").st_uid, os.stat(ws / "made").st_gid) == (
            os.stat(ws).st_uid,
            os.stat(ws).st_gid,
        )
        assert backend.session_tmp is not None
        assert os.stat(backend.session_tmp / "made").st_uid == uid
        seen.append(uid)
    assert len(set(seen)) == len(seen), seen
    for backend, _sup in opened:
        await backend.close()
    assert all(lease_file_free(uid) for uid in seen)


async def test_a_fixed_sandbox_uid_is_kept_for_every_session(sessions: Sessions) -> None:
    """Backward compatible: an operator's fixed ``sandbox_uid`` is used as is (and shared)."""
    held = lease_uid(SPARE, 1, widen="-")  # no session of the pool can have it meanwhile
    try:
        config = BwrapConfig(sandbox_uid=held.uid)
        (_, one), (two_backend, two) = await sessions.open(config), await sessions.open(config)
        assert (
            await output_of(one, "id -u; id -g")
            == await output_of(two, "id -u; id -g")
            == f"{held.uid}\n{held.uid}"
        )
        assert two_backend.sandbox_ids == (held.uid, held.uid)
    finally:
        held.release()


@pytest.mark.parametrize(
    ("shared", "persistent"),
    [(False, True), (False, False), (True, True)],
    ids=["leased", "leased-per-command", "one-fixed-uid"],
)
async def test_a_session_exhausting_per_user_limits_leaves_another_untouched(
    sessions: Sessions, probe: Path, shared: bool, persistent: bool
) -> None:
    """Session A takes every inotify instance, pipe page and message-queue byte its uid may have,
    then B asks for one of each.

    Leased (the default): B has its own uid and gets them. On one fixed uid
    (what every root session did before, ``sandbox_uid=2000000000``) B is starved:
    EMFILE for inotify, EPERM for a grown pipe, EMFILE for a message queue -- what the
    leases stop.
    """
    held = lease_uid(SPARE + 1, 1, widen="-") if shared else None
    try:
        config = BwrapConfig(persistent=persistent, sandbox_uid=held.uid if held is not None else None)
        _, sup_a = await sessions.open(config, probe)
        _, sup_b = await sessions.open(config, probe)
        hog, b_inotify, b_pipe, b_mqueue = await hog_then_ask(sup_a, sup_b, "./probe")
    finally:
        if held is not None:
            held.release()
    instances, why, pipes, pipe_why, queues, queue_why = hog.split()
    assert int(queues) > 0 and queue_why == "EMFILE", hog  # RLIMIT_MSGQUEUE, counted per uid
    assert int(instances) > 0 and why == "EMFILE", hog  # A really took them all
    assert int(pipes) > 0 and pipe_why == "EPERM", hog
    if shared:
        assert b_inotify == "EMFILE", b_inotify
        assert b_pipe.split()[1] == "EPERM", b_pipe
        assert b_mqueue == "EMFILE", b_mqueue
    else:
        assert b_inotify == "ok", b_inotify
        assert b_pipe == "65536 ok", b_pipe
        assert b_mqueue == "ok", b_mqueue


async def hog_then_ask(sup_a: Supervisor, sup_b: Supervisor, probe: str) -> tuple[str, str, str, str]:
    """A holds every inotify instance, pipe page and message-queue byte of its uid while B asks for
    one of each: (what A got, B's inotify, pipe and message-queue answers)."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(sup_a.run, f"{probe} hog /tmp/hog.count /tmp/hog.stop", timeout_s=90))
        hog = ""
        with anyio.fail_after(60):
            while not hog:
                result = await sup_a.run("cat /tmp/hog.count 2>/dev/null || true", timeout_s=30)
                hog = result.preview.strip()
                if not hog:
                    await anyio.sleep(0.1)
        try:
            b_inotify = await output_of(sup_b, f"{probe} inotify")
            b_pipe = await output_of(sup_b, f"{probe} pipe")
            b_mqueue = await output_of(sup_b, f"{probe} mqueue")
        finally:
            await sup_a.run("touch /tmp/hog.stop", timeout_s=30)
    return hog, b_inotify, b_pipe, b_mqueue


#: Leases ``argv[1]`` (a pool of one) and starts a process running as that uid, as a session's
#: command would be; prints the latter's pid and waits to be killed.
_HOLDER = """
import os, sys, time
from sandbox._uid_lease import lease_uid
lease = lease_uid(int(sys.argv[1]), 1, widen="-")
pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setresgid(lease.gid, lease.gid, lease.gid); os.setresuid(lease.uid, lease.uid, lease.uid)
    os.execv("/bin/sleep", ["sleep", "300"])  # the lease fd is close-on-exec: only the holder has it
while open(f"/proc/{pid}/comm").read().strip() != "sleep":  # exec'd: the fork's copy of the lock fd is closed
    time.sleep(0.001)
print(pid, flush=True)
time.sleep(300)
"""


def test_a_killed_holders_lease_is_reclaimed_and_its_leftovers_killed() -> None:
    require(os.geteuid() == 0, "leases are a root caller's (CI runs as root)")
    uid = SPARE + 2
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(uid)], stdout=subprocess.PIPE, env=env)
    leftover = 0
    try:
        assert holder.stdout is not None
        leftover = int(holder.stdout.readline())
        with pytest.raises(UidPoolExhaustedError, match="uid_pool_size"):
            lease_uid(uid, 1, widen="uid_pool_size")  # a live holder has it
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        lease = lease_uid(uid, 1, widen="uid_pool_size")
        try:
            assert lease.uid == uid and lease.reclaimed
            assert _gone(leftover), "the dead session's process under the uid must be killed"
        finally:
            lease.release()
        again = lease_uid(uid, 1, widen="uid_pool_size")  # released cleanly: nothing to reclaim
        assert not again.reclaimed
        again.release()
    finally:
        holder.kill()
        holder.wait(timeout=30)
        if leftover and not _gone(leftover):
            os.kill(leftover, signal.SIGKILL)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


async def test_an_exhausted_pool_is_refused_naming_the_setting(tmp_path: Path) -> None:
    _require_root_bwrap()
    uid = SPARE + 3
    held = lease_uid(uid, 1, widen="-")
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(uid_pool_start=uid, uid_pool_size=1), SandboxPolicy(workspace=ws))
    try:
        with pytest.raises(UidPoolExhaustedError) as caught:
            await backend.start()
        message = str(caught.value)
        assert "BwrapConfig.uid_pool_size" in message and f"{uid}..{uid}" in message, message
        assert isinstance(caught.value, BackendUnavailableError)  # a backend error the callers know
    finally:
        held.release()
        await backend.close()
    # Freed: the same pool serves a session now.
    again = BwrapBackend(BwrapConfig(uid_pool_start=uid, uid_pool_size=1), SandboxPolicy(workspace=ws))
    await again.start()
    try:
        assert again.sandbox_ids == (uid, uid)
    finally:
        await again.close()


def test_ids_an_account_or_a_subuid_range_uses_are_skipped(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "leases are a root caller's (CI runs as root)")
    base = SPARE + 10
    (tmp_path / "passwd").write_text(f"root:x:0:0::/root:/bin/sh\nsvc:x:{base}:{base}::/:/bin/false\n")
    (tmp_path / "group").write_text(f"grp:x:{base + 1}:\n")
    (tmp_path / "subuid").write_text(f"alice:{base + 2}:5\n")
    (tmp_path / "subgid").write_text(f"alice:{base + 7}:1\n")
    for _ in range(5):  # whatever the random first try, only base+8 is free
        lease = lease_uid(base, 9, widen="-", etc=tmp_path)
        try:
            assert lease.uid == base + 8
        finally:
            lease.release()
    with pytest.raises(UidPoolExhaustedError):
        lease_uid(base, 8, widen="-", etc=tmp_path)


def test_a_read_only_lease_directory_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "leases are a root caller's (CI runs as root)")
    frozen = tmp_path / "frozen"
    frozen.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,mode=700", "tmpfs", str(frozen)], check=True)
    try:
        with pytest.raises(BackendUnavailableError, match="writable file system.*sandbox_uid"):
            lease_uid(SPARE + 21, 1, widen="-", directory=frozen)
    finally:
        subprocess.run(["umount", str(frozen)], check=True)


def test_a_lease_directory_others_could_write_is_refused(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "leases are a root caller's (CI runs as root)")
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    with pytest.raises(BackendUnavailableError, match="not root's own"):
        lease_uid(SPARE + 20, 1, widen="-", directory=loose)
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 1000, 1000)
    with pytest.raises(BackendUnavailableError, match="not root's own"):
        lease_uid(SPARE + 20, 1, widen="-", directory=theirs)
    link = tmp_path / "link"
    link.symlink_to(theirs)
    with pytest.raises(BackendUnavailableError, match="cannot open"):
        lease_uid(SPARE + 20, 1, widen="-", directory=link)
    made = tmp_path / "made"
    lease_uid(SPARE + 20, 1, widen="-", directory=made).release()
    assert made.stat().st_mode & 0o777 == 0o700 and made.stat().st_uid == 0


def test_config_keeps_the_fixed_uid_and_refuses_a_lone_gid_or_an_overflowing_pool() -> None:
    assert BwrapConfig().sandbox_uid is None  # leased by default
    assert BwrapConfig(sandbox_uid=1234, sandbox_gid=99).sandbox_gid == 99
    with pytest.raises(ValueError, match="sandbox_gid needs a fixed sandbox_uid"):
        BwrapConfig(sandbox_gid=99)
    with pytest.raises(ValueError, match="below 4294967295"):
        BwrapConfig(uid_pool_start=2**32 - 10, uid_pool_size=100)
    # A fixed uid a session could lease as well would be shared after all: refused.
    with pytest.raises(ValueError, match="lies in the uid lease pool"):
        BwrapConfig(sandbox_uid=DEFAULT_POOL_START + 5)
    with pytest.raises(ValueError, match="lies in the uid lease pool"):
        DockerConfig(user=f"{DEFAULT_POOL_START}:0")
    assert DockerConfig(user=f"{SPARE}").user == str(SPARE)


@pytest.mark.parametrize(
    "backend",
    [
        {"type": "bwrap", "uid_pool_start": 1000},
        {"type": "bwrap", "uid_pool_size": 1},
        {"type": "docker", "uid_pool_start": 1000},
    ],
)
def test_a_task_file_cannot_move_the_pool(backend: dict[str, object]) -> None:
    """A pool moved onto real accounts' ids would run commands as those users: the batch floor
    refuses the pool keys as it refuses ``sandbox_uid`` (unless the operator allows backend keys)."""
    task = Task.model_validate({"id": "pool", "sandbox": backend, "commands": ["id -u"]})
    with pytest.raises(TaskRefused, match="uid_pool_s"):
        TaskFloor().apply(task)
    assert TaskFloor(allow_backend_keys=True).apply(task).id == "pool"


#: A shellrt-like process: a root bwrap session on a pool of one uid, a command running in it.
_SESSION = """
import sys
from pathlib import Path
import anyio
from sandbox import BwrapConfig, ExecRequest, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox._uid_lease import _pids_of

def _comm(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""

async def main() -> None:
    ws = sys.argv[2]
    backend = BwrapBackend(BwrapConfig(uid_pool_start=int(sys.argv[1]), uid_pool_size=1), SandboxPolicy(workspace=Path(ws)))
    await backend.start()
    await backend.exec(ExecRequest(argv=["sleep", "300"], cwd=ws))
    # exec returns once the request is handed over; under load (CI127) the command may not yet
    # run as the uid: say ready only once it does.
    for _ in range(6000):
        if any(_comm(pid) == "sleep" for pid in _pids_of(int(sys.argv[1]))):
            print("ready", flush=True)
            break
        await anyio.sleep(0.01)
    else:
        print("the command never ran as the uid", flush=True)
    await anyio.sleep(300)

anyio.run(main)
"""


async def test_a_sigkilled_sessions_uid_serves_the_next_session(tmp_path: Path) -> None:
    """End to end: shellrt dies by SIGKILL with a command running; a new session on the same
    one-uid pool starts (the lease went with the dead process) and nothing runs under the uid
    but its own."""
    _require_root_bwrap()
    uid = SPARE + 4
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    dead = subprocess.Popen(
        [sys.executable, "-c", _SESSION, str(uid), str(ws)], stdout=subprocess.PIPE, env=env
    )
    try:
        assert dead.stdout is not None
        assert await anyio.to_thread.run_sync(dead.stdout.readline) == b"ready\n"
        before = set(_pids_of(uid))
        assert before, "the dead session's command runs under its uid"
        dead.send_signal(signal.SIGKILL)
        await anyio.to_thread.run_sync(partial(dead.wait, timeout=30))
        backend = BwrapBackend(BwrapConfig(uid_pool_start=uid, uid_pool_size=1), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            assert backend.sandbox_ids == (uid, uid)
            assert backend._lease is not None and backend._lease.reclaimed  # the dead holder's, taken over
            # What runs under the uid now is the new session's alone (its zygote's waiting inits).
            assert not before & set(_pids_of(uid)), "nothing of the dead session may share the uid"
            assert await _run_id(backend) == str(uid)
        finally:
            await backend.close()
    finally:
        dead.kill()
        dead.wait(timeout=30)


async def _run_id(backend: BwrapBackend) -> str:
    proc = await backend.exec(ExecRequest(argv=["id", "-u"], cwd=str(backend.policy.workspace)))
    out = b"".join([chunk async for chunk in proc.stdout])
    assert (await proc.wait()).exit_code == 0
    return out.decode().strip()
