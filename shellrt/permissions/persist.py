"""Saving "allow always in this project" answers to ``.shellrt/settings.local.json``.

The file is local (not committed), so remembered answers stay with the person
who gave them. It is rewritten atomically (temp file + rename) and never
overwritten when it cannot be parsed — a broken file is the user's to fix.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shellrt.permissions.errors import SettingsWriteError
from shellrt.permissions.settings import read_settings_bytes

__all__ = ["save_allow_rules"]


def save_allow_rules(path: Path, rules: Sequence[str]) -> None:
    """Append ``rules`` to ``permissions.allow`` in ``path`` (created if missing); raises `SettingsWriteError`."""
    data: dict[str, Any] = {}
    for place in (path.parent, path):
        if place.is_symlink():
            # A repository may ship ``.shellrt -> ~/.shellrt``: a project answer must not land in
            # the user's own (trusted, every-workspace) settings, nor anywhere else a link points.
            raise SettingsWriteError(f"{place} is a symbolic link; not writing project settings through it")
    try:
        text = read_settings_bytes(path).decode("utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
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
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise SettingsWriteError(f"cannot write {path}: {exc}") from exc
