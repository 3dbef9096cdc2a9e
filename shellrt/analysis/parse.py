"""tree-sitter-bash parsing: one Parser per thread, size and time limits.

This module is the only place that touches the parser library, so swapping or
upgrading the grammar touches one file.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from typing import Final

import tree_sitter
import tree_sitter_bash

__all__ = ["MAX_COMMAND_CHARS", "PARSE_TIMEOUT_S", "SYNTAX_ERROR", "ParseResult", "kind_of", "parse_bash"]

#: Longer input is never read-only (and is not parsed at all).
MAX_COMMAND_CHARS: Final = 10_000
#: A parse using more CPU than this is treated as failed (fail closed). Thread CPU
#: time, not wall time: a busy machine must not flip verdicts. A 10,000-char
#: command parses in about a millisecond, so this only catches pathological input.
PARSE_TIMEOUT_S = 0.25
#: The reason given when the tree has an error node (``fastquote`` gives it for the same inputs).
SYNTAX_ERROR: Final = "bash syntax error (the parser could not read the whole command)"

_CONTROL: Final = re.compile(r"[\x01-\x08\x0b-\x1f\x7f]")
_LANGUAGE: Final = tree_sitter.Language(tree_sitter_bash.language())
_local = threading.local()
#: Node kind names by kind id, interned (``ERROR`` and any id without a name: None).
_KIND_NAMES: Final[list[str | None]] = [
    None if name is None else sys.intern(name)
    for name in [_LANGUAGE.node_kind_for_id(kind_id) for kind_id in range(_LANGUAGE.node_kind_count)]
]


def kind_of(node: tree_sitter.Node) -> str:
    """``node.type``, looked up by kind id: ``.type`` builds a new string on every access (and
    every dict or set lookup of it hashes it again); these names are shared and their hashes cached."""
    kind_id = node.kind_id
    if kind_id < len(_KIND_NAMES):
        name = _KIND_NAMES[kind_id]
        if name is not None:
            return name
    return node.type


def _parser() -> tree_sitter.Parser:
    parser: tree_sitter.Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = tree_sitter.Parser(_LANGUAGE)
        _local.parser = parser
    return parser


class ParseResult:
    """A parsed tree plus the reason it must not be trusted, if any."""

    __slots__ = ("error", "root", "source")

    def __init__(self, source: bytes, root: tree_sitter.Node | None, error: str | None) -> None:
        self.source = source
        self.root = root
        self.error = error


def parse_bash(command: str) -> ParseResult:
    """Parse ``command``; ``error`` is set for oversize input, syntax errors or slow parses."""
    if len(command) > MAX_COMMAND_CHARS:
        return ParseResult(b"", None, f"command longer than {MAX_COMMAND_CHARS} characters")
    if "\x00" in command:
        return ParseResult(b"", None, "command contains a NUL byte")
    if _CONTROL.search(command):
        # bash reads \r, \v, \f ... as word characters; the parser treats some as blanks.
        return ParseResult(b"", None, "command contains control characters other than tab and newline")
    source = command.encode("utf-8", "surrogatepass")
    parser = _parser()
    # Wall time first (cheap): it bounds the thread's CPU time, so under the limit the parse is
    # within it. Over it, the verdict uses CPU time: the parse is deterministic, so it is parsed
    # again under the (costlier) thread clock, and a busy machine cannot flip the verdict.
    started = time.perf_counter()
    tree = parser.parse(source)
    elapsed = time.perf_counter() - started
    if elapsed > PARSE_TIMEOUT_S:
        started = time.thread_time()
        tree = parser.parse(source)
        elapsed = time.thread_time() - started
    root = tree.root_node
    if elapsed > PARSE_TIMEOUT_S:
        return ParseResult(
            source, root, f"parse took {elapsed * 1000:.0f} ms (limit {PARSE_TIMEOUT_S * 1000:.0f} ms)"
        )
    if root.has_error:
        return ParseResult(source, root, SYNTAX_ERROR)
    return ParseResult(source, root, None)
