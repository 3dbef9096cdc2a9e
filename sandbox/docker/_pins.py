"""Pin the directories above each masked path (bind mode), so no command can move a secret out of its mask.

A mask covers a path. In bind mode a command's rename reaches the host
workspace: ``mv conf conf2`` would carry ``conf/db.env`` to a path the next
container does not mask. So every directory from the workspace root down to a
masked path's parent becomes a bind mount of itself in the container, and the
masked path is itself a mount (the mask): the kernel refuses to rename or
remove a mount point (EBUSY), so ``mv``, ``rm -rf`` and a rename of any
ancestor fail; ``ln`` of the masked path links the mask (another mount:
EXDEV), never the secret.

The pins are the *real* directories (symlinks resolved, each checked to be a
directory on the host and inside the workspace); `verify_pins` then checks,
through the started container's ``/proc/<pid>/root``, that each mounted
directory is the very inode seen here (docker resolves a bind source on the
host when it mounts: a swap in between would mount something else).

The same holds for every other bind whose source is a host path a command may reach
(`bound_source`): the workspace itself and the read-only binds of write-denied paths. dockerd
follows a symlink there as root on the host, so a command of another session on the same
directory that swapped one in between shellrt's check and the start had a host directory
outside the workspace mounted into the container (red team round 14); `verify_pins` checks
those too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sandbox.confine import relative_to
from sandbox.errors import BackendUnavailableError

__all__ = ["Pin", "bound_source", "masked_ancestors", "verify_pins"]


@dataclass(frozen=True)
class Pin:
    """A workspace directory mounted over itself: host path, container path, and its identity."""

    source: str
    target: str
    dev: int
    ino: int
    #: The file type seen (``stat.S_IFMT``): a read-only bind of a write-denied path may be a file.
    kind: int = stat.S_IFDIR


def bound_source(source: str, target: str) -> Pin:
    """The identity of a bind ``source`` as it is chosen (never through a symlink: a race put one
    there since the path was resolved), for `verify_pins` after the start."""
    try:
        info = os.lstat(source)
    except OSError as exc:
        raise BackendUnavailableError(
            f"{source} changed while the sandbox was being set up ({exc.strerror}); "
            "start the session again once nothing else modifies the workspace."
        ) from exc
    kind = stat.S_IFMT(info.st_mode)
    if kind not in (stat.S_IFDIR, stat.S_IFREG):
        raise BackendUnavailableError(
            f"{source} changed while the sandbox was being set up (no longer a directory or file); "
            "start the session again once nothing else modifies the workspace."
        )
    return Pin(source, target, info.st_dev, info.st_ino, kind)


def masked_ancestors(
    workspace: Path | str, denied: Iterable[Path | str], container_workspace: str
) -> list[Pin]:
    """Every real directory between the workspace root (excluded) and an existing denied path
    (excluded: the mask is already a mount), shallowest first."""
    root = os.path.realpath(workspace)
    pins: dict[str, Pin] = {}
    for path in denied:
        real = os.path.realpath(path)
        rel = relative_to(real, root)
        if not rel or not os.path.lexists(real):
            continue  # outside the workspace, the workspace itself, or nothing there to hide
        current = root
        for part in PurePosixPath(rel).parts[:-1]:
            current = os.path.join(current, part)
            try:
                info = os.lstat(current)
            except OSError as exc:
                raise BackendUnavailableError(
                    f"{current} changed while the sandbox was being set up ({exc.strerror}); "
                    "start the session again once nothing else modifies the workspace."
                ) from exc
            if not stat.S_ISDIR(info.st_mode):  # realpath resolved every link: a race changed it
                raise BackendUnavailableError(
                    f"{current} changed while the sandbox was being set up (no longer a directory); "
                    "start the session again once nothing else modifies the workspace."
                )
            target = str(PurePosixPath(container_workspace) / os.path.relpath(current, root))
            pins.setdefault(current, Pin(current, target, info.st_dev, info.st_ino))
    return sorted(pins.values(), key=lambda pin: pin.target.count("/"))


def verify_pins(pins: Iterable[Pin], container_pid: int) -> None:
    """Each pin's mount in the container is the directory or file chosen (`masked_ancestors`,
    `bound_source`; read through the container's root as its main process sees it); else
    `BackendUnavailableError`, before any command runs."""
    for pin in pins:
        try:
            info = _stat_beneath(f"/proc/{container_pid}/root", pin.target)
        except OSError as exc:
            raise BackendUnavailableError(f"could not check the mount of {pin.source}: {exc}") from exc
        if (info.st_dev, info.st_ino) != (pin.dev, pin.ino) or stat.S_IFMT(info.st_mode) != pin.kind:
            raise BackendUnavailableError(
                f"{pin.source} was replaced while the container was being created; start the session "
                "again once nothing else modifies the workspace."
            )


def _stat_beneath(root: str, target: str) -> os.stat_result:
    """``target`` (absolute, normalized) below ``root``, one component at a time, never through a
    symlink: past ``/proc/<pid>/root`` an absolute link would resolve on the host, so a swap on
    the way could show the inode expected while the container's mount is another one."""
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        parts = [part for part in target.split("/") if part]
        for part in parts[:-1]:
            if part in (".", ".."):
                raise OSError(f"not a normalized path: {target}")
            # O_DIRECTORY with O_NOFOLLOW: a symlink on the way fails (ENOTDIR), a mount is entered.
            step = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = step
        if not parts:
            return os.fstat(fd)
        return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)
