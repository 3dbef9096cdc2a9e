"""Red team, round 33 (bwrap): one command took every pty of every other sandbox on the host.

The kernel counts ptys host-wide: ``kernel.pty.max`` (4096) less ``kernel.pty.reserve`` (1024,
kept for the host's own devpts) for every other devpts instance together -- each bwrap sandbox's,
each session's, each container's. A command opening ``/dev/ptmx`` until it fails held 3071 of them
(one process, ``RLIMIT_NOFILE`` raised to its hard limit) and every other session's command got
"out of pty devices" while it ran. Each devpts a sandbox gets now has ``max=`` (`sandbox._devtree`).
Root and uid 65534; a session (its zygote's devpts) and one bwrap per command (a root caller's: the
session's /dev tree; a non-root caller's: the devpts its starter mounts before bwrap, in C and, with
no starter, in Python).
"""

from __future__ import annotations

import base64
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_starter
from sandbox._devtree import PTY_MAX
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: Opens ptys until the first failure (at most 400: a bound far above the cap, far below the
#: host's pool), prints how many it held, then shows that a pty works again once they are closed.
_HOG = r"""
import errno, os, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, why = [], "none"
while len(held) < 400:
    try:
        held.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
    except OSError as exc:
        why = errno.errorcode.get(exc.errno, str(exc.errno))
        break
print("HELD", len(held))
print("WHY", why)
for fd in held:
    os.close(fd)
import pty
main, tty = pty.openpty()  # a pty's both ends, by their names: the instance at /dev/pts serves them
os.write(main, b"hi\n")
print("AGAIN", os.read(tty, 3).decode().strip() == "hi" and os.ttyname(tty).startswith("/dev/pts/"))
"""


@pytest.mark.parametrize("mode", ["session", "per-command", "no-starter"])
def test_a_command_holds_at_most_its_share_of_the_hosts_ptys(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: HELD 400 (the bound; by hand, 3071: the host's whole pool), root 2 of 2
    (session, per command) and uid 65534 3 of 3."""
    require_bwrap()
    persistent = mode == "session"
    if mode == "no-starter":  # a non-root caller's step in Python (`sandbox._bwrap_shmstep`)
        monkeypatch.setattr(_bwrap_starter, "starter_program_fd", lambda: "no C compiler (the test)")
    ws = tmp_path / "ws"
    ws.mkdir()
    command = f"echo {base64.b64encode(_HOG.encode()).decode()} | base64 -d | python3 -"

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            out = (await sup.run(command, timeout_s=60)).preview
            assert (backend._zygote is not None) == persistent, "the session must run under its zygote"
            return out

    out = anyio.run(main)
    said = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert said.get("AGAIN") == "True", out
    assert 1 <= int(said["HELD"]) <= PTY_MAX, out
    assert said["WHY"] == "ENOSPC", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_command_holds_at_most_its_share_of_the_hosts_ptys")
