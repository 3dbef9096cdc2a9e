"""The settings' ``Edit``/``Write`` deny globs for ``shellrt run`` (both paths), round 16.

Why: a session reverts a file a command made that such a rule names (``Edit(**/*.pem)``,
``Write(**/.env)``: `shellrt.runtime.write_deny_globs`), but ``shellrt run`` loads no settings,
so the same command run through it kept ``new.pem``. Loading settings costs ~0.4 s of imports
(pydantic), which the lean path exists to avoid: a cheap pre-scan reads the settings files as
JSON and loads them for real only when one may name such a rule (or cannot be read as JSON:
fail closed, the real loader decides). `tests/test_redteam_round16_left_run_write_deny.py`
checks the pre-scan's files against `shellrt.permissions.sources.discover_files`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from sandbox._hostread import read_regular_bytes

__all__ = ["candidate_files", "may_name_write_deny", "write_deny_for_backend", "write_deny_for_run"]

#: `shellrt.permissions.rules.WRITE_RULE_TOOLS` (not imported: that module loads pydantic).
_WRITE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
#: A settings file larger than this is left to the real loader.
_MAX_SCAN_BYTES = 1 << 20


def candidate_files(workspace: Path) -> list[Path]:
    """The settings files that may hold rules, as `discover_files` lists them (no ``--settings``;
    ``.mcp.json`` holds servers only)."""
    from shellrt.supervisor._caller_home import (
        caller_home,  # the loader's home (round 43), not $HOME as given
    )

    home = caller_home()
    managed = os.environ.get("SHELLRT_MANAGED_SETTINGS")
    files = [Path("/etc/shellrt/managed-settings.json"), *([Path(managed)] if managed else [])]
    return [
        *files,
        workspace / ".shellrt" / "settings.local.json",
        workspace / ".claude" / "settings.local.json",
        workspace / ".shellrt" / "settings.json",
        workspace / ".claude" / "settings.json",
        home / ".shellrt" / "settings.json",
    ]


def may_name_write_deny(workspace: Path) -> bool:
    """True when a settings file names an ``Edit``/``Write`` deny rule, or cannot be judged here."""
    for path in candidate_files(workspace):
        try:
            # a FIFO, or a link to one or to ``/dev/tty``, blocked the event loop in ``open()``
            # forever, deaf to SIGTERM and Ctrl-C, and a device was read (round 33): the host's
            # one bounded reader, as the settings loader reads them
            raw = read_regular_bytes(path, _MAX_SCAN_BYTES)
        except FileNotFoundError:
            continue
        except OSError:
            return True  # unreadable, or no regular file: the real loader says what it makes of it
        if len(raw) > _MAX_SCAN_BYTES:
            return True
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # nested past the interpreter's depth: a hostile repo's
            return True
        if _names_write_deny(data):
            return True
    return False


def _names_write_deny(data: Any) -> bool:
    permissions = data.get("permissions") if isinstance(data, dict) else None
    deny = permissions.get("deny") if isinstance(permissions, dict) else None
    if deny is None:
        return False
    if not isinstance(deny, list):
        return True
    return any(not isinstance(rule, str) or rule.strip().startswith(_WRITE_TOOLS) for rule in deny)


def write_deny_for_run(workspace: Path, *, keeps_content: bool, views: dict[str, str] | None = None) -> Any:
    """The `WriteDenyGlobs` of the settings' rules, or None when no settings file names one."""
    if not may_name_write_deny(workspace):
        return None
    from shellrt.permissions.sources import load_settings
    from shellrt.runtime.write_deny_globs import WriteDenyGlobs

    settings = load_settings(workspace)
    if settings.degraded:  # a file could not be read: its deny rules do not apply, and the operator must know
        from shellrt.cli._terminal import shown

        for line in settings.diagnostics:  # they quote the workspace's path: a hostile name (round 25)
            print(f"shellrt: settings: {shown(line)}", file=sys.stderr)
    return WriteDenyGlobs(settings.rules, views, keeps_content=keeps_content)


def write_deny_for_backend(backend: Any, workspace: Path) -> Any:
    """As `shellrt.runtime.session.Runtime._write_deny` does for a session: docker's copy mode
    walks a private copy (mapped back to ``workspace``); a confining backend binds existing
    matches read-only, so nothing is snapshotted."""
    if not may_name_write_deny(workspace):
        return None
    try:
        view = backend.to_host_path(backend.workspace)
    except Exception:
        view = None
    views = {str(view): str(workspace)} if view is not None else None
    return write_deny_for_run(workspace, keeps_content="filesystem" not in backend.enforces(), views=views)
