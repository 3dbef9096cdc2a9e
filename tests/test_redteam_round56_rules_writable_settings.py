"""Red team, round 56 (rules): a settings file the workspace can write, read under an operator's source.

Masks judge who wrote a rule: the operator's ``Read`` deny the sandbox cannot enforce refuses the
session (fail closed), a repository's is a diagnostic (a repository must not stop the session nor
choose a weaker sandbox). The judgement went by the source's name alone: ``cli``, ``managed`` and
``user`` were the operator's. But the trust layer already knows three such files the workspace can
write -- ``--settings ws/ci.json`` (a CI's settings shipped by the repository), a managed path
naming a workspace file, the user file of a home inside the workspace -- and a symlink whose target
lies there. Their rules and ``maskedPaths`` refused the operator's session (``Read(//proc/**)``)
as if the operator had written them. Now a rule or setting read from a file inside a writable root
(as named or where it leads) is judged as the repository's.
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
from shellrt.permissions.settings import FileSettings
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._calls import block_text, one_call
from tests.conftest import require

#: What the sandbox itself runs on: the operator's mask of it refuses the session.
_PROC_RULE = "Read(//proc/**)"


@pytest.fixture
def top() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="shellrt-r56-rules-ws-", dir="/var/tmp"))
    try:
        (base / "ws").mkdir()
        (base / "outside").mkdir()
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _file(top: Path, where: str) -> Path:
    """A settings file the workspace can write (``where``: inside, or a link outside leading in),
    or the operator's own (``outside``)."""
    ws = top / "ws"
    if where == "inside":
        return ws / "ci.json"
    if where == "home-inside":
        return ws / "home" / ".shellrt" / "settings.json"
    if where == "link-in":
        (ws / "real.json").write_text("{}")
        os.symlink(ws / "real.json", top / "outside" / "linked.json")
        return top / "outside" / "linked.json"
    return top / "outside" / "mine.json"


_WRITABLE = [("cli", "inside"), ("managed", "inside"), ("user", "home-inside"), ("cli", "link-in")]


def _derive_rule(top: Path, source: str, file: Path | None) -> list[str]:
    ws = top / "ws"
    rule = parse_rule(_PROC_RULE, "deny", RuleOrigin(source, file, 1, ws))
    _, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False, home=top / "home")
    return notes


def _derive_setting(top: Path, source: str, file: Path) -> list[str]:
    ws = top / "ws"
    loaded = FileSettings(path=file, source=source, exists=True, sandbox={"maskedPaths": ["/proc"]})
    _, notes = derive_policy(
        SandboxPolicy(workspace=ws), settings_files=[loaded], mask_defaults=False, home=top / "home"
    )
    return notes


@pytest.mark.parametrize(("source", "where"), _WRITABLE)
def test_a_writable_files_read_deny_is_the_repositorys(top: Path, source: str, where: str) -> None:
    """Failed 4 of 4 before: PolicyError, the operator's session refused by the repository's file."""
    notes = _derive_rule(top, source, _file(top, where))
    assert any("settings the workspace can write" in n and "/proc" in n for n in notes), notes


@pytest.mark.parametrize(("source", "where"), _WRITABLE)
def test_a_writable_files_masked_paths_are_the_repositorys(top: Path, source: str, where: str) -> None:
    """Failed 4 of 4 before: PolicyError, as for its rules."""
    notes = _derive_setting(top, source, _file(top, where))
    assert any("/proc" in n for n in notes), notes


@pytest.mark.parametrize("source", ["cli", "managed", "user"])
def test_the_operators_own_file_still_refuses(top: Path, source: str) -> None:
    """Control (fail closed): the same rule and setting in the operator's file outside the roots."""
    with pytest.raises(PolicyError, match="/proc"):
        _derive_rule(top, source, _file(top, "outside"))
    with pytest.raises(PolicyError, match="/proc"):
        _derive_setting(top, source, _file(top, "outside"))


def test_the_operators_flags_still_refuse(top: Path) -> None:
    """Control: ``--deny`` on the command line (source ``cli``, no file)."""
    with pytest.raises(PolicyError, match="/proc"):
        _derive_rule(top, "cli", None)


@pytest.mark.anyio
async def test_settings_in_the_workspace_do_not_stop_the_session(top: Path) -> None:
    """Failed 1 of 1 before: ``Runtime(settings_files=[ws/ci.json])`` (``--settings ws/ci.json``)
    raised PolicyError at the start; now it starts, says why the rule is not masked, and the permission
    layer still denies the path to the file tools."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = top / "ws"
    (ws / "ci.json").write_text(json.dumps({"permissions": {"deny": [_PROC_RULE]}}))
    session = Path(tempfile.mkdtemp(prefix="shellrt-r56-rules-s-", dir="/var/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=ws, sandbox="bwrap", session_dir=session, settings_files=[ws / "ci.json"]
        ) as rt:
            assert any("settings the workspace can write" in d for d in rt.diagnostics), rt.diagnostics
            ran = await one_call(rt, "Bash", command="echo started-56")
            read = await one_call(rt, "Read", file_path="/proc/self/status")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert "started-56" in block_text(ran), ran
    assert read.get("is_error") and "denied" in block_text(read).lower(), read
