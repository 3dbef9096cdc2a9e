"""Red team, round 41 (bwrap4): a root caller's session command read every host user's key accounting.

A root caller's session commands run as the session's leased uid in the host's own user namespace
(their init's /proc is made by the zygote, with Docker's masks: ``/proc/keys`` among them, not
``/proc/key-users``). ``/proc/key-users`` lists every user the reader's user namespace maps, with
how many keys it holds and how much of its key quota it uses: here host root's line (and every other
host user's with a key), which moved as logins and other processes on the host made and dropped
keys -- an activity signal across tenants, as the page cache was (round 38). A per-command bwrap and
a non-root caller's session map one uid only: their list is the command's own. Now the zygote masks
``/proc/key-users`` too (/dev/null), as ``/proc/keys``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import os
try:
    text = open("/proc/key-users").read()
except OSError as exc:
    text = ""
    print("OPEN", exc.errno)
own = os.getuid()
others = [line.split(":")[0].strip() for line in text.splitlines() if line.split(":")[0].strip() != str(own)]
print("OTHERS", ",".join(others) or "none")
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_sees_no_other_users_keys(tmp_path: Path, persistent: bool) -> None:
    """Failed before as root in a session (``OTHERS 0,65534``; 1 of 1); per command and as uid
    65534 it held (a user namespace of one uid)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert said.get("OTHERS") == "none", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_command_sees_no_other_users_keys")
