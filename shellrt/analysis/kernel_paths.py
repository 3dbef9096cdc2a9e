"""A path word as the kernel opens it (red team, round 51).

Checks keyed on a path's text (``/dev/stdin``, ``/dev/zero``) missed its other spellings: ``//dev/stdin``,
``/dev/./stdin``, ``/dev/../dev/stdin``, ``../../…/dev/stdin`` (``..`` stops at the root), and the ``/proc``
links to a process's root (``/proc/self/root/dev/stdin``). One reading for every such check.
"""

from __future__ import annotations

import posixpath
import re
from typing import Final

__all__ = ["kernel_paths", "names_stdin"]

#: A process's root link: what follows it is an absolute path (``/proc/self/root/dev/zero``).
_ROOT_LINK: Final = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/root(?=/|$)")
#: Standard input or another descriptor the command holds (a here-string on fd 3, ``<(…)``).
_DESCRIPTOR: Final = re.compile(r"/dev/stdin|/dev/fd/.*|/proc/[^/]+(?:/task/[^/]+)?/fd/.*")


def kernel_paths(value: str, bases: tuple[str, ...] = ()) -> list[str]:
    """The absolute paths a path word may open: its text with ``//``, ``.`` and ``..`` resolved (a relative
    word with more ``..`` than its directory is deep ends at the root: ``../../dev/zero``, ``~/../../dev/x``),
    a ``/proc/*/root`` prefix dropped, and a relative word joined to each of ``bases`` (``cd /dev && cat
    zero``)."""
    if not value or "\0" in value:
        return []
    found: list[str] = []
    if value.startswith("/"):
        found.append(_absolute(value))
    else:
        relative = posixpath.normpath(value)
        if relative == ".." or relative.startswith("../"):
            while relative.startswith("../"):
                relative = relative[3:]
            found.append(_absolute("/" + relative.removeprefix("..")))  # every leading `..` stops at the root
        found += [_absolute(posixpath.join(base, value)) for base in bases]
    return found


def _absolute(path: str) -> str:
    path = "/" + posixpath.normpath(path).lstrip("/")
    while (root := _ROOT_LINK.match(path)) is not None:
        path = "/" + path[root.end() :].lstrip("/")
    return path


def names_stdin(value: str) -> bool:
    """Whether a program or script word means standard input or a descriptor the command holds (``-``,
    ``/dev/stdin``, ``/dev/fd/3``, ``/proc/self/fd/0``, in any of their spellings)."""
    return value == "-" or any(_DESCRIPTOR.fullmatch(path) for path in kernel_paths(value))
