"""Saving "allow always in this project" answers to ``.shellrt/settings.local.json``.

The file is local (not committed), so remembered answers stay with the person
who gave them. It is rewritten atomically (temp file + rename) and never
overwritten when it cannot be parsed — a broken file is the user's to fix.

Nor is it merged into when it changed since the session started (or since
shellrt last saved it): a command (a background task, say) may have planted it,
and merging would make the operator's answer vouch for the plant — the trust
store would record its digest and the protected-files check would keep it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shellrt.permissions.errors import SettingsWriteError
from shellrt.permissions.settings import read_settings_bytes, settings_digest

__all__ = ["UNCHECKED", "save_allow_rules"]

#: ``expected_digest`` of `save_allow_rules` when any current content may be merged into.
UNCHECKED = "unchecked"


def save_allow_rules(path: Path, rules: Sequence[str], *, expected_digest: str | None = UNCHECKED) -> str:
    """Append ``rules`` to ``permissions.allow`` in ``path`` (created if missing); raises `SettingsWriteError`.

    ``expected_digest``: what the file must hold now (`settings_digest` of its bytes; None: absent),
    else it changed behind shellrt's back and is not written. Returns the digest of what was written.
    """
    data: dict[str, Any] = {}
    for place in (path.parent, path):
        if place.is_symlink():
            # A repository may ship ``.shellrt -> ~/.shellrt``: a project answer must not land in
            # the user's own (trusted, every-workspace) settings, nor anywhere else a link points.
            raise SettingsWriteError(f"{place} is a symbolic link; not writing project settings through it")
    try:
        raw: bytes | None = read_settings_bytes(path)
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings.", suffix=".tmp", dir=path.parent)
        written = (json.dumps(data, indent=2) + "\n").encode("utf-8")
        with os.fdopen(fd, "wb") as fh:
            fh.write(written)
        os.replace(tmp, path)
    except OSError as exc:
        raise SettingsWriteError(f"cannot write {path}: {exc}") from exc
    return settings_digest(written)
