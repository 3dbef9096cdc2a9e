"""Round 36 (files2): what finding hidden tracked files costs a Grep, and that the savings stay correct.

Every Grep in a git repository paid an index parse and a second whole-tree listing (0.37-0.49 s
-> 0.67-0.89 s for 20,000 files). The parse is now cached by the index's identity (device, inode,
size, mtime, ctime; kept only once its ctime is settled), and the listing runs only when an ignore
rule lies on the way to a tracked file. A cached parse is never stale: any rewrite of the index
gives it a new ctime.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.tools import _search, _tracked
from shellrt.tools.grep import GrepTool
from tests.test_tools_edit import make_ctx


def _git(root: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(root), *argv], check=True, capture_output=True)


def _repo(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src/deep").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "src/a.py").write_text("MARK a\n")
    (root / "src/deep/b.py").write_text("MARK b\n")
    _git(root, "init", "-q")
    (root / ".git/info/exclude").write_text("# comments only, as git init writes it\n")
    _git(root, "add", "src")
    return root


def _grep(root: Path) -> str:
    async def go() -> str:
        tool = GrepTool()
        inp = tool.parse_input({"pattern": "MARK", "output_mode": "content"})
        ctx = make_ctx(root)
        assert (await tool.validate(inp, ctx)).ok
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    return anyio.run(go)


def test_no_listing_when_no_ignore_rule_lies_on_the_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path)
    (root / "other").mkdir()
    (root / "other/.gitignore").write_text("*.py\n")  # not on the way to a tracked file
    listings: list[Any] = []
    real = _search.list_files

    async def spy(*args: Any, **kw: Any) -> Any:
        listings.append(args)
        return await real(*args, **kw)

    import shellrt.tools.grep as grep_mod

    monkeypatch.setattr(grep_mod, "list_files", spy)
    assert "src/deep/b.py:1:MARK b" in _grep(root)
    assert listings == []
    (root / "src/deep/.rgignore").write_text("b.py\n")  # now one is: listed, found, noted
    content = _grep(root)
    assert "src/deep/b.py:1:MARK b" in content and "1 file(s) shown are tracked" in content
    assert len(listings) == 1


def test_a_cached_index_is_never_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with the settle time at zero (the worst case), a rewritten index is re-read."""
    root = _repo(tmp_path)
    monkeypatch.setattr(_tracked, "_SETTLED_NS", 0)
    monkeypatch.setattr(_tracked, "_CACHE", type(_tracked._CACHE)())
    assert sorted(_tracked.tracked_under(root, root) or []) == ["src/a.py", "src/deep/b.py"]
    assert len(_tracked._CACHE) == 1
    (root / "src/c.py").write_text("MARK c\n")
    _git(root, "add", "src/c.py")
    assert "src/c.py" in (_tracked.tracked_under(root, root) or [])
    _git(root, "rm", "-q", "--cached", "src/a.py")
    assert "src/a.py" not in (_tracked.tracked_under(root, root) or [])


def test_a_fresh_index_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system's timestamps may be a clock tick coarse: an index changed within the settle
    time could be rewritten, same size, without a new ctime; it is read again each call."""
    root = _repo(tmp_path)
    monkeypatch.setattr(_tracked, "_CACHE", type(_tracked._CACHE)())
    assert _tracked.tracked_under(root, root)
    assert len(_tracked._CACHE) == 0
