"""Red team, round 51 (sandbox11): the C init dropped the lock view where the mount table is long.

Each lock-view group's head checks the mounts below its directory (round 50). The C init read
``/proc/self/mountinfo`` into a fixed 64 KiB buffer and, when the table did not fit, assumed a
mount below every directory: every group skipped, no lock view at all -- a command's locks and
watches on host files were on the host's inodes again (round 37's hold on a host program's lock),
silently, while the Python init read the whole table and made it. The init's table is the host's:
a host with a few dozen containers (overlay mounts with long ``lowerdir`` options, their ``shm``
and network namespace mounts) passes 64 KiB. The inits disagreed.

Round 49's replay of one covered directory ``docs`` (both shapes) after 24 mounts with ~3,000-byte
names were made in the scratch tmpfs (the table ~75 KiB), both inits.
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

#: Mounts made, and the length of the directory chain they sit at the end of (bytes).
_MOUNTS = 24
_DEPTH = 14


def _long_mounts(scratch: Path) -> None:
    """``_MOUNTS`` small tmpfs mounts at names of ~3,000 bytes (`_DEPTH` components of 200)."""
    deep = scratch.joinpath(*(f"{i:02d}" + "l" * 198 for i in range(_DEPTH)))
    deep.mkdir(parents=True)
    script = 'cd "$1" && for i in $(seq $2); do mkdir $i && mount -t tmpfs -o size=4k t $i || exit 1; done'
    subprocess.run(["sh", "-c", script, "sh", str(deep), str(_MOUNTS)], check=True)
    with open("/proc/self/mountinfo", "rb") as fh:
        assert len(fh.read()) > 1 << 16, "the mount table must pass 64 KiB"


@pytest.mark.parametrize("shape", ["own", "shared"])
@pytest.mark.parametrize("init", ["c", "python"])
def test_a_long_mount_table_keeps_the_lock_view(tmp_path: Path, init: str, shape: str) -> None:
    """Failed before: 2 of 4 (the C init, both shapes: no overlay at ``docs``); the Python init made
    it. Now the C init reads the whole table (`zinit.c` ``mount_table``: a buffer that grows, up to
    16 MiB; past that, as before, every group is skipped)."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    scratch = _private_scratch(tmp_path)
    try:
        _lay_out(scratch, renamed=False)
        _long_mounts(scratch)
        check = f"cat {scratch}/docs/x/secret; echo; grep -c ' {scratch}/docs ' /proc/self/mountinfo; true"
        if init == "c":
            said, status = _run_directly(
                tmp_path, _config(_seccomp.filter_bytes(), _group(scratch, "path", shape)), check
            )
        else:
            said, status = _python(scratch, shape, check)
        assert status == "s 0\n", (status, said)
        assert said.split() == ["1"], said  # the mask still on its file (empty), the overlay at docs
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
