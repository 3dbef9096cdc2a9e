"""The container's standard device nodes, each a read-only bind of the host's own node.

docker's ``/dev`` is a tmpfs owned by uid 0, mode 0755. A command run as root (a per-call
``user="root"``, ``user: "0:0"``) keeps uid 0 without any capability, and owning the directory
is enough to unlink ``/dev/null`` and plant a FIFO, a file or a symlink there; the executor, its
runners and ``priv`` open ``/dev/null`` by path (dash opens it for every background job's stdin,
before any redirection): a FIFO hung the whole session, a file collected what the executor wrote,
``chmod 000`` broke every other user's ``>/dev/null`` (red team round 17; ``/dev`` itself is
read-only since round 18, `READONLY_PATHS`). A mount point cannot be unlinked,
renamed or replaced (``EBUSY``) by anyone in its mount namespace, and a read-only mount refuses
``chmod`` (``EROFS``); device nodes on it still read and write. So the nodes programs open by
name are mounted over, on every host, at the container's creation.
"""

from __future__ import annotations

import os
import stat

from docker.types import Mount

from sandbox.errors import BackendUnavailableError

__all__ = ["DEV_NODES", "READONLY_PATHS", "device_binds"]

#: docker's own ``ReadonlyPaths`` (moby ``oci/defaults.go``), which a list of ours replaces whole.
DOCKER_READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")

#: What runc makes read-only (a recursive bind remounted read-only at its top: ``/dev/shm``,
#: ``/dev/mqueue``, ``/dev/pts`` and the binds below stay as they are) after every mount, device
#: and ``/dev`` link is in place and before the executor starts: on every host, the daemon's doing.
#: Before it, on a non-root host (which cannot join the container's mount namespace), a root
#: command still added names under ``/dev`` and replaced ``/dev/fd``, ``stdin``, ``stdout``,
#: ``stderr``, ``ptmx`` (another user's ``<(...)`` read what it planted, its ``>/dev/stdout`` went
#: to the root command's file) and planted ``/sys/fs/cgroup/memory.events`` (red team round 18).
READONLY_PATHS = (*DOCKER_READONLY_PATHS, "/dev", "/sys/fs/cgroup")

#: Name -> (major, minor) of the character devices every Linux has (Documentation/admin-guide/devices.txt).
DEV_NODES: dict[str, tuple[int, int]] = {
    "/dev/null": (1, 3),
    "/dev/zero": (1, 5),
    "/dev/full": (1, 7),
    "/dev/random": (1, 8),
    "/dev/urandom": (1, 9),
    "/dev/tty": (5, 0),
}


def device_binds() -> list[Mount]:
    """Read-only binds of the host's device nodes over the container's; the host's node must be
    the very character device (fail closed: a bind of anything else would be the host's file)."""
    binds: list[Mount] = []
    for path, (major, minor) in DEV_NODES.items():
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError as exc:
            raise BackendUnavailableError(
                f"the host's {path} is missing ({exc}); the docker backend binds it"
            ) from exc
        if not stat.S_ISCHR(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) != (major, minor):
            raise BackendUnavailableError(
                f"the host's {path} is not the character device {major}:{minor}; restore it before using docker"
            )
        binds.append(Mount(target=path, source=path, type="bind", read_only=True))
    return binds
