"""Red team round 37 (trust): code a program loads from the home at every start, the home a workspace.

Round 9 guarded the home's start-up files by name (``~/.vimrc``, ``~/.config/nvim``, ``~/.tmux.conf``)
and round 36 what they source by a literal path. What a program loads from its own directories
in the home was kept: an IPython start-up script (``~/.ipython/profile_default/startup/*.py``, run
at every ``ipython``), a module in node's global folder (``~/.node_modules``: every later
``require`` that no ``node_modules`` answers), a VS Code extension (``~/.vscode/extensions``:
loaded at the editor's next start), a neovim plug-in (``~/.local/share/nvim/site/plugin``), an
Emacs package's autoloads, the zsh/bash/tmux frameworks a start-up file sources through a
variable (``source $ZSH/oh-my-zsh.sh``: round 36's "Left"), the VS Code server's
``server-env-setup``, an editor's user ``settings.json`` (a terminal profile's program), psql's
``~/.psqlrc`` (``\\!`` runs a shell command). A command wrote them; the operator's next start of
that program ran the command's code on the host as the operator.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason
from tests.conftest import require

#: Home-relative plants, each a file some program loads or obeys at its next start.
PLANTS = [
    ".ipython/profile_default/startup/00-r37.py",
    ".node_modules/r37probe/index.js",
    ".vscode/extensions/evil.r37-1.0.0/extension.js",
    ".vscode-server/extensions/evil.r37-1.0.0/extension.js",
    ".vscode-server/server-env-setup",
    ".cursor/extensions/evil.r37-1.0.0/package.json",
    ".local/share/nvim/site/plugin/r37.lua",
    ".local/share/nvim/lazy/evil/plugin/r37.lua",
    ".emacs.d/elpa/evil-1.0/evil-autoloads.el",
    ".oh-my-zsh/oh-my-zsh.sh",
    ".oh-my-zsh/plugins/git/git.plugin.zsh",
    ".zprezto/runcoms/zshrc",
    ".bash_it/bash_it.sh",
    ".tmux/plugins/tpm/tpm",
    ".jupyter/jupyter_server_config.py",
    ".config/Code/User/settings.json",
    ".psqlrc",
    ".mailcap",
    ".config/git/ignore",
]
#: Written too, and kept: what these programs write as they are used, and ordinary files.
KEPT = [".ipython/profile_default/history.sqlite", ".local/share/tool/state.json", "notes.md"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_code_a_program_loads_from_the_home_is_reverted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o777)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("XDG_CONFIG_HOME", "SHELLRT_TRUST_STORE", "IPYTHONDIR", "JUPYTER_CONFIG_DIR", "NODE_PATH"):
        monkeypatch.delenv(name, raising=False)
    marker = tmp_path / "ran-on-the-host"
    bodies = {
        ".ipython/profile_default/startup/00-r37.py": f"open({str(marker)!r}, 'w').write('ipython')\n",
        ".node_modules/r37probe/index.js": f"require('fs').writeFileSync({str(marker)!r}, 'node')\n",
    }
    # Written by a program (no path in the command's words): the after-command guard decides.
    lines = ["import os", f"home = {str(home)[:4]!r} + {str(home)[4:]!r}"]
    for rel in PLANTS + KEPT:
        body = bodies.get(rel, "# r37\n")
        lines += [
            f"p = os.path.join(home, {rel!r})",
            "os.makedirs(os.path.dirname(p), exist_ok=True)",
            f"open(p, 'w').write({body!r})",
        ]
    command = "python3 - <<'EOF' && echo planted\n" + "\n".join(lines) + "\nEOF"

    async def main() -> list[dict[str, Any]]:
        async with Runtime(home, backend, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in PLANTS if os.path.lexists(home / rel)]
    assert not left, f"kept: {left} ({shown})"
    assert all((home / rel).exists() for rel in KEPT), shown
    # The operator's next ipython and node on the host (both installed here; skipped where not).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "IPYTHON", "NODE"))}
    env["HOME"] = str(home)
    for argv in (["ipython", "-c", "pass"], ["node", "-e", "try { require('r37probe') } catch (e) {}"]):
        if shutil.which(argv[0]):
            subprocess.run(argv, capture_output=True, timeout=120, env=env, cwd="/")
    assert not marker.exists(), f"the operator's next program ran the plant: {marker.read_text()} ({shown})"
    missed = [rel for rel in PLANTS if not protected_reason(home / rel)]
    assert not missed, f"the file tools must ask too: {missed}"
