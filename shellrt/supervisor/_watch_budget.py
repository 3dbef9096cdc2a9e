"""How many inotify watches this uid holds now, across every process: the guards' shared ceiling.

Round 16 capped one guard at an eighth of ``fs.inotify.max_user_watches``, and left open that
eight sessions of one uid (eight ``shellrt serve``, or one process with eight sessions) could
still hold the uid's whole budget between them. A guard now grows its watches in steps and, before
each step, counts what the uid holds (`uid_watches`: every inotify descriptor of the uid's
processes, from ``/proc``), so all of them together stay under `uid_ceiling`. The kernel's own
count is the account: nothing to write, nothing a crash leaves stale, and the uid's other programs'
watches count too. Steps grow with the guard (at least `STEP`, half of what it has), so a big
workspace pays a logarithmic number of counts (~5 ms each for 100 processes here).
"""

from __future__ import annotations

import os

__all__ = ["CEILING_ENV", "STEP", "uid_ceiling", "uid_watches"]

#: The uid-wide ceiling, lower than the default only (``SHELLRT_GUARD_UID_WATCHES``).
CEILING_ENV = "SHELLRT_GUARD_UID_WATCHES"
#: Watches a guard takes at least per step (and half of what it has already, if more).
STEP = 512
_USER_WATCHES = "/proc/sys/fs/inotify/max_user_watches"


def uid_ceiling(environ: dict[str, str] | None = None) -> int:
    """Watches every guard of this uid may hold together once others' are counted: half of the
    uid's ``max_user_watches`` (the other half stays for its other programs), or less if set."""
    env = os.environ if environ is None else environ
    try:
        with open(_USER_WATCHES) as fh:
            ceiling = int(fh.read()) // 2
    except (OSError, ValueError):
        ceiling = 0  # no budget known: no watches (the guard scans in full)
    try:
        wanted = int(env.get(CEILING_ENV, "") or ceiling)
    except ValueError:
        wanted = ceiling
    return max(0, min(ceiling, wanted))


def uid_watches(uid: int | None = None) -> int:
    """inotify watches held by the processes of ``uid`` (default: ours), as ``/proc`` lists them.
    A process that exits or changes during the count is skipped."""
    uid = os.geteuid() if uid is None else uid
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        base = f"/proc/{pid}"
        try:
            if os.stat(base).st_uid != uid:
                continue
            fds = os.listdir(f"{base}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{base}/fd/{fd}") != "anon_inode:inotify":
                    continue
                with open(f"{base}/fdinfo/{fd}") as fh:
                    total += sum(1 for line in fh if line.startswith("inotify wd:"))
            except OSError:
                continue
    return total
