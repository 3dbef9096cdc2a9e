"""Each command's own ``TMPDIR``: a pool of small tmpfs slots (red team round 29).

``/tmp`` is the session's, shared by its commands: a background task that filled it made every
later command's bash here-document of 64-128 KiB fail (bash writes those to ``$TMPDIR``), and a
file it planted there under a predictable name was read by the next command. A mount per command
needs ``CAP_SYS_ADMIN``, which nothing in the container holds, so the host mounts `TMP_SLOTS`
tmpfs slots at the start (each with its own size, `sandbox.docker._memsplit`); the executor gives
each command a free one (``executor.sh``: a lock file in its private tmpfs), ``priv drop`` makes a
random-named 0700 directory of the command's there, sets ``TMPDIR`` to it and keeps every other
slot out of the command's Landlock domain, and the helper or the runner wipes and frees it once
the command's whole tree is gone. With every slot busy a command is refused (round 30: it
got the shared ``/tmp``). ``executor.sh`` lists the slots by number: keep it in step with
`TMP_SLOTS`.

Round 30: the directory's name was no secret (a server's command line and ``/proc/net/unix`` print
a socket's path), and Landlock does not check a ``connect`` to a path socket, so another command
of the same uid connected to an agent served there. So no other command may even traverse a slot:
its root is 0710, of the executor and of a group of its own (`slot_gid`) that ``priv drop`` gives
as a supplementary group to the one command holding the slot (and its whole tree, which ends
before the slot is handed out again). Those gids, like the executor's, are never a command's.
"""

from __future__ import annotations

__all__ = ["SLOT_MODE", "TMP_SLOTS", "TMP_SLOTS_DIR", "reserved_ids", "slot_gid", "slot_mounts"]

#: Where the slots are mounted (``priv.c``'s ``TMP_SLOTS``): ``/.shellrt-tmp/0`` ... ``/15``.
TMP_SLOTS_DIR = "/.shellrt-tmp"
#: How many commands may run at once, each with a ``TMPDIR`` of its own: one more is refused
#: (``executor.sh``'s ``tmp-busy``), never given the shared ``/tmp`` (round 30: 8 were too few for
#: a session's ten concurrent commands). ``priv.c``'s ``SLOT_IDS`` and ``executor.sh``'s ``SLOTS``.
TMP_SLOTS = 16


#: A slot root's mode: the executor's, and traversable by its slot group only (``priv.c`` checks it).
SLOT_MODE = 0o710


def slot_gid(owner: int, k: int) -> int:
    """Slot ``k``'s group: the ``k + 1``-th id after the executor's ``owner`` (``priv.c``'s rule)."""
    return owner + 1 + k


def reserved_ids(owner: int) -> range:
    """The executor's id and every slot group's: no command's uid, gid or group may be one of them."""
    return range(owner, owner + TMP_SLOTS + 1)


def slot_mounts(size: int, inodes: int, owner: int) -> dict[str, str]:
    """docker ``tmpfs`` entries for the slots, each ``size`` bytes and ``inodes`` inodes, owned by
    the executor's uid ``owner`` and the slot's own group, mode 0710: only the command holding the
    slot (its group) can traverse it, none lists or creates there; ``priv drop`` makes that command
    a random-named directory of its own there. A unix socket in another command's TMPDIR was found
    (its path leaks) and connected to, which Landlock does not check (round 30)."""
    base = f"rw,nosuid,nodev,exec,size={size},nr_inodes={inodes},mode={SLOT_MODE:04o},uid={owner}"
    return {f"{TMP_SLOTS_DIR}/{k}": f"{base},gid={slot_gid(owner, k)}" for k in range(TMP_SLOTS)}
