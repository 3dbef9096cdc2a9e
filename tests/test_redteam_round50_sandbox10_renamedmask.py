"""Red team, round 50 (sandbox10): a mask below a covered directory, renamed since the plan.

The lock view plans, at the session's start, which mounts lie below each covered directory (its
masks: ``read_denied`` paths, a mount each) and moves them into the directory's overlay at every
init. A directory on a mask's way renamed since (``mv docs/x docs/y``: by the host, or by a command
of another session whose writable root holds ``docs`` and whose policy does not mask the file)
takes the mask along to its new name -- without the lock view the file stays masked there -- but
the planned move found nothing at the old name (skipped, "gone") and the overlay went over
``docs``, hiding the mask: the file read in full at ``docs/y/secret``. Round 49 took this for "a
mask is for the name the policy gives ... alike with the lock view and without it"; it is not
alike: without the view it stays masked.

Each init replays round 49's groups (`tests.test_redteam_round49_sandbox9_lockviewlink._group`,
``path``: a move of ``docs/x/secret``) in a mount namespace of its own on real mounts in a private
tmpfs, both inits and both shapes; and (the Python init) with the rename made inside the group,
after its head's check (its libc's ``mount`` wrapped to rename first).
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
from tests.test_zinit import _config, _private_scratch, _run_directly

pytestmark = pytest.mark.bwrap

#: The renamed mask's file (empty: still masked), then the mounts at ``docs`` (0: group skipped).
_CHECK = "cat {s}/docs/y/secret; echo; grep -c ' {s}/docs ' /proc/self/mountinfo; true"

#: The rename made by the group's first mount call (after its head's check): the Python init.
_RENAME_INSIDE = """
import os, sys
_s = sys.argv[4]
class _Renaming:
    done = 0
    def __init__(self, real):
        self.real = real
    def __getattr__(self, name):
        return getattr(self.real, name)
    def mount(self, *args):
        if not _Renaming.done:
            _Renaming.done = 1
            os.rename(f"{_s}/docs/x", f"{_s}/docs/y")
        return self.real.mount(*args)
"""


def _lay_out(scratch: Path, renamed: bool) -> None:
    for name in ("app", "docs/x", "lv"):
        (scratch / name).mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(scratch / "lv")], check=True)
    for name in ("e", "h", "s"):
        (scratch / "lv" / name).mkdir()
    (scratch / "docs" / "x" / "secret").write_text("TOPSECRET\n")
    (scratch / "empty").write_text("")
    subprocess.run(["mount", "--bind", str(scratch / "empty"), str(scratch / "docs" / "x" / "secret")], check=True)
    if renamed:
        (scratch / "docs" / "x").rename(scratch / "docs" / "y")


def _python(scratch: Path, shape: str, check: str, prelude: str = "", hook: str = "") -> tuple[str, str]:
    calls = [[c[0] and c[0].decode(), c[1].decode(), c[2] and c[2].decode(), c[3].value, c[4] and c[4].decode()]
             for c in _group(scratch, "path", shape)]  # fmt: skip
    script = _REPLAY.replace("zm._replay(", prelude + hook + "zm._replay(") if hook else _REPLAY
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-I", "-c", prelude + script,
         str(Path(zm.__file__)), json.dumps(calls), check, str(scratch)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done.stdout + done.stderr, f"s {done.returncode << 8}\n"


@pytest.mark.parametrize("shape", ["own", "shared"])
@pytest.mark.parametrize("init", ["c", "python"])
def test_a_mask_renamed_since_the_plan_is_never_hidden_below_the_overlay(
    tmp_path: Path, init: str, shape: str
) -> None:
    """Failed before: 4 of 4 (``TOPSECRET`` read at ``docs/y/secret``, the overlay at ``docs``).
    Now each group's head checks the mounts below its directory as they are named now against the
    moves the plan makes: one the plan does not move skips the group (the directory as the host
    shows it, the mask on its file)."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    scratch = _private_scratch(tmp_path)
    try:
        _lay_out(scratch, renamed=True)
        check = _CHECK.format(s=scratch)
        if init == "c":
            said, status = _run_directly(
                tmp_path, _config(_seccomp.filter_bytes(), _group(scratch, "path", shape)), check
            )
        else:
            said, status = _python(scratch, shape, check)
        assert status == "s 0\n", (status, said)
        assert said.split() == ["0"], said  # masked (empty), no overlay at docs
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)


@pytest.mark.parametrize("shape", ["own", "shared"])
def test_a_mask_renamed_inside_the_group_fails_the_init_closed(tmp_path: Path, shape: str) -> None:
    """Failed before: 2 of 2 (``TOPSECRET`` read). The rename comes after the head's check: the
    planned move finds nothing, and the group's end finds a mount below the directory that is not
    in its overlay -- the init fails ("moved since the plan"), the command does not run; the next
    init's head check skips the group (the case above)."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    scratch = _private_scratch(tmp_path)
    try:
        _lay_out(scratch, renamed=False)
        hook = "zm._libc = _Renaming(zm._libc)\n"
        said, status = _python(scratch, shape, _CHECK.format(s=scratch), _RENAME_INSIDE, hook)
        assert "TOPSECRET" not in said, said
        assert status != "s 0\n" and "moved since the plan" in said, (status, said)
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
