"""Red team round 42 (perms5): a repository's Windows-style rule denied one file and masked none.

A backslash before a letter is a glob escape of that letter, so the permission layer read a
repository's ``Read(.\\secrets\\key)`` as ``.secretskey`` (a file nobody has), while the sandbox
compile called it Windows-style and masked nothing (a note, "only by the permission layer"). The
Read tool and ``cat`` both read ``secrets/key``. Now both read the backslashes as separators: the
permission layer denies ``secrets/key`` and the sandbox masks it. The operator's own such rule still
refuses the session with what to write instead (round 11).

And the blank a backslash keeps at the end (``Read(./k\\ )``, round 26) and gitignore's ``\\#``
were taken for Windows separators by the compile: the operator's rule refused the session, a
repository's masked nothing while the permission layer denied ``k ``.
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

RULES = ["Read(.\\secrets\\key)", "Read(secrets\\key)", "Read(.\\secrets\\k?y)", "Read(sub\\..\\secrets\\key)"]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt42-perms5-win-"))
    (base / "secrets").mkdir()
    (base / "secrets" / "key").write_text("TOPSECRET-42\n")
    (base / "sub").mkdir()
    (base / ".claude").mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _repo(rule: str, ws: Path) -> object:
    return parse_rule(rule, "deny", RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws))


@pytest.mark.parametrize("rule", RULES)
def test_governance_and_the_mask_read_a_windows_rule_alike(ws: Path, rule: str) -> None:
    parsed = _repo(rule, ws)
    assert parsed.match_item(str(ws / "secrets" / "key"), home=ws, resolve=False)  # type: ignore[attr-defined]
    assert parsed.may_match_below(str(ws), home=ws)  # type: ignore[attr-defined]
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False)
    masked = {str(p) for p in policy.read_denied}
    assert str(ws / "secrets" / "key") in masked or str(ws / "secrets") in masked, (policy.read_denied, notes)


def test_an_allow_rule_is_not_widened(ws: Path) -> None:
    allow = parse_rule("Read(.\\secrets\\key)", "allow", RuleOrigin("cli", None, None, ws))
    assert not allow.match_item(str(ws / "secrets" / "key"), home=ws, resolve=True)


def test_the_operators_windows_rule_still_refuses(ws: Path) -> None:
    rule = parse_rule("Read(.\\secrets\\key)", "deny", RuleOrigin("cli", None, None, ws))
    with pytest.raises(PolicyError, match="Windows"):
        derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)


@pytest.mark.anyio
async def test_neither_read_nor_cat_reads_what_a_windows_rule_names(ws: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(.\\secrets\\key)"]}}))
    (ws / "r.sh").write_text("cat secrets/key\n")  # a script: what it reads is the sandbox's to stop
    session = Path(tempfile.mkdtemp(prefix="rt42-perms5-s-"))
    try:
        async with shellrt.Runtime(
            workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=session, settings_files=()
        ) as rt:
            read = await one_call(rt, "Read", file_path=str(ws / "secrets" / "key"))
            cat = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert "TOPSECRET" not in block_text(read), read
    assert "ran" in block_text(cat) and "TOPSECRET" not in block_text(cat), cat


@pytest.mark.parametrize("source", ["cli", "project"])
@pytest.mark.parametrize(("rule", "name"), [("Read(./k\\ )", "k "), ("Read(./\\#k)", "#k")])
def test_gitignore_escapes_are_not_windows_separators(ws: Path, source: str, rule: str, name: str) -> None:
    (ws / name).write_text("TOPSECRET-42\n")
    file = ws / ".claude" / "settings.json" if source == "project" else None
    parsed = parse_rule(rule, "deny", RuleOrigin(source, file, None, ws))
    assert parsed.match_item(str(ws / name), home=ws, resolve=False)
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False)
    assert ws / name in policy.read_denied, (policy.read_denied, notes)


@pytest.mark.anyio
@pytest.mark.parametrize("persistent", [True, False])
async def test_bwrap_masks_what_a_windows_rule_names(ws: Path, persistent: bool) -> None:
    from sandbox import BwrapConfig
    from sandbox.factory import create_backend
    from tests._rt11_rules import run_in

    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    derived, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[_repo("Read(.\\secrets\\key)", ws)], mask_defaults=False)
    session = Path(tempfile.mkdtemp(prefix="rt42-perms5-b-"))
    try:
        seen = await run_in(create_backend(BwrapConfig(persistent=persistent), derived), ws, session, "cat secrets/key 2>&1; echo end")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert "TOPSECRET" not in seen and seen.strip().endswith("end"), seen
