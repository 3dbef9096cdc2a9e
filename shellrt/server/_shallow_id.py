"""The ``id`` and ``method`` of a JSON-RPC line too deeply nested for a JSON reader.

Why (red team round 27): a request whose ``params`` nest 100,000 arrays deep is valid JSON, but
Python's reader gives up (`RecursionError`), and the MCP wire answered "Parse error" with id null;
the client waited forever for an answer under its own id (round 25 fixed the same for a number
too long to read). The top-level object is walked here without descending into its values:
strings and brackets are skipped by a scan, only top-level scalars are decoded.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["NESTED", "leading_id", "top_level_scalars"]

#: What a top-level value that is an object or an array stands as.
NESTED = object()

#: Where a string or a bracket starts: what a nested value is skipped by. A string is then skipped
#: by `_STRING_END`, not by ``"(?:[^"\\]|\\.)*"``: that held the regex engine's stack per
#: character, 2.6 GB and 13 s for three 20 MiB strings (red team round 40, iface3).
_TOKEN = re.compile(r'[\[\]{}"]')
#: A string's closing quote: one not preceded by a backslash, after an even run of them. Possessive,
#: so no state is kept per repeat (20 M backslashes: 0 MB, ~0.1 s); no bound on the run is needed,
#: and none may end a scan that was asked for every key (round 40 review17: a 200,002-backslash run
#: hid the id of a request too deep to read, which was then dropped as a notification).
_STRING_END = re.compile(r'(?<!\\)(?:\\\\)*+"')
_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = json.JSONDecoder()


def top_level_scalars(text: str, max_tokens: int | None = None) -> dict[str, Any] | None:
    """The top-level keys of the JSON object ``text`` with their scalar values (`NESTED` for an
    object or array), or None when ``text`` is not an object this scan can walk. A key given twice
    is left out (readers disagree on which one holds). With ``max_tokens``, a nested value of more
    tokens ends the scan, and the keys before it are returned (a line refused unread, round 28)."""
    found: dict[str, Any] = {}
    twice: set[str] = set()
    i = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[i : i + 1] != "{":
        return None
    i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
    if text[i : i + 1] == "}":
        return found
    try:
        while True:
            if text[i : i + 1] != '"':
                return None
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
            if text[i : i + 1] != ":":
                return None
            i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
            if text[i : i + 1] in ("{", "["):
                try:
                    value, i = NESTED, _skip_nested(text, i, max_tokens)
                except _TooMany:
                    found.setdefault(key, NESTED)
                    break
            else:
                value, i = _SCALAR.raw_decode(text, i)
            if key in found:
                twice.add(key)
            found[key] = value
            i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
            if text[i : i + 1] == "}":
                break
            if text[i : i + 1] != ",":
                return None
            i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
    except (ValueError, IndexError):
        return None
    for key in twice:
        del found[key]
    return found


class _TooMany(Exception):
    """A nested value longer than the scan's token limit."""


def _skip_nested(text: str, start: int, max_tokens: int | None = None) -> int:
    """The index just past the object or array that starts at ``start``; raises `ValueError`
    when it does not end, `_TooMany` past ``max_tokens`` tokens."""
    depth, count, i = 0, 0, start
    while True:
        match = _TOKEN.search(text, i)
        if match is None:
            break
        if max_tokens is not None and count >= max_tokens:
            raise _TooMany
        count += 1
        token, i = match.group(), match.end()
        if token == '"':
            end = _STRING_END.search(text, i)
            if end is None:
                raise ValueError("a string that does not end")
            i = end.end()
        elif token in ("{", "["):
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("an object or array that does not end")


def leading_id(raw: bytes) -> str | int | None:
    """The plain top-level ``id`` of a line refused unread, found when it precedes the big value
    (a scan of at most 100,000 tokens: the line may hold millions)."""
    scalars = top_level_scalars(raw.decode("utf-8", "surrogateescape"), max_tokens=100_000)
    msg_id = scalars.get("id") if scalars else None
    return msg_id if isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool) else None
