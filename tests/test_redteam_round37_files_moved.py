"""Red team round 37 (files): a directory moved while Edit or Write wrote made the result claim a path.

Edit and Write resolve the path to a directory fd and write below it: no symlink swap sends the
write elsewhere. But a command that renamed a directory on the way (``mv scripts .git/hooks``)
between that resolution and the rename made the file land wherever the directory went, and the
result said "The file .../scripts/pre-commit has been updated" -- with an empty ``scripts/`` and
the model's edit of the repository's script in ``.git/hooks/pre-commit`` (failed before, each
case below). The command's move is played at the tool's first ``fsync`` (after the temp file is
written, before it is renamed into place: the window a concurrent command has), deterministically.
Now the write checks that the path it reports still names the file it wrote, and otherwise says
where the content went.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import confine
from shellrt.protocol import Tool, ToolContext, ToolExecutionError
from shellrt.tools.edit import EditTool
from shellrt.tools.read import ReadTool
from shellrt.tools.write import WriteTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx


def _workspace(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / ".session").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "scripts").mkdir()
    hook = root / "scripts/pre-commit"
    hook.write_text("#!/bin/sh\necho checked\n")
    hook.chmod(0o755)
    return root


@pytest.fixture
def at_first_fsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], None]], None]]:
    """Run a command's move once, inside the write's window (the temp file's ``fsync``)."""
    moves: list[Callable[[], None]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        while moves:
            moves.pop()()

    monkeypatch.setattr(confine.os, "fsync", fsync)
    yield moves.append


def _call(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    async def go() -> str:
        inp = tool.parse_input(raw)
        checked = await tool.validate(inp, ctx)
        assert checked.ok, checked.message
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    return anyio.run(go)


def test_edit_whose_directory_is_moved_into_git_hooks_does_not_claim_its_path(
    tmp_path: Path, at_first_fsync: Callable[[Callable[[], None]], None]
) -> None:
    root = _workspace(tmp_path)
    ctx = make_ctx(root)
    script = root / "scripts/pre-commit"
    _call(ReadTool(), ctx, {"file_path": str(script)})

    def command() -> None:
        os.rename(root / "scripts", root / ".git/hooks")
        (root / "scripts").mkdir()

    at_first_fsync(command)
    with pytest.raises(ToolExecutionError) as err:
        _call(EditTool(), ctx, {"file_path": str(script), "old_string": "checked", "new_string": "ok"})
    message = str(err.value)
    assert "a directory on the way was moved or replaced" in message
    assert f"went to {root}/.git/hooks/pre-commit" in message
    assert not script.exists()
    assert "ok" in (root / ".git/hooks/pre-commit").read_text()


def test_write_whose_new_directory_is_moved_does_not_claim_its_path(
    tmp_path: Path, at_first_fsync: Callable[[Callable[[], None]], None]
) -> None:
    """A missing parent the write made, moved by the command before the file was linked in."""
    root = _workspace(tmp_path)
    ctx = make_ctx(root)
    target = root / "docs/new/notes.md"

    def command() -> None:
        os.rename(root / "docs/new", root / "elsewhere")

    at_first_fsync(command)
    with pytest.raises(ToolExecutionError, match="a directory on the way was moved") as err:
        _call(WriteTool(), ctx, {"file_path": str(target), "content": "hello\n"})
    assert "went elsewhere" in str(err.value)  # a directory the write made: not followed
    assert not target.exists() and (root / "elsewhere/notes.md").read_text() == "hello\n"


def test_write_whose_grandparent_is_moved_does_not_claim_its_path(
    tmp_path: Path, at_first_fsync: Callable[[Callable[[], None]], None]
) -> None:
    root = _workspace(tmp_path)
    (root / "src/pkg").mkdir(parents=True)
    target = root / "src/pkg/mod.py"
    target.write_text("x = 1\n")
    ctx = make_ctx(root)
    _call(ReadTool(), ctx, {"file_path": str(target)})

    def command() -> None:
        os.rename(root / "src", root / "src.old")
        (root / "src/pkg").mkdir(parents=True)
        (root / "src/pkg/mod.py").write_text("x = 1\n")

    at_first_fsync(command)
    with pytest.raises(ToolExecutionError, match="a directory on the way was moved") as err:
        _call(WriteTool(), ctx, {"file_path": str(target), "content": "x = 2\n"})
    assert f"went to {root}/src.old/pkg/mod.py" in str(err.value)
    assert target.read_text() == "x = 1\n"


def test_a_write_nothing_moved_and_a_file_replaced_after_it_are_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No false alarm: a plain write, a symlinked directory inside the workspace, and a command
    that replaces the file right after it was written (the path still names what is there)."""
    root = _workspace(tmp_path)
    ctx = make_ctx(root)
    assert "created" in _call(WriteTool(), ctx, {"file_path": str(root / "a/b/c.txt"), "content": "1\n"})
    os.symlink("a", root / "link")
    out = _call(WriteTool(), ctx, {"file_path": str(root / "link/b/d.txt"), "content": "2\n"})
    assert (root / "a/b/d.txt").read_text() == "2\n" and "a/b/d.txt" in out

    real = confine._replace_in

    def then_replaced(parent: int, name: str, *args: Any, **kwargs: Any) -> bool:
        created = real(parent, name, *args, **kwargs)
        with open(os.open(".x", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=parent), "w") as fh:
            fh.write("formatted\n")
        os.rename(".x", name, src_dir_fd=parent, dst_dir_fd=parent)
        return created

    monkeypatch.setattr(confine, "_replace_in", then_replaced)
    _call(WriteTool(), ctx, {"file_path": str(root / "e.txt"), "content": "3\n"})
    assert (root / "e.txt").read_text() == "formatted\n"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_edit_whose_directory_is_moved_into_git_hooks_does_not_claim_its_path",
        "test_write_whose_new_directory_is_moved_does_not_claim_its_path",
        "test_write_whose_grandparent_is_moved_does_not_claim_its_path",
        "test_a_write_nothing_moved_and_a_file_replaced_after_it_are_not_refused",
    )
