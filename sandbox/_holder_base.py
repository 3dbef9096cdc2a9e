"""/tmp cannot hold shellrt's temporary directories: an error that says why /tmp and what to do.

Imported only when that happens (`sandbox._scratch.OwnedDir`), so `shellrt run`'s start-up imports
nothing more.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.errors import BackendUnavailableError

__all__ = ["HolderBaseError"]


class HolderBaseError(BackendUnavailableError, OSError):
    """/tmp cannot hold shellrt's temporary directories: said with what to do (a read-only /tmp gave
    a bare "Read-only file system" from deep inside a start). Not a fall back to ``TMPDIR``: another
    process's sandboxes hide /tmp, not this process's temp dir (round 40, tenants)."""

    def __init__(self, cause: OSError, base: Path) -> None:
        super().__init__(
            f"shellrt keeps its temporary directories below {base} whatever TMPDIR says (other "
            f"processes' sandboxes hide {base}, not a TMPDIR elsewhere), and {base} cannot hold one "
            f"here ({cause.strerror or cause}): make {base} a writable directory, e.g. "
            f"`mount -t tmpfs -o mode=1777 tmpfs {base}`, then start again"
        )
