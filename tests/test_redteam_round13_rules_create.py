"""Red team round 13 (rules in the sandbox): paths a write deny names that do not exist yet, and links.

- ``Write(./secrets/**)`` before ``secrets/`` exists refused the session (round 11's fail-closed
  rule): nothing to bind, and a command could make the directory and fill it. The directory is now
  made (empty, owned as its parent) and bound read-only like an existing one: no command can create
  it, put a file in it, or remove it. Failed before: `PolicyError` ("does not exist").
- A filename glob (``Edit(**/*.pem)``) cannot be enforced by a mount for a file a command creates
  later; the file tools refuse it by rule (checked here for a new file), the existing ones are bound.
- An Edit-denied symlink: its target is bound read-only; the link itself can be replaced (the
  attack below). The session says so (a diagnostic naming the fix: deny the directory).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.permissions import PermissionEngine
from shellrt.permissions.ruleset import RuleSet
from shellrt.protocol import ToolContext
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from shellrt.tools.write import WriteInput, WriteTool
from tests._rt11_rules import deny, deny_policy, run_in
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt13-create-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir(mode=0o777)
    ws.chmod(0o777)
    (ws / "conf").mkdir()
    (ws / "conf").chmod(0o777)
    (ws / "conf" / "app.ini").write_text("[app]\n")
    (ws / "conf" / "app.ini").chmod(0o666)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _bwrap() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")


def test_a_missing_denied_directory_is_made_and_bound(ws: Path) -> None:
    policy = deny_policy(ws, "Write(./secrets/**)", "Edit(./deep/er/)")
    assert ws / "secrets" in policy.write_denied and ws / "deep" / "er" in policy.write_denied
    assert (ws / "secrets").is_dir() and not os.listdir(ws / "secrets")
    assert os.stat(ws / "deep").st_uid == os.stat(ws).st_uid


@pytest.mark.parametrize("persistent", MODES)
def test_a_command_cannot_fill_a_denied_directory_made_for_it(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    _bwrap()
    policy = deny_policy(ws, "Write(./secrets/**)")
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    attack = (
        "mkdir -p secrets/sub 2>&1; echo pwned > secrets/key 2>&1; rmdir secrets 2>&1; "
        "mv secrets s2 2>&1; mkdir secrets 2>&1; echo pwned > secrets/key 2>&1; echo ok > free.txt; echo done"
    )
    out = anyio.run(run_in, backend, ws, tmp_path / "s", attack)
    assert out.rstrip().endswith("done"), out
    assert os.listdir(ws / "secrets") == [], out
    assert not (ws / "s2").exists() and (ws / "free.txt").read_text() == "ok\n", out


def test_a_missing_denied_file_still_refuses(ws: Path) -> None:
    """A static file cannot be made on the operator's behalf (an empty file is not "absent")."""
    with pytest.raises(PolicyError, match="does not exist"):
        deny_policy(ws, "Edit(./not-yet.env)")
    assert not (ws / "not-yet.env").exists()


def test_a_denied_directory_is_not_made_through_a_link(ws: Path, tmp_path: Path) -> None:
    """``ws/out -> /elsewhere``: making ``out/secrets`` would create it outside the workspace."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, ws / "out")
    with pytest.raises(PolicyError, match="does not exist"):
        deny_policy(ws, "Write(./out/inner/secrets/**)")
    assert not (elsewhere / "inner").exists()


def test_a_repository_rule_makes_no_directory(ws: Path) -> None:
    """Only the operator's rules make a directory on the host; a repository's stays a diagnostic."""
    from shellrt.permissions.rules import RuleOrigin, parse_rule

    rule = parse_rule("Write(./made/**)", "deny", RuleOrigin("project", None, None, ws))
    _, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    assert not (ws / "made").exists() and any("does not exist" in n for n in notes), notes


def test_an_operator_rule_makes_no_directory_below_a_mask(ws: Path) -> None:
    policy, _ = derive_policy(
        SandboxPolicy(workspace=ws),
        rules=[deny("Read(./hidden/**)", ws), deny("Write(./hidden/x/**)", ws)],
        mask_defaults=False,
    )
    assert not (ws / "hidden" / "x").exists()


def _write_ctx(ws: Path) -> ToolContext:
    return ToolContext(
        session_id="s", session_dir=ws.parent / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,)
    )


@pytest.mark.parametrize("target", ["new.pem", "sub/dir/new.pem", "secrets/new", "secrets/a/b"])
def test_the_file_tools_refuse_a_new_file_a_glob_denies(ws: Path, target: str) -> None:
    rules = RuleSet(home=ws.parent / "home")
    for text in ("Edit(**/*.pem)", "Write(./secrets/**)"):
        rules.add(deny(text, ws))
    engine = PermissionEngine(rules, mode="bypassPermissions", workspace=ws)

    async def decide() -> str:
        decision = await engine.decide(
            WriteTool(), WriteInput(file_path=str(ws / target), content="x"), _write_ctx(ws)
        )
        return decision.behavior

    assert anyio.run(decide) == "deny"


def test_an_edit_denied_symlink_says_what_is_left_open(ws: Path, tmp_path: Path) -> None:
    """The attack: ``rm link.ini; echo forged > link.ini`` -- the target stays as it was (bound),
    the path the rule names now holds the command's file. The session says so and names the fix."""
    _bwrap()
    os.symlink("conf/app.ini", ws / "link.ini")
    policy, notes = derive_policy(
        SandboxPolicy(workspace=ws), rules=[deny("Edit(./link.ini)", ws)], mask_defaults=False
    )
    assert ws / "conf" / "app.ini" in policy.write_denied
    assert any("link.ini" in n and "symbolic link" in n and str(ws) + "/**" in n for n in notes), notes
    backend = create_backend(BwrapConfig(persistent=False), policy)
    out = anyio.run(
        run_in,
        backend,
        ws,
        tmp_path / "s",
        "echo pwned >> link.ini 2>&1; rm link.ini; echo forged > link.ini; echo done",
    )
    assert (ws / "conf" / "app.ini").read_text() == "[app]\n", out  # the target: protected
    # With the directory denied instead, the link cannot be replaced (the documented fix).
    (ws / "link.ini").unlink()
    (ws / "keep").mkdir()
    os.symlink("../conf/app.ini", ws / "keep" / "link.ini")
    policy = deny_policy(ws, "Write(./keep/**)")
    backend = create_backend(BwrapConfig(persistent=False), policy)
    out = anyio.run(run_in, backend, ws, tmp_path / "s2", "rm keep/link.ini 2>&1; echo done")
    assert os.readlink(ws / "keep" / "link.ini") == "../conf/app.ini", out
