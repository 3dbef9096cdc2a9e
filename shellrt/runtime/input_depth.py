"""How deeply a tool_use's input nests, judged without recursion.

Why: the model chooses the input, and a tool with a free-form schema (an MCP tool's) takes any
JSON. An input nested 260 levels deep passed the wire and the schema, then made pydantic's
serializer refuse it ("Circular reference detected (depth exceeded)") and, deeper, the hook
payload's encoder and the backfill raise RecursionError: either ended the whole batch, not the
call (red team round 20). The runtime refuses such an input up front, with a reason.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_INPUT_DEPTH", "too_deep"]

#: Arrays and objects inside one another that a tool input may hold (JSON schemas nest far less).
MAX_INPUT_DEPTH = 64
_CONTAINERS = (dict, list, tuple)


def too_deep(value: Any, limit: int = MAX_INPUT_DEPTH) -> bool:
    """Whether ``value`` (JSON-like: dicts, lists, tuples, scalars) nests more than ``limit`` levels."""
    if not isinstance(value, _CONTAINERS):
        return False
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:  # only containers are pushed: a flat input costs one pass over its values
        item, depth = stack.pop()
        if depth >= limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, _CONTAINERS):
                stack.append((child, depth + 1))
    return False
