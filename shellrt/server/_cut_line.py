"""The beginning of a JSONL line cut short: what it spelled whole before the cut.

Why (red team round 48; round 47's Left): a refused line's error names the tool_use ids on it,
so a client pairing results by id knows which calls did not run. A line that stops mid-JSON --
a client killed while writing its last line (no newline before EOF), a writer's buffer cut --
is no JSON at all and named none, though its beginning spelled whole calls. Here such a line is
read as far as it goes: the top object's members, and inside ``content`` each element, up to
the cut. Only values read whole count: an id the cut splits is never named (``toolu_`` for
``toolu_Z``). Work is one pass of the C decoder over the line, and a Python step per member or
element, at most `MAX_READ` of them (past it none is named: 330,000 ``{}`` took 10 s).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_READ", "TooManyToReadError", "cut_short", "read_until_cut"]

#: Members and elements read from a line cut short, in all (~20 ms at load).
MAX_READ = 1_000


class TooManyToReadError(ValueError):
    """Raised by `read_until_cut` when the line holds more than `MAX_READ` members and elements
    before its cut: its ids are not read (a line too large to read names none either)."""

_BLANK = re.compile(r"[ \t\n\r]*")

Pairs = Callable[[list[tuple[str, Any]]], dict[str, Any]]


def cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether ``text``'s JSON error ``exc`` is its end (the line was cut), not a fault within it:
    the error is at the last character that is not blank (a newline inside a cut string, or
    nothing more to read), or a string has no end."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip(" \t\r\n"))


def read_until_cut(text: str, pairs: Pairs) -> dict[str, Any] | None:
    """The object ``text`` (a line cut short) begins, as far as it is whole: the members before the
    cut, a ``content`` array's elements read whole, and its element the cut splits with its own
    members read whole (``pairs``: the object hook, which may raise ValueError to refuse). None
    when ``text`` does not begin an object."""
    decoder = json.JSONDecoder(object_pairs_hook=pairs)
    pos = _BLANK.match(text).end()  # type: ignore[union-attr]  # matches the empty string too
    if not text.startswith("{", pos):
        return None
    members, _ = _members(text, pos + 1, decoder, content=True, budget=[MAX_READ])
    return pairs(members)


def _spend(budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise TooManyToReadError(f"more than {MAX_READ} members and elements before the cut")


def _members(
    text: str, pos: int, decoder: json.JSONDecoder, *, content: bool, budget: list[int]
) -> tuple[list[tuple[str, Any]], bool]:
    """The members of the object whose ``{`` ends at ``pos``, and whether it was read to its ``}``
    (``budget``: members and elements left to read, spent here)."""
    found: list[tuple[str, Any]] = []
    while True:
        _spend(budget)
        pos = _BLANK.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith("}", pos):
            return found, True
        if found:
            if not text.startswith(",", pos):
                return found, False
            pos = _BLANK.match(text, pos + 1).end()  # type: ignore[union-attr]
        if not text.startswith('"', pos):
            return found, False
        try:
            key, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
        except ValueError:
            return found, False
        pos = _BLANK.match(text, pos).end()  # type: ignore[union-attr]
        if not text.startswith(":", pos):
            return found, False
        pos = _BLANK.match(text, pos + 1).end()  # type: ignore[union-attr]
        if content and key == "content" and text.startswith("[", pos):
            elements, pos, whole = _elements(text, pos + 1, decoder, budget)
            found.append((key, elements))
            if not whole:
                return found, False
            continue
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return found, False
        if pos >= len(text) and not isinstance(value, (str, dict, list)):
            return found, False  # a number or literal at the cut may be cut itself (``12`` of ``123``)
        found.append((key, value))


def _elements(
    text: str, pos: int, decoder: json.JSONDecoder, budget: list[int]
) -> tuple[list[Any], int, bool]:
    """A ``content`` array's elements from ``pos`` (after its ``[``): those read whole, then the one
    the cut splits as its members read whole (an object only); where it stopped; whether whole."""
    elements: list[Any] = []
    while True:
        _spend(budget)
        pos = _BLANK.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith("]", pos):
            return elements, pos + 1, True
        if elements:
            if not text.startswith(",", pos):
                return elements, pos, False
            pos = _BLANK.match(text, pos + 1).end()  # type: ignore[union-attr]
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            if text.startswith("{", pos):
                members, _ = _members(text, pos + 1, decoder, content=False, budget=budget)
                elements.append(decoder.object_pairs_hook(members))  # type: ignore[misc]
            return elements, pos, False
        elements.append(value)
