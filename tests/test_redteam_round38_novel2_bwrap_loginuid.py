"""Red team, round 38 (novel2): one bwrap per command of a non-root caller set its own audit login uid.

Round 38 (novel) pinned ``/proc/self/loginuid`` in the zygote and the root spawner, which every
session command and a root caller's per-command bwrap descend from. A non-root caller's one bwrap
per command is started from the caller's own process: where the caller's is unset (CI, a service)
the command wrote its uid there -- the only one its user namespace maps, but a LOGIN record and a
new audit session of its choosing. Now the C starter pins it, where unset, to the uid the command
runs as before anything of the command runs: ``zinit shm`` on the host side of bwrap (as the
caller, before its own user namespace), and ``zinit enter`` inside (where the kernel refused the
shm step); ``_bwrap_shmstep.py`` (the shm step without a compiler) too. Changing a set value needs
CAP_AUDIT_CONTROL in the host's user namespace, which no command holds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import _bwrap_shm, _bwrap_starter
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

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


def _unset_here() -> bool:
    with open("/proc/self/loginuid") as f:
        return f.read().strip() == "4294967295"


def _check(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=False)
    assert said.get("OWN") == "EPERM", out
    assert said.get("AFTER") == said.get("BEFORE"), out
    if _unset_here():
        assert said.get("BEFORE") not in (None, "4294967295"), out


def test_a_per_command_sandbox_cannot_set_its_login_identity(tmp_path: Path) -> None:
    """Failed before as uid 65534 (``OWN set``; 1 of 1); root held (the spawner's pin)."""
    _check(tmp_path)


def test_without_the_shm_step_the_starter_pins_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel refused the shm step (an AppArmor userns rule): ``zinit enter`` alone.
    Failed before as uid 65534 (1 of 1)."""

    def refused(self: _bwrap_shm.ShmCap, *_args: object) -> None:
        self._works = False

    monkeypatch.setattr(_bwrap_shm.ShmCap, "decide", refused)
    _check(tmp_path)


def test_without_a_compiler_the_python_shm_step_pins_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No C starter (no compiler, ``vm.memfd_noexec`` 2): the shm step in Python
    (`sandbox._bwrap_shmstep`). Failed before as uid 65534 (1 of 1)."""
    monkeypatch.setattr(_bwrap_starter, "starter_program_fd", lambda: "no C compiler (the test says so)")
    _check(tmp_path)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_per_command_sandbox_cannot_set_its_login_identity",
        "test_without_the_shm_step_the_starter_pins_it",
        "test_without_a_compiler_the_python_shm_step_pins_it",
    )
