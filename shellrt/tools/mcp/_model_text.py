"""An MCP server's words for the model (tool descriptions, schema descriptions), with nothing hidden.

A tool's description goes to the model in every request, and the operator reviews it
(``shellrt tools``) before trusting the server. Characters no terminal shows -- Unicode tags
(U+E0000 block, read by models as text), zero-width and bidi controls, variation selectors,
private-use and unassigned code points, controls other than newline and tab -- let a server
write instructions only the model reads (red team, round 17). They are removed, and a visible
mark says how many; a description is also cut at a length (it is paid for on every request).
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["MAX_DESCRIPTION_CHARS", "model_text", "schema_for_model"]

#: Characters of one description the model gets; the rest is cut, with a note.
MAX_DESCRIPTION_CHARS = 8_192
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Co", "Cn", "Cs"})
_SCHEMA_TEXT_KEYS = frozenset({"description", "title"})


def _hidden(ch: str) -> bool:
    if ch in "\n\t":
        return False
    code = ord(ch)
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:  # variation selectors
        return True
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def model_text(text: str, *, limit: int | None = MAX_DESCRIPTION_CHARS) -> str:
    """``text`` without invisible characters (their number said in a mark), cut at ``limit``."""
    if text.isascii() and all(c >= " " or c in "\n\t" for c in text):
        kept, removed = text, 0
    else:
        chars = [c for c in text if not _hidden(c)]
        kept, removed = "".join(chars), len(text) - len(chars)
    if limit is not None and len(kept) > limit:
        kept = f"{kept[:limit]}… [description cut by shellrt at {limit:,} of {len(kept):,} characters]"
    if removed:
        kept += f" [shellrt removed {removed:,} invisible characters from this text]"
    return kept


def schema_for_model(schema: Any) -> Any:
    """A JSON Schema with its ``description`` and ``title`` texts through `model_text` (uncut);
    every other value (``enum``, ``const``, patterns the server checks) stays exact."""
    if isinstance(schema, dict):
        return {
            key: model_text(value, limit=None)
            if key in _SCHEMA_TEXT_KEYS and isinstance(value, str)
            else schema_for_model(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [schema_for_model(item) for item in schema]
    return schema
