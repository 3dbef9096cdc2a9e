"""Red team, round 43 (review23): a repository's Windows-style rule is masked in both its readings.

Round 42 (perms5) made a repository's ``Read(.\\secrets\\key)`` deny and mask ``secrets/key`` (its
backslashes read as separators), and the permission layer still denies the rule's glob-escape reading
too (``\\s`` is an escaped ``s``: the name ``.secretskey`` at any depth). The sandbox masked only the
separator reading: ``cat .secretskey`` (or ``d/.secretskey``) read what the Read tool is denied --
round 42's promise "a repository's Windows-style rule denies and masks the same file" held for one
of the two files. Now a repository's such rule is masked as both readings (the union governance
denies); the operator's own still refuses the session.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import derive_policy
from tests._calls import block_text, one_call
from tests.conftest import require

RULES = ["Read(.\\secrets\\key)", "Read(secrets\\key)", "Read(**\\key)", "Read(.\\sec\\rets\\key)"]
FILES = [".secretskey", "d/.secretskey", "secretskey", "secrets/key", "sec/rets/key"]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt43-review23-win-"))
    for rel in FILES:
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(f"SECRET-{rel}\n")
    (base / ".claude").mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("rule", RULES)
def test_every_file_governance_denies_is_masked(ws: Path, rule: str) -> None:
    parsed = parse_rule(rule, "deny", RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws))
    denied = [ws / f for f in FILES if parsed.match_item(str(ws / f), home=ws, resolve=False)]
    assert denied
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False)
    masked = {Path(p) for p in policy.read_denied}
    loose = [str(p.relative_to(ws)) for p in denied if not ({p, *p.parents} & masked)]
    assert not loose, (loose, sorted(map(str, masked)), notes)


@pytest.mark.anyio
async def test_cat_does_not_read_the_escape_reading(ws: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(.\\secrets\\key)"]}}))
    (ws / "r.sh").write_text("cat .secretskey d/.secretskey secrets/key\n")
    session = Path(tempfile.mkdtemp(prefix="rt43-review23-s-"))
    try:
        async with shellrt.Runtime(
            workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=session, settings_files=()
        ) as rt:
            cat = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert "ran" in block_text(cat) and "SECRET-" not in block_text(cat), cat
