"""Reading a wire line (or a hook's answer) as JSON that every reader reads the same way.

Python's ``json`` takes the last of two equal keys and accepts ``NaN``/``Infinity``; other
readers take the first, refuse either, or read another number. A client, a proxy or a guard in
front of shellrt that judged ``{"command": "ls", "command": "rm -rf x"}`` by its first key saw
``ls`` while shellrt ran ``rm -rf x``. A line with a repeated key, a non-JSON constant or a
number Python cannot read is therefore refused whole, with what to fix. The MCP wires read their
lines so (``shellrt.server._strict_json``), and hooks their answers (a deny whose reason spliced in
the model's input unescaped turned into an allow by a repeated key: round 27 wave 2). It lives
here, under the layer of both.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["StrictJsonError", "strict_loads"]


class StrictJsonError(ValueError):
    """Raised by `strict_loads` for valid-looking JSON that readers would disagree on."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise StrictJsonError(f"the key {repeated!r} appears twice in one object; send each key once")
    return value


def _constant(name: str) -> Any:
    raise StrictJsonError(f"{name} is not JSON; send a number or null")


#: Nesting refused before the decoder starts (Python's own limit is ~1,000 frames deep).
MAX_NESTING = 512
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def _too_deep(text: str) -> bool:
    """Whether ``text`` opens more than `MAX_NESTING` arrays/objects within each other (strings
    skipped). Why: the decoder recursed to the interpreter's limit first and raised `RecursionError`
    there, and whatever ran at that depth meanwhile (a garbage collection's finalizers) failed too:
    an unraisable error in CI138, from a hook that printed 100,000 ``[``."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return False
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        else:
            depth -= 1
    return False


#: One decoder for every line (``json.loads`` with hooks builds a new one per call).
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant)


def strict_loads(text: str | bytes) -> Any:
    """``json.loads`` refusing repeated keys and NaN/Infinity; raises `json.JSONDecodeError`,
    `StrictJsonError`, `UnicodeDecodeError` or `RecursionError`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if _too_deep(text):
        raise RecursionError(f"JSON nested more than {MAX_NESTING} levels deep")
    try:
        return _DECODER.decode(text)
    except StrictJsonError:
        raise
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise StrictJsonError(f"{exc}; send a shorter number") from None
