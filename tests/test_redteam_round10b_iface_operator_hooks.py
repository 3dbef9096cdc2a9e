"""Red team round 10 (part 2): the operator's own hooks must not run what a sandboxed command wrote.

A hook from user settings or a ``--settings`` file outside the workspace is the operator's, and
always runs, on the host. When its command names a workspace file (``"$CLAUDE_PROJECT_DIR"/scripts/fmt.sh``,
the usual way to run a project's formatter after each edit), a command in the sandbox could rewrite
that file and have the next hook run it unsandboxed. The hook runner now hashes the workspace files
every hook runs when the session starts, as it did for trusted workspace hooks only, and skips a
hook (with a notice) whose files changed during the session.
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests._bwrap_session import require_bwrap
from tests._governance import trust_env

pytestmark = pytest.mark.anyio


def _operator_settings(tmp_path: Path, command: str) -> Path:
    """A ``--settings`` file outside the workspace: PostToolUse on Bash runs ``command``."""
    hooks = {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}
    path = tmp_path / "operator-settings.json"
    path.write_text(json.dumps({"hooks": hooks, "permissions": {"allow": ["Bash"]}}))
    return path


async def _session(repo: Path, settings: Path, backend: str, *commands: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    session = repo.parent / ("s-" + secrets.token_hex(4))
    async with shellrt.Runtime(repo, backend, session_dir=session, settings_files=[settings]) as rt:
        for command in commands:  # one message each: the hook runs after each command
            block = {
                "type": "tool_use",
                "id": "oh-" + secrets.token_hex(6),
                "name": "Bash",
                "input": {"command": command},
            }
            out += (await rt.run([block]))["content"]
    return out


@pytest.mark.parametrize(
    "hook", ['"$CLAUDE_PROJECT_DIR"/scripts/fmt.sh', "sh scripts/fmt.sh", "python3 scripts/fmt.py"]
)
async def test_a_script_a_command_rewrites_is_not_run_by_the_operators_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], hook: str
) -> None:
    """Failed on the old code: the hook ran the planted script on the host (the marker, outside
    every writable root of the sandbox, was written)."""
    require_bwrap()
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    log = tmp_path / "hook.log"
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    name = "fmt.py" if hook.endswith(".py") else "fmt.sh"
    script = repo / "scripts" / name
    if name == "fmt.py":
        script.write_text(f"open({str(log)!r}, 'a').write('ok\\n')\n")
        planted = f"open({str(marker)!r}, 'w').write('host')\n"
    else:
        script.write_text(f"#!/bin/sh\necho ok >> {log}\n")
        planted = f"#!/bin/sh\necho host > {marker}\n"
    script.chmod(0o755)
    settings = _operator_settings(tmp_path, hook)
    # python3: a write the analysis cannot see (a shell redirect there asks since round 17).
    encoded = base64.b64encode(planted.encode()).decode()
    plant = f"python3 -c \"import base64; open('scripts/{name}', 'wb').write(base64.b64decode('{encoded}'))\""
    out = await _session(repo, settings, "bwrap", "true", plant, "true")
    # Round 17: a file a hook runs is a protected file, so the rewrite is reverted after the
    # command (it was kept, and skipped by the hook only in this session: the next one ran it).
    assert script.read_text() != planted, out
    assert f"scripts/{name}" in str(out), out  # the revert note names it
    assert not marker.exists(), "the operator's hook ran a script a sandboxed command wrote, on the host"
    assert log.read_text().split() == ["ok", "ok", "ok"], (log.read_text(), capfd.readouterr().err)


async def test_an_unchanged_script_keeps_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check costs the hook nothing while its files are as the session found them."""
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    log = tmp_path / "hook.log"
    (repo / "scripts" / "fmt.sh").write_text(f"#!/bin/sh\necho ok >> {log}\n")
    (repo / "scripts" / "fmt.sh").chmod(0o755)
    settings = _operator_settings(tmp_path, '"$CLAUDE_PROJECT_DIR"/scripts/fmt.sh')
    await _session(repo, settings, "local", "true", "echo hi > notes.txt", "true")
    assert log.read_text().split() == ["ok", "ok", "ok"]
