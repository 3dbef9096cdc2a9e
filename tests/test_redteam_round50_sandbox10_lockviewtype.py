"""Red team, round 50 (sandbox10): a covered directory swapped for a FIFO or a file since the plan.

Round 49 (sandbox9) anchored each lock-view group: its directory is opened once, at the group's
head, through no symbolic link (``openat2`` ``RESOLVE_NO_SYMLINKS``), and a link there skips the
group. The open was ``O_PATH`` without ``O_DIRECTORY``: it opens a FIFO, a socket or a regular file
just as well. A command of another session whose writable root holds a covered directory
(``/repo/docs`` beside a session on ``/repo/app``) swaps it for one -- ``mv docs d && mkfifo docs``
-- and every later init of the session made its overlay over ``/proc/self/fd/<the FIFO>``: the
kernel refused it with ENOTDIR (not the EINVAL/ENOENT that skip a group), the init failed, and the
session ran no command more. The same for a shared overlay's part (a root caller's).

The layout and the replay are round 49's (`tests.test_redteam_round49_sandbox9_lockviewlink`):
each init replays the group in a mount namespace of its own on the host, on real mounts in a
private tmpfs.
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
from tests.test_redteam_round49_sandbox9_lockviewlink import _CHECK, _REPLAY, _group
from tests.test_zinit import _config, _private_scratch, _run_directly

pytestmark = pytest.mark.bwrap


def _lay_out(scratch: Path, kind: str) -> None:
    """The writable root ``app`` with its masked ``secret``, the covered ``docs`` beside it, then
    swapped for a ``kind`` (``fifo``, ``file``) of the same name."""
    for name in ("app", "docs/x", "lv"):
        (scratch / name).mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(scratch / "lv")], check=True)
    for name in ("e", "h", "s"):
        (scratch / "lv" / name).mkdir()
    (scratch / "app" / "secret").write_text("TOPSECRET\n")
    (scratch / "empty").write_text("")
    subprocess.run(["mount", "--bind", str(scratch / "empty"), str(scratch / "app" / "secret")], check=True)
    (scratch / "docs").rename(scratch / "docs.old")
    if kind == "fifo":
        os.mkfifo(scratch / "docs")
    else:
        (scratch / "docs").write_text("a file now\n")


@pytest.mark.parametrize("kind", ["fifo", "file"])
@pytest.mark.parametrize("shape", ["own", "shared"])
@pytest.mark.parametrize("init", ["c", "python"])
def test_a_non_directory_swapped_in_since_the_plan_skips_its_group(
    tmp_path: Path, init: str, shape: str, kind: str
) -> None:
    """Failed before: 8 of 8 (the init failed, "Not a directory": the session ran nothing more).
    Now the group's anchor is opened ``O_DIRECTORY`` too (both inits): anything but a directory
    there skips the group, as a link does, and the command runs."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    scratch = _private_scratch(tmp_path)
    try:
        _lay_out(scratch, kind)
        check = _CHECK.format(s=scratch)
        if init == "c":
            said, status = _run_directly(
                tmp_path, _config(_seccomp.filter_bytes(), _group(scratch, "dir", shape)), check
            )
        else:
            calls = [[c[0] and c[0].decode(), c[1].decode(), c[2] and c[2].decode(), c[3].value, c[4] and c[4].decode()]
                     for c in _group(scratch, "dir", shape)]  # fmt: skip
            done = subprocess.run(
                ["unshare", "-m", "--propagation", "private", sys.executable, "-I", "-c", _REPLAY,
                 str(Path(zm.__file__)), json.dumps(calls), check],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            said, status = done.stdout + done.stderr, f"s {done.returncode << 8}\n"
        assert status == "s 0\n", (status, said)  # the init set up and ran the command
        assert said.split() == ["WRITABLE"], said  # the mask still over the secret, the root writable
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
