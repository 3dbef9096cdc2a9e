"""Whether a server's input schema is cheap enough to check here, in the event loop.

``jsonschema`` follows every ``$ref`` each time it meets it and is not memoised, so a 2 KB schema
of nested ``anyOf`` (each level two refs to the next) costs 2^depth checks on an input that fails
at the leaf: one hostile server's tool stalled the process (red team round 36, review4). The
schema is expanded as the checker would walk it, refs followed, up to `MAX_CHECK_NODES`; past it,
or a ref this cannot follow (a cycle, another document, an anchor), the server judges the input
(as for a regex keyword or a broken schema). The check's cost is then at most that many nodes per
node of the input.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

__all__ = ["MAX_CHECK_NODES", "cheap_to_check"]

#: Schema nodes one expansion may visit (real schemas: tens to a few thousand).
MAX_CHECK_NODES = 20_000

_REFS = ("$ref", "$dynamicRef", "$recursiveRef")


class _TooCostly(Exception):
    pass


def cheap_to_check(schema: Any) -> bool:
    """Whether ``schema``'s expansion (``$ref`` followed) stays within `MAX_CHECK_NODES`."""
    left = [MAX_CHECK_NODES]
    try:
        _expand(schema, schema, left, ())
    except (_TooCostly, RecursionError):
        return False
    return True


def _expand(node: Any, root: Any, left: list[int], refs: tuple[str, ...]) -> None:
    left[0] -= 1
    if left[0] < 0 or len(refs) > 64:
        raise _TooCostly
    if isinstance(node, list):
        for item in node:
            _expand(item, root, left, refs)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in _REFS:
            if not isinstance(value, str) or value in refs:
                raise _TooCostly  # a cycle: bounded only by the input, not by the schema
            _expand(_resolve(root, value), root, left, (*refs, value))
        elif key not in ("enum", "const", "default", "examples"):
            _expand(value, root, left, refs)


def _resolve(root: Any, ref: str) -> Any:
    """A local JSON pointer (``#/$defs/a``); anything else is not followed here."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise _TooCostly
    node = root
    for part in ref[2:].split("/"):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _TooCostly
    return node
