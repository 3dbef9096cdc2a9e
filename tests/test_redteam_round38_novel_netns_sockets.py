"""Red team, round 38 (novel): a socket another network namespace bound at a host path was reachable.

``connect`` to a pathname unix socket finds it by its file, whatever network namespace bound it,
and a read-only mount does not stop it. The sandbox masks every socket the host's
``/proc/net/unix`` lists, but that table is the host's namespace's only: a socket a container (its
own network namespace, a host directory bound into it) or another session bound at a path the
sandbox shows was never masked. Here a process in a fresh user and network namespace listens on
a 0777 socket under ``/var/tmp``, and the command connected and read its answer.

The masks now also cover the sockets of every other network namespace some process is in
(`sandbox._netns_sockets`), but those under the sandbox's own kept paths (where its own commands,
each in a namespace of its own per command, bind theirs). Root and uid 65534: one bwrap per
command, and a session with the lock view off (with it on, the overlay's socket inode already
refused: ECONNREFUSED).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

#: Serial: its socket, bound where every session's watch looks, retires other tests' sandboxes and
#: fails the watch's unit tests that expect no new outside socket meanwhile.
pytestmark = [pytest.mark.bwrap, pytest.mark.serial]

#: A server in a user and network namespace of its own (any uid may make both), on a host path.
_SERVER = r"""
import ctypes, os, socket, sys
assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000) == 0  # CLONE_NEWUSER | NEWNET
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"ANSWER-FROM-ANOTHER-NETNS\n")
    c.close()
"""

_CLIENT = (
    "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(5); "
    "s.connect(sys.argv[1]); print(s.recv(64).decode().strip())' {path} 2>&1 | tail -1"
)


@contextmanager
def _foreign_server() -> Iterator[Path]:
    """A socket listening in another network namespace, at a path under /var/tmp (shown read-only
    to the sandbox; not its /tmp, not its workspace)."""
    where = Path(tempfile.mkdtemp(prefix="r38-netns-", dir="/var/tmp"))
    where.chmod(0o755)
    path = where / "app.sock"
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "listening" not in line:
            pytest.fail(
                f"could not start the server in a namespace of its own: {proc.stderr.read() if proc.stderr else ''}"
            )
        yield path
    finally:
        proc.kill()
        proc.wait()
        path.unlink(missing_ok=True)
        where.rmdir()


def _run(tmp_path: Path, *, persistent: bool) -> str:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    with _foreign_server() as path:

        async def main() -> str:
            backend = BwrapBackend(
                BwrapConfig(persistent=persistent, lock_view=False), SandboxPolicy(workspace=ws)
            )
            async with supervised(backend, tmp_path / "s") as sup:
                return (await sup.run(_CLIENT.format(path=path), timeout_s=60)).preview

        return anyio.run(main)


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_socket_of_another_network_namespace_is_masked(tmp_path: Path, persistent: bool) -> None:
    """Failed before: ``ANSWER-FROM-ANOTHER-NETNS`` printed in the sandbox; root 2 of 2, uid 65534
    2 of 2."""
    out = _run(tmp_path, persistent=persistent)
    assert "ANSWER" not in out, out
    assert "refused" in out.lower() or "denied" in out.lower(), out


def test_one_bound_after_the_session_started_retires_it(tmp_path: Path) -> None:
    """The session's socket watch lists the other namespaces too: a socket bound there after the
    start makes the next command start in a new sandbox that hides it. Failed before (lock view
    off; with it on, the same in a directory it does not cover: a tmpfs mounted on the host before
    the session, checked by hand): the answer, root 1 of 1, uid 65534 1 of 1."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    outs: list[str] = []

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True, lock_view=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            outs.append((await sup.run("echo started", timeout_s=60)).preview)
            with _foreign_server() as path:
                for _ in range(2):
                    outs.append((await sup.run(_CLIENT.format(path=path), timeout_s=60)).preview)

    anyio.run(main)
    assert "started" in outs[0], outs
    for out in outs[1:]:
        assert "ANSWER" not in out and "refused" in out.lower(), outs


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_socket_of_another_network_namespace_is_masked",
        "test_one_bound_after_the_session_started_retires_it",
    )
