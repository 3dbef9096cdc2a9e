"""Red team round 36 (trust): a file the operator's shell start-up file sources, in a writable root.

``~/.bashrc`` holding ``[ -f ~/dotfiles/aliases.sh ] && . ~/dotfiles/aliases.sh`` (or ``source
"$HOME/dotfiles/env.sh"``) is how most dotfiles repositories are wired. With that repository as
the workspace, a command appended to ``aliases.sh``: the guard protects ``.bashrc`` by name
anywhere and through a link from the home (round 31), not what it sources, so the plant was kept
and the operator's next interactive shell ran it. Same class as the git and ssh includes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason
from tests.conftest import require

_RC = {
    "dot": "[ -f ~/../dotfiles/sh/aliases.sh ] && . ~/../dotfiles/sh/aliases.sh\n",
    "source": 'if true; then source "$HOME/../dotfiles/sh/aliases.sh"; fi\n',
    "braces": "source ${HOME}/../dotfiles/sh/aliases.sh\n",
}


@pytest.mark.parametrize(
    ("how", "backend"), [("dot", "local"), ("source", "local"), ("braces", "local"), ("dot", "bwrap")]
)
def test_a_file_the_operators_shell_rc_sources_is_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "dotfiles"
    (ws / "sh").mkdir(parents=True)
    ws.chmod(0o777)
    (ws / "sh").chmod(0o777)
    (home / ".bashrc").write_text(_RC[how])
    marker = tmp_path / "ran-on-the-host"
    rel = "sh/aliases.sh"
    line = f"touch {marker}\n"  # written by a program: the after-command guard is what decides
    command = f"python3 - <<'EOF' && echo planted\nopen({rel!r}, 'a').write({line!r})\nEOF"

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    # The operator's next interactive shell.
    subprocess.run(["bash", "-ic", "true"], capture_output=True, timeout=30, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert not marker.exists(), f"the operator's next shell ran the planted line ({shown})"
    assert protected_reason(ws / rel), "the file tools must ask too"
