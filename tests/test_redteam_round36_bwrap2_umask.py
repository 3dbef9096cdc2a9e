"""Red team, round 36 (bwrap2): a caller's umask reached the sandbox's own directories.

A process inherits its parent's umask. The zygote's holder makes the directories a per-command
bwrap and the sandbox uid cross to reach the workspace (a 0711 skeleton over the session tmp's
owner directory), and the backend made the way to a root under /tmp inside the session tmp (0711):
each through ``mkdir(mode)``, which the umask narrows. A root caller at a hardened umask (027 or
077: CIS benchmarks, some distributions' root) got 0710 and 0700: the sandbox uid could not cross
them, so no command ran at all -- a session said "cannot enter the working directory", one bwrap
per command failed its start with "bubblewrap cannot create namespaces here" (bwrap: "Can't find
source path …/src/0: Permission denied"), a wrong diagnosis. Now every process of ours in the
sandbox runs at umask 022 (`sandbox._zygote_main.SANDBOX_UMASK`) and the host-made directory's mode
is set whatever the umask: the session's commands start at 022 too, not at their caller's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import os
print("UMASK", oct(os.umask(0o022)))
with open("made", "w") as f:
    pass
print("RAN ok")
"""


@contextmanager
def _caller_umask(mask: int) -> Iterator[None]:
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.parametrize("mask", [0o027, 0o077], ids=["027", "077"])
@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_hardened_callers_umask_runs_its_commands(tmp_path: Path, persistent: bool, mask: int) -> None:
    """Failed before (root): session ``cannot enter the working directory``, per command
    "bubblewrap cannot create namespaces here": 4 of 4."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    ws.chmod(0o755)
    with _caller_umask(mask):
        said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    assert said.get("RAN") == "ok", out
    if persistent or os.geteuid() == 0:  # the zygote's commands, and a root caller's spawner's
        assert said.get("UMASK") == "0o22", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_hardened_callers_umask_runs_its_commands")
