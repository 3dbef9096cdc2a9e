"""Red team round 37 (files): what Grep reads to judge its hits and files is bounded, whatever the tree.

Grep drops a hit file holding a NUL byte (binary, as the Python walker judges it), and read every
hit file to its end to look for one: in an uncancellable worker thread, each name of a hard link
again. One 1 GB text file with a match on line 1 and 50 hard links of it (free to make) cost a
``files_with_matches`` Grep 33 s of reading (51 GB from the page cache) after ripgrep had answered
in milliseconds; 1,000 links cost some 11 minutes, and every Grep matching them paid it. The
Python walker (docker, masked local, and every single-file Grep) read each name whole too, and
skipped a text file over its 256 MiB bound without a word: ``evil.py`` with ``eval`` on line 1 and
256 MiB of comment after it was "No files found." (failed before, each test here). Now each inode
is judged once a call, a file's first 256 MiB at most, a call's checks read 1 GiB in all and then
a further file's first 64 KiB (what ripgrep itself read of it); the walker searches an oversized
file's first 256 MiB (cut at a line end; a single-file Grep says so) and reads each inode once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import Tool, ToolContext
from shellrt.tools import _grep_python, _search
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx

_MIB = 1 << 20


def _rchar() -> int:
    """Bytes this process has read (its threads included; ripgrep's own reads are its own)."""
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def _run(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    async def go() -> str:
        inp = tool.parse_input(raw)
        assert (await tool.validate(inp, ctx)).ok
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    return anyio.run(go)


def _workspace(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / ".session").mkdir(parents=True)
    return root


def _big_text(path: Path, size: int, first: bytes = b"MARK on the first line\n") -> None:
    line = b"plain text of a big log, no NUL anywhere in it\n"
    with open(path, "wb") as fh:
        fh.write(first)
        block = line * (_MIB // len(line) + 1)
        left = size - len(first)
        while left > 0:
            fh.write(block[:left])
            left -= min(left, len(block))


def test_hard_links_of_a_big_hit_are_judged_once(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _big_text(root / "big.log", 32 * _MIB)
    for n in range(100):
        os.link(root / "big.log", root / f"big{n}.log")
    ctx = make_ctx(root)
    before = _rchar()
    out = _run(GrepTool(), ctx, {"pattern": "MARK"})
    spent = _rchar() - before
    assert "Found 101 files" in out
    assert spent < 128 * _MIB, f"read {spent / _MIB:.0f} MiB to judge 101 names of one 32 MiB file"


def test_a_calls_checks_read_a_bounded_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct files (copies: free on a filesystem with reflinks): past the call's budget each
    further file is judged by its first chunk. The budget is made small here (1 GiB in use)."""
    monkeypatch.setattr(_search, "NUL_CHECK_CALL_BYTES", 8 * _MIB)
    root = _workspace(tmp_path)
    for n in range(12):
        _big_text(root / f"copy{n}.log", 4 * _MIB)
    (root / "late.bin").write_bytes(b"\x00MARK\n")  # a NUL in its first chunk: still binary
    ctx = make_ctx(root)
    before = _rchar()
    out = _run(GrepTool(), ctx, {"pattern": "MARK"})
    spent = _rchar() - before
    assert "Found 12 files" in out and "late.bin" not in out
    assert spent < 20 * _MIB, f"read {spent / _MIB:.0f} MiB, over the call's budget"


def test_a_nul_within_the_bounds_still_makes_a_hit_binary(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "text.txt").write_bytes(b"MARK\n")
    (root / "bin.dat").write_bytes(b"MARK\n" + b"a" * (3 * _MIB) + b"\x00")
    os.link(root / "bin.dat", root / "bin2.dat")
    out = _run(GrepTool(), make_ctx(root), {"pattern": "MARK"})
    assert "text.txt" in out and "bin.dat" not in out and "bin2.dat" not in out


def test_a_text_file_over_the_walkers_bound_is_searched_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single file (always the walker, on its fd) and a tree searched by the walker (docker and
    masked local sessions): its first `MAX_SEARCH_BYTES` are searched (the bound is the walker
    child's own, so the file here is real: 257 MiB)."""
    root = _workspace(tmp_path)
    evil = root / "evil.py"
    _big_text(evil, _grep_python.MAX_SEARCH_BYTES + _MIB, first=b"eval(input())\n")
    raw = {"pattern": "eval", "path": str(evil), "output_mode": "content"}
    single = _run(GrepTool(), make_ctx(root), raw)
    assert "eval(input())" in single and "Only the first 256 MiB of this" in single
    raw["pattern"] = "not there at all"
    assert "Only the first 256 MiB of this" in _run(GrepTool(), make_ctx(root), raw)  # said, not silent
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
    ctx = make_ctx(root, read_denied=(root / ".env",))
    assert "eval(input())" in _run(GrepTool(), ctx, {"pattern": "eval", "output_mode": "content"})


def test_the_walker_reads_each_inode_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _workspace(tmp_path)
    _big_text(root / "big.log", 8 * _MIB)
    for n in range(20):
        os.link(root / "big.log", root / f"big{n}.log")
    reads: list[int] = []
    real = _grep_python._read_fd

    def counted(fd: int) -> Any:
        reads.append(fd)
        return real(fd)

    monkeypatch.setattr(_grep_python, "_read_fd", counted)
    from shellrt.tools._search_types import GrepQuery

    found = _grep_python.python_search(GrepQuery(pattern="MARK", root=root, files_only=True))
    assert len(found) == 21
    assert len(reads) <= 2, f"read {len(reads)} times"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_hard_links_of_a_big_hit_are_judged_once",
        "test_a_nul_within_the_bounds_still_makes_a_hit_binary",
        "test_a_text_file_over_the_walkers_bound_is_searched_not_skipped",
    )
