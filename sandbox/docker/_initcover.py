"""Cover the daemon's init binary in a container with an empty file of the session's own (round 47).

``init: true`` makes the daemon bind its init binary (``docker-init``, the host's file) read-only at
``/sbin/docker-init`` in every container: one host inode shared by every container on the host and
by the host itself. A lock and an inotify watch belong to the inode, not the mount, so a task's
``flock`` on it held off (and was seen by) every other tenant's task, and a watch on it saw every
container start on the host. docker-init runs from it as PID 1 before the host can act; once it
does, no path needs to name the file (``/proc/1`` is covered, `_procmask`). So on a root host, before
anything of the image runs, an empty read-only file of the session's host directory is mounted over
it (`_startmounts`), then checked from outside (fail closed). A non-root host cannot join the mount namespace.
"""

from __future__ import annotations

import os
import posixpath

from sandbox.docker._nsmount import top_mounts
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["INIT_NAME", "check_cover", "init_mount_points"]

#: moby's in-container init: ``/sbin/`` + ``docker-init`` (runc resolves the image's ``/sbin`` link).
INIT_NAME = "docker-init"


def init_mount_points(ref: PidRef) -> list[str]:
    """The mount points named `INIT_NAME` in the mount namespace of ``ref``'s process."""
    points = []
    for line in ref.read("mountinfo").splitlines():
        fields = line.split()
        if len(fields) > 4 and posixpath.basename(fields[4]) == INIT_NAME:
            if "\\" in fields[4]:  # an escaped character: not a path moby makes
                raise BackendUnavailableError(f"unexpected init mount point {fields[4]!r} in the container")
            points.append(fields[4])
    return sorted(set(points))


def check_cover(ref: PidRef, empty: str, points: list[str]) -> None:
    """Each of ``points`` in the container whose process ``ref`` is shows the empty file ``empty``
    (the session's, read-only): the host's init binary is out of reach."""
    want = os.stat(empty)
    pid = ref.alive()
    for point in points:
        stack = top_mounts(ref, point)
        try:
            st = os.stat(f"/proc/{pid}/root{point}", follow_symlinks=False)
        except OSError as exc:
            raise BackendUnavailableError(f"the container's {point} is gone after covering it: {exc}") from exc
        if not stack or not stack[-1][1] or (st.st_dev, st.st_ino) != (want.st_dev, want.st_ino):
            raise BackendUnavailableError(f"the container's {point} is not the session's empty read-only file")
    if ref.alive() != pid:
        raise BackendUnavailableError("the container's init ended while its binary was covered")
