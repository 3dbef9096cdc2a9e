"""Red team round 41 (files4): Grep's counts, notes and errors told what a read-denied file holds.

Grep drops a masked, rule-denied or unreadable file's hits from what it shows (`grep._visible`),
but it searched such files first, and three things computed from those unfiltered hits reached
the model: the "N file(s) shown are tracked by git but named in this tree's ignore files" note
(the hidden tracked file's hit counted though it was dropped), the "N file(s) ... were NOT
searched" note, and the "more than 100,000 lines" error. A model that may not read
``secrets/key.txt`` asked ``hello|TOKEN=h`` and ``hello|TOKEN=x`` and read the secret a guess at
a time from whether the note was there. Now such a file is never searched (the walker prunes the
masked paths below its root; hidden tracked files are judged visible before they are searched),
so every answer is the same whatever it holds.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from shellrt.permissions import PermissionGate, build_governance
from shellrt.protocol import ToolContext
from shellrt.tools import _search
from shellrt.tools._search_types import MAX_HIT_LINES
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx


def _git(root: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(root), *argv], check=True, capture_output=True)


def _repo(tmp_path: Path, secret: str, name: str = "secrets/key.txt") -> Path:
    """A repository tracking a secret the session may not read, beside a harmless file."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / name).parent.mkdir(parents=True)
    (root / ".session").mkdir()
    (root / name).write_text(secret)
    (root / "ok.txt").write_text("hello\n")
    _git(root, "init", "-q")
    _git(root, "add", name, "ok.txt")
    return root


def _grep(ctx: ToolContext, pattern: str, mode: str = "content") -> str:
    async def go() -> str:
        tool = GrepTool()
        inp = tool.parse_input({"pattern": pattern, "output_mode": mode})
        assert (await tool.validate(inp, ctx)).ok
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except Exception as exc:  # the error text is an answer too
            return f"{type(exc).__name__}: {exc}"

    return anyio.run(go)


def _masked(root: Path, monkeypatch: pytest.MonkeyPatch) -> ToolContext:
    """A local session masking ``secrets`` (a ``Read(./secrets/**)`` deny): the Python walker."""
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
    return make_ctx(root, read_denied=(root / "secrets",))


def _rule_denied(root: Path, tmp_path: Path) -> ToolContext:
    """A local session whose deny rule masks nothing (no ``*.pem`` when it started): ripgrep on
    the host, the rule judged per hit (`_paths.rule_denied`)."""
    (root / ".shellrt").mkdir()
    (root / ".shellrt/settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./**/*.pem)"]}}))
    gov = build_governance(
        root, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=True
    )
    ctx = make_ctx(root)
    ctx.services[PermissionGate] = gov.gate
    return ctx


def _same_answers(ctx: ToolContext, right: str, wrong: str, mode: str = "content") -> None:
    hit, miss = _grep(ctx, f"hello|{right}", mode), _grep(ctx, f"hello|{wrong}", mode)
    assert "ok.txt" in hit, hit
    assert "TOKEN" not in hit and "hunter" not in hit, hit
    assert hit == miss, f"the answer depends on the denied file's content:\n{hit}\n---\n{miss}"


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
def test_the_tracked_note_does_not_count_a_masked_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    root = _repo(tmp_path, "TOKEN=hunter2\n")
    (root / ".ignore").write_text("key.txt\n")  # the model's own Write could make it
    _same_answers(_masked(root, monkeypatch), "TOKEN=h", "TOKEN=x", mode)


def test_the_tracked_note_does_not_count_a_rule_denied_file(tmp_path: Path) -> None:
    root = _repo(tmp_path, "TOKEN=hunter2\n", "keys/id.pem")
    (root / ".ignore").write_text("id.pem\n")
    _same_answers(_rule_denied(root, tmp_path), "TOKEN=h", "TOKEN=x")


def test_the_not_searched_note_does_not_count_a_masked_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path, "TOKEN=hunter2\n" * (MAX_HIT_LINES + 1))
    (root / ".ignore").write_text("key.txt\n")
    _same_answers(_masked(root, monkeypatch), "TOKEN=h", "TOKEN=x")


def test_the_too_many_lines_error_does_not_count_a_masked_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path, "TOKEN=hunter2\n" * (MAX_HIT_LINES + 1))
    _same_answers(_masked(root, monkeypatch), "TOKEN=h", "TOKEN=x")


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_the_tracked_note_does_not_count_a_masked_file",
        "test_the_tracked_note_does_not_count_a_rule_denied_file",
        "test_the_too_many_lines_error_does_not_count_a_masked_file",
        "test_the_too_many_lines_error_does_not_count_a_masked_files_other_name",
    )


def test_the_too_many_lines_error_does_not_count_a_masked_files_other_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hard link of the masked file in the workspace: its hits are dropped (`_unseen._aliased`),
    so its lines must not count toward the stop either."""
    root = _repo(tmp_path, "TOKEN=hunter2\n" * (MAX_HIT_LINES + 1))
    os.link(root / "secrets/key.txt", root / "copy.txt")
    _same_answers(_masked(root, monkeypatch), "TOKEN=h", "TOKEN=x")
