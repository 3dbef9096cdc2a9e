"""The owner's private JSON stores (the trust store, saved rules' anchors, MCP pins, the record of
workspace writes): written atomically, read only when they are still the owner's own.

Why one reader: each store decides what a later session obeys, and each had its own read. The
trust store's opened without ``O_NONBLOCK`` and read without a bound, so a FIFO put at its name
hung session start, ``shellrt trust ls`` and ``trust status`` for ever, and a store nested a few
thousand deep raised `RecursionError` out of them; the MCP pins' followed links and took a file
anyone could write (red team round 36: trust).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from sandbox._hostread import open_without_blocking, read_bounded

__all__ = ["MAX_STORE_BYTES", "UnusableStore", "read_private_json", "write_private_json"]

#: A store larger than this is not read (tens of thousands of trusted workspaces fit).
MAX_STORE_BYTES = 32 << 20


class UnusableStore(ValueError):
    """Raised by `read_private_json` when the store exists but must not be used; says why."""


def read_private_json(path: Path, limit: int = MAX_STORE_BYTES) -> dict[str, Any] | None:
    """The JSON object at ``path``; None when it does not exist.

    Raises `UnusableStore` (its text: why, for the caller's message) when it is a link, not a
    regular file, not the caller's own or writable by others, larger than ``limit`` bytes, not
    JSON, nested too deeply, or not an object. Never blocks (a FIFO, a device).
    """
    try:
        fd = open_without_blocking(path, follow=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnusableStore("is a symbolic link (a store is never read through one)") from exc
        raise UnusableStore(f"cannot be read ({exc.strerror or exc})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnusableStore("is not a regular file (a FIFO, device or directory)")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or st.st_uid != os.geteuid():
            raise UnusableStore(f"is writable by others or not yours (fix: chmod 600 {path})")
        raw = read_bounded(fd, limit)
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise UnusableStore(f"is larger than {limit} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError as exc:
        raise UnusableStore("is nested too deeply to read") from exc
    except ValueError as exc:  # not UTF-8, not JSON, a number of more than 4,300 digits
        raise UnusableStore(f"is not valid ({str(exc).split(';')[0]})") from exc
    if not isinstance(data, dict):
        raise UnusableStore("is not a JSON object")
    return data


def write_private_json(path: Path, data: dict[str, Any], *, indent: int = 1) -> None:
    """``data`` as JSON at ``path`` (mode 0600, its directory made 0700), by rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
