"""Red team, round 38 (review): a socket another network namespace bound in the workspace was reachable.

Round 38 (novel) masks the pathname sockets of every other network namespace, but those under the
sandbox's own roots: its own commands bind theirs there, each in a network namespace of its own
(one bwrap per command) or of the session's. So a socket that a container, another program's
session or any process in a namespace of its own (``unshare -Urn``: any uid) bound *in the
workspace* was left out by its path, and a command connected and read its answer: one bwrap per
command and a session, lock view on or off (a host daemon's socket there has been masked since
round 8). Now only the namespaces of this process's own descendants (the sandboxes it started)
are left out by path; the rest are masked wherever they bind, the workspace included. Root and
uid 65534.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.test_redteam_round38_novel_netns_sockets import _CLIENT, _SERVER

#: Serial: its socket, bound where a session's watch looks, would retire other tests' sandboxes.
pytestmark = [pytest.mark.bwrap, pytest.mark.serial]

#: The server, told to print its pid: started through ``setsid -f``, it is no child of this process.
_DETACHED = _SERVER.replace('print("listening", flush=True)', 'print("listening", os.getpid(), flush=True)')


@contextmanager
def _server_in(ws: Path) -> Iterator[Path]:
    """A socket listening in another network namespace, in the workspace, bound by a process that
    is not this one's descendant (a container's, another program's)."""
    path, log = ws / "app.sock", ws.parent / "server.log"
    with open(log, "w") as out:
        subprocess.run(["setsid", "-f", sys.executable, "-c", _DETACHED, str(path)], stdout=out, check=True)
    deadline = time.monotonic() + 30
    while "listening" not in log.read_text():
        if time.monotonic() > deadline:
            pytest.fail("the server in a namespace of its own did not start")
        time.sleep(0.05)
    pid = int(log.read_text().split()[1])
    try:
        yield path
    finally:
        os.kill(pid, signal.SIGKILL)
        path.unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("persistent", "lock_view"),
    [(False, True), (True, True), (True, False)],
    ids=["per-command", "session", "session-no-lock-view"],
)
def test_a_foreign_socket_in_the_workspace_is_masked(
    tmp_path: Path, persistent: bool, lock_view: bool
) -> None:
    """Failed before: ``ANSWER-FROM-ANOTHER-NETNS``; root 3 of 3, uid 65534 3 of 3."""
    require_bwrap()
    where = Path(tempfile.mkdtemp(prefix="r38-review-inroot-", dir="/var/tmp"))
    ws = where / "ws"
    ws.mkdir()
    for d in (where, ws):
        d.chmod(0o755)
    try:
        with _server_in(ws) as path:

            async def main() -> str:
                backend = BwrapBackend(
                    BwrapConfig(persistent=persistent, lock_view=lock_view), SandboxPolicy(workspace=ws)
                )
                async with supervised(backend, tmp_path / "s") as sup:
                    return (await sup.run(_CLIENT.format(path=path), timeout_s=60)).preview

            out = anyio.run(main)
    finally:
        subprocess.run(["rm", "-rf", str(where)], check=False)
    assert "ANSWER" not in out, out
    assert "refused" in out.lower() or "denied" in out.lower(), out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_foreign_socket_in_the_workspace_is_masked",
        "test_the_sessions_own_background_server_stays_reachable",
    )


_OWN_SERVER = (
    'python3 -c \'import os,socket; s=socket.socket(socket.AF_UNIX); s.bind("own.sock"); s.listen(4); '
    'c,_=s.accept(); c.sendall(b"OWN-ANSWER\\n"); c.close()\''
)


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_the_sessions_own_background_server_stays_reachable(tmp_path: Path, persistent: bool) -> None:
    """What the path rule was for: a server a background command of this session binds in the
    workspace (its own network namespace per command) still answers a later command."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            await sup.start_background(f"cd {ws} && {_OWN_SERVER}")
            for _ in range(100):
                if (ws / "own.sock").exists():
                    break
                await anyio.sleep(0.1)
            return (await sup.run(f"cd {ws} && " + _CLIENT.format(path="own.sock"), timeout_s=60)).preview

    out = anyio.run(main)
    assert "OWN-ANSWER" in out, out
