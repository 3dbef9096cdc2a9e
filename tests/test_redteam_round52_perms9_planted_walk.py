"""Red team, round 52 (perms9): a repository's symlink out of the workspace stopped the operator's session.

The operator's glob rule (``Read(**/*.pem)``, the docs' own example) is expanded at the start by a
walk that follows symlinked directories (``ws/link/x.pem`` is denied through the link, and ``cat``
reads it there). A walk of the operator's rule cut short refuses the session (fail closed: the
operator's rule must be exact). So a repository that ships ``vendor/l -> /`` made the walk cross
the host's whole file system: 227 s under this machine's load, then "the glob matches too many
paths": the session never started, and every later session of that operator the same. A link
inside a writable root that leads out of the roots is the repository's choice of place (as
``sandbox_policy``'s ``planted`` masks already are): what the walk visits below it is charged to
the budget of the files the workspace can write, and a cut there is a diagnostic, never a refusal.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import shellrt
from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime import sandbox_policy
from shellrt.runtime.sandbox_policy import derive_policy
from tests._calls import block_text, one_call
from tests.conftest import require


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with its own key and a link to a host tree of more matches than a rule masks (the
    limit shrunk from 2,000 to 20: masking 2,000 host files cost ~45 s a case under load)."""
    monkeypatch.setattr(sandbox_policy, "MAX_GLOB_MATCHES", 20)
    host = tmp_path / "host-tree" / "d0"
    host.mkdir(parents=True)
    for j in range(sandbox_policy.MAX_GLOB_MATCHES + 50):
        (host / f"f{j}.pem").touch()
    ws = tmp_path / "ws"
    (ws / "vendor").mkdir(parents=True)
    (ws / "k.pem").write_text("SECRET52\n")
    os.symlink(tmp_path / "host-tree", ws / "vendor" / "l")
    return ws


def _derive(ws: Path, rule: str, source: str = "cli", home: Path | None = None) -> tuple[set[Path], list[str]]:
    parsed = parse_rule(rule, "deny", RuleOrigin(source, None, None, ws))
    policy, notes = derive_policy(
        SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False, home=home or ws.parent / "home"
    )
    return set(map(Path, policy.read_denied)), notes


@pytest.mark.parametrize("rule", ["Read(**/*.pem)", "Read(./vendor/**/*.pem)", "Read(./**/f*.pem)"])
def test_a_planted_link_to_a_large_tree_does_not_stop_the_session(ws: Path, rule: str) -> None:
    """Failed 3 of 3 before: `PolicyError` ("the glob matches too many paths"). (The walk's other
    cut, 200,000 entries visited, is the same branch: not run here, it takes minutes.)"""
    masked, notes = _derive(ws, rule)
    if rule == "Read(**/*.pem)":
        assert ws / "k.pem" in masked, (masked, notes)  # the workspace's own match: masked as ever
    assert any("symlink" in n and "writable root" in n for n in notes), notes


def test_the_operators_own_link_outside_the_roots_is_still_walked_whole(ws: Path, tmp_path: Path) -> None:
    """The control: a link the workspace cannot write (in the operator's home) is the operator's;
    its walk cut short still refuses, as before."""
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(tmp_path / "host-tree", home / "keys")
    with pytest.raises(sandbox_policy.PolicyError, match="too many"):
        _derive(ws, "Read(~/**/*.pem)", home=home)


@pytest.mark.anyio
async def test_the_session_starts_and_still_hides_the_workspaces_match(ws: Path, tmp_path: Path) -> None:
    """End to end (failed before: the `Runtime` refused to start, `PolicyError`): the planted link
    no longer stops the operator's session, and the workspace's own ``k.pem`` stays masked from a
    command the analyser cannot see into (bypassPermissions)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    session = Path(tempfile.mkdtemp(prefix="rt52-perms9-pw-", dir="/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=ws,
            sandbox="bwrap",
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=["Read(**/*.pem)"],
        ) as rt:
            script = f"/bin/cat {ws}/k.pem; echo ran-$?\\n"
            result = await one_call(rt, "Bash", command=f"printf '{script}' > /tmp/r.sh && sh /tmp/r.sh")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran-" in text and "SECRET52" not in text, result
