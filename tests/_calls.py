"""One tool call through a Runtime, as a model's turn: each call gets an id of its own (an id
names one call in a session, round 19), and the text of a tool_result block."""

from __future__ import annotations

import itertools
from typing import Any

import shellrt

__all__ = ["block_text", "one_call"]

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
