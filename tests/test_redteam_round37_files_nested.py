"""Red team round 37 (files): ignore files still hid the tracked files of a repository nested below the search root.

Round 36 made Glob and Grep list and search a file git tracks whatever the tree's ignore files say,
reading the index of the repository holding the search root; a submodule (a gitlink in that index,
its own repository below) was not read, so ``vendor/lib/.gitignore`` naming ``evil.py``, which
``vendor/lib``'s own index tracks, still made ``vendor/lib/evil.py`` vanish from a Grep or Glob run
at the top (failed before, with ripgrep and the Python walker). Now the index of each submodule
the index names is read as well (its ``.git`` a directory or a ``gitdir:`` file inside the
workspace, reached without a symlink; bounded in number, depth and bytes), and its tracked files
count as the top's do. A gitlink whose directory is a symlink out of the workspace adds nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.protocol import Tool, ToolContext
from shellrt.tools import _search
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests._calls import one_call
from tests.conftest import require
from tests.test_tools_edit import make_ctx

_NOTE = "shown are tracked by git but named in this tree's ignore files"


def _git(root: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *argv],
        check=True,
        capture_output=True,
    )


def _nested(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    sub = root / "vendor/lib"
    sub.mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "main.py").write_text("print('MARK')\n")
    (sub / "evil.py").write_text("eval(input())  # MARK\n")
    (sub / "ok.py").write_text("print('MARK')\n")
    _git(sub, "init", "-q")
    _git(sub, "add", ".")
    _git(sub, "commit", "-qm", "lib")
    _git(root, "init", "-q")
    _git(root, "add", "main.py", "vendor/lib")  # vendor/lib: a gitlink (an embedded repository)
    (sub / ".gitignore").write_text("evil.py\n")
    return root


def _run(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    async def go() -> str:
        inp = tool.parse_input(raw)
        assert (await tool.validate(inp, ctx)).ok
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    return anyio.run(go)


@pytest.mark.parametrize("walker", ["ripgrep", "python"])
def test_a_submodules_ignore_file_does_not_hide_its_tracked_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walker: str
) -> None:
    root = _nested(tmp_path)
    ctx = make_ctx(root)
    if walker == "python":
        monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
        ctx = make_ctx(root, read_denied=(root / ".env",))
    content = _run(GrepTool(), ctx, {"pattern": "MARK", "output_mode": "content"})
    assert "vendor/lib/evil.py:1:eval(input())" in content and _NOTE in content
    listing = _run(GlobTool(), ctx, {"pattern": "**/*.py"})
    assert str(root / "vendor/lib/evil.py") in listing and _NOTE in listing


def test_a_gitlink_through_a_symlink_adds_nothing(tmp_path: Path) -> None:
    """The gitlink's directory replaced by a link to a repository outside the workspace: its index
    is not read (and nothing below a symlink is listed anyway)."""
    root = _nested(tmp_path)
    outside = Path(os.path.realpath(tmp_path)) / "outside"
    os.rename(root / "vendor/lib", outside)
    os.symlink(outside, root / "vendor/lib")
    out = _run(GrepTool(), make_ctx(root), {"pattern": "MARK", "output_mode": "content"})
    assert "evil.py" not in out and _NOTE not in out


@pytest.mark.anyio
async def test_a_bwrap_command_cannot_hide_a_submodules_tracked_file(tmp_path: Path) -> None:
    """The command runs first, in the sandbox, and writes the submodule's ignore file."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    root = _nested(tmp_path)
    (root / "vendor/lib/.gitignore").unlink()
    async with shellrt.Runtime(
        workspace=root,
        sandbox="bwrap",
        mode="acceptEdits",
        session_dir=tmp_path / "s",
        settings_files=(),
        allow=("Bash",),
    ) as rt:
        made = await one_call(rt, "Bash", command="printf 'evil.py\\n' > vendor/lib/.rgignore")
        assert not made["is_error"], made
        grep = await one_call(rt, "Grep", pattern="eval", output_mode="content")
        glob = await one_call(rt, "Glob", pattern="**/*.py")
    assert "vendor/lib/evil.py:1:eval(input())" in str(grep["content"]), grep
    assert _NOTE in str(grep["content"]), grep
    assert str(root / "vendor/lib/evil.py") in str(glob["content"]) and _NOTE in str(glob["content"]), glob


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_submodules_ignore_file_does_not_hide_its_tracked_file")
