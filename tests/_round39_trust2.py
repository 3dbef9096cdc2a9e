"""Red team round 39 (trust2): one hostile Bash call planting files, on a chosen backend."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

from shellrt.runtime import Runtime

__all__ = ["plant_and_check", "run_bash"]


def run_bash(ws: Path, session_dir: Path, command: str, backend: str = "local") -> list[dict[str, Any]]:
    """The results of one Bash call in a fresh Runtime (bypassPermissions) on ``backend``."""

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=session_dir) as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    return anyio.run(main)


def plant_and_check(
    ws: Path, session_dir: Path, plants: list[str], kept: list[str], text: str, *, backend: str = "local"
) -> str:
    """One Bash call writes ``text`` to each of ``plants`` and ``kept`` (the workspace's name split
    so it is no literal word of the command); asserts it ran, every plant was reverted and every
    kept file stayed. Returns the results as JSON."""
    lines = ["import os", f"ws = {str(ws)[:4]!r} + {str(ws)[4:]!r}"]
    for rel in plants + kept:
        lines += [
            f"p = os.path.join(ws, {rel!r})",
            "os.makedirs(os.path.dirname(p), exist_ok=True)",
            f"open(p, 'w').write({text!r})",
        ]
    command = "/usr/bin/python3 - <<'EOF' && echo planted\n" + "\n".join(lines) + "\nEOF"
    results = run_bash(ws, session_dir, command, backend)
    shown = json.dumps(results)[:3000]
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in plants if os.path.lexists(ws / rel)]
    assert not left, f"kept: {left} ({shown})"
    assert all((ws / rel).exists() for rel in kept), shown
    return shown
