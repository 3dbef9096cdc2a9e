"""Red team, round 38 (novel): a command chose its own audit login identity, host root's included.

``/proc/self/loginuid`` is the audit subsystem's "who logged in" of a process (``auid``), kept
across every later ``setuid`` and inherited by children: the host's audit log files each record under
it, audit rules select by it (``-F auid>=1000``), and setting it writes a LOGIN record. A process
whose value is still unset -- every process of a daemon, a CI job or a container, shellrt as a
service: no ``pam_loginuid`` ran -- may set it once, to any uid its user namespace maps, without a
capability. So a command of a root caller's session (no user namespace: every uid mapped) wrote
``0``: from then on the host's audit log showed its actions as a login of host root (a new session
id, a LOGIN record), or of any operator it named.

The zygote and the root spawner now set their own (which every init, bwrap and command inherits)
to the uid the commands run as, where it is still unset (`sandbox._zygote_main.pin_audit_identity`):
changing a set value needs CAP_AUDIT_CONTROL, which no command has. Root: session and per command;
uid 65534: session (one bwrap per command of a non-root caller: "Left" in docs/security.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import errno, os
def read():
    with open("/proc/self/loginuid") as f:
        return f.read().strip()
print("BEFORE", read())
for name, value in (("ROOT", "0"), ("OWN", str(os.getuid())), ("OTHER", "1000")):
    try:
        with open("/proc/self/loginuid", "w") as f:
            f.write(value)
        print(name, "set")
    except OSError as exc:
        print(name, errno.errorcode[exc.errno])
print("AFTER", read())
"""


def _probe(tmp_path: Path, persistent: bool) -> tuple[dict[str, str], str]:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    return probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)


def _check(said: dict[str, str], out: str) -> None:
    assert said.get("BEFORE") and said.get("AFTER") == said["BEFORE"], out
    for name in ("ROOT", "OWN", "OTHER"):
        assert said.get(name) in ("EPERM", "EINVAL"), out
    if _unset_here():
        # The host's own is unset, so a command's starts set: to the uid it runs as.
        assert said["BEFORE"] != "4294967295", out


def _unset_here() -> bool:
    with open("/proc/self/loginuid") as f:
        return f.read().strip() == "4294967295"


def test_a_session_command_cannot_set_its_login_identity(tmp_path: Path) -> None:
    """Failed before (a host whose loginuid is unset, as CI's): ``ROOT set``, AFTER 0; root 1 of 1,
    uid 65534 1 of 1 (there ``OWN set``: the only uid its namespace maps)."""
    _check(*_probe(tmp_path, True))


def test_a_root_callers_per_command_sandbox_cannot_set_it(tmp_path: Path) -> None:
    """One bwrap per command from the root spawner: bwrap's user namespace maps the sandbox uid only,
    so ``0`` was EINVAL, but ``OWN set`` before (root 1 of 1)."""
    _check(*_probe(tmp_path, False))


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_session_command_cannot_set_its_login_identity")
