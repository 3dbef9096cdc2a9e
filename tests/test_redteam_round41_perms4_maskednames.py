"""Red team round 41 (perms4): a repository's rule that shows a root caller's commands names they cannot list.

Masks are mounts, and a command reads the mount table (``/proc/self/mountinfo``). The host works a
rule's masks out as the caller: for a root caller, as root, while its commands run as the leased
sandbox uid. A repository's ``Read(**/*.pem)`` with ``ws/l`` a link to a root-only directory (0700)
had the host walk it and mask each match: ``grep -o 'hidden[^ ]*' /proc/self/mountinfo`` printed the
names of files the command could not list (``ls`` said "Permission denied"); a static rule naming a
guessed path answered whether it exists. Such a mask protects nothing (the sandbox uid can neither
list nor read what it hides): a repository's mask outside the writable roots is now made only where
the sandbox uid could reach the name or the file, and is a diagnostic otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import derive_policy
from tests._calls import one_call
from tests.conftest import require


@pytest.fixture
def top() -> Iterator[Path]:
    require(os.geteuid() == 0, "a root caller's host walks what its sandbox uid cannot list")
    base = Path(tempfile.mkdtemp(prefix="rt41-perms4-names-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "ws" / ".claude").mkdir(parents=True)
    (base / "ws").chmod(0o777)
    (base / "priv").mkdir(mode=0o700)
    (base / "priv" / "hidden-name-XYZ.pem").write_text("K\n")
    (base / "open").mkdir(mode=0o755)
    (base / "open" / "shown-name.pem").write_text("K\n")
    (base / "open" / "shown-name.pem").chmod(0o644)
    (base / "ws" / "l").symlink_to(base / "priv")
    (base / "ws" / "o").symlink_to(base / "open")
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _repo(rule: str, ws: Path) -> object:
    return parse_rule(rule, "deny", RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws))


@pytest.mark.parametrize("rule", ["Read(**/*.pem)", "Read(./l/*)", "STATIC"])
def test_a_repository_rule_masks_nothing_its_sandbox_uid_cannot_reach(top: Path, rule: str) -> None:
    ws = top / "ws"
    if rule == "STATIC":
        rule = f"Read(/{top}/priv/hidden-name-XYZ.pem)"
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[_repo(rule, ws)], mask_defaults=False)
    assert not [p for p in policy.read_denied if "hidden-name" in str(p)], policy.read_denied
    assert any("cannot reach" in n for n in notes), notes


def test_an_operator_glob_through_a_repository_link_masks_nothing_closed(top: Path) -> None:
    ws = top / "ws"
    rule = parse_rule("Read(./l/**/*.pem)", "deny", RuleOrigin("cli", None, None, ws))
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    assert not [p for p in policy.read_denied if "hidden-name" in str(p)], policy.read_denied
    assert any("cannot reach" in n for n in notes), notes


def test_what_the_sandbox_uid_can_read_stays_masked(top: Path) -> None:
    ws = top / "ws"
    (ws / "closed").mkdir(mode=0o700)  # the workspace is the sandbox uid's (idmapped): masked there
    (ws / "closed" / "in-root.pem").write_text("K\n")
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[_repo("Read(./closed/*)", ws)], mask_defaults=False)
    assert ws / "closed" / "in-root.pem" in policy.read_denied, policy.read_denied
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[_repo("Read(**/*.pem)", ws)], mask_defaults=False)
    assert top / "open" / "shown-name.pem" in policy.read_denied, policy.read_denied
    # the operator's own rule naming the file itself (no link of the repository's on the way): as before
    # (its glob ``/priv/*.pem`` is judged as a repository's since round 42: tests/test_redteam_round42_perms5_globnames.py)
    rule = parse_rule(f"Read(/{top}/priv/hidden-name-XYZ.pem)", "deny", RuleOrigin("cli", None, None, ws))
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    assert top / "priv" / "hidden-name-XYZ.pem" in policy.read_denied, policy.read_denied


@pytest.mark.anyio
async def test_the_mount_table_shows_no_name_the_command_cannot_list(top: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = top / "ws"
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(**/*.pem)"]}}))
    session = Path(tempfile.mkdtemp(prefix="rt41-perms4-s-", dir="/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=session, settings_files=()
        ) as rt:
            result = await one_call(
                rt, "Bash", command="grep -o -e 'hidden[^ ]*' -e 'shown[^ ]*' /proc/self/mountinfo; echo ran"
            )
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = str(result["content"])
    assert "ran" in text and "hidden-name" not in text, result
    assert "shown-name" in text, result  # what the sandbox uid can read stays masked
