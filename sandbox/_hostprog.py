"""Where a sandboxed command could change what a host path names: its links and what it resolves to.

Why: `_hostpath.host_path` drops the ``PATH`` entries inside a registered writable root, but a
program the host runs can also be named by path (``CC=/ws/bin/cc``), reached through a link in a
clean directory (``~/bin/cc -> /ws/.venv/bin/cc``), or find files itself in directories that lie
in a root (a compiler's ``cc1``, ``as``, specs). A link inside a root is retargeted by a command at
will, and a file inside one is rewritten: either way the host runs a command's program, unsandboxed,
as the caller (red team round 30, mend). Every link met while resolving is checked, not only the
end: the clean-looking result of ``realpath`` is no promise for the next open.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable

from sandbox._hostpath import inside, others_write, registered_roots

__all__ = ["writable_place"]

#: As the kernel's limit on links followed in one lookup.
_MAX_LINKS = 40


def _resolve(path: str) -> tuple[list[str], str]:
    """The real paths of the links met resolving absolute ``path``, and what it resolves to
    (components that do not exist are kept as written, as ``realpath`` does)."""
    links: list[str] = []
    todo = [p for p in reversed(path.split("/")) if p]
    current = "/"
    while todo:
        part = todo.pop()
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, part)
        if not os.path.islink(step):
            current = step
            continue
        links.append(step)
        if len(links) > _MAX_LINKS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
        target = os.readlink(step)
        if target.startswith("/"):
            current = "/"
        todo.extend(p for p in reversed(target.split("/")) if p)
    return links, current


def writable_place(path: str, also: Iterable[str] = ()) -> str | None:
    """The first place a sandboxed command could change what absolute ``path`` names: ``path`` as
    written, a link met resolving it, or its resolution, inside a registered root (or ``also``);
    as root, also a link in, or a resolution below, a directory another user or group can write
    (`others_write`, as for ``PATH`` entries). None when there is none."""
    roots = registered_roots() + [os.path.realpath(r) for r in also]
    links, real = _resolve(path)
    written = os.path.normpath(path)
    for place in (written, *links, real):
        if inside(place, roots):
            return place
    if os.geteuid() == 0:
        for place in (*(os.path.dirname(link) for link in links), real):
            if others_write(place):
                return place
    return None
