"""Red team, round 13: which new host sockets retire a session's zygote (its masks are fixed at its
start), and which the sandbox cannot reach anyway (`sandbox._sockreach`).

A socket below a place the sandbox shows its own content at (its /dev, /tmp, /run, the caller's
XDG_RUNTIME_DIR) must not cost the session its zygote and warm pool; one the sandbox can reach
-- through a symlink on the listed path, another mount of the same tree, a nested mount below
/tmp, another name, a name relative to its binder's cwd, a writable root -- must still retire it,
and the next command must not reach it. Real sockets, real bubblewrap; the bind-mount cases run in
a private mount namespace of their own (``unshare -m``). FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import sandbox._hostsockets as hostsockets
from sandbox import BwrapConfig, SandboxPolicy
from sandbox._hostsockets import SocketWatch
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap, supervised, zygote_session
from tests._reach_scenario import CONNECT, SANDBOX_PYTHON
from tests._unix_sockets import listen_unix, outside_dir
from tests.conftest import require

# Serial, as every zygote suite: a host socket a parallel test binds where the sandbox can reach
# it retires the zygote these tests follow.
pytestmark = [pytest.mark.anyio, pytest.mark.bwrap, pytest.mark.serial]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def outside() -> Iterator[Path]:
    yield from outside_dir("shellrt-reach-")


@pytest.fixture
def host_tmp() -> Iterator[Path]:
    """A fresh 0755 directory in the host's /tmp (which no sandbox shows: its /tmp is its own)."""
    path = Path(tempfile.mkdtemp(prefix="shellrt-reach-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    async with zygote_session(tmp_path) as made:
        yield made


def _listen(path: Path) -> socket.socket:
    """A listening socket at ``path`` anyone may connect to: only a mask keeps a sandbox off it."""
    sock = listen_unix(path)
    path.chmod(0o777)
    return sock


async def _connect(sup: Supervisor, path: Path | str) -> str:
    result = await sup.run([SANDBOX_PYTHON, "-I", "-c", CONNECT, str(path)], timeout_s=30)
    return result.preview.strip()


async def _first(sup: Supervisor) -> None:
    assert (await sup.run("true", timeout_s=30)).exit_code == 0


# --- out of reach: no new zygote -----------------------------------------------------------


async def test_a_socket_below_the_hosts_dev_shm_keeps_the_zygote(
    session: tuple[BwrapBackend, Supervisor],
) -> None:
    """The sandbox's /dev (and /dev/shm) are its own. FAILED before: every socket outside /tmp and
    /run retired the zygote (here: a new zygote for a socket no command could see)."""
    backend, sup = session
    await _first(sup)
    zygote = backend._zygote
    path = Path(tempfile.mktemp(prefix="shellrt-reach-", suffix=".sock", dir="/dev/shm"))
    with _listen(path):
        try:
            said = await _connect(sup, path)
            assert said.startswith("REFUSED"), said
            assert backend._zygote is zygote, "a socket no command can reach retired the zygote"
        finally:
            path.unlink(missing_ok=True)


async def test_a_socket_below_an_xdg_runtime_dir_outside_run_keeps_the_zygote(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's XDG_RUNTIME_DIR becomes an empty tmpfs in every sandbox, wherever it is.
    FAILED before: outside /run, a socket there retired the zygote."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(outside))
    async with zygote_session(tmp_path) as (backend, sup):
        await _first(sup)
        zygote = backend._zygote
        with _listen(outside / "agent.sock"):
            said = await _connect(sup, outside / "agent.sock")
            assert said.startswith("REFUSED"), said
            assert backend._zygote is zygote, "a socket in the hidden runtime dir retired the zygote"


async def test_a_socket_in_a_fresh_host_tmp_dir_keeps_the_zygote(
    session: tuple[BwrapBackend, Supervisor], host_tmp: Path
) -> None:
    """The host's /tmp: what test suites and language servers churn. Unchanged: kept before too."""
    backend, sup = session
    await _first(sup)
    zygote = backend._zygote
    with _listen(host_tmp / "lsp.sock"):
        said = await _connect(sup, host_tmp / "lsp.sock")
        assert said.startswith("REFUSED"), said
        assert backend._zygote is zygote


async def test_an_abstract_socket_is_cut_by_the_network_namespace(
    session: tuple[BwrapBackend, Supervisor],
) -> None:
    """Abstract names are never masked (they have no path); ``network: none`` cuts them. Verified:
    a host listener on one is refused, and it retires nothing."""
    backend, sup = session
    await _first(sup)
    zygote = backend._zygote
    name = f"shellrt-reach-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind("\0" + name)
        sock.listen(1)
        result = await sup.run(
            [SANDBOX_PYTHON, "-I", "-c", CONNECT.replace("sys.argv[1]", "'\\0' + sys.argv[1]"), name],
            timeout_s=30,
        )
        assert result.preview.strip().startswith("REFUSED"), result.preview
        assert backend._zygote is zygote


async def test_a_socket_closed_to_the_sandbox_uid_keeps_the_zygote_until_it_opens(
    session: tuple[BwrapBackend, Supervisor], outside: Path
) -> None:
    """Root caller: commands run as an unprivileged uid that owns nothing on the host, without
    capabilities or groups, and connect() needs write permission on the socket file. A 0755 root
    socket in a shown directory (a daemon's, a test suite's in /var/tmp) cannot be connected to:
    no new zygote. FAILED before: it retired the zygote. A chmod that opens it (no change in the
    socket table) is seen before the next command: a new zygote, which masks it."""
    require(os.geteuid() == 0, "a root caller's case (others run commands as their own uid)")
    backend, sup = session
    await _first(sup)
    zygote = backend._zygote
    path = outside / "daemon.sock"
    with listen_unix(path):
        path.chmod(0o755)
        said = await _connect(sup, path)
        assert said == "REFUSED PermissionError", said
        assert backend._zygote is zygote, "a socket the sandbox uid cannot connect to retired the zygote"
        path.chmod(0o777)
        said = await _connect(sup, path)
        assert said.startswith("REFUSED"), f"the command reached the socket: {said}"
        assert backend._zygote is not zygote, "the chmod went unseen"


# --- in reach: a new zygote, and the socket masked -------------------------------------------


async def test_a_socket_bound_through_a_symlink_in_tmp_retires_the_zygote_and_is_hidden(
    session: tuple[BwrapBackend, Supervisor], outside: Path
) -> None:
    """The table keeps the path given to bind(): /tmp/link/s.sock, where /tmp/link leads to a
    directory every command sees. FAILED before: judged by its listed path (under /tmp), it
    retired nothing, and the next command connected to it at its real path."""
    backend, sup = session
    await _first(sup)
    zygote = backend._zygote
    link = Path(tempfile.mktemp(prefix="shellrt-reach-link-", dir="/tmp"))
    link.symlink_to(outside)
    try:
        with _listen(link / "s.sock"):
            said = await _connect(sup, outside / "s.sock")
            assert said.startswith("REFUSED"), f"the command reached the socket: {said}"
            assert backend._zygote is not zygote
    finally:
        link.unlink()


async def test_a_socket_appearing_in_a_writable_root_below_tmp_retires_the_zygote(
    session: tuple[BwrapBackend, Supervisor],
) -> None:
    """A writable root is bound into the sandbox: below /tmp (this workspace is), its host sockets
    still count and are masked (``network: none``: a command's own are never in the host's table).
    Unchanged."""
    backend, sup = session
    await _first(sup)
    zygote = backend._zygote
    ws = backend.policy.workspace
    assert str(ws).startswith("/tmp/"), "the case needs a workspace below /tmp"
    with _listen(ws / "daemon.sock"):
        said = await _connect(sup, ws / "daemon.sock")
        assert said.startswith("REFUSED"), f"the command reached the socket: {said}"
        assert backend._zygote is not zygote


def _scenario(case: str, outside: Path, hidden: Path, tmp_path: Path) -> dict[str, object]:
    require(shutil.which("unshare") is not None, "util-linux's unshare is not installed")
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-m", "tests._reach_scenario"]
        + [case, str(outside), str(hidden), str(ws)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["first"] == 0
    return result


@pytest.mark.parametrize("case", ["alias", "nested"])
def test_a_socket_below_tmp_shown_elsewhere_by_a_bind_mount_is_hidden(
    case: str, outside: Path, host_tmp: Path, tmp_path: Path
) -> None:
    """``alias``: a /tmp directory bind-mounted below /var/tmp; ``nested``: a /var/tmp directory
    bind-mounted below /tmp. Either way the socket's listed path is below /tmp and it shows where
    every command looks. FAILED before (both): nothing retired, and the command connected."""
    result = _scenario(case, outside, host_tmp, tmp_path)
    assert str(result["said"]).startswith("REFUSED"), f"the command reached the socket: {result}"
    assert result["retired"] is True, result


def test_a_mount_made_after_the_start_is_judged_again(outside: Path, host_tmp: Path, tmp_path: Path) -> None:
    """A socket out of reach at the start (below /tmp), then a bind mount showing its directory
    below /var/tmp, made in the namespace the session's bwraps start in: the mount table changed,
    so what was out of reach is judged again -- a new zygote, which masks it where it shows."""
    result = _scenario("late", outside, host_tmp, tmp_path)
    assert str(result["said"]).startswith("REFUSED"), f"the command reached the socket: {result}"
    assert result["retired"] is True, result


# --- the watch alone ---------------------------------------------------------------------


def test_a_hard_link_elsewhere_counts(tmp_path: Path, outside: Path, host_tmp: Path) -> None:
    """A socket below /tmp with a second name where commands look (its table line shows only the
    first): counts. FAILED before: below /tmp, it was never judged. (A link made after the socket
    was judged is not seen: nothing in the table changes; docs/security.md, round 13.)"""
    watch = SocketWatch((tmp_path,))
    try:
        with _listen(host_tmp / "s.sock"):
            os.link(host_tmp / "s.sock", outside / "s.sock")
            assert not watch.nothing_new()
        with _listen(host_tmp / "t.sock"):  # the same without the second name: out of reach
            assert watch.nothing_new()
    finally:
        watch.close()


def test_a_listed_socket_whose_file_is_gone_counts_for_nothing(tmp_path: Path, outside: Path) -> None:
    """A socket still open whose file was removed (a test suite's cleanup, seen between its
    unlink and its close): no path reaches it and no mask could cover it. FAILED before: it
    retired the zygote -- under a busy host's churn, a few zygotes a minute."""
    watch = SocketWatch((tmp_path,))
    try:
        with _listen(outside / "gone.sock"):
            (outside / "gone.sock").unlink()
            assert watch.nothing_new()
            with _listen(outside / "gone.sock"):  # bound again there: a new inode, which counts
                assert not watch.nothing_new()
    finally:
        watch.close()


@pytest.mark.parametrize("listing", ["netlink", "proc"])
def test_a_socket_named_relative_to_its_binders_cwd_counts(
    tmp_path: Path, outside: Path, listing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bind("agent.sock") in a directory every command sees: the table says ``agent.sock``, which
    names no place the watch can judge, so it counts. FAILED before with the /proc/net/unix
    listing (a name not starting with / was dropped); netlink counted it already."""
    if listing == "proc":
        monkeypatch.setattr(hostsockets, "open_unix_diag", lambda: None)
    watch = SocketWatch((tmp_path,))
    code = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX); s.bind('agent.sock'); s.listen(1)\n"
        "print('up', flush=True); sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], cwd=outside, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        assert not watch.nothing_new()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)
        watch.close()


def test_the_watch_judges_where_a_symlinked_listed_path_leads(tmp_path: Path, outside: Path) -> None:
    """The unit behind the symlink case: a path listed below /tmp that leads to /var/tmp counts,
    one that stays below /tmp does not. FAILED before: both were left out by their listed path."""
    link = Path(tempfile.mktemp(prefix="shellrt-reach-link-", dir="/tmp"))
    link.symlink_to(outside)
    plain = Path(tempfile.mkdtemp(prefix="shellrt-reach-", dir="/tmp"))
    watch = SocketWatch((tmp_path,))
    try:
        with _listen(plain / "s.sock"):
            assert watch.nothing_new()
        with _listen(link / "s.sock"):
            assert not watch.nothing_new()
    finally:
        watch.close()
        link.unlink()
        shutil.rmtree(plain, ignore_errors=True)


async def test_a_root_callers_watch_reads_the_holders_mount_table(tmp_path: Path) -> None:
    """A root caller's bwraps start in the holder's mount namespace: that table is the one judged."""
    require(os.geteuid() == 0, "a root caller's case")
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session"):
        assert backend._holder is not None and backend._sockets is not None
        assert backend._sockets._reach._path == f"/proc/{backend._holder.host_pid}/mountinfo"
