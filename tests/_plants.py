"""A hostile command that plants files in a workspace through the whole Runtime (one Bash call,
local backend, bypassPermissions): what the after-command check then keeps or reverts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

import anyio

from shellrt.runtime import Runtime
from shellrt.supervisor.protect import protected_reason

Backend = Literal["local", "bwrap", "docker"]

__all__ = ["Backend", "assert_tools_ask", "kept_plants", "plant_and_check", "plant_with_bash", "run_bash"]


def plant_with_bash(
    ws: Path, session_dir: Path, plants: dict[str, str], extra: str = ""
) -> list[dict[str, Any]]:
    """The Bash call's results after it wrote each ``plants`` path (relative to ``ws``, parents made)
    with its content, then ran the Python lines ``extra``; it prints ``planted`` when all worked."""
    code = "\n".join(
        f"os.makedirs(os.path.dirname({p!r}) or '.', exist_ok=True); open({p!r}, 'w').write({c!r})"
        for p, c in plants.items()
    )
    if extra:
        code += f"\n{extra}"
    return run_bash(ws, session_dir, f"python3 - <<'EOF' && echo planted\nimport os\n{code}\nEOF")


def run_bash(ws: Path, session_dir: Path, command: str, backend: Backend = "local") -> list[dict[str, Any]]:
    """The results of one Bash call in a fresh Runtime (bypassPermissions) on ``backend``."""

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=session_dir) as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    return anyio.run(main)


def kept_plants(
    ws: Path, session_dir: Path, plants: dict[str, str], ordinary: tuple[str, ...] = ()
) -> list[str]:
    """The ``plants`` still in ``ws`` after one Bash call wrote them and the ``ordinary`` files
    (which must be kept); fails when the call did not plant them all."""
    results = plant_with_bash(ws, session_dir, {**plants, **{p: "x\n" for p in ordinary}})
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    assert [p for p in ordinary if not (ws / p).exists()] == [], shown
    return [p for p in plants if os.path.lexists(ws / p)]


def plant_and_check(
    ws: Path,
    session_dir: Path,
    plants: list[str],
    kept: list[str],
    text: str,
    *,
    python: str = "python3",
    backend: Backend = "local",
) -> str:
    """One Bash call writes ``text`` to each of ``plants`` and ``kept`` (absolute paths, the
    workspace's name split so it is no literal word of the command); asserts the call ran, every
    plant was reverted and every kept file stayed (round 38's trust tests; round 39's on ``backend``). Returns the results as JSON."""
    lines = ["import os", f"ws = {str(ws)[:4]!r} + {str(ws)[4:]!r}"]
    for rel in plants + kept:
        lines += [
            f"p = os.path.join(ws, {rel!r})",
            "os.makedirs(os.path.dirname(p), exist_ok=True)",
            f"open(p, 'w').write({text!r})",
        ]
    command = f"{python} - <<'EOF' && echo planted\n" + "\n".join(lines) + "\nEOF"
    results = run_bash(ws, session_dir, command, backend)
    shown = json.dumps(results)
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in plants if os.path.lexists(ws / rel)]
    assert not left, f"kept: {left} ({shown})"
    assert all((ws / rel).exists() for rel in kept), shown
    return shown


def assert_tools_ask(ws: Path, plants: list[str]) -> None:
    """The file tools ask before writing each planted name too."""
    missed = [rel for rel in plants if not protected_reason(ws / rel)]
    assert not missed, f"the file tools must ask too: {missed}"
