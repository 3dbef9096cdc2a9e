"""Red team round 37 (review2): a submodule's index named under a long gitlink path held GBs of names.

Round 37 files reads the index of each submodule (gitlink) and adds its tracked files under the
gitlink's path. Each index's own names are bounded (round 36 review3: at most 4 times its bytes),
the submodule indexes' bytes too (64 MiB a call), but every name was prefixed with the gitlink's
path again: a gitlink ~3,700 characters long (a real directory: 15 components of 250) over an index
of short names (72 bytes an entry) made each entry a 3,700-character string, ~50 times what was
read. 64 MiB of such indexes: ~930,000 names, ~3.4 GB of the host's memory in every Glob and Grep
at the top. Now the names one call adds from submodules are bounded by what it read (the same
`_NAMES_PER_INDEX_BYTE` ratio), past it the rest add nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from shellrt.tools import _tracked
from tests._timing import cpu_seconds

_REGULAR = 0o100644
_GITLINK = 0o160000


def _entry(name: str, mode: int) -> bytes:
    raw = name.encode()
    head = bytes(24) + mode.to_bytes(4, "big") + bytes(32) + min(len(raw), 0xFFF).to_bytes(2, "big")
    size = (62 + len(raw) + 8) & ~7
    return (head + raw).ljust(size, b"\0")


def _index(entries: list[tuple[str, int]]) -> bytes:
    body = b"".join(_entry(n, m) for n, m in sorted(entries))
    return b"DIRC" + (2).to_bytes(4, "big") + len(entries).to_bytes(4, "big") + body + bytes(20)


def _repo(top: Path, entries: list[tuple[str, int]]) -> int:
    (top / ".git").mkdir(parents=True)
    data = _index(entries)
    (top / ".git" / "index").write_bytes(data)
    return len(data)


def test_a_long_gitlink_path_does_not_multiply_the_names_held(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    room = 4096 - len(str(ws)) - len("/.git/sharedindex.") - 64
    link = "/".join(["d" * 250] * (room // 251))
    top_bytes = _repo(ws, [(link, _GITLINK), ("README", _REGULAR)])
    sub_bytes = _repo(ws / link, [(f"f{i:05d}", _REGULAR) for i in range(20_000)])
    names = _tracked.tracked_under(ws, ws)
    assert names is not None and "README" in names
    held = sum(len(n) for n in names)
    read = top_bytes + sub_bytes
    # 20,000 x ~3,700 characters (~74 MB) before, from 1.4 MB of indexes.
    assert held <= _tracked._NAMES_PER_INDEX_BYTE * read, (held, read)


def test_ordinary_submodules_are_still_read_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repo(ws, [("vendor/lib", _GITLINK), ("src/a.py", _REGULAR)])
    _repo(ws / "vendor" / "lib", [(f"pkg/mod{i}.py", _REGULAR) for i in range(500)] + [("deep", _GITLINK)])
    _repo(ws / "vendor" / "lib" / "deep", [("x.c", _REGULAR)])
    names = _tracked.tracked_under(ws, ws)
    assert names is not None
    assert "src/a.py" in names and "vendor/lib/pkg/mod499.py" in names and "vendor/lib/deep/x.c" in names
    assert len(names) == 502


def test_a_gitlink_looping_to_the_top_is_bounded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    links = [f"l{i}" for i in range(80)]
    top_bytes = _repo(ws, [*((n, _GITLINK) for n in links), *((f"f{i}", _REGULAR) for i in range(2_000))])
    for n in links:
        (ws / n).mkdir()
        (ws / n / ".git").write_text("gitdir: ../.git\n")  # the top's own index, again
    names = _tracked.tracked_under(ws, ws)
    assert names is not None
    read = top_bytes * (1 + _tracked._MAX_SUBMODULES)
    assert sum(len(n) for n in names) <= _tracked._NAMES_PER_INDEX_BYTE * read
    assert os.path.isdir(ws / "l0")


def test_many_deep_gitlinks_cost_bounded_time(tmp_path: Path) -> None:
    """Gitlinks that name no directory were not counted: each cost two ``realpath`` calls of its
    path (quadratic in its components). 1,000 gitlinks of 2,000 components (a 3.9 MB index):
    ~8.6 s of every Glob and Grep at the top (2,000: 17 s; 64 MiB: minutes), before any bound."""
    ws = tmp_path / "ws"
    deep = "/".join(["x"] * 2000)
    _repo(ws, [*((f"{deep}/{i}", _GITLINK) for i in range(1000)), ("README", _REGULAR)])
    start = cpu_seconds()  # CPU, not wall: a loaded lane's wait for a core is not the reader's cost
    names = _tracked.tracked_under(ws, ws)
    assert names == ["README"]
    assert cpu_seconds() - start < 1.5  # 0.02 s of CPU (round 49); ~8.6 s before
