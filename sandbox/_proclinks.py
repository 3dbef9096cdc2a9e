"""Whether resolving a path passes through a per-process name (``/proc``, ``/dev/fd``, ``/dev/std*``).

Why: ``/proc/self/fd/1``, ``/proc/self/cwd`` and ``/dev/stdin`` (a link to ``/proc/self/fd/0``)
name another file in each process. `os.path.realpath` resolves them in shellrt's own, so a link to
one, judged here, is shellrt's file while the program that opens it later (host git, a hook) gets
its own stdout pipe or working directory. So the path is resolved link by link and each step is
checked by name. One walk for every caller (the hook environment's values and host git's files had
two copies, rounds 35 and 36). Bounded: at most `MAX_LINKS` links and `MAX_STEPS` components in all,
past which it answers True (fail closed): a link whose target walks ``d/../d/..`` 800 times cost
~8 ms of ``lstat`` calls here, and a git directory may hold 100,000 of them (review of round 36).
"""

from __future__ import annotations

import os
import re

__all__ = ["MAX_LINKS", "MAX_STEPS", "PER_PROCESS", "through_proc"]

#: Names that resolve per process.
PER_PROCESS = re.compile(r"/proc(/.*)?|/dev/(fd|stdin|stdout|stderr)(/.*)?")
#: The kernel's own bound on the links of one resolution (ELOOP).
MAX_LINKS = 40
#: Components walked in all (the path's and every link target's): ordinary paths and links have
#: a few dozen; a path past this is not judged.
MAX_STEPS = 256


def through_proc(path: str) -> bool:
    """Whether resolving ``path`` (relative: from the working directory) passes through
    `PER_PROCESS` at any step, following links one by one; True too past `MAX_LINKS` links or
    `MAX_STEPS` components, or when a link changes under the walk (not judged: fail closed)."""
    parts = os.path.abspath(path).split("/")
    current, links, steps = "/", 0, 0
    while parts:
        steps += 1
        if steps > MAX_STEPS:
            return True
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, part)
        if PER_PROCESS.fullmatch(step):
            return True
        if not os.path.islink(step):
            current = step
            continue
        links += 1
        if links > MAX_LINKS:
            return True
        try:
            target = os.readlink(step)
        except OSError:
            return True
        current = "/" if target.startswith("/") else current
        parts = target.split("/") + parts
    return False
