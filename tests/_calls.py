"""One tool call through a Runtime, as a model's turn: each call gets an id of its own (an id
names one call in a session, round 19), and the text of a tool_result block."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio

import shellrt

__all__ = ["block_text", "hook_bash_session", "one_call", "session_results"]

_ids = itertools.count()


async def one_call(rt: shellrt.Runtime, name: str, **raw: Any) -> dict[str, Any]:
    """The tool_result block of one ``name`` call with input ``raw``."""
    user = await rt.run([{"type": "tool_use", "id": f"call-{next(_ids)}", "name": name, "input": raw}])
    block: dict[str, Any] = user["content"][0]
    return block


def block_text(block: dict[str, Any]) -> str:
    """A tool_result block's text (its string, or its text parts joined by newlines)."""
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


def session_results(
    ws: Path, backend: str, calls: list[tuple[str, dict[str, Any]]], **runtime: Any
) -> list[dict[str, Any]]:
    """The tool_result blocks of ``calls`` (tool name, input), one turn each, in ONE session of a
    Runtime on ``ws`` and ``backend`` (``runtime``: its other arguments), run to its end."""

    async def main() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        async with shellrt.Runtime(ws, backend, **runtime) as rt:
            for i, (name, value) in enumerate(calls):
                block = {"type": "tool_use", "id": f"c{i}", "name": name, "input": value}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
        return out

    return anyio.run(main)


def hook_bash_session(ws: Path, own: Path, session: Path, commands: list[str]) -> list[dict[str, Any]]:
    """The tool_result blocks of Bash ``commands`` in one bwrap session in bypassPermissions mode,
    with the operator's settings file ``own`` (its hooks) and session directory ``session``: the
    hook rounds' end-to-end attack (a command plants, the operator's hook runs after it)."""
    calls: list[tuple[str, dict[str, Any]]] = [("Bash", {"command": command}) for command in commands]
    return session_results(
        ws, "bwrap", calls, mode="bypassPermissions", settings_files=[own], session_dir=session
    )
