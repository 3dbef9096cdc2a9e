"""The real path of a directory, asked of the kernel instead of walked in Python.

`os.path.realpath` walks a path component by component in Python (an ``lstat`` and
string work for each, a ``readlink`` for each symlink): ~10 us for the session's cwd,
on every Bash call. Opening the directory (``O_PATH``: no read access needed) lets the
kernel resolve it in one walk, and ``/proc/self/fd/N`` then names the directory it
reached, through the mounts the walk crossed: exactly what `realpath` would return,
computed afresh each time (nothing is cached, so a directory moved or swapped for a
symlink since the last call is seen as it is now).

Whenever the answer could differ from `realpath` the caller gets `realpath` itself: a
path that is not absolute or starts with exactly two slashes (POSIX lets ``//`` mean
something else, and `realpath` keeps it), a path that does not name a directory now
(missing, a file, a loop, no search permission: `realpath` has its own lexical
answers there), a directory deleted meanwhile (the kernel appends `` (deleted)``), or
no ``/proc``.
"""

from __future__ import annotations

import os

__all__ = ["real_dir"]

_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def real_dir(path: str) -> str:
    """``os.path.realpath(path)``, one kernel walk when ``path`` names a directory."""
    if not path.startswith("/") or (path.startswith("//") and not path.startswith("///")):
        return os.path.realpath(path)
    try:
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError):  # ValueError: a NUL byte in the path
        return os.path.realpath(path)
    try:
        named = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        named = ""
    finally:
        os.close(fd)
    if not named.startswith("/") or named.endswith(" (deleted)"):
        return os.path.realpath(path)
    return named
