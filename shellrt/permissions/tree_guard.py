"""`TreeGuard`: the one record of a session's workspace tree that its hooks and servers share.

Why: an operator's hook and an operator's stdio server that load the workspace whole each
recorded the tree (`shellrt.permissions.tree_writes`) on their own, so a session with both hashed
it twice at its start and twice at its end (50-250 ms each for ~1,000 files) and wrote the record
twice; the hooks' hash ran on the event loop's thread (round 25). One guard per `Runtime` hashes
at most once at the start and once at the end, in a worker thread; each consumer words its own
refusal from the reason the guard gives. The guard also carries the session start's shared
whole-tree digests (`StartDigests`, round 26): its own record and the hooks' and servers' records
of the start hash the tree once in all.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import anyio

from shellrt.permissions.start_digests import StartDigests, fresh
from shellrt.supervisor.mark_owner import owned_mark

__all__ = ["TreeGuard"]


class TreeGuard:
    """A session's membership in its workspace's record: begun once, ended once."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        #: This session's name in the record: the record stays while any member has not ended.
        self.session = owned_mark()  # names this process: a killed session's mark reads as ended
        self._lock = threading.Lock()
        self._begun = False
        self._ended = False
        self._why: str | None = None
        self._started: str | None = None
        #: The start's whole-tree digests, shared by every record the session takes before its
        #: first command (`recording`); sealed once its commands may run (`seal`).
        self.digests = StartDigests()

    def recording(self) -> contextlib.AbstractContextManager[None]:
        """Records taken in this block (a hook's, a server's) share the start's digests."""
        return self.digests.recording()

    def seal(self) -> None:
        """The session's commands may run now: later digests are hashed afresh."""
        self.digests.seal()

    @property
    def begun(self) -> bool:
        return self._begun

    def begin_sync(self) -> str | None:
        """Why a host process loading the workspace whole must not start (None: it may); the
        first call hashes and records, later ones return the same answer."""
        with self._lock:
            if not self._begun:
                from shellrt.permissions.tree_writes import begin_tree_session

                with self.digests.recording():  # the start's digest, shared with the other records
                    self._why, self._started = begin_tree_session(self.workspace, session=self.session)
                self._begun = True
            return self._why

    async def begin(self) -> str | None:
        """`begin_sync` in a worker thread (it hashes the whole tree)."""
        if self._begun:
            return self._why
        return await anyio.to_thread.run_sync(self.begin_sync)

    def end_sync(self) -> None:
        """Once, after every consumer stopped: mark the record when the tree changed."""
        with self._lock:
            if not self._begun or self._ended:
                return
            self._ended = True
            from shellrt.permissions.tree_writes import end_tree_session

            with fresh():
                end_tree_session(self.workspace, self._started, session=self.session)

    async def end(self) -> None:
        """`end_sync` in a worker thread, shielded: a cancelled close still ends the record."""
        if not self._begun or self._ended:
            return
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.end_sync)
