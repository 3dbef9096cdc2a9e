"""Red team round 36 (files2): the search of hidden tracked files searched the whole tree again.

When a tree's ignore files hid a file git tracks, Grep searched the WHOLE tree again without
ignore files: a repository hiding one tracked file beside a huge ignored ``build/`` made every
Grep walk that tree (to its 60 s deadline, or past its hit bound: then the hidden file was "NOT
searched"). Now only the hidden files' own paths are searched, chosen by the call's globs and type.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import Tool, ToolContext
from shellrt.tools import _search
from shellrt.tools._search_types import MAX_HIT_LINES
from shellrt.tools.grep import GrepTool
from tests.test_tools_edit import make_ctx

_NOTE = "shown are tracked by git but named in this tree's ignore files"


def _git(root: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(root), *argv], check=True, capture_output=True)


def _repo(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "src/evil.py").write_text("eval(input())  # MARK\n")
    (root / "src/ok.py").write_text("print('MARK')\n")
    (root / "src/-rf.py").write_text("MARK dash\n")
    _git(root, "init", "-q")
    _git(root, "add", "src")
    return root


def _run(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    async def go() -> str:
        inp = tool.parse_input(raw)
        assert (await tool.validate(inp, ctx)).ok
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    return anyio.run(go)


def _ctx(root: Path, walker: str, monkeypatch: pytest.MonkeyPatch) -> ToolContext:
    if walker == "python":
        monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
        return make_ctx(root, read_denied=(root / ".env",))
    return make_ctx(root)


@pytest.mark.parametrize("walker", ["ripgrep", "python"])
def test_a_huge_ignored_tree_beside_a_hidden_tracked_file_is_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walker: str
) -> None:
    root = _repo(tmp_path)
    (root / ".ignore").write_text("evil.py\n-rf.py\nbuild/\n")
    (root / "build").mkdir()
    (root / "build/big.txt").write_text("MARK\n" * (MAX_HIT_LINES + 1))
    ctx = _ctx(root, walker, monkeypatch)
    seen: list[Any] = []
    real = _search.search

    async def spy(query: Any, **kw: Any) -> Any:
        seen.append(query)
        return await real(query, **kw)

    for name in ("shellrt.tools._search", "shellrt.tools.grep", "shellrt.tools._hidden_search"):
        module = sys.modules.get(name) or (
            importlib.import_module(name) if importlib.util.find_spec(name) else None
        )
        if module is not None:
            monkeypatch.setattr(module, "search", spy)
    content = _run(GrepTool(), ctx, {"pattern": "MARK", "output_mode": "content"})
    assert "src/evil.py:1:eval(input())" in content and "src/ok.py" in content
    assert "src/-rf.py:1:MARK dash" in content
    assert "build/big.txt" not in content and "NOT searched" not in content
    assert _NOTE in content and "2 file(s)" in content
    # no search of the whole tree without its ignore files: each one obeys them or names its paths
    assert all(q.obey_ignores or getattr(q, "only", None) for q in seen), seen


@pytest.mark.parametrize("walker", ["ripgrep", "python"])
def test_hidden_tracked_files_obey_the_calls_glob_and_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walker: str
) -> None:
    root = _repo(tmp_path)
    (root / "src/notes.txt").write_text("MARK text\n")
    _git(root, "add", "src")
    (root / ".ignore").write_text("evil.py\nnotes.txt\n")
    ctx = _ctx(root, walker, monkeypatch)
    by_glob = _run(GrepTool(), ctx, {"pattern": "MARK", "glob": "*.txt", "output_mode": "content"})
    assert "src/notes.txt:1:MARK text" in by_glob and "evil.py" not in by_glob
    by_type = _run(GrepTool(), ctx, {"pattern": "MARK", "type": "py", "output_mode": "content"})
    assert "src/evil.py:1:" in by_type and "notes.txt" not in by_type
    excluded = _run(GrepTool(), ctx, {"pattern": "MARK", "glob": "!src/**", "output_mode": "content"})
    assert "evil.py" not in excluded and "notes.txt" not in excluded


def test_a_hidden_tracked_file_swapped_for_a_symlink_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python walker's search of named paths opens each below the anchored root, never
    through a symlink (ripgrep on the host is used only where that reaches nothing more)."""
    root = _repo(tmp_path)
    secret = Path(os.path.realpath(tmp_path)) / "secret.txt"
    secret.write_text("MARK secret outside\n")
    (root / "src/evil.py").unlink()
    (root / "src/evil.py").symlink_to(secret)
    (root / ".ignore").write_text("evil.py\n")
    from shellrt.tools import _grep_python
    from shellrt.tools._search_types import GrepQuery

    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        query = GrepQuery(pattern="MARK", root=root, root_fd=fd, obey_ignores=False, only=("src/evil.py",))
        assert _grep_python.python_search(query) == {}
    finally:
        os.close(fd)
