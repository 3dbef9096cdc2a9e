"""Red team, round 36 (review3): tracked names deep enough to hold Glob and Grep for minutes.

`hidden_tracked` opened every directory of every name the index lists from the search root, and
`rules_along` joined every prefix of every name: n names d levels deep cost n·d opens and n·d² bytes.
A repository that plants 1,000 nested directories and a 1.2 MB index naming 2,000 files in the
deepest one held each Grep 24 s (19 s `rules_along`, 5 s `hidden_tracked`; here 400 levels and
5,000 names; a 64 MB index: many minutes), off the event loop but with no deadline. Now sorted names share open directories
(`shellrt.tools._dirs_below`): each directory is opened once, and a budget bounds how many.
"""

from __future__ import annotations

import os
from pathlib import Path

from shellrt.tools._gitignore import rules_along
from shellrt.tools._tracked import hidden_tracked
from tests._timing import cpu_seconds

#: Below the depth Python's recursive ``shutil.rmtree`` (pytest's clean-up) can remove.
_DEPTH = 400


def _deep_tree(root: Path) -> tuple[int, str]:
    """``a/a/.../a`` (`_DEPTH` levels) below ``root``, made by fd."""
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    cur = os.dup(root_fd)
    for _ in range(_DEPTH):
        os.mkdir("a", dir_fd=cur)
        nxt = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=cur)
        os.close(cur)
        cur = nxt
    for name in ("f000007", "f004999"):
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=cur))
    os.close(cur)
    return root_fd, "/".join(["a"] * _DEPTH)


def test_deep_names_cost_each_directory_once(tmp_path: Path) -> None:
    root_fd, deep = _deep_tree(tmp_path)
    try:
        names = [f"{deep}/f{i:06d}" for i in range(5000)]
        started = cpu_seconds()  # CPU, not wall: 1.57 s of wall at load 6 for 0.35 s of CPU (round 49)
        assert rules_along(tmp_path, root_fd, names) is False
        found = hidden_tracked(root_fd, names, [])
        elapsed = cpu_seconds() - started
    finally:
        os.close(root_fd)
    assert found == [f"{deep}/f000007", f"{deep}/f004999"]
    assert elapsed < 4.0, elapsed  # 0.35 s of CPU (round 49); before: n·d = 2,000,000 opens, as the 24 s case


def test_rules_on_the_way_are_still_found(tmp_path: Path) -> None:
    (tmp_path / "src" / "deep").mkdir(parents=True)
    (tmp_path / "src" / "deep" / "x.py").write_text("x\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "y.py").write_text("y\n")
    root_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        names = ["lib/y.py", "src/deep/x.py", "src/../etc/passwd"]
        assert rules_along(tmp_path, root_fd, names) is False
        (tmp_path / "src" / "deep" / ".gitignore").write_text("x.py\n")
        assert rules_along(tmp_path, root_fd, names) is True
        assert hidden_tracked(root_fd, names, ["lib/y.py"]) == ["src/deep/x.py"]
    finally:
        os.close(root_fd)
