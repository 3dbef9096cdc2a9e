"""Red team round 17, docker and the other workspace copies: a set-uid file became set-uid root.

The anchored copy (`sandbox/_anchoredcopy.py`: docker's copy-mode workspace, the batch task copy,
the Inspect sample copy) runs as the host's user, root on CI hosts, and kept each file's mode
whole. Sandboxed commands cannot set set-id bits (the seccomp filter), but a source tree can
hold them: a dataset or tarball unpacked by root keeps its members' owners and modes, and any
local user may ``chmod 6755`` a file of theirs in a tree they own. Without an ``owner`` (batch,
Inspect) the copy is root's: a set-uid-*root* copy of that program on the host's disk, its
directory as open as the source's (measured: ``-rwsr-sr-x 0 0`` from a ``65534`` file). Set-gid directories likewise handed their group to
what was made in them. Now the copy drops both set-id bits (export already did: round 13).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from sandbox._anchoredcopy import copy_tree, copy_workspace


def _hostile(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    prog = src / "prog"
    shutil.copy(shutil.which("true") or "/bin/true", prog)
    (src / "shared").mkdir()
    if os.geteuid() == 0:
        os.chown(prog, 65534, 65534)  # a command's (leased, or nobody's) own file
    os.chmod(prog, 0o6755)
    os.chmod(src / "shared", 0o2775)
    return src


def _set_id(path: Path) -> int:
    return os.stat(path).st_mode & (stat.S_ISUID | stat.S_ISGID)


def test_the_copy_never_makes_a_set_id_program(tmp_path: Path) -> None:
    """Before: the batch/Inspect copy was ``-rwsr-sr-x root root``."""
    src = _hostile(tmp_path)
    copy_workspace(src, tmp_path / "task", ())
    copy_tree(str(src), str(tmp_path / "docker"), owner=(os.getuid(), os.getgid()))
    for dst in (tmp_path / "task", tmp_path / "docker"):
        assert _set_id(dst / "prog") == 0, oct(os.stat(dst / "prog").st_mode)
        assert _set_id(dst / "shared") == 0, oct(os.stat(dst / "shared").st_mode)
        assert stat.S_IMODE(os.stat(dst / "prog").st_mode) == 0o755  # the rest of the mode is kept
        assert (dst / "prog").read_bytes() == (src / "prog").read_bytes()
