"""Red team, round 23 (bwrap): the budget namespace's rendezvous carries nothing either way.

Round 22's holder (`sandbox._ucounts._MAKE`) served the uid's budget namespace under an abstract
socket name of the host's network namespace: it sent the namespace fd by ``SCM_RIGHTS`` to any
peer whose ``SO_PEERCRED`` uid was its own and whose ``/proc/<pid>/status``, read after the
connection, showed its own pid-namespace depth; a joiner read whatever the server sent, with a
5 s timeout. So the fd went to whichever process held the connecting pid when the holder looked
(a pid the kernel reuses; 32768 here), and a squatter of the name cost each new process's first
start the timeout. Now nothing crosses the socket: a joiner takes the listener's pid from the
connection and opens ``/proc/<pid>/ns/user`` itself, checked as before (owned by the uid, a
direct child of the host's, the same limits), and never waits for the server.

Only a non-root caller has a budget namespace; the tests run themselves as uid 65534 from root.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from sandbox import _ucounts
from sandbox._budget_meet import meeting_dir
from tests import _nonroot
from tests.conftest import require

pytestmark = pytest.mark.bwrap

#: One shellrt process of the caller under the rendezvous ``argv[1]``: its budget namespace's
#: inode, then it holds it until EOF.
_PROCESS = r"""
import os, sys
from sandbox import _ucounts
_ucounts._RENDEZVOUS = sys.argv[1]
prefix = _ucounts.budget_prefix()
print(os.stat(prefix[1].split("=", 1)[1]).st_ino, flush=True)
sys.stdin.read()
"""


def _name() -> str:
    """A rendezvous of this test's own: other processes of the uid (CI's) keep theirs."""
    if not hasattr(_ucounts, "_RENDEZVOUS"):  # the tree before round 23: its fixed name
        return f"shellrt-budget-{os.geteuid()}-v1"
    return f"shellrt-budget-{os.geteuid()}-test-{uuid.uuid4().hex[:12]}"


def _process(name: str, run: Path | None = None) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("XDG_RUNTIME_DIR", None)
    if run is not None:
        env["XDG_RUNTIME_DIR"] = str(run)
    started = subprocess.Popen(
        [sys.executable, "-c", _PROCESS, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert started.stdout is not None
    line = started.stdout.readline().strip()
    assert line.isdigit(), f"no budget namespace: {line!r} ({started.poll()})"
    return started, int(line)


def _end(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=60)


def _socket_path(name: str) -> str:
    """Where the holders of ``name`` meet without XDG_RUNTIME_DIR: the product's own choice
    (round 26: a home of the uid's own, else its 0700 directory in the temp dir; it was the
    abstract name ``name``)."""
    meet = meeting_dir()
    assert meet is not None, "no rendezvous directory of the uid's own here"
    try:
        return os.path.join(os.readlink(f"/proc/self/fd/{meet}"), name)
    finally:
        os.close(meet)


def _fds_received(name: str) -> list[int]:
    """Connect to the holder serving ``name`` as the most trusted peer there is (this uid, this
    pid namespace) and collect every fd it sends before it closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(_socket_path(name))
        fds: list[int] = []
        while True:
            data, anc, _flags, _addr = sock.recvmsg(16, socket.CMSG_SPACE(4 * 8))
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += [int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, len(payload) - 3, 4)]
            if not data:
                return fds


def test_the_holder_hands_no_fd_to_a_peer() -> None:
    """As uid 65534 failed before (1 of 1): the holder sent its namespace fd to the peer."""
    if os.geteuid() == 0:  # root's commands run as leased uids of their own: no budget namespace
        assert _ucounts.budget_prefix() == []
        return
    name = _name()
    holder, ns = _process(name)
    try:
        fds = _fds_received(name)
        for fd in fds:
            os.close(fd)
        assert fds == [], "the holder handed its budget namespace's fd to whoever connected"
        joiner, ns_joined = _process(name)  # the rendezvous still works: by the holder's pid
        _end(joiner)
        assert ns_joined == ns
    finally:
        _end(holder)


def _squat(name: str, report: dict[str, bool], bound: threading.Event) -> None:
    """Hold ``name`` as a listener of this uid that accepts one joiner and never speaks; note
    whether the joiner hung up within 4 s (it has nothing to wait for) or stayed waiting."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        path = _socket_path(name)
        if os.path.exists(path):
            os.unlink(path)
        listener.bind(path)
        listener.listen(1)
        bound.set()
        listener.settimeout(120)
        conn, _ = listener.accept()
        with conn:
            ready = select.select([conn], [], [], 4.0)[0]
            report["hung_up"] = bool(ready) and conn.recv(1) == b""


def test_a_squatter_of_the_name_neither_stalls_nor_feeds_a_start() -> None:
    """As uid 65534 failed before (1 of 1): the joiner waited on the squatter for its 5 s."""
    if os.geteuid() == 0:
        assert _ucounts.budget_prefix() == []
        return
    name = _name()
    report: dict[str, bool] = {}
    bound = threading.Event()
    squatter = threading.Thread(target=_squat, args=(name, report, bound), daemon=True)
    squatter.start()
    assert bound.wait(60)
    joiner, ns = _process(name)
    try:
        squatter.join(120)
        assert report.get("hung_up") is True, "a start waited on whoever held the rendezvous name"
        assert ns != os.stat("/proc/self/ns/user").st_ino  # it made a budget namespace of its own
    finally:
        _end(joiner)


def test_a_squatter_of_the_abstract_name_cannot_stop_the_sharing() -> None:
    """As uid 65534 failed before (1 of 1): with the name held, each process made its own half."""
    if os.geteuid() == 0:
        assert _ucounts.budget_prefix() == []
        return
    # the caller's own runtime directory (0700: no other uid may enter it), short enough for a
    # socket path (pytest's tmp_path is not)
    run = Path(tempfile.mkdtemp(prefix="r23-run-"))
    try:
        _share_despite_a_squatter(run)
    finally:
        shutil.rmtree(run)


def _share_despite_a_squatter(run: Path) -> None:
    assert os.stat(run).st_mode & 0o777 == 0o700
    name = _name()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as squatter:
        # bound first: any uid in the host's network namespace, or a network="host" command
        squatter.bind("\0" + name)
        squatter.listen(16)
        first, ns_first = _process(name, run)
        try:
            second, ns_second = _process(name, run)
            _end(second)
        finally:
            _end(first)
    assert ns_second == ns_first, "a squatter of the rendezvous made each process take its own half"
    # the holder outlives its owner by the moment it takes to read EOF and unlink (CI63 looked
    # within that moment): give it 10 s, then it has left its socket behind
    deadline = time.monotonic() + 10
    while (run / name).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not (run / name).exists(), "the serving holder left its socket behind"


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("nsenter") is not None, "setpriv and nsenter")
    names = [
        "test_the_holder_hands_no_fd_to_a_peer",
        "test_a_squatter_of_the_name_neither_stalls_nor_feeds_a_start",
        "test_a_squatter_of_the_abstract_name_cannot_stop_the_sharing",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{n}" for n in names],
        collect_args=[f"{__file__}::{n}" for n in names],
    )
    _nonroot.assert_all_held(collected, outcome)
