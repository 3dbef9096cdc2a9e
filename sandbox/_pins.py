"""Pinned directories bound from file descriptors, never by a path a command can swap.

Every directory between a writable root and a masked path is bound onto itself in each
sandbox (`sandbox.bwrap`): a mount point cannot be renamed, so no command moves a masked file
from under its mask. bwrap binds a path as it finds it when it mounts: the host saw ``d`` as a
directory, and a command still running in an older sandbox (where ``d`` was no mount point yet)
swapped it meanwhile for a relative symlink whose ``..`` climb reaches the same host directory
from bwrap's source (``/oldroot/…``) and destination (``/newroot/…``). bwrap then bound that
host directory onto itself, writable (red team, round 9).

So each pin is an ``O_PATH`` fd opened here one component at a time without following a
symlink (`sandbox.confine.open_dir_beneath`), handed to bwrap as ``--bind-fd``: what is bound
is the directory the host looked at, and bwrap refuses the start ("Race condition binding
dirfd") when what it mounted at the destination is not that directory. A pin whose directory
is a symlink (or gone) by now is left out: it would pin nothing of the workspace's, and the
command that swapped it could move what it holds anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox.confine import open_dir_beneath

__all__ = ["MAX_PASSED", "PinFds", "TooManyPins"]

#: Pins one start may pass through a unix socket (SCM_RIGHTS carries at most 253 fds, and the
#: spawner's message carries stdio and three more fds of its own).
MAX_PASSED = 240


class TooManyPins(Exception):
    """Raised by `PinFds.bind` when the pins are more than its ``limit`` (start another way)."""


class PinFds:
    """The pins of one bwrap start: the fds to pass and their ``--bind-fd`` flags.

    ``root``: where source paths are walked from -- ``/``, or a root caller's holder
    namespace (``/proc/<holder>/root``), where the idmapped roots are mounted and bwrap
    starts. ``first``: the fd number bwrap gets the first pin at (the spawner renumbers
    what it passes: 3, 4, 5, ...); None: the fds keep their numbers (``pass_fds``).
    Close with `close` once bwrap started (it closes its copies itself).
    """

    def __init__(self, root: str = "/", *, first: int | None = None, limit: int | None = None) -> None:
        self._root = root
        self._first = first
        self._limit = limit
        self._root_fd: int | None = None
        self.fds: list[int] = []
        self._opened: dict[Path, int] = {}

    def bind(self, source: Path, dest: Path) -> list[str]:
        """bwrap flags binding the directory at ``source`` (as it is now) onto ``dest``."""
        if self._limit is not None and len(self.fds) >= self._limit:
            raise TooManyPins(f"more than {self._limit} pinned directories")
        # From the deepest pin opened already on its way (pins come shallowest first), else from the root.
        start = next((p for p in source.parents if p in self._opened), None)
        if start is not None:
            base, rest = self._opened[start], source.relative_to(start).parts
        else:
            if self._root_fd is None:
                self._root_fd = os.open(self._root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            base, rest = self._root_fd, tuple(p for p in source.parts if p != "/")
        try:
            fd = open_dir_beneath(base, list(rest))
        except OSError:
            return []  # a symlink now, or gone: nothing of ours to pin
        self.fds.append(fd)
        self._opened[source] = fd
        number = fd if self._first is None else self._first + len(self.fds) - 1
        return ["--bind-fd", str(number), str(dest)]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        self._opened = {}
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None

    def __enter__(self) -> PinFds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
