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

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import _seccomp
from sandbox import _zygote_main as zm
from tests.conftest import require
from tests.test_redteam_round49_sandbox9_lockviewlink import _REPLAY, _group
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


@pytest.mark.parametrize("init", ["c", "python"])
def test_a_mask_below_a_new_directory_of_a_spaced_mount_is_never_covered(tmp_path: Path, init: str) -> None:
    """The same comparison in the shared overlay's cover of what no group covers (round 38: the
    mount's directories made since the plan, each bound from the overlay over itself unless a mount
    lies below it): the C init's ``mounts_below`` looked for `` <dir>/<name>/`` in the escaped table,
    so below a mount's directory whose name has a space a directory holding a mask (renamed there
    since the plan) was covered, the mask hidden. Failed before: 1 of 2 (the C init: ``TOPSECRET``
    read); the Python init held. Now ``mounts_below`` is ``unplanned_below`` with no moves."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    spaced = tmp_path / "a b"
    spaced.mkdir()
    scratch = _private_scratch(spaced)
    try:
        for name in ("m/x", "m/new"):
            (scratch / name).mkdir(parents=True)
        (scratch / "m" / "new" / "secret").write_text("TOPSECRET\n")
        (scratch / "empty").write_text("")
        subprocess.run(
            ["mount", "--bind", str(scratch / "empty"), str(scratch / "m" / "new" / "secret")], check=True
        )
        subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={scratch}/m:{scratch}/e", f"{scratch}/h"],
            check=True,
        )
        rest = zm._mount_call(f"{scratch}/h", f"{scratch}/m", None, zm._CALL_REST, "x")
        check = f"cat '{scratch}/m/new/secret'; echo; true"
        if init == "c":
            said, status = _run_directly(spaced, _config(_seccomp.filter_bytes(), (rest,)), check)
        else:
            said, status = _replayed(scratch, rest, check)
        assert status == "s 0\n", (status, said)
        assert said.split() == [], said  # masked (empty)
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)


def _replayed(scratch: Path, call: zm.MountCall, check: str) -> tuple[str, str]:
    """``call`` replayed by the Python init in a mount namespace of its own, then ``check``."""
    calls = [
        [call[0] and call[0].decode(), call[1].decode(), None, call[3].value, call[4] and call[4].decode()]
    ]
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-I", "-c", _REPLAY,
         str(Path(zm.__file__)), json.dumps(calls), check, str(scratch)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done.stdout + done.stderr, f"s {done.returncode << 8}\n"
