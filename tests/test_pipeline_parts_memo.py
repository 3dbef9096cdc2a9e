"""The per-analysis memo of a command's parts (`shellrt.tools._pathfree`): only path-free
commands are remembered, and a remembered split equals a fresh one in any context."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.permissions.interfaces import CommandPart
from shellrt.tools import _pathfree
from shellrt.tools._bashparts import command_parts
from shellrt.tools._pathfree import memoised_parts, names_no_path
from shellrt.tools.bash import Bash, BashInput

from .test_permissions_support import make_ctx

#: Commands whose parts follow from the analysis alone.
PATH_FREE = ["true", "date", "pwd", "true && false", "X=1 true", "true &", "uname -a", "make"]
#: Commands whose parts depend on the machine (paths, cd, git, jq) or on a run-time value.
PATH_BOUND = [
    "cat link/secret",
    "echo hi && pwd",
    "sleep 1",
    "cat /etc/hostname",
    "ls",
    "ls ..",
    "echo x > out.txt",
    "cd sub && ls",
    "git status",
    "jq . f.json",
    "grep -r x",
    "cp a b",
    'eval "$CMD"',
    "cat $(echo f)",
]


def _split(command: str, cwd: Path, roots: tuple[str, ...]) -> list[CommandPart]:
    a = analyze(command)
    return command_parts(a, str(cwd), lambda p: any(p == r or p.startswith(r + "/") for r in roots))


def _workspace(tmp: Path, name: str, target: Path) -> Path:
    ws = tmp / name
    (ws / "sub").mkdir(parents=True)
    (ws / "link").symlink_to(target)
    return ws


@pytest.mark.parametrize("command", PATH_FREE)
def test_path_free_parts_are_the_same_in_any_workspace(tmp_path: Path, command: str) -> None:
    a = analyze(command)
    outside = tmp_path / "outside"
    outside.mkdir()
    one = _workspace(tmp_path, "one", outside)
    two = _workspace(tmp_path, "two", one / "sub")
    first = _split(command, one, (str(one),))
    assert names_no_path(a, first), first
    again = _split(command, two / "sub", (str(two),))
    # Only where they run differs (a remembered approval is anchored there: round 16); the memo
    # sets it afresh (test_a_remembered_split_says_where_it_runs_now).
    assert [dataclasses.replace(p, dirs=()) for p in again] == [dataclasses.replace(p, dirs=()) for p in first]
    assert {p.dirs for p in again} <= {(), (str(two / "sub"),)}, again


def test_a_remembered_split_says_where_it_runs_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team round 16: the memo kept the first split's cwd, so ``./run.sh`` approved "always" at
    the top still counted as run there after ``cd tools``, and ran tools/run.sh unasked."""
    monkeypatch.setattr(_pathfree, "_remembered", {})
    (tmp_path / "tools").mkdir()
    a = analyze("./run.sh")
    top = memoised_parts(a, lambda: _split("./run.sh", tmp_path, (str(tmp_path),)), str(tmp_path))
    below = str(tmp_path / "tools")
    again = memoised_parts(a, lambda: _split("./run.sh", Path(below), (str(tmp_path),)), below)
    assert [p.dirs for p in top] == [(str(tmp_path),)] and [p.dirs for p in again] == [(below,)], again


@pytest.mark.parametrize("command", PATH_BOUND)
def test_parts_that_name_a_path_git_or_jq_are_never_remembered(tmp_path: Path, command: str) -> None:
    a = analyze(command)
    ws = _workspace(tmp_path, "ws", tmp_path)
    parts = _split(command, ws, (str(ws),))
    assert not names_no_path(a, parts), parts
    calls: list[int] = []

    def split() -> list[CommandPart]:
        calls.append(1)
        return parts

    memoised_parts(a, split, str(ws))
    memoised_parts(a, split, str(ws))
    assert len(calls) == 2  # split afresh every time


def test_a_path_free_command_is_split_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pathfree, "_remembered", {})  # earlier tests' calls remembered ``true`` already
    a = analyze("true")
    calls: list[int] = []

    def split() -> list[CommandPart]:
        calls.append(1)
        return _split("true", tmp_path, (str(tmp_path),))

    first = memoised_parts(a, split, str(tmp_path))
    first.append(CommandPart(text="changed by the caller"))  # a caller's list is its own
    again = memoised_parts(a, split, str(tmp_path))
    assert calls == [1]
    assert again == _split("true", tmp_path, (str(tmp_path),))


def test_bash_reads_through_a_symlink_are_judged_afresh_after_it_moves(tmp_path: Path) -> None:
    """The memo must not keep a read's resolution: ``cat link/secret`` with ``link`` retargeted
    from inside the workspace to outside it stops being read-only inside the workspace."""
    ws = tmp_path / "ws"
    inside = ws / "data"
    inside.mkdir(parents=True)
    (inside / "secret").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("y")
    (ws / "link").symlink_to(inside)
    bash = Bash()
    ctx = make_ctx(ws, tmp_path)

    def parts() -> list[CommandPart]:
        found = bash.command_parts(BashInput(command="cat link/secret"), ctx)
        assert found is not None
        return found

    before = parts()
    assert before[0].read_only and before[0].reads
    os.unlink(ws / "link")
    (ws / "link").symlink_to(outside)
    after = parts()
    assert not after[0].read_only
    assert str(outside / "secret") in after[0].reads
