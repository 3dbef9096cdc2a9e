"""Red team round 18 (trusted): the operator's git config where ``$XDG_CONFIG_HOME`` puts it.

Every later host ``git`` obeys ``$XDG_CONFIG_HOME/git/config`` (and ``$GIT_CONFIG_GLOBAL``):
``core.fsmonitor`` runs at the next ``git status`` in *any* repository. The after-command check
knew the user config only as ``~/.gitconfig`` and ``~/.config/git/config``; with
``XDG_CONFIG_HOME`` inside the workspace (a dotfiles repository whose ``config/`` is the
operator's XDG directory) a command planted one, kept, and the operator's next ``git status``
elsewhere ran it. Now those files are guarded as git config (code-running keys reverted).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason


@pytest.mark.parametrize("variable", ["XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"])
def test_an_env_named_user_git_config_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "dotfiles"
    (ws / "config").mkdir(parents=True)
    planted = ws / "config" / "git" / "config" if variable == "XDG_CONFIG_HOME" else ws / "gitconfig"
    monkeypatch.setenv(variable, str(ws / "config") if variable == "XDG_CONFIG_HOME" else str(planted))
    marker = tmp_path / "ran-on-the-host"
    text = f"[core]\n\tfsmonitor = \"touch {marker}; false\"\n"
    rel = os.path.relpath(planted, ws)
    command = (
        f"python3 - <<'EOF' && echo planted\nimport os\nos.makedirs(os.path.dirname({rel!r}) or '.', exist_ok=True)\n"
        f"open({rel!r}, 'w').write({text!r})\nEOF"
    )

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    # The operator's next git status in another repository, with the same environment.
    repo = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    (repo / "f").write_text("x\n")
    subprocess.run(["git", "-C", str(repo), "status", "--short"], capture_output=True, timeout=30)
    assert not marker.exists(), f"the operator's git ran the planted fsmonitor ({shown})"
    assert "fsmonitor" not in (planted.read_text() if planted.exists() else ""), shown
    assert protected_reason(planted), "the file tools must ask too"
