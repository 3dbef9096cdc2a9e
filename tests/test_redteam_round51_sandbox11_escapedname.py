"""Red team, round 51 (sandbox11): the C init compared mountinfo's escaped names with plain ones.

Round 50 made each lock-view group's head check the mounts below its directory, as they are named
now, against the moves its plan makes (a mask renamed since the plan, e.g. ``mv docs/x docs/y`` by
the host or by another session's command, stays on top: the group is skipped). The Python init
reads ``/proc/self/mountinfo`` with its octal escapes undone (`_zygote_main._mount_points`); the C
init (`zinit.c` ``unplanned_below``) compared the escaped field with the plain directory name, so
below a directory whose name has a space, a tab or a backslash (the plan covers those: it leaves
out only ``,:\\=`` and newlines) it found no mount at all -- the overlay went over the directory and
hid the renamed mask: ``TOPSECRET`` read, where the Python init skipped the group. The inits
disagreed; the C init is the one a session runs where a compiler exists.

Round 50's replay (`tests.test_redteam_round50_sandbox10_renamedmask`) in a scratch directory whose
path holds a space, both inits and both shapes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox import _seccomp
from tests.conftest import require
from tests.test_redteam_round49_sandbox9_lockviewlink import _group
from tests.test_redteam_round50_sandbox10_renamedmask import _lay_out, _python
from tests.test_zinit import _config, _private_scratch, _run_directly

pytestmark = pytest.mark.bwrap


def _check(scratch: Path) -> str:
    """The renamed mask's file (empty: still masked), then the mounts at ``docs`` (0: skipped)."""
    escaped = str(scratch).replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
    return f"cat '{scratch}/docs/y/secret'; echo; grep -cF ' {escaped}/docs ' /proc/self/mountinfo; true"


@pytest.mark.parametrize("shape", ["own", "shared"])
@pytest.mark.parametrize("init", ["c", "python"])
def test_a_renamed_mask_below_a_name_with_a_space_is_never_hidden(
    tmp_path: Path, init: str, shape: str
) -> None:
    """Failed before: 2 of 4 (the C init, both shapes: ``TOPSECRET`` read at ``docs/y/secret``, the
    overlay at ``docs``); the Python init held. Now the C init undoes the escapes of each name it
    reads from the table before comparing it (`zinit.c` ``unescaped``)."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    spaced = tmp_path / "a b"
    spaced.mkdir()
    scratch = _private_scratch(spaced)
    try:
        _lay_out(scratch, renamed=True)
        if init == "c":
            config = _config(_seccomp.filter_bytes(), _group(scratch, "path", shape))
            said, status = _run_directly(spaced, config, _check(scratch))
        else:
            said, status = _python(scratch, shape, _check(scratch))
        assert status == "s 0\n", (status, said)
        assert said.split() == ["0"], said  # masked (empty), no overlay at docs
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
