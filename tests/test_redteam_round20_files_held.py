"""Red team, round 20 (files): a write that fails half-way (disk full) leaves the old content and no temp file.

Held, pinned: Write and Edit write a temp file and rename it; a full filesystem fails the temp file's
write with ENOSPC, the target keeps its old bytes and the temp file is removed -- for a replace
(``base``) and for a new file (``exclusive``). The full filesystem is a 1 MiB tmpfs in a mount
namespace of a child process (``unshare -m``, or ``-rm`` for a non-root caller), so nothing is
mounted on the host.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import require

CHILD = r"""
import errno, os, subprocess, sys
sys.path.insert(0, sys.argv[2])
from sandbox import confine
from sandbox.confine import Mount, View
d = sys.argv[1]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", d], check=True)
old = b"old\n" * 1000
with open(os.path.join(d, "f.txt"), "wb") as fh:
    fh.write(old)
view = View([Mount("/", "/"), Mount(d, d, writable=True)])
base = confine.stamp(os.stat(os.path.join(d, "f.txt")))
for name, kw in (("f.txt", {"base": base}), ("new.txt", {"exclusive": True})):
    try:
        confine.write_file(view, os.path.join(d, name), b"x" * (2 << 20), **kw)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    else:
        raise AssertionError("a 2 MiB write fitted in 1 MiB")
with open(os.path.join(d, "f.txt"), "rb") as fh:
    assert fh.read() == old, "the old content changed"
assert sorted(os.listdir(d)) == ["f.txt"], os.listdir(d)
print("HELD")
"""


def test_a_write_failing_for_space_keeps_the_old_file(tmp_path: Path) -> None:
    require(shutil.which("unshare") is not None, "unshare (util-linux) is not installed")
    spot = tmp_path / "full"
    spot.mkdir()
    ns = ["unshare", "-m", "--propagation", "private"] if os.geteuid() == 0 else ["unshare", "-rm"]
    repo = str(Path(__file__).resolve().parent.parent)
    run = subprocess.run(
        [*ns, sys.executable, "-c", CHILD, str(spot), repo], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and "HELD" in run.stdout, run.stdout + run.stderr
