"""Red team round 11 (rules in the sandbox): an ``Edit(...)``/``Write(...)`` deny stopped only the file tools.

``Edit(./protected.txt)`` denied the Edit and Write tools, and nothing else: a Bash command
(``echo x > protected.txt``, or a script the analyser cannot see into) rewrote the file. Every
Edit/Write deny now compiles into the sandbox (`shellrt.runtime.sandbox_policy.derive_policy`
-> ``SandboxPolicy.write_denied``): an existing path is bound read-only onto itself (bwrap
``--ro-bind``, docker a read-only bind mount), so no command can write, truncate, remove or rename
it. A denied path that does not exist inside a writable root cannot be bound: the session refuses
to start with an error that says what to do. Failed before: the command rewrote the file in every
backend, and a session with a missing denied path started without a word.
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
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests import _docker_support as dk
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]
ATTACK = (
    "echo pwned > protected.txt 2>&1; echo pwned >> conf/app.ini 2>&1; "
    'f=prot; sh -c "printf pwned > ${f}ected.txt" 2>&1; '
    "rm -f protected.txt 2>&1; mv conf conf2 2>&1; mv conf/app.ini x.ini 2>&1; "
    "echo ok > free.txt; echo done"
)


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt11-edit-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    (ws / "conf").mkdir(parents=True, mode=0o755)
    ws.chmod(0o777)
    (ws / "protected.txt").write_text("original\n")
    (ws / "conf" / "app.ini").write_text("[app]\n")
    for p in (ws / "protected.txt", ws / "conf" / "app.ini"):
        p.chmod(0o666)
    (ws / "conf").chmod(0o777)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _unchanged(ws: Path, out: str) -> None:
    assert (ws / "protected.txt").read_text() == "original\n", out
    assert (ws / "conf" / "app.ini").read_text() == "[app]\n", out
    assert (ws / "conf").is_dir() and not (ws / "conf2").exists(), (
        out
    )  # (mv copies across the mount: a copy, not the file)
    assert (ws / "free.txt").read_text() == "ok\n", out  # the rest of the workspace stays writable
    assert out.rstrip().endswith("done"), out


def test_edit_and_write_denies_become_write_denied_paths(ws: Path) -> None:
    policy = deny_policy(ws, "Edit(./protected.txt)", "Write(./conf/**)", "Edit(//etc/hostname)")
    assert {ws / "protected.txt", ws / "conf"} <= set(policy.write_denied)
    # Outside every writable root the sandbox only reads already: nothing to bind.
    assert Path("/etc/hostname") not in policy.write_denied


@pytest.mark.parametrize("persistent", MODES)
def test_bash_cannot_write_an_edit_denied_path_bwrap(ws: Path, tmp_path: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    policy = deny_policy(ws, "Edit(./protected.txt)", "Write(./conf/**)")
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    out = anyio.run(run_in, backend, ws, tmp_path / "s", ATTACK)
    _unchanged(ws, out)


@pytest.mark.parametrize("mode", ["bind", "copy"])
def test_bash_cannot_write_an_edit_denied_path_docker(ws: Path, tmp_path: Path, mode: str) -> None:
    dk.require_docker()
    policy = deny_policy(ws, "Edit(./protected.txt)", "Write(./conf/**)")
    backend = create_backend(dk.config(workspace_mode=mode), policy)
    command = f"{ATTACK}; cat protected.txt conf/app.ini"
    out = anyio.run(run_in, backend, ws, tmp_path / "s", command, 120)
    assert "pwned" not in out and "original" in out and "[app]" in out, out
    if mode == "bind":
        _unchanged(ws, out.replace("original\n[app]\n", ""))


def test_a_missing_denied_path_in_the_workspace_refuses_the_session(ws: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        deny_policy(ws, "Edit(./not-there-yet.env)")
    message = str(caught.value)
    assert "not-there-yet.env" in message and "does not exist" in message and "touch" in message
    # Below an existing read-only (denied) directory it is covered: no refusal.
    policy = deny_policy(ws, "Write(./conf/**)", "Edit(./conf/new.ini)")
    assert ws / "conf" in policy.write_denied


def test_a_symlinked_denied_path_binds_its_target(ws: Path, tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    os.symlink("conf/app.ini", ws / "link.ini")
    policy = deny_policy(ws, "Edit(./link.ini)")
    assert ws / "conf" / "app.ini" in policy.write_denied
    backend = create_backend(BwrapConfig(persistent=False), policy)
    out = anyio.run(run_in, backend, ws, tmp_path / "s", "echo pwned >> link.ini 2>&1; echo ok > free.txt; echo done")
    _unchanged(ws, out)


@pytest.mark.parametrize("persistent", MODES)
def test_another_name_of_a_denied_file_is_bound_too_bwrap(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """A hard link made before the rule (an earlier session) is the same file: bound read-only too."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    os.link(ws / "protected.txt", ws / "conf" / "notes.txt")
    backend = create_backend(BwrapConfig(persistent=persistent), deny_policy(ws, "Edit(./protected.txt)"))
    command = "echo pwned >> conf/notes.txt 2>&1; echo ok > free.txt; echo done"
    out = anyio.run(run_in, backend, ws, tmp_path / "s", command)
    assert (ws / "protected.txt").read_text() == "original\n", out
    assert out.rstrip().endswith("done"), out


def test_another_name_of_a_denied_file_is_bound_too_docker(ws: Path, tmp_path: Path) -> None:
    dk.require_docker()
    os.link(ws / "protected.txt", ws / "conf" / "notes.txt")
    backend = create_backend(dk.config(workspace_mode="bind"), deny_policy(ws, "Edit(./protected.txt)"))
    out = anyio.run(run_in, backend, ws, tmp_path / "s", "echo pwned >> conf/notes.txt 2>&1; echo done", 120)
    assert (ws / "protected.txt").read_text() == "original\n", out


def test_a_runtime_compiles_its_rules_into_the_sandbox(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole way: ``--deny`` rules of a Runtime, the real Bash tool, a script the analyser cannot read."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    import shellrt
    from shellrt.protocol import ToolUseBlock
    from shellrt.tools.bash import Bash

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    (ws / "w.py").write_text("open('protected.txt', 'a').write('pwned')\n")

    async def main() -> str:
        async with shellrt.Runtime(
            workspace=ws,
            sandbox="bwrap",
            session_dir=tmp_path / "s",
            tools=[Bash()],
            deny=["Edit(./protected.txt)"],
            mode="bypassPermissions",
        ) as rt:
            block = ToolUseBlock(id="t1", name="Bash", input={"command": "python3 w.py 2>&1; echo done"})
            [envelope] = await rt.run_envelopes([block])
            return str(envelope.model.content)

    out = anyio.run(main)
    assert (ws / "protected.txt").read_text() == "original\n", out
    assert "Read-only file system" in out, out
    with pytest.raises(PolicyError):
        shellrt.Runtime(workspace=ws, sandbox="local", session_dir=tmp_path / "s2", deny=["Write(./.envrc)"])


def test_a_repositorys_own_rule_cannot_stop_the_session(ws: Path) -> None:
    """A missing path, a rule over the workspace, a Windows path: refused for the operator's rules,
    a diagnostic for those of files the workspace can write (a repository must not stop the session)."""
    origin = RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws)
    rules = [parse_rule(t, "deny", origin) for t in ("Edit(./missing.env)", "Write(./**)", "Read(.\\x\\y)")]
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=rules, mask_defaults=False)
    assert policy.write_denied == ()
    # (a repository's Windows path is read with '/' as the permission layer reads it, and masked: round 42)
    assert sum("workspace can write" in n for n in notes) == 2, notes
    assert ws / "x" / "y" in policy.read_denied, policy.read_denied
