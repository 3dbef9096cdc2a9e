"""Trust covers the workspace files a trusted hook runs, not only the settings files.

Real `shellrt trust add` runs (the CLI, a real store on disk), real hook
processes (their runs are logged to a file outside the workspace), real Bash
commands on the local backend.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import build_governance
from shellrt.permissions.hook_files import hook_files
from tests._governance import trust_env

pytestmark = pytest.mark.anyio


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return trust_env(tmp_path, monkeypatch)


def _repo(tmp_path: Path, command: str, scripts: dict[str, str]) -> tuple[Path, Path]:
    """A repository whose PreToolUse hook runs ``command``; each script appends its tag to the log."""
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    log = tmp_path / "hook.log"
    for rel, tag in scripts.items():
        _script(repo, rel, tag, log)
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}
    settings = {"hooks": hooks, "permissions": {"allow": ["Bash"]}}  # commands may write (once trusted)
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    return repo, log


def _script(repo: Path, rel: str, tag: str, log: Path) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if rel.endswith(".py"):
        path.write_text(f"open({str(log)!r}, 'a').write({tag!r} + '\\n')\n")
    else:
        path.write_text(f"#!/bin/sh\necho {tag} >> {log}\n")
    path.chmod(0o755)


def _trust(repo: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "trust", "add", str(repo)],
        env={**os.environ, **env, "PYTHONPATH": os.getcwd()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _hooks_obeyed(repo: Path) -> tuple[bool, str]:
    gov = build_governance(repo)
    return bool(gov.settings.hook_specs), "\n".join(gov.diagnostics)


async def _run(repo: Path, *commands: str, trust_workspace: bool = False) -> list[dict[str, Any]]:
    blocks = [
        {"type": "tool_use", "id": "th-" + secrets.token_hex(6), "name": "Bash", "input": {"command": c}}
        for c in commands
    ]
    session = repo.parent / ("s-" + secrets.token_hex(4))
    async with shellrt.Runtime(repo, "local", session_dir=session, trust_workspace=trust_workspace) as rt:
        out: list[dict[str, Any]] = []
        for block in blocks:  # one message each: in order, each hook run after the previous command
            out += (await rt.run([block]))["content"]
    return out


def _log(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.parametrize(
    "command",
    [
        "bash .claude/hooks/x.sh",
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh',
        "${CLAUDE_PROJECT_DIR}/.claude/hooks/x.sh --flag",
        "sh -c './.claude/hooks/x.sh'",
        'bash "$CLAUDE_PROJECT_DIR/.claude/hooks/x.sh"',
    ],
)
async def test_a_changed_hook_script_untrusts_the_workspace(
    tmp_path: Path, env: dict[str, str], command: str
) -> None:
    repo, log = _repo(tmp_path, command, {".claude/hooks/x.sh": "v1"})
    shown = _trust(repo, env)
    assert "hook file .claude/hooks/x.sh (recorded)" in shown and "untrackable" not in shown, shown
    assert _hooks_obeyed(repo)[0]
    await _run(repo, "true")
    assert _log(log) == ["v1"]
    _script(repo, ".claude/hooks/x.sh", "v2", log)  # what a `git pull` does
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed
    assert ".claude/hooks/x.sh changed since the workspace was trusted" in diagnostics, diagnostics
    assert f"shellrt trust add {repo}" in diagnostics
    await _run(repo, "true")
    assert _log(log) == ["v1"]
    _trust(repo, env)
    await _run(repo, "true")
    assert _log(log) == ["v1", "v2"]


async def test_a_new_file_at_a_hook_path_untrusts_the_workspace(tmp_path: Path, env: dict[str, str]) -> None:
    repo, log = _repo(tmp_path, "python3 hooks/check.py", {})
    _trust(repo, env)
    assert _hooks_obeyed(repo)[0]
    _script(repo, "hooks/check.py", "planted", log)
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "hooks/check.py appeared since the workspace was trusted" in diagnostics, (
        diagnostics
    )
    status = subprocess.run(
        [sys.executable, "-m", "shellrt", "trust", "status", str(repo)],
        env={**os.environ, **env, "PYTHONPATH": os.getcwd()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 1 and "NOT trusted (hook file hooks/check.py appeared" in status.stdout, (
        status
    )
    await _run(repo, "true")
    assert _log(log) == []


async def test_a_hook_script_turned_into_a_link_out_of_the_workspace_is_never_trusted(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repo, log = _repo(tmp_path, "bash .claude/hooks/x.sh", {".claude/hooks/x.sh": "v1"})
    _trust(repo, env)
    outside = tmp_path / "outside.sh"
    outside.write_text(f"echo outside >> {log}\n")
    (repo / ".claude/hooks/x.sh").unlink()
    (repo / ".claude/hooks/x.sh").symlink_to(outside)
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "leads out of the workspace" in diagnostics, diagnostics
    shown = _trust(repo, env)  # trusting again does not help: the link is refused as it is
    assert "WARNING: hook file .claude/hooks/x.sh leads out of the workspace" in shown, shown
    assert not _hooks_obeyed(repo)[0]
    await _run(repo, "true")
    assert _log(log) == []


async def test_an_untrackable_hook_command_watches_the_hooks_directory(
    tmp_path: Path, env: dict[str, str]
) -> None:
    command = "d=.claude/hooks; sh $d/x.sh"
    repo, log = _repo(tmp_path, command, {".claude/hooks/x.sh": "v1"})
    shown = _trust(repo, env)
    assert "untrackable" in shown and "$d/x.sh" in shown, shown
    assert _hooks_obeyed(repo)[0]
    (repo / ".claude/hooks/other.sh").write_text("echo unrelated\n")
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "hook directory .claude/hooks changed" in diagnostics, diagnostics


async def test_a_store_entry_from_before_hook_tracking_needs_trust_again(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repo, _ = _repo(tmp_path, "bash .claude/hooks/x.sh", {".claude/hooks/x.sh": "v1"})
    _trust(repo, env)
    store = Path(env["SHELLRT_TRUST_STORE"])
    data = json.loads(store.read_text())
    for entry in data["workspaces"].values():
        entry.pop("hooks", None)
    store.write_text(json.dumps(data))
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "never recorded" in diagnostics, diagnostics


async def test_a_hook_script_changed_by_a_command_is_not_run_in_the_same_session(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """`hooks/` is no protected path: a command rewrites the script the next hook runs on the host."""
    repo, log = _repo(tmp_path, "python3 hooks/check.py", {"hooks/check.py": "v1"})
    _trust(repo, env)
    forged = f"open({str(log)!r}, 'a').write('forged\\n')"
    results = await _run(repo, "true", f"echo {json.dumps(forged)} > hooks/check.py", "true")
    # Round 17: a file a hook runs is a protected file: the rewrite is reverted after the command
    # (before, it was kept and only this session's hooks skipped it; the next session ran it).
    assert "forged" not in (repo / "hooks/check.py").read_text(), results
    assert "hooks/check.py" in json.dumps(results[1]), results[1]
    assert "forged" not in _log(log), _log(log)
    results = await _run(repo, "true", trust_workspace=True)
    assert "forged" not in _log(log)
    assert not results[0].get("is_error")


async def test_a_relative_hook_script_is_found_from_the_workspace_root_after_cd(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The session's cwd must not choose which `hooks/check.py` runs."""
    repo, log = _repo(tmp_path, "python3 hooks/check.py", {"hooks/check.py": "root"})
    _script(repo, "sub/hooks/check.py", "planted", log)
    _trust(repo, env)
    await _run(repo, "cd sub", "true")
    assert _log(log) == ["root", "root"], _log(log)


def test_resolution(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "h").mkdir(parents=True)
    (ws / "h" / "a.sh").write_text("x")
    found = hook_files(
        ws, ["bash h/a.sh", '"$CLAUDE_PROJECT_DIR/h/b.py"', "jq -r .x", "ls *.sh", "python3 -m m"]
    )
    # "." (the tree): an untrackable line (``ls *.sh``) records it (red team round 49).
    assert set(found.files) == {"h/a.sh", "h/b.py", ".x", "."}
    assert found.files["h/b.py"] is None and found.files["h/a.sh"].startswith("sha256:")  # type: ignore[union-attr]
    # The hook directories (untrackable commands), and each hook file's own directory
    # (``./``: the root's own files, for ``.x``), as `test_gaps_hook_helpers` explains.
    assert len(found.untrackable) == 2
    assert set(found.dirs) == {".claude/hooks", ".shellrt/hooks", "h", "./"}
    outside = hook_files(ws, ['"$CLAUDE_PROJECT_DIR"x/a.sh', "/usr/bin/python3 /tmp/x.py"])
    assert outside.empty


async def test_a_helper_beside_a_hook_script_is_covered(tmp_path: Path, env: dict[str, str]) -> None:
    """`.claude/hooks/x.sh` sources `lib.sh` beside it: a pull that changes only the helper untrusts."""
    repo, log = _repo(tmp_path, "bash .claude/hooks/x.sh", {})
    (repo / ".claude/hooks").mkdir(parents=True)
    (repo / ".claude/hooks/x.sh").write_text('. "$(dirname "$0")/lib.sh"\n')
    (repo / ".claude/hooks/lib.sh").write_text(f"echo v1 >> {log}\n")
    _trust(repo, env)
    await _run(repo, "true")
    assert _log(log) == ["v1"]
    (repo / ".claude/hooks/lib.sh").write_text(f"echo v2 >> {log}\n")
    obeyed, diagnostics = _hooks_obeyed(repo)
    # the helper itself is recorded now (what the script sources), and its directory whole
    assert not obeyed and "hook file .claude/hooks/lib.sh changed" in diagnostics, diagnostics
    await _run(repo, "true")
    assert _log(log) == ["v1"]
