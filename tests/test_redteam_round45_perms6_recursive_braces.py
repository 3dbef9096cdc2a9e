"""Red team, round 45 (perms6): a recursive read past a deny rule spelt with braces or an escape.

``grep -r``, ``cat -R``-style reads of a directory are refused when a ``Read(...)`` deny or ask rule
may match below it (`PermissionRule.may_match_below`): an anchored rule is judged by its fixed
leading directories. Those were cut at ``* ? [`` only, so ``{`` and a backslash escape stayed part of
the "fixed" path: ``Read(./{secrets,vault}/key)`` was anchored at a directory literally named
``{secrets,vault}`` (missing: nothing below), ``Read(./k\\ /key)`` at ``k\\ `` (the directory is
``k ``). The rule denies ``secrets/key`` and ``k /key`` to the Read tool, yet ``grep -r TOKEN .`` ran
without a question and printed both (local backend: no mask; on bwrap the mask still hides them).
Now a segment holding any glob character or escape ends the fixed part (a shallower anchor: fail
closed).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from shellrt.permissions.rules import RuleOrigin, parse_rule
from tests._calls import block_text, one_call

RULES = [
    ("Read(./{secrets,vault}/key)", "secrets/key"),
    ("Read(./{secrets,vault}/**)", "vault/key"),
    ("Read(./k\\ /key)", "k /key"),
    ("Read(./d/\\#x/key)", "d/#x/key"),
]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt45-perms6-brace-", dir="/work/tmpws"))
    for _, rel in RULES:
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(f"TOKEN45-{rel}\n")
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(("rule", "rel"), RULES)
def test_a_recursive_read_of_the_workspace_may_reach_the_denied_file(ws: Path, rule: str, rel: str) -> None:
    parsed = parse_rule(rule, "deny", RuleOrigin("cli", None, None, ws))
    assert parsed.match_item(str(ws / rel), home=ws, resolve=False), rule  # governance denies the file
    assert parsed.may_match_below(str(ws), home=ws), rule  # so a walk of its tree may reach it


def test_a_sibling_tree_is_still_not_reached(ws: Path) -> None:
    """The control: the anchor is shallower, not gone (``other/`` is beside ``d/``, which the rule is below)."""
    (ws / "other").mkdir()
    parsed = parse_rule("Read(./d/{secrets,vault}/key)", "deny", RuleOrigin("cli", None, None, ws))
    assert not parsed.may_match_below(str(ws / "other"), home=ws)
    assert parsed.may_match_below(str(ws / "d"), home=ws)


@pytest.mark.anyio
async def test_grep_r_does_not_print_what_the_rule_denies(ws: Path) -> None:
    session = Path(tempfile.mkdtemp(prefix="rt45-perms6-bs-", dir="/work/tmpws"))
    try:
        async with shellrt.Runtime(
            workspace=ws,
            sandbox="local",
            session_dir=session,
            settings_files=(),
            deny=[r for r, _ in RULES],
        ) as rt:
            out = await one_call(rt, "Bash", command="grep -r TOKEN45 .")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert "TOKEN45-" not in block_text(out), out
