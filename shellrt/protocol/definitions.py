"""``tools[]`` definitions for model APIs, generated from one source: the Tool itself."""

from __future__ import annotations

from typing import Any

from shellrt.protocol.tool import Tool

__all__ = ["to_anthropic", "to_openai"]


def to_anthropic(tool: Tool[Any, Any]) -> dict[str, Any]:
    """Anthropic Messages ``tools[]`` entry: name, description, input_schema."""
    return {"name": tool.name, "description": tool.prompt(), "input_schema": tool.input_schema()}


def to_openai(tool: Tool[Any, Any]) -> dict[str, Any]:
    """OpenAI function-calling ``tools[]`` entry."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.prompt(), "parameters": tool.input_schema()},
    }
