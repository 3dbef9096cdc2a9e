"""Red team, round 45 (perms6): a Windows-style rule whose backslash stands before a glob character.

Round 42 read a backslash before a letter as a Windows separator and one before ``* ? [ ] { } , !
# \\`` or a blank as a glob escape. So a repository's ``Read(.\\secrets\\*)`` (a Windows path with a
wildcard, rounds 42 and 43's Left) was read as ``./secrets\\*`` (the name ``*`` in ``secrets``) and
``.secrets*``: the permission layer and the sandbox protected neither ``secrets/key`` nor
``secrets/a.pem``, and the Read tool and ``cat`` read them. A rule with a Windows separator in it is
a Windows path: its other backslashes are separators too. Deny and ask rules now also match the
reading where every backslash is ``/`` (the union of all readings: fail closed), and a repository's
rule is masked by it; allow rules are not widened; the operator's own such rule refuses the session.
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
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._calls import block_text, one_call
from tests.conftest import require

#: (rule, the file below the workspace it names when every backslash is a separator)
CASES = [
    ("Read(.\\secrets\\*)", "secrets/key"),
    ("Read(.\\secrets\\*.pem)", "secrets/a.pem"),
    ("Read(.\\secrets\\**)", "secrets/deep/key"),
    ("Read(.\\secrets\\?ey)", "secrets/key"),
    ("Read(.\\secrets\\[kK]ey)", "secrets/key"),
    ("Read(.\\secrets\\{a.pem,key})", "secrets/a.pem"),
    ("Read(**\\secrets\\*)", "sub/secrets/key"),
]
FILES = ["secrets/key", "secrets/a.pem", "secrets/deep/key", "sub/secrets/key"]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt45-perms6-star-", dir="/work/tmpws"))
    for rel in FILES:
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(f"SECRET45-{rel}\n")
    (base / ".claude").mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _repo(rule: str, ws: Path, kind: str = "deny") -> object:
    return parse_rule(rule, kind, RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws))  # type: ignore[arg-type]


@pytest.mark.parametrize(("rule", "rel"), CASES)
def test_governance_denies_and_the_sandbox_masks_the_separator_reading(ws: Path, rule: str, rel: str) -> None:
    parsed = _repo(rule, ws)
    assert parsed.match_item(str(ws / rel), home=ws, resolve=False), rule  # type: ignore[attr-defined]
    assert parsed.may_match_below(str(ws), home=ws), rule  # type: ignore[attr-defined]
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False)  # type: ignore[list-item]
    masked = {Path(p) for p in policy.read_denied}
    target = ws / rel
    assert {target, *target.parents} & masked, (rule, sorted(map(str, masked)), notes)


def test_an_ask_rule_asks_for_the_separator_reading(ws: Path) -> None:
    ask = _repo("Read(.\\secrets\\*)", ws, "ask")
    assert ask.match_item(str(ws / "secrets" / "key"), home=ws, resolve=False)  # type: ignore[attr-defined]


def test_a_rule_with_no_windows_separator_keeps_its_escapes(ws: Path) -> None:
    """The control: ``./secrets\\*`` (gitignore's escaped star, no other backslash) names ``secrets*``."""
    (ws / "secrets*").write_text("x\n")
    parsed = _repo("Read(./secrets\\*)", ws)
    assert parsed.match_item(str(ws / "secrets*"), home=ws, resolve=False)  # type: ignore[attr-defined]
    assert not parsed.match_item(str(ws / "secrets" / "key"), home=ws, resolve=False)  # type: ignore[attr-defined]


def test_an_allow_rule_is_not_widened(ws: Path) -> None:
    allow = parse_rule("Read(.\\secrets\\*)", "allow", RuleOrigin("cli", None, None, ws))
    assert not allow.match_item(str(ws / "secrets" / "key"), home=ws, resolve=True)


def test_the_operators_rule_still_refuses(ws: Path) -> None:
    rule = parse_rule("Read(.\\secrets\\*)", "deny", RuleOrigin("cli", None, None, ws))
    with pytest.raises(PolicyError, match="Windows"):
        derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)


@pytest.mark.anyio
async def test_neither_read_nor_cat_reads_what_the_rule_names(ws: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(.\\secrets\\*)"]}}))
    (ws / "r.sh").write_text("cat secrets/key secrets/a.pem\n")
    session = Path(tempfile.mkdtemp(prefix="rt45-perms6-s-", dir="/work/tmpws"))
    try:
        async with shellrt.Runtime(
            workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=session, settings_files=()
        ) as rt:
            read = await one_call(rt, "Read", file_path=str(ws / "secrets" / "key"))
            cat = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert "SECRET45" not in block_text(read), read
    assert "ran" in block_text(cat) and "SECRET45" not in block_text(cat), cat
