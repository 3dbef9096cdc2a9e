"""Escape attempts against the bwrap backend: each must fail (issue 15), and ordinary work must not.

Every probe runs three ways: the persistent session sandbox (zygote), one
sandbox per command, and the real CLI (``python -m shellrt run --sandbox
bwrap``, a fresh process as an operator runs it). As root (CI) the command
must not be root; as a non-root caller it keeps the caller's uid.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest

import shellrt
from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy, SandboxPolicyError, _account
from sandbox._cgroup import cgroup_unavailable_reasons
from sandbox._seccomp import DENIED, ENOSYS_CALLS
from sandbox.bwrap import BwrapBackend
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import supervised
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

ROOT = Path(__file__).resolve().parents[1]
AS_ROOT = os.geteuid() == 0
#: (exit code, stdout+stderr) of one command.
Run = Callable[[str], Awaitable[tuple[int, str]]]


class Listener:
    """A 0666 unix socket server on the host that records whether anyone connected."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        path.chmod(0o666)
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.connected = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connected = True
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def host_sockets() -> Iterator[list[Listener]]:
    """Listeners made before the sandbox starts: one in a host dir outside the workspace, one under /run."""
    outside = Path(tempfile.mkdtemp(prefix="shellrt-escape-", dir="/var/tmp"))
    outside.chmod(0o755)
    listeners = [Listener(outside / "agent.sock")]
    run_path = Path(f"/run/shellrt-escape-{os.getpid()}.sock")
    if os.access("/run", os.W_OK):
        listeners.append(Listener(run_path))
    try:
        yield listeners
    finally:
        for listener in listeners:
            listener.close()
        shutil.rmtree(outside, ignore_errors=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture(params=["persistent", "per-command", "cli"])
async def run(
    request: pytest.FixtureRequest, ws: Path, tmp_path: Path, host_sockets: list[Listener]
) -> AsyncIterator[Run]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    mode = str(request.param)
    if mode == "cli":

        async def via_cli(command: str) -> tuple[int, str]:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "shellrt",
                    "run",
                    "--sandbox",
                    "bwrap",
                    "--workspace",
                    str(ws),
                    "--",
                    command,
                ],
                cwd=ws,
                env={**os.environ, "PYTHONPATH": _with_repo(os.environ.get("PYTHONPATH", ""))},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if proc.returncode == 125:
                require(False, f"bwrap unusable here: {proc.stderr}")
            return proc.returncode, proc.stdout + proc.stderr

        yield via_cli
        return
    backend = BwrapBackend(BwrapConfig(persistent=mode == "persistent"), SandboxPolicy(workspace=ws))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    sup = Supervisor(backend, session_dir=tmp_path / "session")

    async def via_backend(command: str) -> tuple[int, str]:
        result = await sup.run(command, timeout_s=30)
        assert result.exit_code is not None, "the command did not end in time"
        return result.exit_code, result.preview

    try:
        yield via_backend
    finally:
        await sup.close()
        await backend.close()


def _with_repo(pythonpath: str) -> str:
    """The repo first, then whatever the caller had (a non-root run finds its packages there)."""
    return os.pathsep.join([str(ROOT), *filter(None, pythonpath.split(os.pathsep))])


@contextlib.contextmanager
def host_sysctl(path: str) -> Iterator[str]:
    """The host's value of a sysctl, put back afterwards if a probe changed it."""
    before = Path(path).read_text()
    try:
        yield before
    finally:
        if Path(path).read_text() != before:
            Path(path).write_text(before)


async def test_proc_sys_is_read_only(run: Run) -> None:
    with (
        host_sysctl("/proc/sys/fs/lease-break-time") as lease,
        host_sysctl("/proc/sys/kernel/core_pattern") as core,
    ):
        new_lease = int(lease) + 1
        code, out = await run(
            f"echo {new_lease} > /proc/sys/fs/lease-break-time; a=$?; "
            "echo '|/bin/false shellrt-escape' > /proc/sys/kernel/core_pattern; b=$?; echo STATUS $a $b"
        )
        assert Path("/proc/sys/fs/lease-break-time").read_text() == lease
        assert Path("/proc/sys/kernel/core_pattern").read_text() == core
    assert "STATUS 1 1" in out, out


async def test_sysrq_trigger_and_kcore_are_out_of_reach(run: Run) -> None:
    code, out = await run(
        "echo h > /proc/sysrq-trigger && echo WROTE; echo KCORE $(head -c 16 /proc/kcore 2>/dev/null | wc -c)"
    )
    assert "WROTE" not in out and "KCORE 0" in out, out


async def test_procs_kernel_state_docker_hides_reveals_nothing(run: Run) -> None:
    """/proc/keys (world-readable: masked) and /proc/timer_list read empty or fail.

    Per command, /proc/timer_list (0400 root) is left unmasked: the command never holds root.
    """
    code, out = await run(
        "echo KEYS $(cat /proc/keys 2>/dev/null | wc -c) TIMERS $(head -c 64 /proc/timer_list 2>/dev/null | wc -c)"
    )
    assert "KEYS 0 TIMERS 0" in out, out


async def test_host_unix_sockets_cannot_be_reached(run: Run, host_sockets: list[Listener]) -> None:
    script = "; ".join(
        f"python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{lis.path}\")' "
        f"2>/dev/null && echo CONNECTED {lis.path}"
        for lis in host_sockets
    )
    code, out = await run(script + "; true")
    assert "CONNECTED" not in out, out
    assert not any(lis.connected for lis in host_sockets)


async def test_docker_socket_cannot_be_reached(run: Run) -> None:
    require(Path("/var/run/docker.sock").exists(), "no docker daemon socket on this host")
    code, out = await run(
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"/var/run/docker.sock\")' "
        "&& echo CONNECTED"
    )
    assert "CONNECTED" not in out and code != 0, out


async def test_root_only_files_are_unreadable(run: Run) -> None:
    """Refused by the uid (root caller: the sandbox uid; a non-root caller's own), or masked: /root is
    an empty directory where the default masks cover it whole (``shellrt run``, no Python under it)."""
    code, out = await run(
        "cat /etc/shadow && echo READ-SHADOW; echo ROOT-ENTRIES $(ls -A /root 2>/dev/null | wc -l)"
    )
    assert "READ-SHADOW" not in out and "ROOT-ENTRIES 0" in out, out


class _NoFilterBwrap(BwrapBackend):
    def _seccomp_program(self) -> bytes:
        return b""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
async def test_no_command_runs_without_the_seccomp_filter(ws: Path, persistent: bool) -> None:
    """There is no switch that turns the filter off: an empty program refuses the start, in both modes."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    backend = _NoFilterBwrap(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    try:
        with pytest.raises(BackendUnavailableError, match="seccomp program"):
            await backend.start()
    finally:
        await backend.close()


async def test_core_dumps_are_off_and_cannot_be_turned_on(run: Run) -> None:
    """RLIMIT_CORE hard 0: a crashing command cannot feed the host's core_pattern pipe handler."""
    _, out = await run(
        "echo HARD=$(ulimit -Hc) SOFT=$(ulimit -Sc); ulimit -c unlimited && echo RAISED; "
        "ulimit -Hc 1 && echo RAISED; echo AFTER=$(ulimit -Hc)"
    )
    assert "RAISED" not in out, out
    assert "HARD=0 SOFT=0" in out and "AFTER=0" in out, out


async def test_command_is_not_root_when_shellrt_is(run: Run) -> None:
    code, out = await run("id -u")
    assert code == 0
    if AS_ROOT:  # the session's leased uid, from the pool
        pool = BwrapConfig()
        assert pool.uid_pool_start <= int(out) < pool.uid_pool_start + pool.uid_pool_size, out
    else:
        assert out.split() == [str(os.geteuid())], out


async def test_the_command_finds_its_own_account_and_cannot_change_it(run: Run) -> None:
    """Run as root, the sandbox uid gets an account line (sandbox._account): programs looking
    themselves up (bash, git, id) find it at once; /etc/passwd stays read-only, the host's unchanged."""
    before = Path("/etc/passwd").read_bytes()
    code, out = await run("id -un; { echo x >> /etc/passwd; } 2>/dev/null || echo REFUSED")
    assert code == 0, out
    name = _account.NAME if AS_ROOT else pwd.getpwuid(os.geteuid()).pw_name
    assert out.split() == [name, "REFUSED"], out
    assert Path("/etc/passwd").read_bytes() == before


async def test_nested_user_namespace_mount_and_keyctl_fail(run: Run) -> None:
    code, out = await run(
        "unshare -U true && echo USERNS; unshare -Ur true && echo USERNS-ROOT; "
        "mount -t tmpfs shellrt /tmp && echo MOUNTED; "
        "keyctl show @u >/dev/null 2>&1 && echo KEYRING; true"
    )
    assert not {"USERNS", "USERNS-ROOT", "MOUNTED", "KEYRING"} & set(out.split()), out


PROBE = r"""
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, (nr, args) in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    out[name] = "ok" if r != -1 else errno.errorcode.get(ctypes.get_errno(), "?")
print(json.dumps(out))
"""


def _probes() -> dict[str, tuple[int, list[int]]]:
    """Per denied call: its number here and arguments (a benign call would succeed without the filter)."""
    arch = {"x86_64": 0, "aarch64": 1}.get(platform.machine())
    require(arch is not None, f"no seccomp table for {platform.machine()}")
    assert arch is not None
    probes: dict[str, tuple[int, list[int]]] = {}
    for table in (DENIED, ENOSYS_CALLS):
        for name, numbers in table.items():
            nr = numbers[arch]
            if nr is not None:
                probes[name] = (nr, [0, 0, 0, 0, 0, 0])
    probes["keyctl"] = (
        DENIED["keyctl"][arch] or 0,
        [0, -4, 0, 0, 0, 0],
    )  # GET_KEYRING_ID of @u: works unfiltered
    probes["ptrace"] = (DENIED["ptrace"][arch] or 0, [0, 0, 0, 0, 0, 0])  # PTRACE_TRACEME: works unfiltered
    probes["unshare(CLONE_NEWUSER)"] = ((272, 97)[arch], [0x10000000, 0, 0, 0, 0, 0])
    probes["clone(CLONE_NEWUSER)"] = ((56, 220)[arch], [0x10000000 | 17, 0, 0, 0, 0, 0])
    probes["personality(READ_IMPLIES_EXEC)"] = ((135, 92)[arch], [0x0400000, 0, 0, 0, 0, 0])
    return probes


async def test_every_denied_system_call_fails_inside(run: Run) -> None:
    """One probe per entry of sandbox._seccomp, each failing with the filter's errno (not the kernel's)."""
    probes = _probes()
    code, out = await run(f"python3 -c '{PROBE}' '{json.dumps(probes)}'")
    results = json.loads(out.strip().splitlines()[-1])
    expected = {name: "ENOSYS" if name in ENOSYS_CALLS else "EPERM" for name in probes}
    assert results == expected


async def test_still_works_socketpair_and_own_unix_sockets(run: Run, ws: Path) -> None:
    script = r"""
import asyncio, os, socket, sys
a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
asyncio.run(asyncio.sleep(0))  # asyncio has a self-pipe
for d in ("/tmp", sys.argv[1]):
    path = os.path.join(d, "own.sock")
    srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1)
    cli = socket.socket(socket.AF_UNIX); cli.connect(path)
    conn, _ = srv.accept(); cli.send(b"y"); assert conn.recv(1) == b"y"
    os.unlink(path)
print("ALL-OK")
"""
    code, out = await run(f"python3 -c '{script}' {ws}")
    assert code == 0 and "ALL-OK" in out, out


async def test_still_works_posix_shared_memory_and_semaphores(run: Run) -> None:
    """multiprocessing's locks and queues need a writable /dev/shm (a session's was root's 0755)."""
    script = r"""
import multiprocessing as mp
from multiprocessing import shared_memory
lock = mp.Lock(); lock.acquire(); lock.release()
mem = shared_memory.SharedMemory(create=True, size=16); mem.buf[0] = 7; assert mem.buf[0] == 7
mem.close(); mem.unlink()
print("SHM-OK")
"""
    code, out = await run(f"python3 -c '{script}'")
    assert code == 0 and "SHM-OK" in out, out


async def test_still_works_git_in_the_workspace(run: Run, ws: Path) -> None:
    require(shutil.which("git") is not None, "git is not installed")
    code, out = await run(
        "git init -q repo && cd repo && git config user.email a@b.c && git config user.name A && "
        "echo hi > f && git add f && git commit -qm one && git log --oneline | wc -l"
    )
    assert code == 0 and out.split()[-1] == "1", out
    assert (ws / "repo" / ".git").is_dir()


async def test_files_made_in_the_workspace_belong_to_its_owner(run: Run, ws: Path) -> None:
    code, out = await run("mkdir -p d && echo x > d/f")
    assert code == 0, out
    owner = ws.stat()
    for path in (ws / "d", ws / "d" / "f"):
        st = path.stat()
        assert (st.st_uid, st.st_gid) == (owner.st_uid, owner.st_gid), path


async def test_read_denied_paths_are_masked_and_leave_no_placeholder(ws: Path, tmp_path: Path) -> None:
    """A denied file, a denied directory at depth, a path outside the workspace, one that does not exist."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "creds").mkdir()
    (ws / "a" / "b" / "creds" / "key").write_text("KEY-123\n")
    (ws / ".env").write_text("TOKEN=abc\n")
    outside = Path(tempfile.mkdtemp(prefix="shellrt-escape-", dir="/var/tmp"))
    try:
        outside.chmod(0o755)
        (outside / "secret").write_text("OUTSIDE-SECRET\n")
        (outside / "secret").chmod(0o644)
        missing = ws / "not-yet" / "token"
        denied = (ws / ".env", ws / "a" / "b" / "creds", outside / "secret", missing)
        for persistent in (True, False):
            policy = SandboxPolicy(workspace=ws, read_denied=denied)
            backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
            try:
                await backend.start()
            except BackendUnavailableError as exc:
                require(False, f"bwrap unusable here: {exc}")
            sup = Supervisor(backend, session_dir=tmp_path / f"s{persistent}")
            try:
                result = await sup.run(
                    f"cat .env a/b/creds/key {outside}/secret; echo LISTED $(ls -A a/b/creds | wc -l); true",
                    timeout_s=30,
                )
            finally:
                await sup.close()
                await backend.close()
            for secret in ("TOKEN=abc", "KEY-123", "OUTSIDE-SECRET"):
                assert secret not in result.preview, result.preview
            assert "LISTED 0" in result.preview, result.preview
            assert not (ws / "not-yet").exists()  # no placeholder in the user's repo
    finally:
        shutil.rmtree(outside, ignore_errors=True)


#: Every way a command might move a masked file out from under its mask (each its own command).
_MOVE_ATTACKS = (
    "mv top/conf top/conf2",
    "mv top top2",
    "mv top/conf/db.env top/conf/moved",
    "mv top/conf/keys top/keys2",
    "ln top/conf/db.env hard",
    "ln top/conf/keys/id top/idhard",
    "cp -a top copy",
    "rm -rf top/conf; mkdir -p top/conf",
    "rm -rf top",
    "mv vault v2",
    "mv vault/keys k2",
    'python3 -c \'import os; os.rename("top/conf", "c3")\'',
)
_LOOK = (
    "cat top2/conf/db.env top/conf2/db.env top/conf/moved hard top/idhard copy/conf/db.env "
    "top/keys2/id c3/db.env top/conf/db.env top/conf/keys/id copy/conf/keys/id v2/keys/id k2/id vault/keys/id; true"
)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
async def test_masked_paths_cannot_be_moved_away(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """Renames, links, copies and removals around masked paths expose nothing, now or in the next session.

    Every directory between the workspace and a masked path is pinned (a mount point of
    itself), so renaming or removing it fails; a masked path that does not exist yet
    leaves no placeholder behind.
    """
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (ws / "top" / "conf" / "keys").mkdir(parents=True)
    (ws / "top" / "conf" / "db.env").write_text("DBPASS=hunter2\n")
    (ws / "top" / "conf" / "keys" / "id").write_text("PRIVATE-KEY\n")
    (ws / "plain").write_text("ok\n")
    (ws / "vault" / "keys").mkdir(parents=True)
    (ws / "vault" / "keys" / "id").write_text("PRIVATE-KEY\n")
    (ws / "via").symlink_to("vault")  # masked through a symlinked parent
    missing = ws / "top" / "later" / "token"
    denied = (ws / "top" / "conf" / "db.env", ws / "top" / "conf" / "keys", ws / "via" / "keys", missing)
    policy = SandboxPolicy(workspace=ws, read_denied=denied)
    for session in range(2):
        backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
        try:
            await backend.start()
        except BackendUnavailableError as exc:
            require(False, f"bwrap unusable here: {exc}")
        sup = Supervisor(backend, session_dir=tmp_path / f"s{session}")
        try:
            outputs = []
            for attack in _MOVE_ATTACKS if session == 0 else ():
                result = await sup.run(f"{attack}; {_LOOK}", timeout_s=30)
                outputs.append(result.preview)
            result = await sup.run(f"cat plain; {_LOOK}", timeout_s=30)
            outputs.append(result.preview)
        finally:
            await sup.close()
            await backend.close()
        for out in outputs:
            assert "hunter2" not in out and "PRIVATE-KEY" not in out, outputs
        assert "ok" in outputs[-1], outputs  # ordinary files stay readable
        assert (ws / "top" / "conf" / "db.env").read_text() == "DBPASS=hunter2\n"
        assert (ws / "top" / "conf" / "keys" / "id").read_text() == "PRIVATE-KEY\n"
        assert (ws / "vault" / "keys" / "id").read_text() == "PRIVATE-KEY\n"
        assert not (ws / "top" / "later").exists()  # no placeholder in the user's repo


@pytest.mark.parametrize("persistent", [True, False], ids=["persistent", "per-command"])
async def test_host_socket_made_after_the_session_sandbox_started_is_hidden_too(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    """Per command the masks are worked out again only when the host's sockets changed
    (`sandbox._hostsockets.IpcMasks`): a socket bound since must still be hidden."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    outside = Path(tempfile.mkdtemp(prefix="shellrt-escape-", dir="/var/tmp"))
    listener: Listener | None = None
    try:
        assert (await sup.run("true", timeout_s=30)).exit_code == 0  # the sandbox (and its masks) is up
        outside.chmod(0o755)
        listener = Listener(outside / "late.sock")
        result = await sup.run(
            f"python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{listener.path}\")' "
            "&& echo CONNECTED",
            timeout_s=30,
        )
        assert "CONNECTED" not in result.preview and not listener.connected, result.preview
    finally:
        if listener is not None:
            listener.close()
        shutil.rmtree(outside, ignore_errors=True)
        await sup.close()
        await backend.close()


@pytest.mark.parametrize("persistent", [True, False], ids=["persistent", "per-command"])
async def test_workspace_below_a_parent_only_its_owner_can_cross(tmp_path: Path, persistent: bool) -> None:
    """As root, a workspace like /root/project: the sandbox uid reaches it, and nothing else of the parent."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    parent = Path(tempfile.mkdtemp(prefix="shellrt-escape-", dir="/var/tmp"))  # 0700, outside /tmp
    try:
        (parent / "sibling-secret").write_text("SIBLING\n")
        ws = parent / "deep" / "proj"
        ws.mkdir(parents=True)
        (parent / "deep").chmod(0o700)
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "session") as sup:
            result = await sup.run(
                f"echo x > {ws}/made && cat {ws}/made; cat {parent}/sibling-secret; mkdir -p {ws}/d && cd {ws}/d",
                timeout_s=30,
            )
        assert result.exit_code == 0 and "x\n" in result.preview, result.preview
        if AS_ROOT:  # a non-root caller's commands keep its uid: its own files stay its own
            assert "SIBLING" not in result.preview
        assert result.cwd == f"{ws}/d"
        assert (ws / "made").stat().st_uid == ws.stat().st_uid
    finally:
        shutil.rmtree(parent, ignore_errors=True)


# --- the host reads what commands leave behind, and what a non-root caller owns ---------------------


async def test_a_planted_cwd_report_neither_blocks_nor_misleads_the_host(run: Run, ws: Path) -> None:
    """The sandbox may write its cwd reports (their directory is writable for it): a FIFO planted
    where this command's report goes, or where a later one's went while the names were only
    numbered (``cwd-<n>``; since round 25 ``cwd-<n>-<random>``), must not block the host (every
    session of the process, no timeout firing), and a symlink there must not be followed."""
    outside = Path(tempfile.mkdtemp(prefix="shellrt-escape-", dir="/var/tmp"))
    outside.chmod(0o755)
    (ws / "elsewhere").mkdir()
    lure = outside / "lure"
    lure.write_text(f"{ws}/elsewhere\n")
    lure.chmod(0o600)
    planted = ws / "planted"
    done = threading.Event()
    blocked: list[str] = []

    def release_the_host() -> None:  # a blocked host waits for a writer: give it one, and fail the test
        while not done.wait(10):
            paths = planted.read_text().split() if planted.exists() else []
            for path in paths:
                with contextlib.suppress(OSError):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                    blocked.append(path)

    watchdog = threading.Thread(target=release_the_host, daemon=True)
    watchdog.start()
    plant = (
        "f=$SHELLRT_CWD_FILE; rm -f $f; mkfifo $f && echo $f >> planted; "
        "d=${f%-*}; d=${d%-*}; n=${f#$d-}; n=${n%%-*}; "  # .../cwd-<n>-<random>: .../cwd and <n>
        "for k in 1 2; do p=$d-$((n+k)); rm -f $p; mkfifo $p && echo $p >> planted; done; "
        f"for k in 3 4 5; do ln -sf {lure} $d-$((n+k)); done; echo PLANTED"
    )
    try:
        outputs = [await run(plant)]
        outputs += [await run("pwd") for _ in range(6)]
    finally:
        done.set()
        watchdog.join()
        shutil.rmtree(outside, ignore_errors=True)
    assert not blocked, f"the host blocked opening a planted FIFO: {blocked}"
    assert "PLANTED" in outputs[0][1], outputs[0]
    for code, out in outputs[1:]:
        assert code == 0 and out.strip() == str(ws), outputs  # the lure's directory was never adopted


async def test_no_capability_no_new_privileges_and_the_filter_in_every_command(run: Run) -> None:
    code, out = await run("grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status")
    fields = dict(line.split(":\t") for line in out.strip().splitlines())
    assert {k: v for k, v in fields.items() if k.startswith("Cap")} == {
        name: "0000000000000000" for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
    }, out
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2", out


async def test_files_outside_the_workspace_stay_read_only_even_the_callers_own(run: Run, ws: Path) -> None:
    """A non-root caller owns files outside the workspace (its home, its checkouts): the read-only
    host view holds them, not their modes (here 0666 in a 0777 directory)."""
    outside = Path(tempfile.mkdtemp(prefix="shellrt-escape-", dir="/var/tmp"))
    try:
        outside.chmod(0o777)
        mine = outside / "mine"
        mine.write_text("ORIGINAL\n")
        mine.chmod(0o666)
        code, out = await run(
            f"echo EVIL > {mine}; echo EVIL >> {mine}; touch {outside}/new; mv {mine} {outside}/moved; "
            f"chmod 600 {mine}; rm -f {mine}; echo ok > own && cat own && echo WORKSPACE-WRITABLE"
        )
        assert mine.read_text() == "ORIGINAL\n" and (mine.stat().st_mode & 0o777) == 0o666
        assert sorted(p.name for p in outside.iterdir()) == ["mine"], out
        assert "WORKSPACE-WRITABLE" in out and (ws / "own").stat().st_uid == ws.stat().st_uid, out
    finally:
        shutil.rmtree(outside, ignore_errors=True)


async def test_the_callers_processes_are_out_of_sight_and_reach(run: Run) -> None:
    """For a non-root caller they run under the very uid the command has: only the pid namespace
    keeps them apart (``kill -0`` only asks whether a signal could be sent)."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        code, out = await run(
            f"kill -0 {sleeper.pid} 2>/dev/null && echo SIGNALLABLE; [ -e /proc/{sleeper.pid} ] && echo SEEN; "
            "echo PROCS $(ls /proc | grep -c '^[0-9]')"
        )
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()
    assert "SIGNALLABLE" not in out and "SEEN" not in out, out
    assert int(out.split("PROCS")[1].split()[0]) <= 8, out  # the command, its shell and init: no host process


async def test_host_ipc_objects_are_not_shared(run: Run) -> None:
    """SysV shared memory, POSIX shared memory (/dev/shm) and abstract unix sockets of the host,
    all made open to everyone: no command sees or reaches them."""
    require(shutil.which("ipcmk") is not None, "util-linux's ipcmk is not installed")
    made = subprocess.run(["ipcmk", "-M", "4096", "-p", "0666"], capture_output=True, text=True, check=True)
    shm_id = made.stdout.split()[-1]
    posix = Path(f"/dev/shm/shellrt-escape-{os.getpid()}")
    posix.write_text("HOST-SHM\n")
    posix.chmod(0o666)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"shellrt-escape-{os.getpid()}"
    abstract.bind("\0" + name)
    abstract.listen(1)
    abstract.settimeout(0.5)
    try:
        code, out = await run(
            f"ipcs -m | grep -qw {shm_id} && echo SYSV-SEEN; cat {posix} 2>/dev/null; "
            f"echo CHANGED > {posix} 2>/dev/null; "
            "python3 -c 'import socket, sys; s=socket.socket(socket.AF_UNIX); "
            f's.connect(b"\\0" + sys.argv[1].encode())\' {name} 2>/dev/null && echo ABSTRACT-CONNECTED; true'
        )
        with contextlib.suppress(TimeoutError, OSError):
            abstract.accept()[0].close()
            out += " ABSTRACT-ACCEPTED"
        assert posix.read_text() == "HOST-SHM\n"
    finally:
        abstract.close()
        posix.unlink(missing_ok=True)
        subprocess.run(["ipcrm", "-m", shm_id], check=False, capture_output=True)
    assert not {"SYSV-SEEN", "HOST-SHM", "ABSTRACT-CONNECTED", "ABSTRACT-ACCEPTED"} & set(out.split()), out


def _shellrt_run(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--workspace", str(ws), *args],
        cwd=ws,
        env={**os.environ, **(env or {}), "PYTHONPATH": _with_repo(os.environ.get("PYTHONPATH", ""))},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: Whether this caller can give a session its own cgroup (root: v1 hierarchies; else a delegated subtree).
_CGROUP_GAPS = cgroup_unavailable_reasons()


@pytest.mark.parametrize("sandbox", ["bwrap", "auto"])
async def test_limits_are_enforced_or_refused_never_ignored(
    ws: Path, tmp_path: Path, sandbox: Literal["bwrap", "auto"]
) -> None:
    """``--memory 64m`` and a 300 MB allocation: as root the session cgroup stops it; a non-root
    caller without a delegated cgroup is refused up front (exit 125, the Python API raises), with
    the limit, the reason and the way out -- never a command that runs unlimited."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    if AS_ROOT:
        assert not _CGROUP_GAPS, f"as root the session cgroup must be possible here: {_CGROUP_GAPS}"
    hog = "python3 -c 'bytearray(300 * 2**20); print(\"ALLOCATED\")'"
    proc = _shellrt_run(ws, "--sandbox", sandbox, "--memory", "64m", "--", hog)
    if not _CGROUP_GAPS:
        assert proc.returncode not in (0, 125) and "ALLOCATED" not in proc.stdout, proc
        return
    assert proc.returncode == 125 and "ALLOCATED" not in proc.stdout, proc
    message = proc.stderr
    assert "cannot enforce" in message and "memory" in message and "--sandbox docker" in message, message
    policy = SandboxPolicy(workspace=ws, limits={"memory_bytes": 64 << 20, "pids": 64})
    with pytest.raises(SandboxPolicyError, match=r"memory, pids.*--sandbox docker"):
        create_backend(BwrapConfig(), policy)
    runtime = shellrt.Runtime(ws, sandbox, policy=policy, session_dir=tmp_path / "session", settings_files=())
    try:
        with pytest.raises(SandboxPolicyError, match="memory"):
            await runtime.start()
    finally:
        await runtime.close()


async def test_secrets_in_the_callers_home_are_masked(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default masks cover ``$HOME``: for a non-root caller its own keys, files it may read
    (here 0644 in a home any user can cross, so a root caller's sandbox uid could read them too)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    home = Path(tempfile.mkdtemp(prefix="shellrt-escape-home-", dir="/var/tmp"))
    try:
        home.chmod(0o755)
        secrets = {".ssh/id_ed25519": "SSH-KEY", ".aws/credentials": "AWS-KEY", ".netrc": "NETRC-PASS"}
        for name, content in secrets.items():
            (home / name).parent.mkdir(exist_ok=True)
            (home / name).write_text(content + "\n")
            (home / name).chmod(0o644)
        (home / "notes.txt").write_text("ORDINARY\n")
        (home / "notes.txt").chmod(0o644)
        (home / ".ssh").chmod(0o755)
        look = f"cd {home} && cat {' '.join(secrets)} notes.txt; echo SSH-ENTRIES $(ls -A .ssh | wc -l); true"
        cli = _shellrt_run(ws, "--sandbox", "bwrap", "--", look, env={"HOME": str(home)})
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
        async with shellrt.Runtime(
            ws, "bwrap", mode="bypassPermissions", session_dir=tmp_path / "session", settings_files=()
        ) as rt:
            user = await rt.run(
                [{"type": "tool_use", "id": "esc-home-1", "name": "Bash", "input": {"command": look}}]
            )
        content = user["content"][0]["content"]
        api = content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    for out in (cli.stdout + cli.stderr, api):
        assert not set(secrets.values()) & set(out.split()), out
        assert "ORDINARY" in out and "SSH-ENTRIES 0" in out, out  # the rest of the home stays readable
