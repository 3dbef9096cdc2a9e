"""Each command's own ``TMPDIR``: a pool of small tmpfs slots (red team round 29).

``/tmp`` is the session's, shared by its commands: a background task that filled it made every
later command's bash here-document of 64-128 KiB fail (bash writes those to ``$TMPDIR``), and a
file it planted there under a predictable name was read by the next command. A mount per command
needs ``CAP_SYS_ADMIN``, which nothing in the container holds, so the host mounts `TMP_SLOTS`
tmpfs slots at the start (each with its own size, `sandbox.docker._memsplit`); the executor gives
each command a free one (``executor.sh``: a lock file in its private tmpfs), ``priv drop`` makes a
random-named 0700 directory of the command's there, sets ``TMPDIR`` to it and keeps every other
slot out of the command's Landlock domain, and the helper or the runner wipes and frees it once
the command's whole tree is gone. With every slot busy a command gets ``/tmp`` (and
still no slot). ``executor.sh`` lists the slots by number: keep it in step with `TMP_SLOTS`.
"""

from __future__ import annotations

__all__ = ["TMP_SLOTS", "TMP_SLOTS_DIR", "slot_mounts"]

#: Where the slots are mounted (``priv.c``'s ``TMP_SLOTS``): ``/.shellrt-tmp/0`` ... ``/7``.
TMP_SLOTS_DIR = "/.shellrt-tmp"
#: How many commands at once get a ``TMPDIR`` of their own.
TMP_SLOTS = 8


def slot_mounts(size: int, inodes: int, owner: int) -> dict[str, str]:
    """docker ``tmpfs`` entries for the slots, each ``size`` bytes and ``inodes`` inodes, owned by
    the executor's uid ``owner``, mode 0711: no command lists or creates there; ``priv drop`` makes
    each command a random-named directory of its own there (a name no other command can list:
    a unix socket in it was found and connected to, which Landlock does not check)."""
    opts = f"rw,nosuid,nodev,exec,size={size},nr_inodes={inodes},mode=0711,uid={owner},gid={owner}"
    return {f"{TMP_SLOTS_DIR}/{k}": opts for k in range(TMP_SLOTS)}
