"""Red team, round 38 (review5): a caller whose audit login uid is set ran no per-command bwrap.

Round 38 (novel2) made ``zinit enter`` pin ``/proc/self/loginuid`` inside bwrap's user namespace
where it reads unset. Inside a user namespace the kernel shows a login uid the namespace does not
map as unset too (``from_kuid`` of the opener's namespace), while writing it needs
CAP_AUDIT_CONTROL (it is set): the pin failed with EPERM and every command was refused ("cannot
pin the audit login uid"). That is the common case, not an attack: an operator who logged in as
uid 1000 and runs shellrt through ``sudo`` (root) or as a service user (uid 65534 here). The test
sets its own subprocess's login uid (a process may set an unset one once) and runs one command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.bwrap

_ROOT = Path(__file__).resolve().parents[1]

_PROBE = r"""
import errno, os
def read():
    with open("/proc/self/loginuid") as f:
        return f.read().strip()
print("BEFORE", read())
try:
    with open("/proc/self/loginuid", "w") as f:
        f.write(str(os.getuid()))
    print("OWN set")
except OSError as exc:
    print("OWN", errno.errorcode[exc.errno])
print("AFTER", read())
"""

#: Run in a subprocess: its login uid set first (as a login would), then one command in one bwrap.
_CALLER = r"""
import sys, tempfile
from pathlib import Path
with open("/proc/self/loginuid", "w") as f:
    f.write(sys.argv[1])
from tests._bwrap_session import probe_lines
with tempfile.TemporaryDirectory() as d:
    ws = Path(d) / "ws"
    ws.mkdir()
    _said, out = probe_lines(ws, Path(d) / "s", sys.argv[2], persistent=sys.argv[3] == "1")
    sys.stdout.write(out)
"""

#: A login uid neither root nor 65534 (nor a leased uid) is, so no namespace of the test maps it.
_LOGIN = 4242


def _unset_here() -> bool:
    with open("/proc/self/loginuid") as f:
        return f.read().strip() == "4294967295"


@pytest.mark.parametrize("persistent", [False, True], ids=["one-bwrap-per-command", "session"])
def test_a_caller_with_a_login_runs_commands(persistent: bool) -> None:
    """One bwrap per command failed before as root and as uid 65534 (``cannot pin the audit login
    uid``; 1 of 1 each); a session under the zygote held."""
    require_bwrap()
    if not _unset_here():
        pytest.fail("this process's login uid is set: the test must set a fresh one (run it from CI or a service)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), *(p for p in sys.path if p)])}
    done = subprocess.run(
        [sys.executable, "-c", _CALLER, str(_LOGIN), _PROBE, "1" if persistent else "0"],
        cwd=_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout + done.stderr
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "cannot pin" not in out, out
    assert said.get("OWN") == "EPERM", out  # set (the caller's): no command changes it
    assert said.get("AFTER") == said.get("BEFORE"), out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_caller_with_a_login_runs_commands[one-bwrap-per-command]",
        "test_a_caller_with_a_login_runs_commands[session]",
    )
