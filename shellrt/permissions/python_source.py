"""Python source a repository controls, parsed one parse at a time in this process, never raising past
"cannot be parsed".

Two reasons. CPython 3.11 before 3.11.8 keeps the AST converter's recursion depth in per-interpreter
state (gh-106905): two threads parsing at once -- hook records are taken in worker threads, one per MCP
server at a session's start -- can make a parse fail with ``SystemError: AST constructor recursion depth
mismatch`` when a garbage-collector callback hands the GIL over mid-conversion (CI saw it once; a
stress run here, eight threads, about once in 3 s). And a hostile script's shape makes the parser itself
give up: ``x=------…1`` raises MemoryError, ``f(a)(a)(a)…`` RecursionError, and either one stopped a
session's start. Both are now "cannot be parsed" (`UnparsableSource`, a ValueError), as a syntax error is.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["UnparsableSource", "parse_python"]

#: Re-entrant: a gc callback in the parsing thread that parses again must not deadlock it.
_PARSING = threading.RLock()


class UnparsableSource(ValueError):
    """The source is not a tree this process could build: bad syntax, or nesting past the parser's limits."""


def parse_python(source: str | bytes) -> ast.Module:
    """``ast.parse(source)``, one at a time in this process; `UnparsableSource` for any source it
    cannot turn into a tree."""
    with _PARSING:
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise UnparsableSource(f"{type(exc).__name__}: {exc}"[:300]) from None
