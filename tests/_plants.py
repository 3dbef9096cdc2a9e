"""A hostile command that plants files in a workspace through the whole Runtime (one Bash call,
local backend, bypassPermissions): what the after-command check then keeps or reverts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

from shellrt.runtime import Runtime

__all__ = ["kept_plants", "plant_with_bash"]


def plant_with_bash(ws: Path, session_dir: Path, plants: dict[str, str], extra: str = "") -> list[dict[str, Any]]:
    """The Bash call's results after it wrote each ``plants`` path (relative to ``ws``, parents made)
    with its content, then ran the Python lines ``extra``; it prints ``planted`` when all worked."""
    code = "\n".join(
        f"os.makedirs(os.path.dirname({p!r}) or '.', exist_ok=True); open({p!r}, 'w').write({c!r})"
        for p, c in plants.items()
    )
    if extra:
        code += f"\n{extra}"
    command = f"python3 - <<'EOF' && echo planted\nimport os\n{code}\nEOF"

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", mode="bypassPermissions", session_dir=session_dir) as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    return anyio.run(main)


def kept_plants(ws: Path, session_dir: Path, plants: dict[str, str], ordinary: tuple[str, ...] = ()) -> list[str]:
    """The ``plants`` still in ``ws`` after one Bash call wrote them and the ``ordinary`` files
    (which must be kept); fails when the call did not plant them all."""
    results = plant_with_bash(ws, session_dir, {**plants, **{p: "x\n" for p in ordinary}})
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    assert [p for p in ordinary if not (ws / p).exists()] == [], shown
    return [p for p in plants if os.path.lexists(ws / p)]
