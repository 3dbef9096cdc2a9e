"""Red team round 42 (files5): Grep's validation told which names exist where the sandbox's user
cannot look.

Round 41 left it: in a root caller's bwrap session the commands run as an unprivileged uid (the
view's ``reader``) and cannot list another owner's 0700 directory, but Grep's validation runs as
root before the permission decision and said "Path does not exist" for a missing name there and
nothing for an existing one (the permission check then refused it): one call a guess at what a
directory holds that no command of the session can list. Now "does not exist" is said only where
the sandbox's user could find that out itself (the deepest existing directory is searchable).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools import edit as edit_module
from shellrt.tools import glob as glob_module
from shellrt.tools import grep as grep_module
from shellrt.tools import read as read_module
from shellrt.tools.edit import EditTool
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from shellrt.tools.read import ReadTool
from tests.conftest import require
from tests.test_tools_edit import make_ctx


def _validation(ctx: ToolContext, path: str, glob: bool = False) -> str:
    async def go() -> str:
        tool: GlobTool | GrepTool = GlobTool() if glob else GrepTool()
        checked = await tool.validate(tool.parse_input({"pattern": "x", "path": path}), ctx)
        return "ok" if checked.ok else checked.message

    return anyio.run(go)


def test_no_does_not_exist_where_the_sandbox_user_cannot_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(os.geteuid() == 0, "a directory the sandbox's user cannot search, as a root caller has")
    base = Path(os.path.realpath(tmp_path))
    root = base / "ws"
    (root / ".session").mkdir(parents=True)
    locked = base / "locked"
    (locked / "sub").mkdir(parents=True)
    (locked / "present.txt").write_text("x\n")
    os.chmod(locked, 0o700)  # root's: uid 65534 cannot search it
    os.chmod(base, 0o755)
    real = grep_module.view_for
    for module in (grep_module, glob_module):
        monkeypatch.setattr(
            module, "view_for", lambda ctx: dataclasses.replace(real(ctx), reader=(65534, 65534))
        )
    ctx = make_ctx(root)
    present = _validation(ctx, str(locked / "present.txt"))
    absent = _validation(ctx, str(locked / "absent.txt"))
    deeper = _validation(ctx, str(locked / "nothere" / "x.txt"))
    assert present == absent == deeper == "ok", (present, absent, deeper)
    subdir, nodir = _validation(ctx, str(locked / "sub"), True), _validation(ctx, str(locked / "nodir"), True)
    assert subdir == nodir == "ok", (subdir, nodir)
    # Where it can search, the model is still told (a directory of its own: the workspace).
    assert "does not exist" in _validation(ctx, str(root / "absent.txt"))
    assert "does not exist" in _validation(ctx, str(root / "nodir"), True)


def test_read_answers_a_missing_name_as_an_unreadable_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read of a path in such a directory (once a person allowed it, or a rule did) said "File
    does not exist" for a missing name and "Permission denied" for an existing one; now both get
    the denial (its words name only the path asked for)."""
    require(os.geteuid() == 0, "a directory the sandbox's user cannot search, as a root caller has")
    base = Path(os.path.realpath(tmp_path))
    root = base / "ws"
    (root / ".session").mkdir(parents=True)
    locked = base / "locked"
    locked.mkdir()
    (locked / "present.txt").write_text("x\n")
    os.chmod(locked, 0o700)
    os.chmod(base, 0o755)
    real = read_module.view_for
    monkeypatch.setattr(
        read_module, "view_for", lambda ctx: dataclasses.replace(real(ctx), reader=(65534, 65534))
    )
    ctx = make_ctx(root)

    async def read(path: Path) -> str:
        tool = ReadTool()
        inp = tool.parse_input({"file_path": str(path)})
        assert (await tool.validate(inp, ctx)).ok
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    present = anyio.run(read, locked / "present.txt").replace("present.txt", "NAME")
    absent = anyio.run(read, locked / "absent.txt").replace("absent.txt", "NAME")
    deeper = anyio.run(read, locked / "absent.txt" / "x").replace("absent.txt/x", "NAME")
    assert present == absent == deeper, (present, absent, deeper)
    assert "Permission denied" in present, present
    assert "does not exist" in anyio.run(read, root / "absent.txt")


@pytest.mark.parametrize("old", ["x", ""], ids=["replace", "create"])
def test_edit_answers_a_missing_name_as_an_unreadable_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str
) -> None:
    """The same for Edit: its validation said "File does not exist" for a missing name before
    the permission decision, and passed an existing one (its call then: "cannot read")."""
    require(os.geteuid() == 0, "a directory the sandbox's user cannot search, as a root caller has")
    base = Path(os.path.realpath(tmp_path))
    root = base / "ws"
    (root / ".session").mkdir(parents=True)
    locked = base / "locked"
    locked.mkdir()
    (locked / "present.txt").write_text("x\n")
    os.chmod(locked, 0o700)
    os.chmod(base, 0o755)
    real = edit_module.view_for
    monkeypatch.setattr(
        edit_module, "view_for", lambda ctx: dataclasses.replace(real(ctx), reader=(65534, 65534))
    )
    ctx = make_ctx(root)

    async def change(path: Path) -> str:
        tool = EditTool()
        inp = tool.parse_input({"file_path": str(path), "old_string": old, "new_string": "y"})
        if not (await tool.validate(inp, ctx)).ok:
            return "invalid"
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    present = anyio.run(change, locked / "present.txt").replace("present.txt", "NAME")
    absent = anyio.run(change, locked / "absent.txt").replace("absent.txt", "NAME")
    assert present == absent, (present, absent)
    assert "Permission denied" in present, present
