"""A session's output total, kept on disk: the session quota holds across reopen and across
processes that open one session at once.

Round 17: the session quota (`OutputQuota.session_bytes`) was counted in memory, so a reopened
session started again at zero while its earlier spools were still on disk, and two processes
serving one session id each had the whole quota. The total now lives in ``output-account`` in
the session directory (0700, no command reaches it): a decimal byte count, changed under
``flock``. A process takes the quota in slices (`SLICE`) and gives back what it did not use at
close; a crash loses at most its slice (counted as used: fail closed). A session directory with
spools and no account (made before this change) starts from the bytes already in them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import weakref
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ACCOUNT_FILE", "SLICE", "OutputAccount", "OutputAccountError"]

ACCOUNT_FILE = "output-account"
#: Bytes taken from the account at a time (one flock, a read and a write per slice).
SLICE = 1 << 20
_WIDTH = 20  # fixed width: a rewrite never changes the file's size
#: Where a session's spools live (`Supervisor`): counted when the account is first made.
_SPOOL_DIRS = ("shell", "tasks")


class OutputAccountError(OSError):
    """Raised when a session directory's output account cannot be opened (not a regular file of
    ours, or the directory refuses it): the quota would not hold, so the session does not start."""


class OutputAccount:
    """The session's output total in ``<session dir>/output-account``."""

    def __init__(self, session_dir: Path) -> None:
        path = session_dir / ACCOUNT_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
        except OSError as exc:
            raise OutputAccountError(
                exc.errno, f"cannot open the session's output account {path}: {exc.strerror}; "
                "remove it if it is not a regular file, or use another session directory"
            ) from exc
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            os.close(fd)
            raise OutputAccountError(
                0, f"{path} is not a regular file of this user; remove it or use another session directory"
            )
        self._fd = fd
        # A session dropped without `close` (a caller's bug, an exception past it) held its account's
        # descriptor for the process's life: 1,000 dropped sessions, 1,000 descriptors (round 42).
        self._closer = weakref.finalize(self, os.close, fd)
        self._dir = session_dir
        # Its bytes go to the disk now, while there is room: made empty and first written at the
        # first output, a command that filled the disk before printing made that write fail, and
        # shellrt killed every command that printed (red team round 28). Rewrites take no new block.
        with contextlib.suppress(OSError), self._locked():
            if os.fstat(fd).st_size == 0:
                self._write(self._on_disk())

    def take(self, limit: int, want: int) -> int:
        """Bytes of ``want`` granted against ``limit`` for the whole session (all processes)."""
        with self._locked():
            used = self._read()
            got = max(0, min(want, limit - used))
            if got:
                self._write(used + got)
        return got

    def give_back(self, amount: int) -> None:
        """Return a slice's unused bytes (at close)."""
        if amount <= 0 or self._fd < 0:
            return
        with self._locked():
            self._write(max(0, self._read() - amount))

    def used(self) -> int:
        """The session's total so far (every process's slices included)."""
        with self._locked():
            return self._read()

    def close(self) -> None:
        if self._fd >= 0:
            self._fd = -1
            self._closer()  # closes it once, collected or not

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _read(self) -> int:
        raw = os.pread(self._fd, 64, 0)
        try:
            return int(raw.decode("ascii").strip()) if raw.strip() else self._on_disk()
        except (UnicodeDecodeError, ValueError):  # torn or edited: what the spools hold is the truth
            return self._on_disk()

    def _write(self, total: int) -> None:
        os.pwrite(self._fd, f"{total:>{_WIDTH}}\n".encode("ascii"), 0)

    def _on_disk(self) -> int:
        """Bytes in the session's spool files (never following a link)."""
        total = 0
        for name in _SPOOL_DIRS:
            with contextlib.suppress(OSError), os.scandir(self._dir / name) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        st = entry.stat(follow_symlinks=False)
                        if stat.S_ISREG(st.st_mode):
                            total += st.st_size
        return total
