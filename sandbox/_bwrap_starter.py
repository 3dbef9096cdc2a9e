"""The starter of one bwrap per command: enters the cwd without following a symbolic link.

Why: bwrap's ``--chdir`` enters the cwd by name and follows a link. A command still running in
the session (a background task) can swap a directory of the workspace for a link to elsewhere
(``renameat2(RENAME_EXCHANGE)``) between the host's check of the cwd and the start, and the next
command then started there: the permission decision and read-only judgement made for the
workspace applied to ``/etc`` or another repository (red team round 26: 2 of 20 probed starts).
A session's init already walks the cwd one component at a time (``zinit.c`` `enter_physical`);
each bwrap per command now runs the same program first, in its ``enter`` mode, from a sealed
memfd the host passes (``/proc/self/fd/N``: nothing in the sandbox can change what runs), and
the command starts in exactly the directory the host judged, or is not run.

Without the C program (no compiler, or ``vm.memfd_noexec`` 2) commands start as before, by
bwrap's ``--chdir`` alone; logged once per backend.
"""

from __future__ import annotations

import logging
import os
import threading

from sandbox._zinit import starter_program_fd

__all__ = ["Starter", "starter_argv"]

_log = logging.getLogger(__name__)


class Starter:
    """One backend's sealed starter memfd, made on first use and closed with the backend."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._reason: str | None = None

    @property
    def decided(self) -> bool:
        """Whether `fd` answers at once (else its first call may build the program: off the loop)."""
        return self._fd is not None or self._reason is not None

    def fd(self) -> int | None:
        """The memfd to pass to bwrap (the caller passes a copy; this one stays open), or None
        when there is no starter here (the reason was logged)."""
        with self._lock:
            if self._fd is None and self._reason is None:
                made = starter_program_fd()
                if isinstance(made, str):
                    self._reason = made
                    _log.warning(
                        "bwrap: one bwrap per command enters its cwd by bwrap's --chdir, which follows"
                        " a symbolic link swapped in after the host's check: %s",
                        made,
                    )
                else:
                    self._fd = made
            return self._fd

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
            self._fd = None


def starter_argv(number: int | None, cwd: str) -> list[str]:
    """The argv put before a command's (and its mount guard's): the starter at fd ``number`` in
    bwrap's process, walking to ``cwd``; empty without a starter."""
    return [] if number is None else [f"/proc/self/fd/{number}", "enter", cwd]
