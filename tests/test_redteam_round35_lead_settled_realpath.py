"""Round 35 (lead): a path judged against the roots while a command swaps a link on its way.

`sandbox.confine.contained` (the file tools' pre-check, and the masks a policy names through a
link) read a path's ``realpath`` once: a command swapping a link and a directory in a loop made
``readlink`` fail with EINVAL, and a path always inside the workspace was judged outside (failed
before: 146 calls of 3,000 here). The supervisor's home check retried; now both use one retrying
reader, `sandbox._realpath.settled_realpath`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sandbox._realpath import settled_realpath
from sandbox.confine import contained

_SWAP = """
import ctypes, os, sys
os.chdir(sys.argv[1])
os.symlink("real", "link")
os.mkdir("sub")
renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
print("swapping", flush=True)
while True:  # "sub" is a directory, then a link to "real", exchanged atomically (RENAME_EXCHANGE)
    renameat2(-100, b"sub", -100, b"link", 2)
"""


def test_a_swapping_link_never_makes_an_inside_path_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    swapper = subprocess.Popen([sys.executable, "-c", _SWAP, str(ws)], stdout=subprocess.PIPE, text=True)
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "swapping\n"
        outside = [i for i in range(3000) if not contained([f"{ws}/sub/x"], [str(ws)], resolve=True)]
    finally:
        swapper.kill()
        swapper.wait()
    assert not outside, f"{len(outside)} of 3,000 checks judged a path inside the workspace outside it"


def test_an_unresolvable_path_is_none_and_not_contained(tmp_path: Path) -> None:
    assert settled_realpath(f"{tmp_path}/a\0b") is None
    assert not contained([f"{tmp_path}/a\0b"], [str(tmp_path)], resolve=True)
    assert settled_realpath(str(tmp_path)) == str(tmp_path.resolve())
