"""Counting this process's children by what their command lines hold (round 35: how many parse or
filter children a tool runs at once)."""

from __future__ import annotations

import os


def count_children(marks: tuple[bytes, ...]) -> int:
    """Processes whose parent is this process and whose command line holds one of ``marks``."""
    me, count = os.getpid(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except (OSError, ValueError, IndexError):
            continue
        count += any(mark in cmdline for mark in marks)
    return count
