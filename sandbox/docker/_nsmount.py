"""Mount host directories into a running container's mount namespace, from the host (root).

A plain bind cannot cross mount namespaces: each source is cloned with ``open_tree`` before the
join and attached with ``move_mount`` after it, in a short-lived single-threaded child (a threaded
process cannot join a mount namespace; `sandbox.docker._detach.run_child`). One child serves every
mount of a step, so a container start or a reset pays one fork whatever it mounts.

The namespace is joined through a pidfd held since the process was proven the container's
(`sandbox.docker._pidref.PidRef`, kernel >= 5.8: ``setns`` on a pidfd), never by opening ``/proc/<pid>/ns/mnt`` by number
in the child: a pid that ended and was handed to another process in between (a host process, as
root) is never joined (round 40).
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.docker._detach import run_child
from sandbox.docker._mountscript import mount_script
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["NsMount", "mount_into", "top_mounts"]

#: argv: the pidfd's number, then per mount: source, target, "ro"|"rw", "replace"|"stack". Every tree
#: is cloned (and made read-only where asked) before the join; "replace" detaches the target's top
#: mount first (one that is there: a reset's previous one).
_SCRIPT = mount_script("""
args = sys.argv[2:]
plan = []
for i in range(0, len(args), 4):
    source, target, mode, how = args[i:i + 4]
    plan.append((clone(source, read_only=mode == "ro"), target, how))
join(int(sys.argv[1]))
for tree, target, how in plan:
    if how == "replace" and libc.umount2(target.encode(), 2) != 0:  # MNT_DETACH
        fail("umount2 " + target)
    attach(tree, target)
""")


@dataclass(frozen=True, slots=True)
class NsMount:
    """One host directory to show at ``target`` in the container."""

    source: str
    target: str
    read_only: bool = False
    #: Detach the mount now on top of ``target`` first (a reset's fresh cgroup over the last one).
    replace: bool = False


def mount_into(ref: PidRef, mounts: list[NsMount], why: str) -> None:
    """Mount each of ``mounts`` in the mount namespace of ``ref``'s process; `BackendUnavailableError`
    naming ``why`` if any step fails (fail closed: the caller checks what is on top after)."""
    if not mounts:
        return
    argv: list[str] = []
    for m in mounts:
        argv += [m.source, m.target, "ro" if m.read_only else "rw", "replace" if m.replace else "stack"]
    ref.alive()
    proc = run_child(_SCRIPT, str(ref.pidfd), *argv, pass_fds=(ref.pidfd,))
    if proc.returncode != 0:
        raise BackendUnavailableError(f"could not {why}: {proc.stderr.strip()[-300:]}")


def top_mounts(ref: PidRef, target: str) -> list[tuple[str, bool]]:
    """The mounts at ``target`` in the mount namespace of ``ref``'s process (read through
    `PidRef.read`: never another's that took the number), oldest first: (fs type, read-only per
    mount)."""
    found: list[tuple[str, bool]] = []
    for line in ref.read("mountinfo").splitlines():
        fields = line.split()
        if fields[4:5] == [target] and " - " in line:
            found.append((line.split(" - ")[1].split()[0], "ro" in fields[5].split(",")))
    return found
