"""Red team, round 52 (perms9): a read deny that holds the workspace masked nothing at all.

The workspace cannot be hidden from its own commands, so a mask that is or holds a writable root
was skipped with a diagnostic. But the skip dropped the whole mask, not only the workspace: an
operator's ``Read(~/**)`` (or ``Read(//srv/**)``, or ``"maskedPaths": ["~"]``) with the workspace
at ``~/proj`` left every other file of the home -- ``~/other/.env``, ``~/notes.txt`` -- readable to
every command (the file tools were denied; a command that the analyser cannot see read them, in
bypassPermissions mode). Now everything in the holding directory is masked but the writable roots
and the directories on the way to them; what cannot be listed, or too many entries, refuses the
operator's session and is a diagnostic for a repository's rule.
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
from shellrt.permissions.settings import FileSettings
from shellrt.runtime import sandbox_policy
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._calls import block_text, one_call
from tests.conftest import require


@pytest.fixture
def top() -> Iterator[Path]:
    """``outer/`` holds the workspace two levels down, a secret beside each level, and a symlink."""
    base = Path(tempfile.mkdtemp(prefix="rt52-perms9-holder-", dir="/var/tmp"))  # bwrap's /tmp is private
    try:
        base.chmod(0o755)
        outer = base / "outer"
        (outer / "mid" / "ws").mkdir(parents=True)
        (outer / "other").mkdir()
        (outer / "other" / "key").write_text("SECRET52-OTHER\n")
        (outer / "k2").write_text("SECRET52-BESIDE\n")
        (outer / "mid" / "k3").write_text("SECRET52-MID\n")
        os.symlink("/etc", outer / "to-etc")  # a link's target is not the rule's to hide
        for d in (outer, outer / "other", outer / "mid"):
            d.chmod(0o755)
        for f in (outer / "other" / "key", outer / "k2", outer / "mid" / "k3"):
            f.chmod(0o644)
        (outer / "mid" / "ws").chmod(0o777)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _name(top: Path) -> str:
    return str(top).lstrip("/")


def _derive(top: Path, how: str) -> tuple[set[Path], list[str]]:
    ws = top / "outer" / "mid" / "ws"
    rules, files = [], []
    if how in ("operator", "repository"):
        origin = RuleOrigin("cli" if how == "operator" else "project", None, None, ws)
        rules.append(parse_rule(f"Read(//{_name(top)}/outer/**)", "deny", origin))
    else:
        where = ws / ".claude" / "settings.json" if how == "repository-setting" else top / "user.json"
        source = "project" if how == "repository-setting" else "user"
        section = {"maskedPaths": [f"//{_name(top)}/outer"]}
        files.append(FileSettings(path=where, source=source, exists=True, sandbox=section))
    policy, notes = derive_policy(
        SandboxPolicy(workspace=ws), rules=rules, settings_files=files, mask_defaults=False, home=top / "home"
    )
    return set(map(Path, policy.read_denied)), notes


@pytest.mark.parametrize("how", ["operator", "repository", "operator-setting", "repository-setting"])
def test_everything_beside_the_workspace_is_masked(top: Path, how: str) -> None:
    """Failed 4 of 4 before: nothing was masked, only a diagnostic."""
    masked, notes = _derive(top, how)
    outer = top / "outer"
    assert {outer / "other", outer / "k2", outer / "mid" / "k3"} <= masked, (masked, notes)
    # the workspace, the directories on the way to it and a link's target stay
    assert not ({outer, outer / "mid", outer / "mid" / "ws", Path("/etc"), outer / "to-etc"} & masked), masked
    assert any("cannot be masked" in n for n in notes), notes  # the workspace's own files: said


def test_an_operators_holder_too_large_refuses_a_repositorys_is_a_note(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail closed: what cannot be masked whole is the operator's refusal (a repository's note)."""
    monkeypatch.setattr(sandbox_policy, "MAX_GLOB_MATCHES", 2)
    with pytest.raises(PolicyError, match="move the workspace out"):
        _derive(top, "operator")
    masked, notes = _derive(top, "repository")
    assert any("move the workspace out" in n for n in notes), notes


def test_a_planted_link_to_a_holder_never_refuses_the_operators_session(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository's ``secrets -> ..`` makes the operator's ``Read(./secrets/**)`` hold the
    workspace: its holder masks are the repository's choice of place, so what cannot be masked whole
    there is a note, never a refusal (a repository must not stop the session)."""
    monkeypatch.setattr(sandbox_policy, "MAX_GLOB_MATCHES", 0)
    ws = top / "outer" / "mid" / "ws"
    os.symlink("..", ws / "secrets")
    rule = parse_rule("Read(./secrets/**)", "deny", RuleOrigin("cli", None, None, ws))
    _, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False, home=top / "home")
    assert any("move the workspace out" in n for n in notes), notes


@pytest.mark.anyio
async def test_a_command_reads_nothing_beside_the_workspace(top: Path) -> None:
    """Failed 1 of 1 before: ``sh /tmp/r.sh`` (a script the analyser cannot see into) printed both
    secrets in bypassPermissions mode, the Read tool being denied the same files."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    outer = top / "outer"
    session = Path(tempfile.mkdtemp(prefix="rt52-perms9-hs-", dir="/tmp"))
    script = f"/bin/cat {outer}/other/key {outer}/k2 {outer}/mid/k3; echo ran-$?\\n"
    try:
        async with shellrt.Runtime(
            workspace=outer / "mid" / "ws",
            sandbox="bwrap",
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=[f"Read(//{_name(top)}/outer/**)"],
        ) as rt:
            result = await one_call(rt, "Bash", command=f"printf '{script}' > /tmp/r.sh && sh /tmp/r.sh")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran-" in text and "SECRET52" not in text, result
