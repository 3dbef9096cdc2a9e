"""Where the files that decide what a later session obeys live (no settings parsing here).

Split from `shellrt.permissions.trust` so that `shellrt run`, which only hands these paths to the
protected-files check, does not import the settings loader and its rules (issue 22's import
budget): the trust store, and a managed settings file named by ``$SHELLRT_MANAGED_SETTINGS``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "RULE_ANCHORS_ENV",
    "TRUST_STORE_ENV",
    "later_session_files",
    "link_targets",
    "record_dir_masks",
    "rule_anchors_path",
    "state_dir_masks",
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
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(
        os.environ.get("HOME") or str(Path.home()), ".config"
    )
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
    files.append(Path(os.environ.get("HOME") or str(Path.home())) / ".shellrt" / "settings.json")
    return with_link_targets(files)


def record_dir_masks(roots: Iterable[Path]) -> list[Path]:
    """shellrt's configuration directory (the trust store, and beside it the workspace-writes
    record, its lock and the marks note) when a writable root holds it: a path the sandbox must
    mask, made first when missing (a mask covers what exists). Raises `ValueError` when a root
    *is* that directory: it cannot be masked without hiding the root.

    Why: the record and the note change under other sessions all the time, so they cannot be
    protected files (reverted after each command); a command given ``--writable ~/.config``
    wrote a ``~reviewed`` tree vouching for its own plant, and the next session's operator server
    imported it on the host (red team round 26)."""
    own = trust_store_path().parent
    return _own_dir_masks(
        own,
        roots,
        inside_too=False,
        refusal=(
            f"is shellrt's own configuration directory ({own}: the trust store and the record of what "
            "sessions wrote, which later sessions trust); a command could forge them. Give a directory "
            "inside it, or set SHELLRT_TRUST_STORE to a file elsewhere"
        ),
    )


def state_dir_masks(roots: Iterable[Path]) -> list[Path]:
    """shellrt's state directory (``$SHELLRT_HOME``, else ``$XDG_STATE_HOME/shellrt``, else
    ``~/.local/state/shellrt``) when a writable root holds it, as `record_dir_masks`; a root that
    is the directory or lies inside it raises `ValueError`.

    Why: it holds every session's transcript and results (a reopened session answers from them)
    and the in-flight records a later session restores protected files from; ``shellrt run
    --writable ~`` let a command read the one and forge the other, and a root that was the
    directory was writable from a `Runtime` too (red team round 26, wave 3)."""
    from shellrt.supervisor._inflight import state_dir

    own = state_dir()
    return _own_dir_masks(
        own,
        roots,
        inside_too=True,
        refusal=(
            f"is or lies inside shellrt's own state directory ({own}: sessions' transcripts and the "
            "in-flight records later sessions restore files from); a command could read or forge them. "
            "Give a directory outside it, or set SHELLRT_HOME to a directory elsewhere"
        ),
    )


def _own_dir_masks(own: Path, roots: Iterable[Path], *, inside_too: bool, refusal: str) -> list[Path]:
    """``own`` (made 0700 first) when a root holds it; `ValueError` ("the writable root R "
    + ``refusal``) when a root is it, or lies inside it with ``inside_too``. Both spellings of
    each path (as given, and resolved) are compared."""
    forms = {Path(os.path.normpath(os.path.abspath(own))), Path(os.path.realpath(own))}
    masks: dict[Path, None] = {}
    for root in roots:
        at = {Path(os.path.normpath(os.path.abspath(root))), Path(os.path.realpath(root))}
        if forms & at or (inside_too and any(form in r.parents for r in at for form in forms)):
            raise ValueError(f"the writable root {root} {refusal}")
        if any(r in form.parents for r in at for form in forms):
            with contextlib.suppress(OSError):
                own.mkdir(mode=0o700, parents=True, exist_ok=True)
            masks.setdefault(Path(os.path.realpath(own)))
    return list(masks)


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
