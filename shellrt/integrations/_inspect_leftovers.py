"""Per-sample host directories of the Inspect provider, and removing what crashed runs left.

Each sample's sandbox gets a private host directory (`sandbox._scratch.OwnedDir`,
prefix ``shellrt-inspect-``) that its owner process keeps locked while it lives.
It holds the sample's workspace and, for docker, a ``container`` file naming the
container. A run that is SIGKILLed leaves both behind (a docker container also
goes by itself once its attach connection closes, but a daemon that was busy
may keep it); `cleanup_leftovers` (``inspect sandbox cleanup shellrt``) finds
directories whose lock is free, removes the container they name (only one
shellrt made: its name and labels) and the directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from sandbox._anchoredcopy import copy_workspace  # by descriptors (red team round 14)
from sandbox._scratch import OwnedDir, holder_bases, remove_tree

__all__ = ["PREFIX", "SampleDir", "cleanup_leftovers"]

_log = logging.getLogger("shellrt.integrations.inspect")

PREFIX = "shellrt-inspect-"
_CONTAINER = "container"
_LOCK = ".owner.lock"
#: A directory this young may not be locked by its owner yet.
_GRACE_S = 2.0


class SampleDir:
    """One sample's locked host directory: its workspace and what to clean up after a crash."""

    def __init__(self) -> None:
        self._owned = OwnedDir(PREFIX)
        self.path = self._owned.path
        self.workspace = self.path / "workspace"

    def prepare(
        self, source: Path | None, leave_out: Iterable[Path] = (), identity: tuple[int, int] | None = None
    ) -> None:
        """Create the workspace, as a copy of ``source`` when given (symlinks copied as links),
        without the ``leave_out`` paths (the sandbox's masked ones: see `copy_workspace`); when
        ``identity`` is given, ``source`` must open as that directory (the one the floor judged)."""
        if source is None:
            self.workspace.mkdir()
            return
        if not source.is_dir():
            raise ValueError(f"workspace {source} is not a directory on this host")
        try:
            copy_workspace(source, self.workspace, leave_out, identity=identity)
        except PermissionError as exc:
            raise ValueError(str(exc)) from exc

    def record_container(self, container_id: str) -> None:
        """Name the sample's container, so a cleanup after a crash can remove it."""
        (self.path / _CONTAINER).write_text(container_id, encoding="ascii")

    def remove(self) -> None:
        """Delete the directory and release its lock. Idempotent."""
        self._owned.remove()


#: A container id given to `cleanup_leftovers` names one only from this many hex digits on.
_MIN_ID_PREFIX = 12


def cleanup_leftovers(id: str | None = None) -> list[str]:
    """Remove what dead runs left (their lock is free); with ``id``, that sandbox whoever owns it.

    ``id`` is a directory name (or its random suffix) or a container id prefix of at least 12
    hex digits, and must name exactly one sandbox: it removes a *live* one too, so a short or
    empty ``id`` that matched many (``endswith("")`` matches all) is refused with ValueError.
    Returns one line per removed sandbox.
    """
    if id is not None and not id.strip():
        raise ValueError("an empty sandbox id names every sandbox; give one directory name or container id")
    now = time.time()
    candidates: list[tuple[Path, str | None, bool]] = []
    places = [base or Path(tempfile.gettempdir()) for base in holder_bases()]  # /tmp; an older one's TMPDIR
    for path in sorted(p for place in places for p in place.glob(PREFIX + "*")):
        try:
            info = path.lstat()
            # Only the caller's own (as `SampleDir` makes them): in a shared /tmp another user's
            # directory would name any shellrt container for removal, and print a name it chose.
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            young = now - info.st_mtime < _GRACE_S
        except OSError:
            continue
        container = _read_container(path)
        if id is not None:
            if _names(path, container, id):
                candidates.append((path, container, True))
        elif not young and _orphaned(path):
            candidates.append((path, container, False))
    if id is not None and len(candidates) > 1:
        listed = ", ".join(p.name for p, _, _ in candidates[:5])
        raise ValueError(
            f"sandbox id {id!r} names {len(candidates)} sandboxes ({listed}); give a whole directory name "
            "or a longer container id"
        )
    removed: list[str] = []
    for path, container, _chosen in candidates:
        if container is not None:
            _remove_container(container)
        remove_tree(path)  # however deep the sample's commands made it (round 11)
        removed.append(f"{path}" + (f" (container {container[:12]})" if container else ""))
    return removed


def _names(path: Path, container: str | None, id: str) -> bool:
    """Whether ``id`` names this sandbox: its directory name or suffix, or its container's id."""
    if path.name == id or path.name.endswith("-" + id) or (len(id) >= 8 and path.name.endswith(id)):
        return True
    return container is not None and len(id) >= _MIN_ID_PREFIX and container.startswith(id)


def _read_container(path: Path) -> str | None:
    try:
        text = (path / _CONTAINER).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if text.isalnum() else None


def _orphaned(path: Path) -> bool:
    """Whether the directory's owner is gone (its lock can be taken)."""
    try:
        fd = os.open(path / _LOCK, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False  # no lock file: not ours, or kept on purpose
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return True


def _remove_container(container_id: str) -> None:
    """Remove the container if it still exists and is shellrt's: its name, which no image can set,
    with its labels (an image's labels alone would make any container "shellrt's": round 10)."""
    try:
        from sandbox.docker._client import connect
        from sandbox.docker._gc import made_by_shellrt, remove_io_dir
        from sandbox.docker._labels import LABEL_IO_DIR
    except ImportError:  # the docker extra is not installed: no container can exist
        return
    try:
        client = connect(None)
        info = client.api.inspect_container(container_id)
        labels = (info.get("Config") or {}).get("Labels") or {}
        if not made_by_shellrt(str(info.get("Name") or ""), labels):
            _log.warning("container %s is not shellrt's; left alone", container_id[:12])
            return
        client.api.remove_container(container_id, v=True, force=True)
        remove_io_dir(labels.get(LABEL_IO_DIR))
    except Exception as exc:  # gone already, or the daemon is down: nothing more to do here
        _log.debug("could not remove container %s: %s", container_id[:12], exc)
