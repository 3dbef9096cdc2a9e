"""A path word as the kernel opens it (red team, rounds 51 and 52).

Checks keyed on a path's text (``/dev/stdin``, ``/dev/zero``) missed its other spellings: ``//dev/stdin``,
``/dev/./stdin``, ``/dev/../dev/stdin``, ``../../…/dev/stdin`` (``..`` stops at the root), and the ``/proc``
links to a process's root (``/proc/self/root/dev/stdin``). One reading for every such check.

The kernel resolves ``..`` after following a link, not in the text (round 52): ``/proc/self/root/..`` is ``/``,
``/dev/fd/..`` is ``/proc/self``, ``/proc/net/..`` is ``/proc/self``, so ``/proc/self/root/../dev/stdin``,
``/dev/fd/../../self/fd/0`` and ``/proc/net/../fd/0`` are standard input, which a lexical ``..`` read as other
files. The links the kernel makes are walked here; a ``..`` after any other name (``/var/run`` is a link to
``/run`` on most systems, and the analysis sees no filesystem) leads somewhere not known: `kernel_reading`
says so, and the checks fail closed on it.
"""

from __future__ import annotations

import posixpath
import re
from typing import Final

__all__ = ["kernel_paths", "kernel_reading", "names_stdin"]

#: A process's root link: what follows it is an absolute path (``/proc/self/root/dev/zero``).
_ROOT_LINK: Final = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/root")
#: A process's working directory: what follows it is a relative path from a directory not known here.
_CWD_LINK: Final = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/cwd")
#: A descriptor's link: what it opens is the descriptor's file (a directory too: ``3</dev``), its text kept.
_FD_LINK: Final = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/fd/[^/]+")
#: Standard input or another descriptor the command holds (a here-string on fd 3, ``<(…)``).
_DESCRIPTOR: Final = re.compile(r"/dev/stdin|/dev/fd/.*|/proc/[^/]+(?:/task/[^/]+)?/fd/.*")
#: The links the kernel itself makes (devtmpfs, bubblewrap's and Docker's ``/dev``, procfs), by their absolute
#: name. ``/proc/self`` is ``/proc/PID``, whose ``..`` is ``/proc`` as written; ``/proc/thread-self`` is
#: ``/proc/PID/task/TID``, one level deeper (``self`` stands for the ids here).
_KERNEL_LINKS: Final = {
    "/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1",
    "/dev/stderr": "/proc/self/fd/2", "/dev/core": "/proc/kcore", "/proc/net": "/proc/self/net",
    "/proc/mounts": "/proc/self/mounts", "/proc/thread-self": "/proc/self/task/self",
}  # fmt: skip
#: Directories that are never links, whose ``..`` is their parent as written (below ``/proc`` every name is the
#: kernel's: its links are the ones walked here).
_REAL_DIRS: Final = frozenset({"/dev", "/proc", "/sys"})
#: Links followed within one word before it is not read (``/proc/self/cwd`` inside a ``cd`` base).
_MAX_HOPS: Final = 8


def kernel_paths(value: str, bases: tuple[str, ...] = ()) -> list[str]:
    """The absolute paths a path word may open (see `kernel_reading`)."""
    return kernel_reading(value, bases)[0]


def kernel_reading(value: str, bases: tuple[str, ...] = (), hops: int = 0) -> tuple[list[str], str]:
    """(the absolute paths a path word may open, the name a ``..`` follows whose target is not known, "" when
    none).

    The paths: its text with ``//``, ``.`` and ``..`` resolved as the kernel does (a relative word with more
    ``..`` than its directory is deep ends at the root: ``../../dev/zero``, ``~/../../dev/x``), the kernel's own
    links followed (``/proc/*/root`` is ``/``; ``/dev/fd``, ``/proc/net``, ``/proc/*/cwd`` where a ``..`` follows
    them), and a relative word joined to each of ``bases`` (``cd /dev && cat zero``). A ``..`` after a name
    that may be a link of the filesystem's (``/var/run/..``) is read as written and named in the second item:
    where it leads is not known."""
    if not value or "\0" in value:
        return [], ""
    if value.startswith("/"):
        return _walk(value, bases, hops)
    found: list[str] = []
    doubts: list[str] = []
    climbs = posixpath.normpath(value)
    # A word that climbs above its directory is read from the root too: every `..` above it stops there.
    starts = ["/" + value] if climbs == ".." or climbs.startswith("../") else []
    for path in [*starts, *(f"{base}/{value}" for base in bases)]:
        paths, doubt = _walk(path, bases, hops)
        found += paths
        doubts.append(doubt)
    return found, next((d for d in doubts if d), "")


def _walk(path: str, bases: tuple[str, ...], hops: int) -> tuple[list[str], str]:
    """`kernel_reading` of an absolute ``path``: its names one by one, a link followed where the kernel's
    reading differs from the text's (a ``..`` after it, or a root link)."""
    names = [name for name in path.split("/") if name and name != "."]
    if ".." not in names and "root" not in names:
        return ["/" + "/".join(names)], ""  # no `..` and no root link: the text is the kernel's reading
    stack: list[str] = []
    doubt = ""
    for at, name in enumerate(names):
        if name == "..":
            here = "/" + "/".join(stack)
            if stack and here not in _REAL_DIRS and not here.startswith("/proc/") and not doubt:
                doubt = here  # a link of the filesystem's leads elsewhere: `/var/run/..` is `/` here
            stack = stack[:-1]
            continue
        stack.append(name)
        here = "/" + "/".join(stack)
        rest = names[at + 1 :]
        if _FD_LINK.fullmatch(here):
            return ["/".join([here, *rest])], doubt  # a descriptor: what follows is its file's
        if _ROOT_LINK.fullmatch(here):
            stack = []
        elif ".." in rest and _CWD_LINK.fullmatch(here):
            if hops >= _MAX_HOPS:
                return [here], here
            inner_bases = tuple(base for base in bases if _CWD_LINK.match(base) is None)  # not itself again
            paths, inner = kernel_reading("/".join(rest) or ".", inner_bases, hops + 1)
            return paths, doubt or inner
        elif ".." in rest and here in _KERNEL_LINKS:
            stack = _KERNEL_LINKS[here].split("/")[1:]
            if _FD_LINK.fullmatch(_KERNEL_LINKS[here]):
                return ["/".join([_KERNEL_LINKS[here], *rest])], doubt
    return ["/" + "/".join(stack)], doubt


def names_stdin(value: str) -> bool:
    """Whether a program or script word means standard input or a descriptor the command holds (``-``,
    ``/dev/stdin``, ``/dev/fd/3``, ``/proc/self/fd/0``, in any of their spellings), or may (a ``..`` after a name
    that may be a link: fail closed)."""
    if value == "-":
        return True
    paths, doubt = kernel_reading(value)
    return bool(doubt) or any(_DESCRIPTOR.fullmatch(path) for path in paths)
