"""Where another shellrt process of this uid keeps its own places below a writable root.

Why: a process whose ``HOME`` or ``TMPDIR`` is a session's writable root keeps its caches (a
zygote's init, the meeting place below), its budget holder's lock and its temp-path places there.
They are not this process's to know (its own environment names others), yet a command or a file
tool writing there could plant that process's init or take its lock (red team round 27). One list
for both: the bwrap backend masks these names below each root (`sandbox.bwrap`), and the file
tools refuse them (`shellrt.tools._paths`). Its own module so the file tools need not load the
bwrap backend for it.
"""

from __future__ import annotations

import os

__all__ = ["others_places"]


def others_places() -> tuple[tuple[str, ...], ...]:
    """The names, relative to a writable root, of another process's caches (the meeting place is
    below), budget lock and cache temp-path places."""
    return ((".cache", "shellrt"), (f"shellrt-budget-{os.geteuid()}",), (f"shellrt-cache-{os.getuid()}",))
