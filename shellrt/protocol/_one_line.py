"""JSON lines that stay one line however a reader splits them.

Both wires (the JSONL protocol, MCP over stdio), ``shellrt run --json`` and a batch run's results
file write one JSON value per line, with text kept as UTF-8 where it can be. JSON leaves U+2028, U+2029 and U+0085 (NEL) raw inside strings, but
Python's ``str.splitlines()`` and other Unicode line splitters break lines there: a command
printing one of them then a JSON object made such a client read a second answer the command
wrote whole (red team round 8). They can only occur inside JSON strings, where ``\\u`` escapes
mean the same text, so they are escaped (round 35: the report and the results file too).
"""

from __future__ import annotations

__all__ = ["one_line"]

_SEPARATORS = ("\u2028", "\u2029", "\x85")
_ESCAPES = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def one_line(text: str) -> str:
    """``text`` (serialised JSON) with the Unicode line separators inside its strings escaped."""
    if text.isascii() or not any(sep in text for sep in _SEPARATORS):
        return text  # the common case: one scan (ASCII is checked at C speed)
    return text.translate(_ESCAPES)
