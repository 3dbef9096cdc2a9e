"""Red team round 38 (trust): what common programs load from the home that round 37's tables missed.

A home inside the workspace (``shellrt serve`` in ``~``): a command wrote a program where the
operator's PATH finds it (``~/.cargo/bin``, ``~/go/bin``, a pyenv or nvm install, a uv or pipx
tool's own environment that ``~/.local/bin`` links to), a module into a pyenv interpreter's
site-packages (every ``python`` the shims start imports it), a docker CLI plug-in or the docker
client's config (``credsStore``, ``cliPluginsExtraDirs``: programs ``docker`` runs), uv's user
config (its index: what the next ``uv tool install`` builds and runs), a window manager's start-up
config (``exec`` lines at the next login), xbindkeys' (commands on key presses). None was
reverted; the file tools did not ask.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason
from tests.conftest import require

PLANTS = [
    ".cargo/bin/git",
    "go/bin/ls",
    ".pyenv/versions/3.11.9/lib/python3.11/site-packages/anyio/__init__.py",
    ".pyenv/shims/python3",
    ".nvm/versions/node/v20.0.0/bin/node",
    ".nvm/versions/node/v20.0.0/lib/node_modules/npm/index.js",
    ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo",
    ".local/share/uv/tools/ruff/bin/ruff",
    ".local/share/uv/tools/ruff/lib/python3.11/site-packages/ruff/__init__.py",
    ".local/pipx/venvs/black/bin/black",
    ".local/share/pipx/venvs/black/bin/black",
    ".docker/config.json",
    ".docker/cli-plugins/docker-compose",
    ".config/uv/uv.toml",
    ".config/i3/config",
    ".config/sway/config",
    ".config/hypr/hyprland.conf",
    ".xbindkeysrc",
    ".volta/bin/node",
    ".bun/bin/bun",
    ".deno/bin/deno",
]
#: Written too, and kept: caches and data no program runs.
KEPT = [".cache/pip/http/x", ".local/share/tool/state.json", "notes.md", "go/pkg/mod/cache/x"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_programs_and_libraries_the_home_installs_are_reverted(
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
    for name in ("XDG_CONFIG_HOME", "SHELLRT_TRUST_STORE", "CARGO_HOME", "PYENV_ROOT", "NVM_DIR", "GOPATH"):
        monkeypatch.delenv(name, raising=False)
    lines = ["import os", f"home = {str(home)[:4]!r} + {str(home)[4:]!r}"]
    for rel in PLANTS + KEPT:
        lines += [
            f"p = os.path.join(home, {rel!r})",
            "os.makedirs(os.path.dirname(p), exist_ok=True)",
            "open(p, 'w').write('#!/bin/sh\\n# r38\\n')",
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
    missed = [rel for rel in PLANTS if not protected_reason(home / rel)]
    assert not missed, f"the file tools must ask too: {missed}"
    assert not [rel for rel in KEPT if protected_reason(home / rel)]
