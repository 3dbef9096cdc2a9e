"""Red team round 45 (files6): the walker followed a linked ignore file *above* the searched directory.

The fd-anchored walker (Glob and Grep in masked local sessions and on docker) opens the ignore
files of the directories it enters without following a link (``O_NOFOLLOW``, round 41) -- but
it loaded those of the search root's *ancestors* by path, following links: a repository that
ships ``.gitignore -> secrets/key.txt`` (git keeps symlinks) made every Glob and Grep given a
``path`` below the workspace (``src``) obey the masked file's lines as rules. Which of
``src/TOKEN=hunter2`` and ``src/TOKEN=hunter3`` was listed told the masked file's line, a guess
a name (the model's own Write makes the names). Searched from the workspace itself the same
link was not followed (it is then the root's own ignore file, read anchored): the two answers
differed too. Now every ignore file, an ancestor's included, is read through its directory's fd
without following a link: a link reads as no rules, wherever it lies.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.tools import _search
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests._calls import block_text, one_call
from tests._docker_support import DEBIAN, config, require_docker
from tests.test_tools_edit import make_ctx

_GUESSES = ("TOKEN=hunter2", "TOKEN=hunter3")  # the first is the masked file's line


def _tree(base: Path) -> Path:
    root = Path(os.path.realpath(base)) / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "src").mkdir()
    (root / ".session").mkdir()
    (root / "secrets/key.txt").write_text("TOKEN=hunter2\n")
    os.symlink("secrets/key.txt", root / ".gitignore")  # as a cloned repository ships it
    for name in _GUESSES:
        (root / "src" / name).write_text("hello\n")
    return root


async def _answer(tool: GlobTool | GrepTool, raw: dict[str, object], root: Path) -> str:
    ctx = make_ctx(root, read_denied=(root / "secrets",))
    inp = tool.parse_input(raw)
    checked = await tool.validate(inp, ctx)
    assert checked.ok, checked.message
    return str(tool.to_model_content((await tool.call(inp, ctx)).data))


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        (GlobTool, {"pattern": "*", "path": "src"}),
        (GrepTool, {"pattern": "hello", "path": "src", "output_mode": "files_with_matches"}),
        (GrepTool, {"pattern": "hello", "path": "src", "output_mode": "content"}),
    ],
)
def test_an_ancestors_linked_ignore_file_is_not_obeyed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: type[GlobTool | GrepTool], raw: dict[str, object]
) -> None:
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)  # the walker, as a masked local session
    root = _tree(tmp_path)
    got = anyio.run(_answer, tool(), {**raw, "path": str(root / str(raw["path"]))}, root)
    for name in _GUESSES:  # the masked line hid "TOKEN=hunter2"
        assert name in got, got


def test_the_walk_reads_no_ancestor_through_a_link(tmp_path: Path) -> None:
    """The class, below the tools: no ignore file of an ancestor is followed, whatever its name."""
    from shellrt.tools import _gitignore

    base = Path(os.path.realpath(tmp_path))
    (base / "keys").mkdir()
    (base / "keys/rules").write_text("a.txt\n")
    (base / "top/mid/src").mkdir(parents=True)
    (base / "top/mid/src/a.txt").write_text("x\n")
    os.symlink("../keys/rules", base / "top/.ignore")
    os.symlink("../../keys/rules", base / "top/mid/.rgignore")
    (base / "top/.git/info").mkdir(parents=True)
    os.symlink("../../../keys/rules", base / "top/.git/info/exclude")
    assert list(_gitignore.walk_files(base / "top/mid/src")) == ["a.txt"]


@pytest.mark.anyio
async def test_it_holds_on_docker(tmp_path: Path) -> None:
    """Docker's Glob and Grep walk the host's view of the workspace (the bind source) the same way."""
    require_docker()
    root = _tree(tmp_path)
    async with shellrt.Runtime(
        workspace=root,
        sandbox=config(DEBIAN, workspace_mode="bind"),
        session_dir=tmp_path / "s",
        settings_files=(),
        masked_paths=(root / "secrets",),
    ) as rt:
        glob = await one_call(rt, "Glob", pattern="*", path="/workspace/src")
        grep = await one_call(rt, "Grep", pattern="hello", path="/workspace/src", output_mode="files_with_matches")
    for got in (glob, grep):
        for name in _GUESSES:
            assert name in block_text(got), got


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_an_ancestors_linked_ignore_file_is_not_obeyed")
