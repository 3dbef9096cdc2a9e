"""Building one ``tools[]`` entry so that a bad tool is left out, never the whole listing.

A registered tool (an MCP proxy, a plugin, an API caller's tool) runs its own code for
``name``, ``prompt()``, ``input_schema()``, ``search_hint`` and ``is_enabled()``/``is_deferred()``. Any of
them may raise, return the wrong type, or return something huge or not JSON: before, the
first such tool ended ``tools_for_anthropic``/``tools_for_openai`` for every tool (round 36).
Here each entry is built and checked alone; a tool that fails is named in a diagnostic and
the registry refuses calls to it (fail closed: the model cannot call what it was not shown).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from shellrt.runtime.raised import quoted

__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_SCHEMA_CHARS", "UnlistableTool", "checked_entry"]

#: A description or schema past these is refused, not cut (a cut schema is a different schema);
#: the largest built-in prompt is far below (Bash's is ~10k characters).
MAX_DESCRIPTION_CHARS = 100_000
MAX_SCHEMA_CHARS = 100_000


class UnlistableTool(ValueError):
    """A tool's own code gave something that cannot go into ``tools[]``."""


def _plain_json(value: Any, what: str, limit: int) -> Any:
    """A plain copy of ``value`` through JSON (strict: no NaN, str keys), refused past ``limit``."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UnlistableTool(f"its {what} is not JSON ({quoted(exc, 300, one_line=True)})") from None
    if len(text) > limit:
        raise UnlistableTool(f"its {what} has {len(text)} characters (the limit is {limit})")
    return json.loads(text)


def checked_entry(
    tool: Any, registered_as: Callable[[str], Any], build: Callable[[str, str, dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """``build(name, description, schema)`` of values read once from ``tool`` and checked first.

    Each value is read once (a tool cannot pass the check and then answer differently) and the
    schema is sent as a plain JSON copy. ``registered_as(name)`` is the tool the registry holds
    under ``name``: a name changed since registration would point the model at another tool.
    """
    name = tool.name
    if type(name) is not str or not name:  # a str subclass may compare as one name, be sent as another
        raise UnlistableTool(f"its name is a {type(name).__name__}, not a non-empty str")
    if registered_as(name) is not tool:
        raise UnlistableTool(f"its name {name[:100]!r} is not the name it was registered under")
    description = tool.prompt()
    if not isinstance(description, str):
        raise UnlistableTool(f"its prompt() returned {type(description).__name__}, not str")
    description = str.__str__(description)  # a plain copy: a subclass's own len() is not asked
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise UnlistableTool(
            f"its prompt() has {len(description)} characters (the limit is {MAX_DESCRIPTION_CHARS})"
        )
    schema = tool.input_schema()
    if not isinstance(schema, dict):
        raise UnlistableTool('its input_schema() is not a JSON Schema object ({"type": "object", ...})')
    hint = tool.search_hint  # ToolSearch reads it (and the prompt) of tools the listing vouched for
    if not isinstance(hint, str) or len(str.__str__(hint)) > MAX_DESCRIPTION_CHARS:
        raise UnlistableTool(f"its search_hint is a {type(hint).__name__} (a str is needed)")
    sent = _plain_json(schema, "input_schema()", MAX_SCHEMA_CHARS)
    if sent.get("type") != "object":  # judged on the copy sent, not on what the tool's dict answers
        raise UnlistableTool('its input_schema() is not a JSON Schema object ({"type": "object", ...})')
    return build(name, description, sent)
