"""Red team round 38 (trust): a linked place swapped for a symlink during a session.

The guard learns where the operator's names lead (`linked_places`: a ``PATH`` directory, the XDG
config directory, a file ``PYTHONSTARTUP`` names) once, at its start. A command replaced such a
directory -- or a directory on the way to one -- by a symlink to a directory it filled: the operator's
next shell then finds ``git`` there, systemd reads the unit, Python runs the start-up file, while the
guard still watched the old names (a link at a linked *directory* was judged as a file by its name:
``.config`` is no file of the tables).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime

SWAPS = ["tools/bin", "cfg", "dot/rc"]


def test_a_linked_place_or_its_way_made_a_symlink_is_reverted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    for rel in ("tools/bin", "cfg/systemd", "dot/rc"):
        (ws / rel).mkdir(parents=True)
    (ws / "tools/bin/ok").write_text("#!/bin/sh\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("PATH", f"{ws / 'tools/bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(ws / "cfg"))
    monkeypatch.setenv("PYTHONSTARTUP", str(ws / "dot/rc/pythonrc.py"))
    command = (
        "mkdir -p e1 e2/systemd/user e3 && echo evil > e1/git && echo evil > e2/systemd/user/x.service"
        " && echo evil > e3/pythonrc.py && rm -rf tools/bin cfg dot/rc"
        " && ln -s ../e1 tools/bin && ln -s e2 cfg && ln -s ../e3 dot/rc && echo planted"
    )

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    results = anyio.run(main)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in SWAPS if os.path.islink(ws / rel)]
    assert not left, f"kept: {left} ({shown})"
