"""The container's standard device nodes: its own, each a read-only mount of itself (round 47).

docker's ``/dev`` is a tmpfs owned by uid 0, mode 0755. A command run as root (a per-call
``user="root"``, ``user: "0:0"``) keeps uid 0 without any capability, and owning the directory
is enough to unlink ``/dev/null`` and plant a FIFO, a file or a symlink there; the executor, its
runners and ``priv`` open ``/dev/null`` by path (dash opens it for every background job's stdin,
before any redirection): a FIFO hung the whole session, a file collected what the executor wrote,
``chmod 000`` broke every other user's ``>/dev/null`` (red team round 17; ``/dev`` itself is
read-only since round 18, `READONLY_PATHS`, on every host: the create check refuses a daemon that
drops it). A mount point cannot be unlinked, renamed or replaced (``EBUSY``) by anyone in its mount
namespace, and a read-only mount refuses ``chmod`` (``EROFS``); device nodes on it still read and
write.

Round 17 made those mounts binds of the *host's* nodes, and a lock or an inotify watch belongs to
the inode, not the mount: every container and the host shared six inodes, so a task's ``flock`` or
OFD lock on ``/dev/zero`` held off (and was listed to) every other tenant and host process, and a
watch on ``/dev/null`` saw every open, read and write of it on the host (round 47, docker7). Now no
host node is bound: runc makes each container's nodes on its own ``/dev`` tmpfs, and on a root host
`own_nodes` mounts each of them read-only over itself before anything of the image runs, then
checks it is a device of the right number and not the host's inode (fail closed). A non-root host
cannot join the mount namespace: its containers keep runc's nodes under the read-only ``/dev``.
"""

from __future__ import annotations

import os
import stat

from sandbox.docker._nsmount import top_mounts
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["DEV_NODES", "DOCKER_READONLY_PATHS", "READONLY_PATHS", "check_own_nodes"]

#: docker's own ``ReadonlyPaths`` (moby ``oci/defaults.go``), which a list of ours replaces whole.
DOCKER_READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")

#: What runc makes read-only (a recursive bind remounted read-only at its top: ``/dev/shm``,
#: ``/dev/mqueue``, ``/dev/pts`` and the binds below stay as they are) after every mount, device
#: and ``/dev`` link is in place and before the executor starts: on every host, the daemon's doing.
#: Before it, on a non-root host (which cannot join the container's mount namespace), a root
#: command still added names under ``/dev`` and replaced ``/dev/fd``, ``stdin``, ``stdout``,
#: ``stderr``, ``ptmx`` (another user's ``<(...)`` read what it planted, its ``>/dev/stdout`` went
#: to the root command's file) and planted ``/sys/fs/cgroup/memory.events`` (red team round 18).
#: Round 48 (docker8): ``/proc/pressure`` too. With cgroup v1 its files are the whole host's, mode
#: 0666, and since Linux 6.5 any command's write of ``some <us> <2 s multiple>`` made a trigger the
#: host's PSI aggregation walks every 2 s for as long as the command held it (kernel work outside the
#: container's cgroup; round 47 made it read-only in bwrap). Its averages still read.
READONLY_PATHS = (*DOCKER_READONLY_PATHS, "/dev", "/sys/fs/cgroup", "/proc/pressure")

#: Name -> (major, minor) of the character devices every Linux has (Documentation/admin-guide/devices.txt).
DEV_NODES: dict[str, tuple[int, int]] = {
    "/dev/null": (1, 3),
    "/dev/zero": (1, 5),
    "/dev/full": (1, 7),
    "/dev/random": (1, 8),
    "/dev/urandom": (1, 9),
    "/dev/tty": (5, 0),
}


def check_own_nodes(ref: PidRef) -> None:
    """Each of `DEV_NODES` in the container is a read-only mount of a character device of its
    number, and none is the host's own inode."""
    pid = ref.alive()
    for path, (major, minor) in DEV_NODES.items():
        stack = top_mounts(ref, path)
        try:
            st = os.stat(f"/proc/{pid}/root{path}", follow_symlinks=False)
        except OSError as exc:
            raise BackendUnavailableError(f"the container's {path} is missing: {exc}") from exc
        try:
            host = os.stat(path, follow_symlinks=False)
        except OSError:
            host = None
        if not stack or not stack[-1][1]:
            raise BackendUnavailableError(f"the container's {path} is not a read-only mount ({stack[-1:]})")
        if not stat.S_ISCHR(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) != (major, minor):
            raise BackendUnavailableError(f"the container's {path} is not the character device {major}:{minor}")
        if host is not None and (host.st_dev, host.st_ino) == (st.st_dev, st.st_ino):
            raise BackendUnavailableError(f"the container's {path} is the host's own node")
        if ref.alive() != pid:
            raise BackendUnavailableError("the container's init ended while its device nodes were checked")
