"""An /etc/passwd and /etc/group entry for the sandbox uid, so that programs asking who they are find it at once.

A root caller's commands run as the session's sandbox uid (leased for the session,
`sandbox._uid_lease`, or the operator's fixed `BwrapConfig.sandbox_uid`), which
owns nothing on the host and is in no account database (the lease skips ids
that have an entry). Every program that looks itself
up (bash at start-up, git, ``id``, ``ls -l`` in the workspace, ssh) then misses in
/etc/passwd and goes on through the next NSS modules (``libnss_systemd``: a
library loaded, a userdb search): ~0.4 ms more for each ``bash -c true`` here.
The session's private mount namespace (the holder's, see `sandbox.bwrap`) shows
copies of the host's two files with one line added for that uid; the host's
files are not touched. The copies are made when the session starts (an account
added on the host later is not seen inside until the next session).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NAME", "account_files"]

#: The account name the sandbox uid and gid get (suffixed with the id if the host has it already).
NAME = "shellrt-sandbox"
#: Larger account files are left alone (a copy per session would cost more than the lookups).
_MAX_BYTES = 4 << 20


def account_files(
    directory: Path,
    uid: int,
    gid: int,
    *,
    passwd: Path = Path("/etc/passwd"),
    group: Path = Path("/etc/group"),
) -> list[tuple[Path, Path]]:
    """(copy written in ``directory``, host file it stands in for), for ``passwd`` and ``group``.

    Only for a host file that is a regular file (not a link, not huge) with no entry
    for ``uid`` (``gid``) yet; each copy is the host file plus one line, readable by all.
    """
    made: list[tuple[Path, Path]] = []
    for host, number, line in (
        (passwd, uid, "{name}:x:{uid}:{gid}:shellrt sandbox:/tmp:/bin/sh\n"),
        (group, gid, "{name}:x:{gid}:\n"),
    ):
        text = _read_small(host)
        if text is None:
            continue
        entries = [row.split(":") for row in text.splitlines()]
        if any(len(e) > 2 and e[2] == str(number) for e in entries):
            continue  # the host knows this id already
        name = NAME if not any(e[0] == NAME for e in entries) else f"{NAME}-{number}"
        copy = directory / f"etc-{host.name}"
        body = text if text.endswith("\n") or not text else text + "\n"
        copy.write_text(
            body + line.format(name=name, uid=uid, gid=gid), encoding="utf-8", errors="surrogateescape"
        )
        copy.chmod(0o644)
        made.append((copy, host))
    return made


def _read_small(path: Path) -> str | None:
    """``path``'s text if it is a regular file of a sensible size (None otherwise)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
