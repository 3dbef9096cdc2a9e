"""Red team round 42 (files5): the walker entered masked directories.

Round 41 left it: the fd-anchored walker (Glob and Grep in masked local and docker sessions)
still entered a masked directory, listed its names and read its ignore files, and only dropped
what it found there afterwards. What it counted reached the model: the walk's budget of ignore
rules (`MAX_IGNORE_RULES` in all) was charged with a masked ``.gitignore``'s rules, so a
workspace ignore file of 10,000 - k rules (the model's own Write) made Glob and Grep fail with
"Cannot search" exactly when the masked file held more than k rules -- its length read one guess
at a time; and the listing's bound (`MAX_LISTED_FILES`) counted the masked names. Now a masked
place is neither entered nor read (as spelt and case-folded, as `View.masked_by` judges).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.tools import _gitignore, _search, _search_types
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx


def _tree(tmp_path: Path, masked_rules: int, workspace_rules: int, mask: str = "secrets") -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "a.txt").write_text("hello\n")
    (root / ".ignore").write_text("".join(f"nothing{i}\n" for i in range(workspace_rules)))
    (root / "secrets/.gitignore").write_text("".join(f"k{i}\n" for i in range(masked_rules)))
    (root / "secrets/key.txt").write_text("hello TOKEN\n")
    return root


async def _answer(tool: GlobTool | GrepTool, raw: dict[str, object], root: Path, mask: str) -> str:
    ctx = make_ctx(root, read_denied=(root / mask,))
    inp = tool.parse_input(raw)
    checked = await tool.validate(inp, ctx)
    assert checked.ok, checked.message
    try:
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))
    except Exception as exc:  # the refusal is the answer the model sees
        return f"error: {exc}"


def _answers(tmp_path: Path, mask: str, masked_rules: int) -> tuple[str, str]:
    root = _tree(tmp_path / str(masked_rules), masked_rules, _gitignore.MAX_IGNORE_RULES - 50)

    async def go() -> tuple[str, str]:
        glob = await _answer(GlobTool(), {"pattern": "**/*.txt"}, root, mask)
        grep = await _answer(GrepTool(), {"pattern": "hello", "output_mode": "files_with_matches"}, root, mask)
        return glob.replace(str(root), "<ws>"), grep.replace(str(root), "<ws>")

    return anyio.run(go)


@pytest.mark.parametrize("mask", ["secrets", "Secrets"])
def test_a_masked_ignore_file_does_not_spend_the_walks_rule_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mask: str
) -> None:
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)  # the walker, as a masked local session
    few = _answers(tmp_path, mask, 10)
    many = _answers(tmp_path, mask, 60)
    assert few == many, (few, many)  # the masked file's length told apart: "Cannot search" for 60
    assert "a.txt" in many[0] and "a.txt" in many[1], many
    assert "key.txt" not in many[0] + many[1], many


def test_masked_names_do_not_count_toward_the_listing_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
    monkeypatch.setattr(_search_types, "MAX_LISTED_FILES", 5)
    root = _tree(tmp_path, 0, 0)
    for i in range(7):
        (root / f"secrets/k{i}").write_text("KEY\n")
    (root / "b.txt").write_text("b\n")

    got = anyio.run(_answer, GlobTool(), {"pattern": "**/*"}, root, "secrets")
    assert "a.txt" in got and "b.txt" in got, got  # "more than 5 files": 7 of them masked


def test_the_walker_never_enters_a_masked_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The class, below the tools: neither a name nor an ignore file of a skipped place is read."""
    root = _tree(tmp_path, 3, 0)
    (root / "secrets/sub").mkdir()
    (root / "secrets/sub/deep.txt").write_text("x\n")
    seen: list[str] = []
    real = _gitignore._load_dir_rules

    def spy(directory: str, dir_fd: int | None = None, present: Any = None) -> _gitignore._DirRules:
        seen.append(directory)
        return real(directory, dir_fd, present)

    monkeypatch.setattr(_gitignore, "_load_dir_rules", spy)
    walked = list(_gitignore.walk_files(root, skip=("Secrets",)))  # folded, as masked_by folds
    assert sorted(walked) == [".ignore", "a.txt"], walked
    assert not [d for d in seen if "secrets" in d], seen


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_masked_ignore_file_does_not_spend_the_walks_rule_budget",
        "test_masked_names_do_not_count_toward_the_listing_bound",
    )
