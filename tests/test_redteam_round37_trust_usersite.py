"""Red team round 37 (trust): a module in the user site-packages, which shellrt's next start imports.

Python puts the user site (``~/.local/lib/pythonX.Y/site-packages``, or ``$PYTHONUSERBASE``'s)
on ``sys.path`` before the system's and the interpreter's own site-packages whenever it exists.
Round 9 guarded its ``*.pth`` and ``usercustomize.py`` only: with the home as the workspace a
command wrote ``anyio/__init__.py`` there (or any module a later program imports), the guard kept
it, and the operator's next ``shellrt`` (which imports anyio at start, from a system or pyenv
install: no venv, so the user site is on) or any Python importing it ran the command's code on
the host as the operator. When the user site does not exist at start it is not on shellrt's
``sys.path`` either, so the sandbox's read-only binds of the host's import places (round 16)
never covered it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason
from tests.conftest import require

_SITE = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


@pytest.mark.parametrize(
    ("how", "backend"),
    [("package", "local"), ("module", "local"), ("userbase", "local"), ("package", "bwrap")],
)
def test_a_module_planted_in_the_user_site_is_reverted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o777)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("XDG_CONFIG_HOME", "SHELLRT_TRUST_STORE", "PYTHONUSERBASE", "PYTHONNOUSERSITE"):
        monkeypatch.delenv(name, raising=False)
    if how == "userbase":  # the operator keeps a user base in a project (the workspace)
        ws = tmp_path / "proj"
        ws.mkdir()
        ws.chmod(0o777)
        base = ws / "pyuser"
        monkeypatch.setenv("PYTHONUSERBASE", str(base))
    else:  # the home is the workspace (``shellrt serve`` started in ~)
        ws = home
        base = home / ".local"
    site = base / _SITE
    marker = tmp_path / "ran-on-the-host"
    rel = "anyio/__init__.py" if how != "module" else "r37_probe_mod.py"
    body = f"open({str(marker)!r}, 'w').write('x')\n"
    # Written by a program (the path is not in the command's words): the after-command guard decides.
    target = str(site / rel)
    command = (
        "python3 - <<'EOF' && echo planted\nimport os\n"
        f"p = {target[:5]!r} + {target[5:]!r}\nos.makedirs(os.path.dirname(p), exist_ok=True)\n"
        f"open(p, 'w').write({body!r})\nEOF"
    )

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    # The operator's next Python on the host (shellrt's own start imports anyio the same way).
    module = "anyio" if how != "module" else "r37_probe_mod"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HOME=str(home), **({"PYTHONUSERBASE": str(base)} if how == "userbase" else {}))
    subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, timeout=60, env=env, cwd="/")
    assert not marker.exists(), f"the operator's next Python imported the planted module ({shown})"
    assert protected_reason(site / rel), "the file tools must ask too"
