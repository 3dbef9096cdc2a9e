"""Where the files that decide what a later session obeys live (no settings parsing here).

Split from `shellrt.permissions.trust` so that `shellrt run`, which only hands these paths to the
protected-files check, does not import the settings loader and its rules (issue 22's import
budget): the trust store, and a managed settings file named by ``$SHELLRT_MANAGED_SETTINGS``.
"""

from __future__ import annotations

import os
from pathlib import Path

from shellrt.permissions.caller_home import caller_home

__all__ = [
    "RULE_ANCHORS_ENV",
    "TRUST_STORE_ENV",
    "later_session_files",
    "link_targets",
    "rule_anchors_path",
    "trust_store_path",
    "with_link_targets",
]

TRUST_STORE_ENV = "SHELLRT_TRUST_STORE"
#: Where `rule_anchors_path` is, when set (else next to the trust store).
RULE_ANCHORS_ENV = "SHELLRT_RULE_ANCHORS"


def trust_store_path() -> Path:
    """Where trust is remembered (see `shellrt.permissions.trust`)."""
    explicit = os.environ.get(TRUST_STORE_ENV)
    if explicit:
        return Path(explicit)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(caller_home(), ".config")
    return Path(config) / "shellrt" / "trusted-workspaces.json"


def rule_anchors_path() -> Path:
    """Where saved "always in this project" rules keep what they allowed (`rule_anchors`): next to
    the trust store, outside the workspace, since a command there can rewrite the settings file."""
    explicit = os.environ.get(RULE_ANCHORS_ENV)
    if explicit:
        return Path(explicit)
    store = trust_store_path()
    return store.with_name(f"{store.stem}.rule-anchors.json")


def later_session_files() -> list[Path]:
    """Files outside the workspace that decide what a later session obeys: the trust store, and a
    managed settings file named by ``$SHELLRT_MANAGED_SETTINGS``. Why: one in another writable root
    (``additionalDirectories: ["~"]``) is a command's to forge (red team round 17: a record vouching
    for the repository's own untrusted ``.claude/settings.json``); the runtime hands these to the
    protected-files check, which reverts a command's change to any of them inside a writable root."""
    files = [trust_store_path(), rule_anchors_path()]
    # Saved MCP pins (`mcp_pins.pins_store_path`, not imported: the lean path's budget): a forged
    # pin would let a changed MCP tool run under an old allow (round 21).
    files.append(Path(os.environ.get("SHELLRT_MCP_PINS") or trust_store_path().parent / "mcp-pins.json"))
    managed = os.environ.get("SHELLRT_MANAGED_SETTINGS")  # sources.MANAGED_ENV (sources imports trust)
    if managed:
        files.append(Path(managed))
    # The user's own settings (sources' ``user`` file): a dotfiles repository as the workspace
    # holds it behind ``~/.shellrt/settings.json -> ~/dotfiles/shellrt/settings.json`` (round 18).
    files.append(caller_home() / ".shellrt" / "settings.json")  # the home sources reads it in
    return with_link_targets(files)


def with_link_targets(files: list[Path]) -> list[Path]:
    """``files``, then where those reached through a symlink lead (`link_targets`)."""
    return list(dict.fromkeys([*files, *link_targets(files)]))


def link_targets(files: list[Path]) -> list[Path]:
    """Where each of ``files`` reached through a symlink leads. Why: the check watches what lies
    in a writable root; a settings file outside every root that is a link (or has a linked
    directory on its way) into one is rewritten there, under a name nothing protects, and the
    next session obeys it (red team round 18: a dotfiles repository as the workspace)."""
    out: dict[Path, None] = {}
    for path in files:
        try:
            real = Path(os.path.realpath(path))
        except OSError:  # a loop: the link itself is watched where it lies
            continue
        if real != Path(os.path.abspath(path)):
            out.setdefault(real)
    return list(out)
