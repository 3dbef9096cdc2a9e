"""Red team round 45 (files6): ripgrep obeyed ignore files the walker would not read so.

Round 42's Left. ripgrep reads each ignore file it meets by path: it follows a symlinked one,
and obeys one of any size. So (1) ``sub/.gitignore -> ~/.netrc`` (outside the workspace: a
cloned repository ships such a link) or ``-> keys/id.pem`` (a rule-denied file no mask covers)
made Glob and Grep hide exactly the names its lines spell: which of ``TOKEN=hunter2`` and
``TOKEN=hunter3`` was listed told the file's line, one guess a name (the model's own Write makes
the names); and (2) a tree of more ignore rules than the walker obeys (`MAX_IGNORE_RULES`) was
answered by ripgrep and refused by the walker ("Cannot search"), which a bwrap command can force.
Now ripgrep answers only where a walk of the directories (beside it) found every ignore file
it could read a plain regular file within the walker's bounds; otherwise the walker answers,
and past the rule bound both refuse alike.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.permissions import PermissionGate, build_governance
from shellrt.tools import _gitignore, _search
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests._calls import block_text, one_call
from tests.conftest import require
from tests.test_tools_edit import make_ctx

_GUESSES = ("TOKEN=hunter2", "TOKEN=hunter3")  # the first is the linked file's line
_CALLS: list[tuple[type[GlobTool | GrepTool], dict[str, object]]] = [
    (GlobTool, {"pattern": "**/*"}),
    (GrepTool, {"pattern": "hello", "output_mode": "files_with_matches"}),
    (GrepTool, {"pattern": "hello", "output_mode": "content"}),
]


def _tree(base: Path) -> Path:
    base = Path(os.path.realpath(base))
    (base / "home").mkdir()
    (base / "home/.netrc").write_text("TOKEN=hunter2\n")  # outside the workspace
    root = base / "ws"
    (root / "sub").mkdir(parents=True)
    (root / ".session").mkdir()
    os.symlink("../../home/.netrc", root / "sub/.gitignore")
    for name in _GUESSES:
        (root / "sub" / name).write_text("hello\n")
    return root


async def _answer(tool: GlobTool | GrepTool, raw: dict[str, object], root: Path) -> str:
    ctx = make_ctx(root)
    inp = tool.parse_input(raw)
    checked = await tool.validate(inp, ctx)
    assert checked.ok, checked.message
    try:
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))
    except Exception as exc:  # the refusal is the answer the model sees
        return f"error: {exc}"


@pytest.mark.parametrize(("tool", "raw"), _CALLS)
def test_a_linked_ignore_file_is_not_obeyed_by_host_ripgrep(
    tmp_path: Path, tool: type[GlobTool | GrepTool], raw: dict[str, object]
) -> None:
    require(_search.ripgrep_binary() is not None, "ripgrep (the host search that followed the link)")
    root = _tree(tmp_path)
    got = anyio.run(_answer, tool(), raw, root)
    for name in _GUESSES:  # the linked line hid "TOKEN=hunter2"
        assert name in got, got


@pytest.mark.parametrize(("tool", "raw"), _CALLS)
def test_a_linked_rule_denied_file_is_not_obeyed(
    tmp_path: Path, tool: type[GlobTool | GrepTool], raw: dict[str, object]
) -> None:
    """The link's target is a ``*.pem`` made after the rules were read: the deny rule masks nothing,
    and host ripgrep searches there (round 42's session)."""
    require(_search.ripgrep_binary() is not None, "ripgrep (the host search that followed the link)")
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / ".shellrt").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "sub").mkdir()
    (root / ".shellrt/settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./**/*.pem)"]}}))
    gov = build_governance(root, home=tmp_path / "home", managed_path=tmp_path / "m.json", trust_workspace=True)
    (root / "keys").mkdir()
    (root / "keys/id.pem").write_text("TOKEN=hunter2\n")
    os.symlink("../keys/id.pem", root / "sub/.ignore")
    for name in _GUESSES:
        (root / "sub" / name).write_text("hello\n")
    ctx = make_ctx(root)
    ctx.services[PermissionGate] = gov.gate

    async def go() -> str:
        inp = tool().parse_input(raw)
        assert (await tool().validate(inp, ctx)).ok
        return str(tool().to_model_content((await tool().call(inp, ctx)).data))

    got = anyio.run(go)
    for name in _GUESSES:
        assert name in got, got
    assert "keys/" not in got, got


@pytest.mark.parametrize(("tool", "raw"), _CALLS)
def test_more_rules_than_the_walker_obeys_are_refused_by_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: type[GlobTool | GrepTool], raw: dict[str, object]
) -> None:
    require(_search.ripgrep_binary() is not None, "ripgrep (the backend that obeyed them all)")
    half = _gitignore.MAX_IGNORE_RULES // 2 + 1  # two files, over the bound together
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "deep/er").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "a.txt").write_text("hello\n")
    (root / ".ignore").write_text("".join(f"x{i}\n" for i in range(half)))
    (root / "deep/er/.gitignore").write_text("".join(f"y{i}\n" for i in range(half)))
    with_rg = anyio.run(_answer, tool(), raw, root)
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
    walker = anyio.run(_answer, tool(), raw, root)
    assert with_rg == walker, (with_rg, walker)
    assert "Cannot search" in walker, walker


@pytest.mark.anyio
async def test_it_holds_on_bwrap(tmp_path: Path) -> None:
    """ripgrep runs in the sandbox there (whose command a tree reshapes); the host's walk of the
    directories decides the same way."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    root = _tree(tmp_path)
    (root / "many").mkdir()
    (root / "many/.ignore").write_text("".join(f"x{i}\n" for i in range(_gitignore.MAX_IGNORE_RULES + 1)))
    async with shellrt.Runtime(
        workspace=root, sandbox="bwrap", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        linked = [
            await one_call(rt, "Glob", pattern="*", path=str(root / "sub")),
            await one_call(rt, "Grep", pattern="hello", path=str(root / "sub"), output_mode="files_with_matches"),
        ]
        many = [
            await one_call(rt, "Glob", pattern="**/*"),
            await one_call(rt, "Grep", pattern="hello", output_mode="files_with_matches"),
        ]
    for got in linked:
        for name in _GUESSES:
            assert name in block_text(got), got
    for got in many:
        assert got["is_error"] and "Cannot search" in block_text(got), got


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_linked_ignore_file_is_not_obeyed_by_host_ripgrep",
        "test_more_rules_than_the_walker_obeys_are_refused_by_both",
    )
