"""Is a used container pristine again? The host's verdict, taken from outside the container.

Batch runs may recycle a container for the next task (`DockerBackend.reset`).
The in-container executor does the work (``_reset`` in ``_executor.sh``: kill
every process, empty /tmp, /dev/shm and /dev/mqueue, remove SysV IPC objects),
but whether the container may serve another task is decided here, from data
the container's processes cannot forge: the executor's host ``/proc/<pid>``
entry. ``/proc/<pid>/root`` is the container's own filesystem tree (its procfs
lists exactly the container's processes), ``/proc/<pid>/mountinfo`` its
mounts, ``/proc/<pid>/status`` the user everything runs as.

`inspect_container` fails closed: every writable mount must be one it knows
how to judge — emptied and checked (/tmp, /dev/shm, /dev/mqueue, the
workspace), per-process state that dies with the processes (proc, devpts,
docker's ``/dev/null`` masks under /proc), shellrt's own I/O directory, or a
mount that nothing of the container's user can write (checked one level deep;
a plain subdirectory there is refused, since it could hide writable places).
Anything else — an image VOLUME, a bind mount, a root user, a capability —
makes the container unfit for reuse, with a reason a person can read.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sandbox.errors import SandboxError

__all__ = [
    "WIPED_MOUNTS",
    "Identity",
    "MountEntry",
    "ResetError",
    "empty_dir",
    "inspect_container",
    "leftover_processes",
    "parse_mountinfo",
    "parse_reset_reply",
    "parse_status",
]

#: Writable mounts the executor empties (their fs types are checked too).
WIPED_MOUNTS: dict[str, frozenset[str]] = {
    "/tmp": frozenset({"tmpfs"}),
    "/dev/shm": frozenset({"tmpfs"}),
    "/dev/mqueue": frozenset({"mqueue"}),
}
#: Pseudo file systems whose writable state belongs to processes (gone once they are).
_PROCESS_STATE_FS = frozenset({"proc", "devpts"})

_OCTAL = re.compile(r"\\([0-7]{3})")


class ResetError(SandboxError):
    """Raised by `DockerBackend.reset` when a container cannot be proven pristine; it must not be reused."""


# --------------------------------------------------------------------------- parsing
@dataclass(frozen=True, slots=True)
class MountEntry:
    """One line of ``/proc/<pid>/mountinfo``."""

    mount_point: str
    #: The mounted subtree of the source file system (``/null`` for docker's masks).
    root: str
    options: frozenset[str]
    fstype: str
    source: str
    super_options: frozenset[str]

    @property
    def writable(self) -> bool:
        """Writable both per mount and per super block."""
        return "rw" in self.options and "ro" not in self.super_options


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[MountEntry]:
    """Parse mountinfo; a malformed line raises `ValueError` (the caller refuses the container)."""
    mounts: list[MountEntry] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        head, sep, tail = line.partition(" - ")
        fields = head.split(" ")
        rest = tail.split(" ")
        if not sep or len(fields) < 6 or len(rest) < 3:
            raise ValueError(f"malformed mountinfo line: {line!r}")
        mounts.append(
            MountEntry(
                mount_point=_unescape(fields[4]),
                root=_unescape(fields[3]),
                options=frozenset(fields[5].split(",")),
                fstype=rest[0],
                source=_unescape(rest[1]),
                super_options=frozenset(rest[2].split(",")),
            )
        )
    return mounts


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the container's processes are (from the executor's ``/proc/<pid>/status``)."""

    uids: tuple[int, ...]
    gids: tuple[int, ...]
    groups: frozenset[int]
    cap_eff: int
    cap_prm: int

    @property
    def uid(self) -> int:
        return self.uids[1] if len(self.uids) > 1 else -1

    @property
    def gid(self) -> int:
        return self.gids[1] if len(self.gids) > 1 else -1


def parse_status(text: str) -> Identity:
    """Uid/Gid/Groups/CapEff/CapPrm of a ``/proc/<pid>/status`` text (missing fields fail closed)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        values[key.strip()] = value.strip()

    def ints(key: str) -> tuple[int, ...]:
        return tuple(int(v) for v in values.get(key, "").split())

    try:
        return Identity(
            uids=ints("Uid"),
            gids=ints("Gid"),
            groups=frozenset(ints("Groups")),
            cap_eff=int(values["CapEff"], 16),
            cap_prm=int(values["CapPrm"], 16),
        )
    except (KeyError, ValueError) as exc:
        raise ValueError(f"unreadable process status: {exc}") from exc


def parse_reset_reply(rest: str) -> list[str]:
    """Problems in the executor's ``Z`` reply (``<passes> <left> <wiped> <shm> <msg> <sem>``)."""
    fields = rest.split()
    if len(fields) != 6 or not all(re.fullmatch(r"-?[0-9]+", f) for f in fields):
        return [f"malformed reset reply {rest!r}"]
    _passes, left, wiped, shm, msg, sem = fields
    problems = []
    if left != "0":
        problems.append("processes survived kill -KILL -1")
    if wiped != "1":
        problems.append("could not empty /tmp, /dev/shm or /dev/mqueue")
    for kind, count in (("shared memory segment", shm), ("message queue", msg), ("semaphore set", sem)):
        if count == "-1":
            problems.append(f"/proc/sysvipc unreadable ({kind}s unknown)")
        elif count != "0":
            problems.append(f"{count} SysV {kind}(s) left (no ipcrm in the image)")
    return problems


# --------------------------------------------------------------------------- checks
def _writable_by(st: os.stat_result, who: Identity) -> bool:
    """Could ``who`` write here, or make it writable (an owner can chmod)?"""
    if st.st_uid == who.uid:
        return True
    if (st.st_gid == who.gid or st.st_gid in who.groups) and st.st_mode & stat.S_IWGRP:
        return True
    return bool(st.st_mode & stat.S_IWOTH)


def _entries(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def leftover_processes(root: Path, executor_pid: int) -> list[int]:
    """Pids in the container (its own procfs, seen from the host) other than docker-init and the executor."""
    keep = {1, executor_pid}
    return sorted(int(e) for e in os.listdir(root / "proc") if e.isdigit() and int(e) not in keep)


def inspect_container(
    root: Path,
    *,
    mountinfo: str,
    status: str,
    executor_pid: int,
    workspace: str,
    io_mount: str,
    io_entries: Iterable[str],
    private_dir: str,
) -> list[str]:
    """Every reason the container is not pristine (empty list: it may serve the next task).

    ``root`` is the container's root as the host reaches it (``/proc/<pid>/root``),
    ``mountinfo`` / ``status`` the executor's. ``workspace`` must already be
    emptied by the host; ``io_entries`` are the names allowed in shellrt's I/O
    directory; ``private_dir`` is the executor's own (empty) directory on /tmp.
    """
    problems: list[str] = []
    try:
        who = parse_status(status)
    except ValueError as exc:
        return [str(exc)]
    if not who.uids or 0 in who.uids or not who.gids or 0 in who.gids:
        problems.append(
            f"runs as root (uids {who.uids}, gids {who.gids}): it could write what a reset cannot wipe"
        )
    if who.cap_eff or who.cap_prm:
        problems.append("has capabilities")
    left = leftover_processes(root, executor_pid)
    if left:
        problems.append(f"processes still running (container pids {left[:10]})")
    try:
        mounts = parse_mountinfo(mountinfo)
    except ValueError as exc:
        return [*problems, str(exc)]
    points = {m.mount_point for m in mounts}
    allowed_io = set(io_entries)
    for mount in mounts:
        if not mount.writable:
            continue
        mp = mount.mount_point
        where = root / mp.lstrip("/")
        try:
            if mp in WIPED_MOUNTS:
                if mount.fstype not in WIPED_MOUNTS[mp]:
                    problems.append(f"{mp} is a {mount.fstype} mount, not {'/'.join(WIPED_MOUNTS[mp])}")
                    continue
                for name in _entries(where):
                    path = f"{mp}/{name}"
                    if path == private_dir:
                        st = os.lstat(where / name)
                        if stat.S_ISDIR(st.st_mode) and st.st_uid == who.uid and not _entries(where / name):
                            continue
                    problems.append(f"{path} survived the wipe")
            elif mp == workspace:
                if _entries(where):
                    problems.append(f"workspace {mp} is not empty after the wipe")
            elif mount.fstype in _PROCESS_STATE_FS:
                continue
            elif mp.startswith("/proc/") and mount.root == "/null":
                continue  # docker masks /proc/keys & co. with /dev/null
            elif mp == io_mount:
                st = os.lstat(where)
                if _writable_by(st, who):
                    problems.append(f"{mp} (shellrt's I/O directory) is writable by the container user")
                extra = sorted(set(_entries(where)) - allowed_io)
                if extra:
                    problems.append(f"unexpected entries in {mp}: {extra[:5]}")
                script = where / "executor.sh"
                if script.exists() and _writable_by(os.lstat(script), who):
                    problems.append(f"{mp}/executor.sh is writable by the container user")
            else:
                problems.extend(_judge_other(mount, where, points, who))
        except OSError as exc:
            problems.append(f"cannot inspect {mp}: {exc.strerror or exc}")
    return problems


def _judge_other(mount: MountEntry, where: Path, points: set[str], who: Identity) -> list[str]:
    """A writable mount that is not wiped: fine only if the container user can write nothing in it."""
    mp = mount.mount_point
    st = os.lstat(where)
    if _writable_by(st, who):
        return [f"writable {mount.fstype} mount {mp} (an image VOLUME or a bind mount?) cannot be wiped"]
    if stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode):
        return []
    if not stat.S_ISDIR(st.st_mode):
        return [f"mount {mp} is neither a file nor a directory"]
    problems = []
    for name in _entries(where):
        path = f"{mp.rstrip('/')}/{name}"
        if path in points:
            continue  # judged as a mount of its own
        est = os.lstat(where / name)
        if stat.S_ISLNK(est.st_mode) or stat.S_ISCHR(est.st_mode):
            continue  # a link writes nothing; device nodes cannot be made without CAP_MKNOD
        if stat.S_ISREG(est.st_mode) and not _writable_by(est, who):
            continue
        kind = (
            "directory"
            if stat.S_ISDIR(est.st_mode)
            else "writable file"
            if stat.S_ISREG(est.st_mode)
            else "entry"
        )
        problems.append(f"{kind} {path} on writable mount {mp} cannot be verified")
    return problems


def empty_dir(path: str) -> None:
    """Remove everything inside ``path`` (never following links), keep the directory; verify it is empty.

    Raises `ResetError` when something remains.
    """
    with os.scandir(path) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in names:
        full = os.path.join(path, name)
        try:
            if is_dir:
                shutil.rmtree(full)
            else:
                os.unlink(full)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise ResetError(f"cannot empty the workspace: {full}: {exc.strerror or exc}") from exc
    left = os.listdir(path)
    if left:
        raise ResetError(f"workspace not empty after the wipe: {sorted(left)[:5]}")
