"""The containers a backend has asked the daemon for and not yet handed over (round 47, docker7).

`emergency_cleanup` (the owner's synchronous last word on a signal, a SIGKILL possibly right
behind it) removed a backend's container only once it ran: the never-started container that shows
the daemon's default masks (``_masks``: created, read, removed) and the main container between its
create and its start (the create checks) fell outside it, and a signal there left a ``Created``
container for the next start's reaper. Each create now runs inside `Creations.creating`: its name is
known before the call and its id as soon as the call returns, so `Creations.take` names every such
container (by id, or by name while the call is still in flight); and once taken, a create that
returns afterwards removes what it made and fails instead of going on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from sandbox.errors import SandboxClosedError

__all__ = ["Creations"]


class Creations:
    """One backend's containers being created: name -> id (``""`` while the create call runs)."""

    def __init__(self) -> None:
        # Re-entrant: `take` runs in a signal handler, which may interrupt a holder in its thread.
        self._lock = threading.RLock()
        self._pending: dict[str, str] = {}
        self._taken = False

    @contextlib.contextmanager
    def creating(self, name: str, remove: Callable[[str], object]) -> Iterator[Callable[[str], None]]:
        """Around one container's create (and what follows until its owner holds its id): yields
        ``created(cid)``, to call the moment the daemon answers. After `take`, a new create is
        refused and ``created`` removes the container (``remove(cid)``) and raises."""
        with self._lock:
            if self._taken:
                raise SandboxClosedError("the docker sandbox was closed while it started")
            self._pending[name] = ""

        def created(cid: str) -> None:
            with self._lock:
                if not self._taken:
                    self._pending[name] = cid
                    return
            remove(cid)
            raise SandboxClosedError("the docker sandbox was closed while its container was created")

        try:
            yield created
        finally:
            with self._lock:
                self._pending.pop(name, None)

    def take(self) -> list[str]:
        """Every container being created (its id, else its name), forgotten here; no create
        starts or goes on afterwards."""
        with self._lock:
            self._taken = True
            refs = [cid or name for name, cid in self._pending.items()]
            self._pending.clear()
        return refs
