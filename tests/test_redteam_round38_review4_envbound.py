"""Red team round 38 (review4): one long variable of the operator's environment hid the others.

`_operator_places.operator_places` bounded the places it reads at 256 entries *in all*, ``PATH``
first: an operator whose ``PATH`` holds 256 entries or more (nix profiles, modules systems,
generated shells) had ``PYTHONSTARTUP``, ``BASH_ENV``, ``CARGO_HOME``... silently unguarded: a
command rewrote the workspace's ``pythonrc.py`` that the operator's next ``python`` runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason


def test_a_long_path_does_not_hide_the_other_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    (ws / "dot").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    extra = ":".join(f"/nonexistent/r38-review4/{i}" for i in range(300))
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:{extra}")
    monkeypatch.setenv("PYTHONSTARTUP", str(ws / "dot" / "pythonrc.py"))
    monkeypatch.setenv("BASH_ENV", str(ws / "dot" / "bashenv"))
    plants = ["dot/pythonrc.py", "dot/bashenv"]
    command = (
        "/usr/bin/python3 -c \"for f in ['dot/pythonrc.py', 'dot/bashenv', 'dot/README']:\n"
        "    open(f, 'w').write('import os')\" && echo planted"
    )

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in plants if os.path.lexists(ws / rel)]
    assert not left, f"kept: {left} ({shown})"
    assert (ws / "dot" / "README").exists(), shown
    missed = [rel for rel in plants if not protected_reason(ws / rel)]
    assert not missed, f"the file tools must ask too: {missed}"
