"""Red team round 42 (perms5): the operator's own glob showed a root caller's commands names they cannot list.

Round 41 closed this for a repository's rules (`sandbox_policy._others_reach`) and left the
operator's: ``--deny 'Read(//srv/**/*.pem)'`` is walked as root, and each match in a directory closed
to the sandbox uid (``0700``) became a mount a command reads in ``/proc/self/mountinfo``:
``grep -o 'hidden[^ ]*' /proc/self/mountinfo`` printed ``hidden-name-XYZ.pem`` while ``ls`` said
"Permission denied". Such a mask protects nothing the sandbox uid could read. Now the operator's
glob matches are judged as a repository's are -- except a file with other hard links (round 37's
check must still count its names) and directories (their files may have links elsewhere).
"""

from __future__ import annotations

import os
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


@pytest.fixture
def top() -> Iterator[Path]:
    require(os.geteuid() == 0, "a root caller's host walks what its sandbox uid cannot list")
    base = Path(tempfile.mkdtemp(prefix="rt42-perms5-glob-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "ws").mkdir()
    (base / "ws").chmod(0o777)
    (base / "priv").mkdir(mode=0o700)
    (base / "priv" / "hidden-name-XYZ.pem").write_text("K\n")
    (base / "open").mkdir(mode=0o755)
    (base / "open" / "shown-name.pem").write_text("K\n")
    (base / "open" / "shown-name.pem").chmod(0o644)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _operator(rule: str, ws: Path) -> object:
    return parse_rule(rule, "deny", RuleOrigin("cli", None, None, ws))


@pytest.mark.parametrize("rule", ["Read(//{top}/**/*.pem)", "Read(//{top}/priv/*)", "Read(//{top}/**/hidden-name-XYZ.pem)"])
def test_an_operator_glob_masks_nothing_its_sandbox_uid_cannot_reach(top: Path, rule: str) -> None:
    ws = top / "ws"
    text = rule.format(top=str(top).lstrip("/"))
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[_operator(text, ws)], mask_defaults=False)
    assert not [p for p in policy.read_denied if "hidden-name" in str(p)], policy.read_denied
    assert any("cannot reach" in n for n in notes), notes


def test_what_the_operator_names_or_the_uid_reaches_stays_masked(top: Path) -> None:
    ws = top / "ws"
    rule = _operator(f"Read(//{str(top).lstrip('/')}/**/*.pem)", ws)
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    assert top / "open" / "shown-name.pem" in policy.read_denied, policy.read_denied
    named = _operator(f"Read(//{str(top).lstrip('/')}/priv/hidden-name-XYZ.pem)", ws)
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[named], mask_defaults=False)
    assert top / "priv" / "hidden-name-XYZ.pem" in policy.read_denied, policy.read_denied


def test_a_closed_match_with_another_name_still_refuses(top: Path) -> None:
    ws = top / "ws"
    os.link(top / "priv" / "hidden-name-XYZ.pem", top / "open" / "other-name")
    rule = _operator(f"Read(//{str(top).lstrip('/')}/**/*.pem)", ws)
    with pytest.raises(PolicyError, match="hard links"):
        derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)


@pytest.mark.anyio
async def test_the_mount_table_shows_no_name_of_an_operator_glob_the_command_cannot_list(top: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = top / "ws"
    session = Path(tempfile.mkdtemp(prefix="rt42-perms5-gs-", dir="/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=ws,
            sandbox="bwrap",
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=[f"Read(//{str(top).lstrip('/')}/**/*.pem)"],
        ) as rt:
            result = await one_call(
                rt, "Bash", command="grep -o -e 'hidden[^ ]*' -e 'shown[^ ]*' /proc/self/mountinfo; echo ran"
            )
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran" in text and "hidden-name" not in text, result
    assert "shown-name" in text, result  # what the sandbox uid can read stays masked
