"""Workspace entries reached from the workspace's root without following any symlink.

The protected-files check (`protect`) runs on the host as the caller — root in CI —
and reads, moves and rewrites entries of a tree a sandboxed command controls. A
*path* is re-resolved at every system call, so a command (or a background task
racing the check) that puts a symlink in place of a parent directory would send
shellrt's write to any host directory (``mv .claude x; ln -s /root/.claude .claude``
made the restore of a "deleted" ``.claude/settings.json`` land in root's own
settings). Every step here works on a directory fd that was opened one component
at a time with ``O_NOFOLLOW``: what was checked is what is touched, inside the
workspace, whatever the tree becomes meanwhile.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

from sandbox._scratch import remove_tree

__all__ = ["make_parent", "move_out", "open_parent", "write_entry"]

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _components(root: Path, path: str) -> list[str]:
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if rel in (".", "") or ".." in parts:
        raise FileNotFoundError(errno.ENOENT, "not an entry below the workspace", path)
    return parts


def _walk(root: Path, parts: list[str], *, create: bool) -> int:
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT):
                    # A symlink (or a file) where a directory was: nothing of the workspace is there.
                    raise FileNotFoundError(
                        errno.ENOENT, "a parent is not a directory of the workspace", part
                    ) from exc
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_parent(root: Path, path: str) -> tuple[int, str]:
    """``(directory fd, name)`` of ``path`` below ``root``; `FileNotFoundError` when a parent is
    missing, not a directory, or a symlink. The caller closes the fd."""
    parts = _components(root, path)
    return _walk(root, parts[:-1], create=False), parts[-1]


def make_parent(root: Path, path: str) -> tuple[int, str]:
    """`open_parent`, creating missing parent directories (never through a symlink)."""
    parts = _components(root, path)
    return _walk(root, parts[:-1], create=True), parts[-1]


def move_out(dir_fd: int, name: str, target: Path, *, base: Path | None = None) -> str:
    """Move ``name`` (in ``dir_fd``) to ``target``; across file systems, copy then remove it.

    Returns how it went, for the note. A directory that cannot be renamed is removed
    (``rmtree`` relative to ``dir_fd``, which follows no symlink). ``base`` (the session
    directory): the directories of ``target`` below it are made and entered without following
    a symlink (red team round 13: a ``quarantine`` link planted in a redirected session
    directory sent the planted file wherever it pointed, ``/root`` included)."""
    qfd = _target_parent(target, base)
    try:
        try:
            os.rename(name, target.name, src_dir_fd=dir_fd, dst_dir_fd=qfd)
            return f"moved to {target}"
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            remove_tree(name, dir_fd=dir_fd)  # however deep the command made it (round 10)
            try:
                os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return "removed (a directory on another file system than the quarantine)"
            raise OSError(errno.ENOTEMPTY, "a planted directory could not be removed whole", name)
        why = "a special file"
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(name, dir_fd=dir_fd), target.name, dir_fd=qfd)
        elif stat.S_ISREG(st.st_mode):
            why = _copy_regular(dir_fd, name, qfd, target.name) or why
        os.unlink(name, dir_fd=dir_fd)
        try:
            os.stat(target.name, dir_fd=qfd, follow_symlinks=False)
        except FileNotFoundError:
            return f"removed ({why})"
        return f"moved to {target}"
    finally:
        os.close(qfd)


def _target_parent(target: Path, base: Path | None) -> int:
    """An ``O_PATH`` fd of ``target``'s directory, made as needed (see `move_out`)."""
    if base is None:
        target.parent.mkdir(parents=True, exist_ok=True)
        return os.open(target.parent, _DIR_FLAGS)
    base.mkdir(parents=True, exist_ok=True)  # the session directory itself is the host's
    return _walk(base, _components(base, os.fspath(target))[:-1], create=True)


#: The most of one planted file copied into the quarantine (across file systems). The command
#: chose its size: a sparse ``truncate -s 1T .bashrc`` costs it nothing, the copy a terabyte.
QUARANTINE_COPY_LIMIT = 64 << 20


def _copy_regular(dir_fd: int, name: str, qfd: int, target: str) -> str | None:
    """Copy at most `QUARANTINE_COPY_LIMIT` bytes to ``target`` in ``qfd``; why nothing was kept
    (None: copied). Never into the reserve of the quarantine's disk (round 16: ten sparse plants,
    free for the command, filled the session's disk through their copies)."""
    from shellrt.supervisor.spool import RESERVE_ENV, room_above_reserve

    too_big = f"larger than the {QUARANTINE_COPY_LIMIT >> 20} MiB a quarantine copy keeps"
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_size > QUARANTINE_COPY_LIMIT:
            return too_big
        no_room = (
            f"the session directory's disk would fall below the free space shellrt leaves to the host "
            f"({RESERVE_ENV})"
        )
        if st.st_size > room_above_reserve(qfd):
            return no_room
        dst = os.open(
            target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=qfd
        )
        copied = 0
        try:
            while copied <= QUARANTINE_COPY_LIMIT and (chunk := os.read(src, 1 << 20)):
                os.write(dst, chunk)
                copied += len(chunk)
        except OSError as exc:  # a full disk meanwhile: keep no partial copy
            os.close(dst)
            os.unlink(target, dir_fd=qfd)
            return f"the copy failed ({exc.strerror or exc})"
        os.close(dst)
        if copied > QUARANTINE_COPY_LIMIT:  # it grew while copied
            os.unlink(target, dir_fd=qfd)
            return too_big
        return None
    finally:
        os.close(src)


def write_entry(dir_fd: int, name: str, content: bytes, *, is_link: bool, mode: int) -> None:
    """Atomically replace ``name`` in ``dir_fd`` with a file of ``content`` (or a symlink to it).

    Never with a set-id or sticky bit: the caller (root in CI) owns the new file, so a
    snapshot's ``04755`` would make the repository's content a set-uid-root program."""
    mode &= 0o777
    tmp = f".shellrt-restore-{os.getpid()}-{time.monotonic_ns()}"
    if is_link:
        os.symlink(os.fsdecode(content), tmp, dir_fd=dir_fd)
    else:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
        )
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    try:
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        os.unlink(tmp, dir_fd=dir_fd)
        raise
