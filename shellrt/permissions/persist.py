"""Saving "allow always in this project" answers to ``.shellrt/settings.local.json``.

The file is local (not committed), so remembered answers stay with the person
who gave them. It is rewritten atomically (temp file + rename) and never
overwritten when it cannot be parsed — a broken file is the user's to fix.

Nor is it merged into when it changed since the session started (or since
shellrt last saved it): a command (a background task, say) may have planted it,
and merging would make the operator's answer vouch for the plant — the trust
store would record its digest and the protected-files check would keep it.

The ``.shellrt`` directory is opened once, never through a symbolic link, and the
file is read, written and renamed into place through that descriptor: a command
swapping the directory for a link mid-save (red team round 9) cannot redirect the
answer into a directory of its choosing.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shellrt.permissions.errors import SettingsWriteError
from shellrt.permissions.settings import settings_digest
from shellrt.permissions.settings_bytes import read_settings_fd

__all__ = ["UNCHECKED", "save_allow_rules"]

#: ``expected_digest`` of `save_allow_rules` when any current content may be merged into.
UNCHECKED = "unchecked"


def save_allow_rules(path: Path, rules: Sequence[str], *, expected_digest: str | None = UNCHECKED) -> str:
    """Append ``rules`` to ``permissions.allow`` in ``path`` (created if missing); raises `SettingsWriteError`.

    ``expected_digest``: what the file must hold now (`settings_digest` of its bytes; None: absent),
    else it changed behind shellrt's back and is not written. Returns the digest of what was written.
    """
    data: dict[str, Any] = {}
    # A repository may ship ``.shellrt -> ~/.shellrt``, a command may swap one in mid-save: a project
    # answer must not land in the user's own (trusted, every-workspace) settings, nor anywhere else a
    # link points. Everything below goes through this one descriptor.
    dir_fd = _open_settings_dir(path.parent)
    try:
        return _save_at(dir_fd, path, rules, expected_digest, data)
    finally:
        os.close(dir_fd)


def _save_at(
    dir_fd: int, path: Path, rules: Sequence[str], expected_digest: str | None, data: dict[str, Any]
) -> str:
    try:
        raw: bytes | None = _read_at(dir_fd, path)
    except FileNotFoundError:
        raw = None
    except OSError as exc:
        raise SettingsWriteError(f"cannot read {path}: {exc}") from exc
    if expected_digest != UNCHECKED and (None if raw is None else settings_digest(raw)) != expected_digest:
        raise SettingsWriteError(
            f"{path} changed since the session started, and not through shellrt (a command may have written "
            "it); not adding to it: review the file, then trust it again (shellrt trust add) if it is yours"
        )
    try:
        text = (raw or b"").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsWriteError(f"cannot read {path}: {exc}") from exc
    if text.strip():
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsWriteError(f"{path} is not valid JSON; not overwriting it ({exc.msg})") from exc
        except (ValueError, RecursionError) as exc:  # a 4301-digit number, nesting past the limit (round 33)
            raise SettingsWriteError(f"{path} cannot be read as JSON; not overwriting it ({type(exc).__name__})") from exc
        if not isinstance(loaded, dict):
            raise SettingsWriteError(f"{path} is not a JSON object; not overwriting it")
        data = loaded
    permissions = data.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise SettingsWriteError(f"{path}: permissions is not an object; not overwriting it")
    allow = permissions.setdefault("allow", [])
    if not isinstance(allow, list):
        raise SettingsWriteError(f"{path}: permissions.allow is not a list; not overwriting it")
    for rule in rules:
        if rule not in allow:
            allow.append(rule)
    written = (json.dumps(data, indent=2) + "\n").encode("utf-8")
    tmp = f".settings.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
        )
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(written)
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise SettingsWriteError(f"cannot write {path}: {exc}") from exc
    return settings_digest(written)


def _open_settings_dir(directory: Path) -> int:
    """A descriptor of ``directory`` (made when missing), opened without following a link."""
    parent = directory.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SettingsWriteError(f"cannot open {parent}: {exc}") from exc
    try:
        try:
            os.mkdir(directory.name, 0o777, dir_fd=parent_fd)  # as mkdir(1): the umask decides
        except FileExistsError:
            pass
        return os.open(
            directory.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd
        )
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(directory):
            raise SettingsWriteError(
                f"{directory} is a symbolic link; not writing project settings through it"
            ) from exc
        raise SettingsWriteError(f"cannot open {directory}: {exc}") from exc
    finally:
        os.close(parent_fd)


def _read_at(dir_fd: int, path: Path) -> bytes:
    """``path``'s bytes, opened in ``dir_fd`` without following a link or blocking; bounded.

    Raises `FileNotFoundError` when absent, `SettingsWriteError` for a link, `OSError` otherwise."""
    try:
        fd = os.open(
            path.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SettingsWriteError(
                f"{path} is a symbolic link; not writing project settings through it"
            ) from exc
        raise
    try:
        return read_settings_fd(fd, path)
    finally:
        os.close(fd)
