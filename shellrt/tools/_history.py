"""Walk a transcript's tool calls, whatever shape its messages come in.

Session state owned by internal-state tools (discovered tools, the todo list)
must be rebuildable from message history alone — after a restart, or when a
transcript is replayed. Messages may be Anthropic-shaped dicts or pydantic
models (`ToolUseBlock`, `ToolResultBlock`, `UserMessage`); this module
normalises them into (tool_use, its result) pairs in transcript order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["MAX_RESTORED_READS", "ToolCall", "read_paths", "tool_calls"]

#: The most read paths `Runtime.restore` marks as read-but-stale, the ones read last: each mark costs
#: a path resolution (~0.1 ms; 20,000 of them were 2 s on the event loop), and a file without one
#: is refused by Edit just the same, with "Read it first" instead of "read it again" (round 28).
MAX_RESTORED_READS = 1000


@dataclass(frozen=True)
class ToolCall:
    """One tool_use and, when present, the text and error flag of its tool_result."""

    id: str
    name: str
    input: Any
    result_text: str | None = None
    is_error: bool = False


def _as_dict(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump()
    return obj


def _blocks(message: Any) -> list[dict[str, Any]]:
    message = _as_dict(message)
    if isinstance(message, dict) and message.get("type") in ("tool_use", "tool_result"):
        return [message]
    content = message.get("content") if isinstance(message, dict) else message
    if not isinstance(content, list):
        return []
    return [b for b in (_as_dict(item) for item in content) if isinstance(b, dict)]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [_as_dict(b) for b in content]
        return "\n".join(
            str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def tool_calls(messages: Iterable[Any]) -> Iterator[ToolCall]:
    """Every tool_use in order, paired with its tool_result (matched by id) where one exists."""
    uses: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        for block in _blocks(message):
            if block.get("type") == "tool_use":
                uses.append(block)
            elif block.get("type") == "tool_result":
                results[str(block.get("tool_use_id", ""))] = block
    for use in uses:
        result = results.get(str(use.get("id", "")))
        yield ToolCall(
            id=str(use.get("id", "")),
            name=str(use.get("name", "")),
            input=use.get("input"),
            result_text=_result_text(result.get("content")) if result is not None else None,
            is_error=bool(result.get("is_error", False)) if result is not None else False,
        )


def read_paths(messages: Iterable[Any], read_tool: str = "Read", *, newest: int | None = None) -> list[str]:
    """``file_path`` of every successful Read in ``messages``, as the model wrote it, first-seen order.

    ``newest``: only that many, the ones whose last Read came last (still in first-seen order)."""
    last: dict[str, int] = {}  # path -> its last Read; ordered and a set (a list's `in` was quadratic)
    for number, call in enumerate(tool_calls(messages)):
        if (
            call.name != read_tool
            or call.is_error
            or call.result_text is None
            or not isinstance(call.input, dict)
        ):
            continue
        raw = call.input.get("file_path")
        if isinstance(raw, str) and raw:
            last[raw] = number  # a known key keeps its place
    if newest is None or len(last) <= newest:
        return list(last)
    if newest <= 0:
        return []
    cut = sorted(last.values())[-newest]  # the call numbers are distinct: exactly ``newest`` stay
    return [path for path, number in last.items() if number >= cut]
