"""Red team, round 47 (sandbox7): a non-root caller's command used up its uid's in-flight fd budget.

The kernel counts every file descriptor in flight over a unix socket (sent with ``SCM_RIGHTS``, not
yet received) against the sending *user* (``user_struct.unix_inflight``), and refuses a send with
``ETOOMANYREFS`` once that count exceeds the sender's own soft ``RLIMIT_NOFILE`` (unless it has
CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the host's user namespace). A non-root caller's commands run as
its own uid (a user namespace changes no ``user_struct``): a command that queued its limit's worth
of descriptors on a socket pair of its own, and kept them there, made every ``SCM_RIGHTS`` send of
every other process of the caller's uid fail for as long as it ran -- the host's shellrt (a session's
requests to its zygote carry the command's stdio that way), the caller's desktop, its user
systemd. Now a non-root caller's commands get at most (caller's soft limit - 253) / 2 descriptors
(`sandbox._ucounts.session_rlimits`, soft and hard, as the other per-uid budgets), so what they
can hold in flight together stays below what the caller's own processes may (253: one message's
most). A root caller's commands run as a leased uid of their own, its host process is exempt.
"""

from __future__ import annotations

import array
import os
import socket
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: Fill the uid's in-flight count: 253 copies of one descriptor a message, on as many stream
#: pairs as it takes, until the kernel says ETOOMANYREFS; then hold them until the host is done.
_FILL = r"""
import array, os, socket, sys, time
pairs, sent, why = [], 0, "none"
fds = array.array("i", [0] * 253)
while why == "none" and len(pairs) < 400:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.setblocking(False)
    pairs.append((a, b))
    while True:
        try:
            a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            sent += 253
        except BlockingIOError:
            break
        except OSError as exc:
            why = os.strerror(exc.errno)
            break
print("INFLIGHT", sent, why, flush=True)
open("ready", "w").close()
end = time.monotonic() + 30
while not os.path.exists("done") and time.monotonic() < end:
    time.sleep(0.05)
"""


def _host_send() -> str:
    """One descriptor sent over a socket pair of the host's (this process): "ok" or the error."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        try:
            a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [a.fileno()]))])
        except OSError as exc:
            return os.strerror(exc.errno or 0)
        return "ok"


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_leaves_its_callers_fd_passing_alone(tmp_path: Path, persistent: bool) -> None:
    """Failed before as uid 65534 (session and per command, 2 of 2: ``Too many references``
    on the host while the command held 20,240 in flight); a root host is exempt."""
    if os.geteuid() == 0:  # run as uid 65534 by tests/test_redteam_round47_sandbox7_nonroot.py
        pytest.skip("a root host is exempt and its commands run as a leased uid: nothing to fail here")
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "fill.py").write_text(_FILL)
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    seen: dict[str, str] = {}

    async def main() -> None:
        async with supervised(backend, tmp_path / "s") as sup:

            async def fill() -> None:
                seen["out"] = (await sup.run("python3 fill.py", timeout_s=60)).preview

            async with anyio.create_task_group() as tg:
                tg.start_soon(fill)
                end = time.monotonic() + 40
                while not (ws / "ready").exists() and "out" not in seen and time.monotonic() < end:
                    await anyio.sleep(0.02)
                seen["host"] = _host_send()
                (ws / "done").touch()
            seen["after"] = (await sup.run("echo next", timeout_s=60)).preview.strip()

    anyio.run(main)
    out = seen.get("out", "")
    assert "INFLIGHT" in out, out
    assert seen["host"] == "ok", (seen["host"], out)
    assert seen["after"] == "next", seen
