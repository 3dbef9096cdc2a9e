"""What a process runs, as its owner sees it: argv, plus the shell text shellrt keeps out of it.

A shell's command text travels in its environment (``SHELLRT_COMMAND``, readable by the same
uid only: `shellrt.supervisor.shells.shell_launch`), not in its world-readable argv. Tests that
find a command by its text, as an operator would with ``ps e``, look in both.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from shellrt.supervisor.shells import COMMAND_VAR

__all__ = ["live_pids", "shown_words"]

_PREFIX = COMMAND_VAR.encode() + b"="


def shown_words(pid: int) -> list[str]:
    """``pid``'s argv words and, for a shellrt shell, its command text (empty when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            words = [w.decode(errors="replace") for w in fh.read().split(b"\0") if w]
        with open(f"/proc/{pid}/environ", "rb") as fh:
            environ = fh.read().split(b"\0")
    except OSError:
        return []
    return words + [e[len(_PREFIX) :].decode(errors="replace") for e in environ if e.startswith(_PREFIX)]


def live_pids(match: Callable[[list[bytes]], bool]) -> list[int]:
    """Pids whose raw argv (``/proc/PID/cmdline`` split at NUL) ``match`` accepts, zombies excluded
    (a zombie has run its course: only its parent's wait is missing)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if match(argv) and state != b"Z":
            found.append(int(entry))
    return found
