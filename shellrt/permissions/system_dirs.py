"""Which directories a workspace's own settings may not add as roots (``additionalDirectories``).

Why: an added directory is a root the file tools may write and a writable root of the sandbox (a
root caller's are idmapped to the sandbox uid: its commands own what is there). A trusted
repository's settings could name ``/etc`` (red team round 48; round 47 left it to a decision):
trust in a repository's author then became every agent command's power to rewrite the host's
``/etc``. A workspace file's entry is refused when its real path is, holds or lies inside a system
directory (`SYSTEM`), or is or holds a place of homes or other software (`HOLDERS`, the caller's
home included: a project beside the workspace stays allowed). The operator's own files may.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["HOLDERS", "SYSTEM", "system_dir_refusal"]

#: Refused when an entry is, holds or lies inside one of these.
SYSTEM = (
    *("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc", "/sys"),
    *("/run", "/snap", "/var/lib", "/var/spool", "/var/log", "/var/cache", "/var/mail", "/var/backups", "/var/run"),
)
#: Refused when an entry is or holds one of these (a directory inside stays allowed: ``/var/www/x``).
HOLDERS = ("/", "/root", "/home", "/var", "/opt", "/srv", "/mnt", "/media")


def system_dir_refusal(directory: Path, home: Path) -> str | None:
    """Why ``directory`` (from a workspace's own settings) is refused, else None."""
    real = os.path.realpath(directory)
    inside = {os.path.realpath(p) for p in SYSTEM}
    holders = {os.path.realpath(p) for p in (*HOLDERS, home)}
    for place in sorted(inside | holders):
        is_or_holds = real == place or place.startswith(real.rstrip(os.sep) + os.sep)
        if is_or_holds or (place in inside and real.startswith(place + os.sep)):
            what = "is" if real == place else "holds" if is_or_holds else "lies inside"
            return (
                f"{directory} (real path {real}) {what} the system directory {place}, which a workspace's "
                "settings may not make writable (its commands and the file tools could change the host "
                "there); name a directory of the project's own, or add it in your user settings or "
                "with --settings if you mean it"
            )
    return None
