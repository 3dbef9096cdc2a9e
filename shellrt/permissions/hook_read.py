"""Reading a file a hook's record looks at: regular files only, never waiting.

What a hook loads is worked out from files a command can make in the workspace (a script's ``#!``
line, ``package.json``, a node script, a venv's ``pyvenv.cfg``, ``.pth`` files and interpreter).
A plain ``open`` of a FIFO there waits for a writer: the record, worked out before every hook
runs, never ended, and the hook, the tool call and the session hung (red team round 48, lead).
Every such read goes through `read_regular` (tests/test_redteam_round48_lead_hookfifo.py pins it),
the host's one reader of that kind (`sandbox._hostread`) with the hook readers' bounds.
"""

from __future__ import annotations

from sandbox._hostread import read_regular_bytes

__all__ = ["read_regular"]


def read_regular(path: str, limit: int, *, raise_missing: bool = False) -> bytes | None:
    """Up to ``limit`` bytes of the regular file at ``path`` (links followed); None when it is not
    one (a FIFO, a device, a directory) or cannot be read. ``raise_missing``: a missing file raises
    `FileNotFoundError` (a caller for whom "missing" means something else than "unreadable")."""
    try:
        return read_regular_bytes(path, limit)[:limit]
    except FileNotFoundError:
        if raise_missing:
            raise
        return None
    except OSError:
        return None
