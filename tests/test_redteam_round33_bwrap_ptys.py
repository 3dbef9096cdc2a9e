"""Red team, round 33 (bwrap): one command took every pty of every other sandbox on the host.

The kernel counts ptys host-wide: ``kernel.pty.max`` (4096) less ``kernel.pty.reserve`` (1024,
kept for the host's own devpts) for every other devpts instance together -- each bwrap sandbox's,
each session's, each container's. A command opening ``/dev/ptmx`` until it fails held 3071 of them
(one process, ``RLIMIT_NOFILE`` raised to its hard limit) and every other session's command got
"out of pty devices" while it ran. Each devpts a sandbox gets now has ``max=`` (`sandbox._devtree`).
Root and uid 65534; a session (its zygote's devpts) and, as root, one bwrap per command (the
session's /dev tree).
"""

from __future__ import annotations

import base64
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._devtree import PTY_MAX
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: Opens ptys until the first failure (at most 400: a bound far above the cap, far below the
#: host's pool), prints how many it held, then shows that a pty opens again once they are closed.
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
os.close(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
print("AGAIN ok")
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_holds_at_most_its_share_of_the_hosts_ptys(tmp_path: Path, persistent: bool) -> None:
    """Failed before (root): HELD 400 in both modes (the bound; by hand, 3071: the host's whole pool)."""
    require_bwrap()
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
    assert said.get("AGAIN") == "ok", out
    assert 1 <= int(said["HELD"]) <= PTY_MAX, out
    assert said["WHY"] == "ENOSPC", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    # One bwrap per command of a non-root caller still gets bwrap's own devpts (round 33 "Left").
    _nonroot.held_as_nobody(__file__, "test_a_command_holds_at_most_its_share_of_the_hosts_ptys[session]")
