"""Where the files that decide what a later session obeys live (no settings parsing here).

Split from `shellrt.permissions.trust` so that `shellrt run`, which only hands these paths to the
protected-files check, does not import the settings loader and its rules (issue 22's import
budget): the trust store, and a managed settings file named by ``$SHELLRT_MANAGED_SETTINGS``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TRUST_STORE_ENV", "later_session_files", "trust_store_path"]

TRUST_STORE_ENV = "SHELLRT_TRUST_STORE"


def trust_store_path() -> Path:
    """Where trust is remembered (see `shellrt.permissions.trust`)."""
    explicit = os.environ.get(TRUST_STORE_ENV)
    if explicit:
        return Path(explicit)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(
        os.environ.get("HOME") or str(Path.home()), ".config"
    )
    return Path(config) / "shellrt" / "trusted-workspaces.json"


def later_session_files() -> list[Path]:
    """Files outside the workspace that decide what a later session obeys: the trust store, and a
    managed settings file named by ``$SHELLRT_MANAGED_SETTINGS``. Why: one in another writable root
    (``additionalDirectories: ["~"]``) is a command's to forge (red team round 17: a record vouching
    for the repository's own untrusted ``.claude/settings.json``); the runtime hands these to the
    protected-files check, which reverts a command's change to any of them inside a writable root."""
    files = [trust_store_path()]
    managed = os.environ.get("SHELLRT_MANAGED_SETTINGS")  # sources.MANAGED_ENV (sources imports trust)
    if managed:
        files.append(Path(managed))
    return files
