"""Root caller, one bwrap per command: each command's /dev/shm, a fresh directory of one capped tmpfs.

bubblewrap's ``--tmpfs`` takes a size but no ``nr_inodes``: a per-command bwrap's own /dev/shm
held the kernel default (~3 M inodes, ~3 GB of kernel memory while the command ran; red team,
round 26). Mounting a tmpfs from inside the sandbox needs a capability that bwrap's init would
hold too (round 26's first attempt), and one capped /dev/shm shared by the session's commands
lets one leave files for the next. Here the backend mounts one tmpfs of the zygote's /dev/shm
size and inode count on the host (`sandbox._tmpcap.cap_tmp`, before the holder: its namespace
copies the mount), makes a fresh 1777 directory of it per command, bound at that command's
/dev/shm, and removes it once the command's namespace is gone. The pool's root is 0711 and
root's, below the session's 0700 owner directory, which no sandbox shows: a command reaches its
own directory only (and could not list the others' names). The session's commands share the cap.
A non-root caller has no mount of its own on the host: its commands keep bwrap's uncapped one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from sandbox._scratch import remove_tree
from sandbox._tmpcap import TmpCapError, cap_tmp, uncap_tmp
from sandbox.errors import BackendUnavailableError

__all__ = ["ShmPool"]


class ShmPool:
    """The capped tmpfs at ``path`` and the per-command directories made in it."""

    def __init__(self, path: Path, size: int, inodes: int) -> None:
        path.mkdir(mode=0o700)
        try:
            cap_tmp(path, size, inodes=inodes, mode=0o711)
        except TmpCapError as exc:
            raise BackendUnavailableError(
                f"bwrap as root: cannot mount the capped tmpfs of one bwrap per command's /dev/shm on {path} "
                "(mount(2) failed); run shellrt where root may mount a tmpfs on the host's temp dir"
            ) from exc
        self.path = path
        #: Directories whose removal left something (a namespace still ending): tried again.
        self._left: set[Path] = set()

    def make(self) -> Path:
        """A fresh, empty directory for one command's /dev/shm (1777, as /dev/shm is)."""
        self._retry_left()
        made = Path(tempfile.mkdtemp(prefix="c", dir=self.path))
        made.chmod(0o1777)
        return made

    def release(self, made: Path) -> None:
        """Remove ``made`` and all it holds (no link followed); called once the command's namespace
        is gone. What is left (a process of it still ending) is tried again at the next `make`."""
        remove_tree(made)
        if os.path.lexists(made):
            self._left.add(made)

    def _retry_left(self) -> None:
        for made in list(self._left):
            remove_tree(made)
            if not os.path.lexists(made):
                self._left.discard(made)

    def close(self) -> None:
        """Empty and detach the tmpfs (every sandbox that bound a directory of it is gone), then
        remove its mount point."""
        self._left.clear()
        uncap_tmp(self.path)
        with contextlib.suppress(OSError):
            self.path.rmdir()
