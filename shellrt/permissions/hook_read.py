"""Reading a file a hook's record looks at: regular files only, never waiting.

What a hook loads is worked out from files a command can make in the workspace (a script's ``#!``
line, ``package.json``, a node script, a venv's ``pyvenv.cfg``, ``.pth`` files and interpreter).
A plain ``open`` of a FIFO there waits for a writer: the record, worked out before every hook
runs, never ended, and the hook, the tool call and the session hung (red team round 48, lead).
Every such read goes through `read_regular` (tests/test_redteam_round48_lead_hookfifo.py pins it).
"""

from __future__ import annotations

import os
import stat

__all__ = ["read_regular"]


def read_regular(path: str, limit: int, *, raise_missing: bool = False) -> bytes | None:
    """Up to ``limit`` bytes of the regular file at ``path`` (links followed); None when it is not
    one (a FIFO, a device, a directory) or cannot be read. ``raise_missing``: a missing file raises
    `FileNotFoundError` (a caller for whom "missing" means something else than "unreadable")."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        if raise_missing:
            raise
        return None
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory cannot even be wrapped in a file
            os.close(fd)
            return None
    except OSError:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            return fh.read(limit)
        except OSError:
            return None
