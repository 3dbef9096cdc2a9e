"""Accept the shapes agents send: an assistant message, a list of blocks, or one tool_use."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from shellrt.protocol import ToolUseBlock

__all__ = ["MessageFormatError", "parse_tool_uses"]


class MessageFormatError(ValueError):
    """Raised when input is not an assistant message, a tool_use block or a list of blocks."""


def parse_tool_uses(message: Any) -> list[ToolUseBlock]:
    """Extract the tool_use blocks, in order; other content blocks (text, thinking) are ignored."""
    if isinstance(message, ToolUseBlock):
        return [message]
    if isinstance(message, dict):
        if message.get("type") == "tool_use":
            return [_block(message, 0)]
        if "content" in message:
            if message.get("role", "assistant") != "assistant":
                raise MessageFormatError(
                    f"expected an assistant message, got role {message.get('role')!r}; send the model's turn"
                )
            content = message["content"]
        else:
            raise MessageFormatError(
                "expected an assistant message {'role': 'assistant', 'content': [...]} or a tool_use block"
            )
    elif isinstance(message, list):
        content = message
    else:
        raise MessageFormatError(
            f"expected a message object or a list of blocks, got {type(message).__name__}"
        )
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        raise MessageFormatError("'content' must be a list of content blocks")
    blocks: list[ToolUseBlock] = []
    seen: set[str] = set()
    for index, item in enumerate(content):
        if isinstance(item, ToolUseBlock):
            block = item
        elif isinstance(item, dict) and item.get("type") == "tool_use":
            block = _block(item, index)
        else:
            continue
        if block.id in seen:
            raise MessageFormatError(f"duplicate tool_use id {block.id!r}: every tool_use needs a unique id")
        seen.add(block.id)
        blocks.append(block)
    return blocks


def _block(item: dict[str, Any], index: int) -> ToolUseBlock:
    try:
        return ToolUseBlock.model_validate(item)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise MessageFormatError(f"content[{index}] is not a valid tool_use block ({problems})") from exc
