"""How deep a parsed JSON message nests, against the depth the MCP SDK's reader takes.

The SDK's reader (pydantic) refuses a message nested more than about 200 levels with "Parse
error" and id null, though Python read it: over HTTP the client got no answer under its id
(round 27 wave 2). The HTTP body check measures the depth of what it read and refuses a deeper
message itself, under the message's id.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_DEPTH", "too_deep"]

#: Levels of objects and arrays a message may nest (the SDK read 201, refused 202).
MAX_DEPTH = 200


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
