"""Mounts of the root caller's holder namespace that no per-command bwrap's command can see.

Every per-command bwrap copies the whole mount table of the namespace it starts
in, and reads and parses that table again for each bind it makes (bubblewrap
0.8: the ro-bind of /, each device node of ``--dev``, each mask, each writable
root): its cost grows with (binds x mounts). Its own ``--dev /dev`` and
``--proc /proc`` cover whatever was mounted below /dev and /proc (``/dev/shm``,
``/dev/pts``, ``/dev/mqueue``, ``/proc/sys/fs/binfmt_misc``, often stacked twice),
so in the holder's namespace those mounts only cost, unless a path the sandbox
needs (a writable root, the state dir, the session /tmp) lies on one.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["covered_mounts"]

#: Where bwrap mounts a fresh filesystem of its own over the host's (``--dev``, ``--proc``).
_COVERED = (Path("/dev"), Path("/proc"))
_ESCAPE = re.compile(r"\\([0-7]{3})")


def covered_mounts(mountinfo: str, needed: list[Path]) -> list[str]:
    """Mount points below /dev and /proc in ``mountinfo`` (a ``/proc/PID/mountinfo`` text) that
    hold none of ``needed``, one entry per mount (a path twice: two stacked mounts), in an
    order ``umount`` can take them off."""
    points: list[Path] = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        point = Path(_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4]))
        if not any(top in point.parents for top in _COVERED):
            continue
        if any(point == p or point in p.parents for p in needed):
            continue
        points.append(point)
    # Deepest first: a mount comes off before the one it is mounted on (``umount`` of a path
    # takes off its topmost mount, so stacked ones need no order among themselves).
    return [str(p) for p in sorted(points, key=lambda p: len(p.parts), reverse=True)]
