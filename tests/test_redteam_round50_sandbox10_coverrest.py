"""Red team, round 50 (sandbox10): `_cover_rest` checked a name, then bound it by path.

A shared overlay's init (round 38: a root caller's, one overlay for a mount with several covered
directories) covers what no group does: each regular file directly in the mount's directory and
each subdirectory made since the plan, bound from the overlay over itself. It checked each name
with ``statx`` without following, then called ``mount(<hold>/<name>, <dir>/<name>, MS_BIND)``, and
``mount(2)`` follows links: a name another session's command swaps for a link to this session's
writable root between the two (the mount's directory writable in that session) made the init bind
the root over itself, non-recursively -- without the masks mounted below it (round 49's Left,
"a race there needs a name in ``/``": any mount's directory with two covered directories takes a
shared overlay, ``/work`` as well as ``/``).

The race is made certain here: the init's ``mount`` call swaps the name first (the Python init's
replay, its libc's ``mount`` wrapped), in a mount namespace of its own on real mounts in a private
tmpfs. The C init's `cover_rest` is the same construction (anchored the same way); it has no hook
to run the swap in its window.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import _zygote_main as zm
from tests.conftest import require
from tests.test_zinit import _private_scratch

pytestmark = pytest.mark.bwrap

_SCRIPT = """
import importlib.util, os, subprocess, sys
spec = importlib.util.spec_from_file_location("zm", sys.argv[1])
zm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zm)
s = sys.argv[2]
subprocess.run(["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={s}/m:{s}/e", f"{s}/h"], check=True)
real = zm._libc
class Swapping:
    swapped = 0
    def __getattr__(self, name):
        return getattr(real, name)
    def mount(self, *args):
        if not Swapping.swapped:  # the other session's command, between the check and the bind
            Swapping.swapped = 1
            os.rename(f"{s}/m/new", f"{s}/m/new.old")
            os.symlink(f"{s}/m/x", f"{s}/m/new")
        return real.mount(*args)
zm._libc = Swapping()
zm._cover_rest(f"{s}/h".encode(), f"{s}/m".encode(), b"x")
zm._libc = real
print("swapped", Swapping.swapped)
print(open(f"{s}/m/x/secret").read() or "(masked)")
"""


def test_a_name_swapped_for_a_link_after_its_check_binds_nothing_over_the_link_target(tmp_path: Path) -> None:
    """Failed before: 1 of 1 (the masked file read ``TOPSECRET``: the writable root ``x`` bound
    over itself without its mask). Now the directory, the entry and its copy in the overlay are
    opened through no link before they are checked, and bound fd to fd: the swap moves the opened
    directory away under another name and the bind lands there."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    scratch = _private_scratch(tmp_path)
    try:
        for name in ("m/x", "m/new"):
            (scratch / name).mkdir(parents=True)
        (scratch / "m" / "x" / "secret").write_text("TOPSECRET\n")
        (scratch / "empty").write_text("")
        subprocess.run(["mount", "--bind", str(scratch / "empty"), str(scratch / "m" / "x" / "secret")], check=True)
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", sys.executable, "-I", "-c", _SCRIPT,
             str(Path(zm.__file__)), str(scratch)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split("\n")[:2] == ["swapped 1", "(masked)"], done.stdout
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
