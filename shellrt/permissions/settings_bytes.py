"""Reading a settings file's bytes: a regular file, bounded, without ever blocking.

Why a module of its own, with no pydantic: ``shellrt run``'s lean path pre-scans the settings files
before it decides to load them for real, and must read them exactly as sessions do. It opened them
with a plain ``open()``: a workspace's ``.claude/settings.json`` that is a FIFO, or a symlink to one
or to ``/dev/tty``, blocked the event loop in ``open()``/``read()`` forever, where neither SIGTERM
nor Ctrl-C reach it (red team round 33).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from sandbox._hostread import NOT_REGULAR, open_without_blocking, read_open_regular

__all__ = ["MAX_SETTINGS_BYTES", "read_settings_bytes", "read_settings_fd"]

#: A settings file larger than this is not read (a hostile workspace's ``settings.json ->
#: /dev/zero`` or a multi-gigabyte file must not exhaust memory at session start).
MAX_SETTINGS_BYTES = 4 << 20


def read_settings_bytes(path: Path, inside: Path | None = None) -> bytes:
    """The bytes of a settings file, read without blocking and bounded.

    Why: settings files in a workspace are attacker-controlled, and git stores symlinks —
    ``.claude/settings.json -> /dev/zero`` (endless), a FIFO (blocks forever on open) or a
    device must not stop a session from starting. Only a regular file of at most
    `MAX_SETTINGS_BYTES` is read; anything else raises `OSError` saying what it is.
    Raises `FileNotFoundError` when it does not exist.

    ``inside``: the workspace a workspace settings file must stay in. A symlink out of it
    (``.shellrt/settings.json -> /etc/…``) would read a host file the repository chose, on the
    host, and print its keys in diagnostics: the file actually opened is checked, so a link
    swapped in after a check is caught too.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, NOT_REGULAR, str(path))
    fd = open_without_blocking(path)
    try:
        if inside is not None:
            _check_inside(fd, path, inside)
        # swapped between the stat and the open: not a regular file any more
        return read_settings_fd(fd, path, "not a regular file (it changed while being opened)")
    finally:
        os.close(fd)


def _check_inside(fd: int, path: Path, inside: Path) -> None:
    """Raise `OSError` when the open file ``fd`` is not below ``inside`` (both resolved)."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)
    root = os.path.realpath(inside)
    if os.path.commonpath([real, root]) != root:
        raise OSError(
            errno.EXDEV,
            f"a symlink out of the workspace (to {real}), not read; copy the file into the workspace "
            "or pass it with --settings",
            str(path),
        )


def read_settings_fd(fd: int, path: Path, not_regular: str = NOT_REGULAR) -> bytes:
    """The bytes of the open settings file ``fd`` (named ``path`` in errors): a regular file of at
    most `MAX_SETTINGS_BYTES`, else `OSError` saying what it is (`sandbox._hostread` reads it)."""
    data = read_open_regular(fd, MAX_SETTINGS_BYTES, path, not_regular=not_regular)
    if len(data) > MAX_SETTINGS_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_SETTINGS_BYTES} bytes", str(path))
    return data
