"""A non-root caller's one bwrap per command gets a capped /dev/shm (red team round 27).

bwrap 0.8's ``--tmpfs`` takes a size but no ``nr_inodes``: each command's /dev/shm held the tmpfs
default (~3 M inodes here, ~3 GB of kernel memory no process owns while the command runs). A root
caller's commands bind a directory of the backend's capped pool (`sandbox._shmpool`); a non-root
caller has no mount of its own on the host, and nothing may be given to bwrap's command that its
init (pid 1, dumpable, the command's to write) would hold too (round 26). So the mount is made
before bwrap, on the host side: the sealed starter program (``zinit shm``, `sandbox._bwrap_starter`)
makes a user and mount namespace of the caller's own (its uid and gid mapped to themselves), mounts
a tmpfs of `SHM_BYTES` and `inode_cap` inodes on ``/dev/shm`` there and execs bwrap, which binds it
at the sandbox's /dev/shm. Its capabilities end at that exec; the namespace and tmpfs end with the
sandbox. Without the starter (no C compiler, ``vm.memfd_noexec`` 2) /dev/shm stays uncapped.
"""

from __future__ import annotations

import os
import stat

from sandbox._tmpcap import inode_cap

__all__ = ["SHM_DIR", "shm_wrapper"]

#: Where the capped tmpfs is mounted in the starter's namespace (bwrap binds it from there).
SHM_DIR = "/dev/shm"


def shm_wrapper(starter: int | None, size: int) -> list[str]:
    """The argv to put right before a non-root caller's bwrap (after ``nsenter`` into its budget
    namespace: the new namespace is its child), or empty: root (the pool serves it), no starter,
    or no directory at `SHM_DIR` to mount on."""
    if starter is None or os.geteuid() == 0:
        return []
    try:
        if not stat.S_ISDIR(os.lstat(SHM_DIR).st_mode):
            return []
    except OSError:
        return []
    options = f"mode=1777,size={size},nr_inodes={inode_cap(size)}"
    return [f"/proc/self/fd/{starter}", "shm", SHM_DIR, options]
