"""Red team round 36 (files): a repository's ignore files hid files git tracks from Glob and Grep.

Glob and Grep obey ``.gitignore``, ``.ignore``, ``.rgignore`` and ``.git/info/exclude`` as ripgrep
does, and ripgrep, unlike git, ignores a file git tracks. A repository that ships (or a command
that writes before the call) an ignore file naming ``evil.py`` made the tracked ``src/evil.py``
vanish: a model grepping the code for ``eval`` was told only of the harmless file (failed before,
with ripgrep and with the Python walker, for each ignore file). Now a tracked regular file is
listed and searched whatever the ignore files say, and a note says so; untracked ignored files
stay ignored, and a tracked name that is now reached through a symlink adds nothing.
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
from shellrt.tools._search_types import MAX_HIT_LINES
from shellrt.tools._tracked import tracked_under
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests._calls import one_call
from tests.conftest import require
from tests.test_tools_edit import make_ctx

_IGNORES = (".rgignore", ".ignore", ".gitignore", ".git/info/exclude", "src/.gitignore")
_NOTE = "shown are tracked by git but named in this tree's ignore files"


def _git(root: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(root), *argv], check=True, capture_output=True)


def _repo(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "src/evil.py").write_text("eval(input())  # MARK\n")
    (root / "src/ok.py").write_text("print('MARK')\n")
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
    if walker == "python":  # the fd-anchored walker docker and masked local sessions use
        monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
        return make_ctx(root, read_denied=(root / ".env",))
    return make_ctx(root)


@pytest.mark.parametrize("walker", ["ripgrep", "python"])
@pytest.mark.parametrize("ignore", _IGNORES)
def test_an_ignore_file_does_not_hide_a_tracked_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walker: str, ignore: str
) -> None:
    root = _repo(tmp_path)
    (root / ignore).write_text("evil.py\n")
    with open(root / ".ignore", "a") as rules:  # an untracked, ignored file stays ignored
        rules.write("build/\n")
    (root / "build").mkdir()
    (root / "build/out.py").write_text("MARK untracked and ignored\n")
    ctx = _ctx(root, walker, monkeypatch)

    content = _run(GrepTool(), ctx, {"pattern": "MARK", "output_mode": "content"})
    assert "src/evil.py:1:eval(input())" in content
    assert "src/ok.py" in content and "build/out.py" not in content
    assert _NOTE in content and "1 file(s)" in content
    names = _run(GrepTool(), ctx, {"pattern": "eval", "path": str(root / "src")})
    assert str(root / "src/evil.py") in names and _NOTE in names
    assert _NOTE not in _run(GrepTool(), ctx, {"pattern": "print"})  # no hit in the tracked one: no note
    listing = _run(GlobTool(), ctx, {"pattern": "**/*.py"})
    assert str(root / "src/evil.py") in listing and str(root / "build/out.py") not in listing
    assert _NOTE in listing


def test_nothing_changes_without_hidden_tracked_files(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build/out.py").write_text("MARK\n")
    ctx = make_ctx(root)
    content = _run(GrepTool(), ctx, {"pattern": "MARK", "output_mode": "content"})
    assert "src/evil.py" in content and "build/out.py" not in content and _NOTE not in content
    listing = _run(GlobTool(), ctx, {"pattern": "**/*.py"})
    assert "build/out.py" not in listing and _NOTE not in listing


@pytest.mark.parametrize("walker", ["ripgrep", "python"])
def test_a_search_too_large_without_the_ignore_files_says_what_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walker: str
) -> None:
    """A hidden tracked file the search cannot hold (round 36 files2: only the hidden files are
    searched, no longer an ignored ``build/`` beside them): the ignore-obeying hits stand and a
    note says the tracked file was NOT searched (never silent)."""
    root = _repo(tmp_path)
    (root / ".ignore").write_text("evil.py\n")
    (root / "src/evil.py").write_text("MARK\n" * (MAX_HIT_LINES + 1))
    ctx = _ctx(root, walker, monkeypatch)
    content = _run(GrepTool(), ctx, {"pattern": "MARK", "output_mode": "content"})
    assert "src/ok.py" in content and "src/evil.py" not in content
    assert "1 file(s) tracked by git but named in this tree's ignore files were NOT searched" in content
    narrower = _run(GrepTool(), ctx, {"pattern": "MARK", "output_mode": "content", "glob": "ok.py"})
    assert "src/ok.py:1:" in narrower and "NOT searched" not in narrower  # the glob leaves it out


@pytest.mark.parametrize("walker", ["ripgrep", "python"])
def test_a_tracked_name_behind_a_symlink_adds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walker: str
) -> None:
    """The command replaced the tracked directory ``lib`` with a link to outside and ignored it:
    the tracked ``lib/key.py`` is not reached through the link."""
    root = _repo(tmp_path)
    (root / "lib").mkdir()
    (root / "lib/key.py").write_text("harmless\n")
    _git(root, "add", "lib")
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "key.py").write_text("SECRET-OUTSIDE\n")
    (root / "lib/key.py").unlink()
    (root / "lib").rmdir()
    (root / "lib").symlink_to(outside)
    (root / ".ignore").write_text("lib\n")
    ctx = _ctx(root, walker, monkeypatch)
    assert "SECRET-OUTSIDE" not in _run(GrepTool(), ctx, {"pattern": "SECRET", "output_mode": "content"})
    assert "key.py" not in _run(GlobTool(), ctx, {"pattern": "**/*.py"})


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_the_index_reader_agrees_with_git(tmp_path: Path, version: str) -> None:
    root = _repo(tmp_path)
    for i in range(50):
        (root / f"src/deep/er/f{i:02}.txt").parent.mkdir(parents=True, exist_ok=True)
        (root / f"src/deep/er/f{i:02}.txt").write_text(str(i))
    (root / "we ird\nname").write_text("x")
    (root / "link").symlink_to("src")
    (root / "new.txt").write_text("n")
    _git(root, "add", "-A")
    if version == "3":
        _git(root, "rm", "-q", "--cached", "new.txt")
        _git(root, "add", "-N", "new.txt")  # intent to add: an extended flag (version 3)
    _git(root, "update-index", "--index-version", version)
    raw = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-s", "-z"], capture_output=True, check=True
    ).stdout
    want = sorted({e.split("\t", 1)[1] for e in raw.decode().split("\0") if e.startswith("100")})
    assert sorted(tracked_under(root, root) or []) == want
    assert sorted(tracked_under(root / "src", root) or []) == sorted(
        w.removeprefix("src/") for w in want if w.startswith("src/")
    )


@pytest.mark.anyio
async def test_a_bwrap_command_cannot_hide_a_tracked_file_from_the_model(tmp_path: Path) -> None:
    """The command runs first, in the sandbox, and writes the ignore file; then the model greps."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    root = _repo(tmp_path)
    async with shellrt.Runtime(
        workspace=root,
        sandbox="bwrap",
        mode="acceptEdits",
        session_dir=tmp_path / "s",
        settings_files=(),
        allow=("Bash",),
    ) as rt:
        made = await one_call(
            rt, "Bash", command="printf 'evil.py\\n' > src/.rgignore && echo '*.py' > .ignore"
        )
        assert not made["is_error"], made
        grep = await one_call(rt, "Grep", pattern="eval", output_mode="content")
        glob = await one_call(rt, "Glob", pattern="**/*.py")
    assert "src/evil.py:1:eval(input())" in str(grep["content"]) and _NOTE in str(grep["content"]), grep
    assert str(root / "src/evil.py") in str(glob["content"]) and _NOTE in str(glob["content"]), glob


def test_a_sparse_or_special_index_is_not_read(tmp_path: Path) -> None:
    """The command can write ``.git/index``: a 10 GB sparse one, or a FIFO, costs nothing."""
    root = _repo(tmp_path)
    os.truncate(root / ".git/index", 10 << 30)
    assert tracked_under(root, root) is None
    (root / ".git/index").unlink()
    os.mkfifo(root / ".git/index")
    assert tracked_under(root, root) is None
    assert "src/evil.py" in _run(GrepTool(), make_ctx(root), {"pattern": "eval", "output_mode": "content"})


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same checks as uid 65534 (its own files, its own repository): the index and the walk
    act as the caller, whoever it is."""
    _nonroot.held_as_nobody(
        __file__,
        "test_an_ignore_file_does_not_hide_a_tracked_file",
        "test_a_tracked_name_behind_a_symlink_adds_nothing",
        "test_a_sparse_or_special_index_is_not_read",
    )
