"""``tools[]`` definitions for model APIs, generated from one source: the Tool itself.

Optional fields are emitted only where the target API takes them:
- ``defer_loading`` (Anthropic, with the API's own tool search): a deferred tool
  is sent with ``"defer_loading": true`` so its schema stays out of the prompt
  until the model finds it. Without it, deferred tools are simply left out of
  ``tools[]`` and found through shellrt's ToolSearch.
- ``strict`` (Anthropic structured tool use, OpenAI strict function calling):
  emitted as ``true`` only when the schema qualifies (every object closed with
  ``additionalProperties: false``; for OpenAI every property also required;
  for Anthropic no numeric or length bounds), because an API rejects the whole
  request when a strict schema uses what it cannot enforce.
"""

from __future__ import annotations

from typing import Any

from shellrt.protocol.tool import Tool

__all__ = ["anthropic_entry", "openai_entry", "strict_compatible", "to_anthropic", "to_openai"]


#: Keywords the Anthropic API refuses in a strict schema (it answers 400 "property ... is not supported").
_ANTHROPIC_STRICT_UNSUPPORTED = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "maxItems",
    }
)
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def strict_compatible(schema: Any, *, all_required: bool, unsupported: frozenset[str] = frozenset()) -> bool:
    """Whether ``schema`` can be sent with ``strict: true``.

    Every object must be closed (``additionalProperties: false``); with
    ``all_required`` every property must be required; no keyword of
    ``unsupported`` may appear (property names are not keywords).
    """

    def ok(node: Any) -> bool:
        if isinstance(node, list):
            return all(ok(item) for item in node)
        if not isinstance(node, dict):
            return True
        min_items = node.get("minItems", 0)
        if unsupported.intersection(node) or not isinstance(min_items, int) or min_items > 1:
            return False
        if node.get("type") == "object" or "properties" in node:
            if node.get("additionalProperties") is not False:
                return False
            if all_required and set(node.get("properties", {})) != set(node.get("required", [])):
                return False
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                if not all(ok(sub) for sub in value.values()):
                    return False
            elif key in ("items", "anyOf", "oneOf", "allOf", "not", "prefixItems") and not ok(value):
                return False
        return True

    return ok(schema)


def to_anthropic(
    tool: Tool[Any, Any], *, defer_loading: bool = False, strict: bool = False
) -> dict[str, Any]:
    """Anthropic Messages ``tools[]`` entry: name, description, input_schema.

    ``defer_loading``: mark a deferred tool for the API's server-side tool search.
    ``strict``: ask for strict input validation where the schema allows it.
    """
    return anthropic_entry(
        tool.name, tool.prompt(), tool.input_schema(),
        deferred=defer_loading and tool.is_deferred(), strict=strict,
    )


def anthropic_entry(
    name: str, description: str, schema: dict[str, Any], *, deferred: bool = False, strict: bool = False
) -> dict[str, Any]:
    """The Anthropic entry of values already read from a tool (the registry checks them first)."""
    entry: dict[str, Any] = {"name": name, "description": description, "input_schema": schema}
    if deferred:
        entry["defer_loading"] = True
    if strict and strict_compatible(schema, all_required=False, unsupported=_ANTHROPIC_STRICT_UNSUPPORTED):
        entry["strict"] = True
    return entry


def to_openai(tool: Tool[Any, Any], *, strict: bool = False) -> dict[str, Any]:
    """OpenAI function-calling ``tools[]`` entry (``strict`` only where every property is required)."""
    return openai_entry(tool.name, tool.prompt(), tool.input_schema(), strict=strict)


def openai_entry(name: str, description: str, schema: dict[str, Any], *, strict: bool = False) -> dict[str, Any]:
    """The OpenAI entry of values already read from a tool (the registry checks them first)."""
    function: dict[str, Any] = {"name": name, "description": description, "parameters": schema}
    if strict and strict_compatible(schema, all_required=True):
        function["strict"] = True
    return {"type": "function", "function": function}
