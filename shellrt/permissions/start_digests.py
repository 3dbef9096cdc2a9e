"""One whole-tree digest per root for every record a session takes at its start.

Why: round 23's per-hook and per-server records (`hook_files`, `writable_files`, the MCP restart
guard) and round 24's tree record (`TreeGuard`) each hashed the workspace themselves: a session
with one hook and one stdio server that load the workspace whole hashed it 9 times before its
first command (100-500 ms each for ~1,000 files) and twice before each run of the hook (round 25
"Left"). A record needs *a* state of the tree taken before the session's first command: every
check after it (before a hook runs, before a server starts, the session's end) hashes afresh and
compares, so a change made after the digest, by anyone, is still seen.

So a session's records share one `StartDigests`, made active around them (`recording`); it is
`seal`-ed before the session's first command, after which it hashes afresh (a stale digest would
vouch for a plant). A check never reads a session's start digests: it runs under its own
`StartDigests` (one hash shared by the checks before one run) or none (`fresh`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["StartDigests", "active", "fresh", "recording"]

_ACTIVE: ContextVar[StartDigests | None] = ContextVar("shellrt_start_digests", default=None)


class StartDigests:
    """Whole-tree digests by real path, taken once while open; afresh once sealed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: dict[str, str | None] = {}
        self._sealed = False

    def digest(self, root: str, compute: Callable[[], str | None]) -> str | None:
        """``root``'s digest: the first asker hashes (the others wait for its answer)."""
        with self._lock:
            if self._sealed:
                return compute()
            if root not in self._digests:
                self._digests[root] = compute()
            return self._digests[root]

    def seal(self) -> None:
        """The session's commands may run from now on: nothing kept is handed out again."""
        with self._lock:
            self._sealed = True
            self._digests.clear()

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """`recording` with this memo."""
        with recording(self):
            yield


@contextlib.contextmanager
def recording(memo: StartDigests | None) -> Iterator[None]:
    """Whole-tree digests taken in this block (and in worker threads it starts: anyio copies the
    context) come from ``memo``; None: each is hashed afresh."""
    token = _ACTIVE.set(memo)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def fresh() -> contextlib.AbstractContextManager[None]:
    """A check: every digest hashed now, whatever records are being taken around it."""
    return recording(None)


def active() -> StartDigests | None:
    """The memo whole-tree digests come from here (None: hash afresh)."""
    return _ACTIVE.get()
