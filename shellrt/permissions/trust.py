"""Workspace trust: settings that live in the workspace are obeyed only once the operator says so.

Why: a repository's own ``.claude/settings.json`` (or ``.shellrt/settings.json``,
``.mcp.json``) is written by whoever wrote the repository — or by a command an
agent ran in it. Obeying it blindly hands that author the keys: its hooks run
on the host, its allow rules and ``defaultMode`` widen what runs unasked, its
MCP servers start as the operator. So a workspace file is *trusted* only when

- the operator passed ``--trust-workspace`` (``trust_workspace=True`` in the API)
  for this session, or
- the per-user trust store records the workspace with the SHA-256 of that very
  file (``shellrt trust add DIR``); a file that changed since needs trust again.

An untrusted file still contributes its deny and ask rules (they can only
tighten); everything else in it is ignored and one notice says so.

The store is ``$SHELLRT_TRUST_STORE``, else ``$XDG_CONFIG_HOME/shellrt/trusted-workspaces.json``
(``~/.config/…``), written atomically with mode 0600. A store that others can
write, or that lies inside the workspace it would vouch for, is not used.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shellrt.permissions.caller_home import caller_home
from shellrt.permissions.hook_files import HookFiles, compare_hook_files, hook_files
from shellrt.permissions.private_json import UnusableStore, read_private_json, write_private_json
from shellrt.permissions.server_lines import host_commands
from shellrt.permissions.settings import read_settings_bytes, settings_digest
from shellrt.permissions.shown import shell_word
from shellrt.permissions.trust_paths import (
    TRUST_STORE_ENV,
    later_session_files,
    link_targets,
    trust_store_path,
    with_link_targets,
)
from shellrt.protocol.line_append import append_to_log

__all__ = [
    "TRUST_STORE_ENV",
    "WORKSPACE_SETTINGS_FILES",
    "TrustStoreError",
    "WorkspaceTrust",
    "append_audit",
    "assess_trust",
    "audit_session_trust",
    "file_digest",
    "later_session_files",
    "link_out_of",
    "link_targets",
    "list_trusted",
    "read_problem",
    "record_trust",
    "refresh_recorded_file",
    "revoke_trust",
    "settings_file_rel",
    "trust_store_path",
    "with_link_targets",
    "workspace_hook_files",
]

#: Settings files inside a workspace that need the operator's trust (relative to it).
WORKSPACE_SETTINGS_FILES: tuple[str, ...] = (
    ".shellrt/settings.local.json",
    ".claude/settings.local.json",
    ".shellrt/settings.json",
    ".claude/settings.json",
    ".mcp.json",
)
_VERSION = 1


class TrustStoreError(OSError):
    """Raised by `record_trust` / `revoke_trust` when the trust store cannot be written safely."""


def file_digest(path: Path, inside: Path | None = None) -> str | None:
    """``sha256:<hex>`` of the file's bytes; None when it does not exist; ``unreadable`` when it
    cannot be read as a settings file (see `read_settings_bytes`: never blocks, bounded).
    ``inside``: the workspace it must not leave through a symlink, as sessions read it."""
    try:
        data = read_settings_bytes(path, inside)
    except FileNotFoundError:
        return None
    except OSError:
        return "unreadable"
    return settings_digest(data)


def read_problem(path: Path, inside: Path | None = None) -> str:
    """Why ``path`` cannot be read as a settings file (for an ``unreadable`` digest)."""
    try:
        read_settings_bytes(path, inside)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    return "cannot be read"


def link_out_of(workspace: Path, rel: str) -> Path | None:
    """Where the workspace file ``rel`` really is, when a symlink (of the file or a folder on
    its way) takes it out of ``workspace``; None when it is inside or absent.

    Why: sessions refuse such a file (`read_settings_bytes` ``inside``); ``shellrt trust add``
    must neither show nor record what no session will load under the repository's name."""
    root = os.path.realpath(workspace)
    path = os.path.join(root, rel)
    if not os.path.lexists(path):
        return None
    real = os.path.realpath(path)
    return None if _rel_inside(real, root) is not None else Path(real)


@dataclass
class WorkspaceTrust:
    """Which workspace settings files this session obeys, decided once when it starts."""

    workspace: Path
    flag: bool = False
    store: Path | None = None
    #: Digest of each workspace settings file at session start (None: absent).
    digests: dict[str, str | None] = field(default_factory=dict)
    #: Files that exist and are trusted (relative paths).
    trusted: set[str] = field(default_factory=set)
    #: Why a file is untrusted (relative path -> reason), only for files that exist.
    untrusted: dict[str, str] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)
    #: What the store recorded of each trusted file's hook files (None: nothing recorded).
    recorded_hooks: dict[str, HookFiles | None] = field(default_factory=dict)
    #: Each hook command of a trusted workspace file -> its files as trusted now (checked
    #: again before every run of that hook: `CommandHookRunner`).
    hook_commands: dict[str, HookFiles] = field(default_factory=dict)
    #: ``--settings`` files that lie inside the workspace (relative path -> the path given).
    cli_files: dict[str, Path] = field(default_factory=dict)

    def is_trusted_rel(self, rel: str) -> bool:
        """Is the workspace file ``rel`` (one of `WORKSPACE_SETTINGS_FILES`) obeyed in full?"""
        return self.flag or rel in self.trusted

    def is_trusted_loaded(self, rel: str, digest: str | None, hook_commands: Sequence[str] = ()) -> bool:
        """Is ``rel`` obeyed in full, as loaded with ``digest`` (of the bytes actually parsed)?

        Trust from the store covers the bytes hashed when the session started; a file
        swapped between that hash and the read is untrusted (and said so), never obeyed.
        ``hook_commands``: its hooks' commands; the workspace files they run must be as
        recorded too (`hooks_trusted`).
        """
        if not self.flag:
            if rel not in self.trusted:
                return False
            if digest != self.digests.get(rel):
                self.trusted.discard(rel)
                self.untrusted[rel] = "file changed while the session was starting"
                return False
        return self.hooks_trusted(rel, hook_commands) if hook_commands else True

    def hooks_trusted(self, rel: str, commands: Sequence[str]) -> bool:
        """Are the workspace files that ``rel``'s hook ``commands`` run as they were trusted?

        With the store: compared with its record (a change, a new file, a link out of the
        workspace, or no record at all untrusts ``rel`` and says why). With the flag: taken
        as they are now. Either way they are remembered, to be checked before each run.
        """
        per_command = {command: hook_files(self.workspace, [command]) for command in commands}
        current = HookFiles.union(list(per_command.values()))
        if not self.flag:
            why = compare_hook_files(self.recorded_hooks.get(rel), current)
            if why is not None:
                self.trusted.discard(rel)
                self.untrusted[rel] = why
                return False
        self.hook_commands.update(per_command)
        return True

    def settings_rel(self, path: Path, source: str, workspace: Path) -> str | None:
        """Which workspace settings file ``path`` (read as ``source``) is; None for the operator's own.

        Decided by how the path was built, not by resolving it: a symlinked
        ``.claude`` or workspace path must not make a workspace file look foreign.
        """
        if source in ("local", "project"):
            try:
                return Path(path).relative_to(workspace).as_posix()
            except ValueError:
                return Path(path).name
        if source == "cli":  # your own — unless it lies in the workspace, which commands rewrite
            return self._cli_rel(Path(path))
        if source == "managed":  # the administrator's — unless $SHELLRT_MANAGED_SETTINGS names a
            return self._managed_rel(Path(path))  # workspace file (it would outrank everything)
        if source == "user":  # your own — unless your home is (inside) this workspace
            real = os.path.realpath(path)
            root = os.path.realpath(self.workspace)
            if real == root or real.startswith(root + os.sep):
                rel = os.path.relpath(real, root)
                if rel not in self.digests and not self.flag:
                    self.untrusted.setdefault(rel, "your home directory lies inside the workspace")
                return rel
        return None

    def _managed_rel(self, path: Path) -> str | None:
        """A managed settings file inside the workspace (as written or resolved) is judged like a
        ``--settings`` file there; the administrator's own ``/etc`` file never is."""
        from shellrt.permissions.sources import DEFAULT_MANAGED_PATH

        if os.path.abspath(path) == str(DEFAULT_MANAGED_PATH):
            return None
        return self._cli_rel(path)

    def _cli_rel(self, path: Path) -> str | None:
        """The workspace-relative name of a ``--settings`` file inside the workspace (None:
        outside). Inside as written or once resolved: either way a command can rewrite what
        is read (the file, or a symlink on its way). Such a file is judged like the
        workspace's own: trusted by the flag, or by a store record of this very digest."""
        root = os.path.realpath(self.workspace)
        rel = _rel_inside(os.path.realpath(path), root)
        if rel is None:
            rel = _rel_inside(os.path.normpath(os.path.abspath(path)), root) or _rel_inside(
                os.path.normpath(os.path.abspath(path)), os.path.normpath(os.path.abspath(self.workspace))
            )
        if rel is None or rel in self.cli_files:
            return rel
        self.cli_files[rel] = path
        digest = file_digest(path)
        self.digests[rel] = digest
        if digest is None:
            return rel
        if self.flag:
            self.trusted.add(rel)
            return rel
        self.store = self.store or trust_store_path()
        recorded, problem = _recorded_files(self.store, self.workspace)
        if problem or recorded is None:
            self.untrusted[rel] = problem or "a --settings file inside the workspace, which is not trusted"
        elif recorded.get(rel) is None:
            self.untrusted[rel] = "a --settings file inside the workspace, not recorded when it was trusted"
        elif recorded[rel] != digest:
            self.untrusted[rel] = "file changed since the workspace was trusted"
        else:
            self.trusted.add(rel)
            self.recorded_hooks[rel] = _recorded_hooks(self.store, self.workspace).get(rel)
        return rel

    def notice(self, ignored: dict[str, list[str]]) -> str | None:
        """One line for stderr and the audit record; ``ignored`` maps a file to what was dropped."""
        names = sorted(set(self.untrusted) | set(ignored))
        if not names:
            return None
        parts = []
        for rel in names:
            dropped = ignored.get(rel) or []
            what = f"ignored: {', '.join(dropped)}" if dropped else "nothing to ignore"
            why = self.untrusted.get(rel, "appeared after the session started")
            parts.append(f"{self.workspace / rel} ({why}; {what})")
        given = "".join(f" --settings {shell_word(str(self.cli_files[rel]))}" for rel in names if rel in self.cli_files)
        return (
            "workspace settings are not trusted, so only their deny and ask rules apply: "
            + "; ".join(parts)
            + ". If you trust this workspace, pass --trust-workspace (this session) or run "
            f"`shellrt trust add {shell_word(str(self.workspace))}{given}` (remembered until a file changes)."
        )

    def describe(self) -> dict[str, Any]:
        return {
            "workspace": str(self.workspace),
            "trust_workspace_flag": self.flag,
            "store": str(self.store) if self.store else None,
            "files": {
                rel: {
                    "digest": digest,
                    "trusted": rel in self.trusted,
                    "reason": self.untrusted.get(rel),
                }
                for rel, digest in self.digests.items()
                if digest is not None
            },
            "hook_files": {command: files.to_json() for command, files in self.hook_commands.items()},
        }


def assess_trust(
    workspace: Path, *, trust_workspace: bool = False, store: Path | None = None
) -> WorkspaceTrust:
    """Hash the workspace's settings files now and decide which ones are trusted."""
    workspace = Path(os.path.realpath(workspace))
    out = WorkspaceTrust(workspace=workspace, flag=trust_workspace)
    out.digests = {rel: file_digest(workspace / rel, workspace) for rel in WORKSPACE_SETTINGS_FILES}
    present = [rel for rel, d in out.digests.items() if d is not None]
    if trust_workspace:
        out.trusted.update(present)
        return out
    if not present:
        return out
    store = store or trust_store_path()
    out.store = store
    recorded, problem = _recorded_files(store, workspace)
    if problem:
        out.diagnostics.append(problem)
    out.recorded_hooks = _recorded_hooks(store, workspace) if recorded is not None else {}
    for rel in present:
        digest = out.digests[rel]
        if digest == "unreadable":  # as the session will find it (a link out, a FIFO, too big)
            out.untrusted[rel] = read_problem(workspace / rel, workspace)
        elif recorded is None:
            out.untrusted[rel] = "workspace not trusted"
        elif rel not in recorded or recorded[rel] is None:
            out.untrusted[rel] = "file added since the workspace was trusted"
        elif recorded[rel] != digest:
            out.untrusted[rel] = "file changed since the workspace was trusted"
        else:
            out.trusted.add(rel)
    return out


def record_trust(
    workspace: Path,
    *,
    store: Path | None = None,
    digests: dict[str, str | None] | None = None,
    hooks: dict[str, HookFiles] | None = None,
) -> dict[str, str | None]:
    """Trust ``workspace`` with its settings files as they are now; returns what was recorded.

    ``digests``: the digests of the bytes the operator was shown (``shellrt trust add`` loads
    each file once and records what it described), instead of hashing the files again.
    ``hooks``: the workspace files each file's hooks run (`workspace_hook_files` of the
    files as loaded); None reads the files again to find them.
    """
    workspace = Path(os.path.realpath(workspace))
    if not workspace.is_dir():
        raise TrustStoreError(f"{workspace} is not a directory")
    store = store or trust_store_path()
    _refuse_inside(store, workspace)
    data = _load_for_update(store)
    if digests is None:
        files = {rel: file_digest(workspace / rel, workspace) for rel in WORKSPACE_SETTINGS_FILES}
    else:  # the workspace's own files, and any ``--settings`` file inside it (`settings_file_rel`)
        files = {rel: digests.get(rel) for rel in (*WORKSPACE_SETTINGS_FILES, *digests)}
    if hooks is None:
        hooks = _hooks_of_files(workspace)
    data["workspaces"][str(workspace)] = {
        "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": files,
        "hooks": {rel: record.to_json() for rel, record in hooks.items() if files.get(rel) is not None},
    }
    _write(store, data)
    from shellrt.permissions.project_anchors import record_project_anchors_of

    record_project_anchors_of(workspace, files)  # what its command rules run (round 23)
    from shellrt.permissions.tree_writes import clear_tree_writes

    clear_tree_writes(workspace)  # reviewed: a server loading it whole may start again (round 24)
    return files


def settings_file_rel(workspace: Path, path: Path) -> str:
    """The name a ``--settings`` file inside ``workspace`` is recorded under (`record_trust`).

    Raises `TrustStoreError` when it does not lie inside the workspace (the operator's own
    files outside it need no trust)."""
    root = os.path.realpath(workspace)
    real = os.path.realpath(path)
    rel = _rel_inside(real, root)
    written = os.path.normpath(os.path.abspath(path))
    if rel is None and (_rel_inside(written, root) or _rel_inside(written, os.path.abspath(workspace))):
        # Sessions judge it as the workspace's own (a command there can repoint the link).
        raise TrustStoreError(
            f"{path} is a symlink to {real}, outside {root}: a command in the workspace could "
            f"repoint it, so sessions never trust it; pass the file itself (--settings {shell_word(real)}), "
            "which is your own and always obeyed, or copy it into the workspace; nothing was recorded"
        )
    if rel is None:
        raise TrustStoreError(
            f"{path} does not lie inside {root}: a settings file outside the workspace is the "
            "operator's own and always obeyed; pass only --settings files that lie inside it"
        )
    return rel


def workspace_hook_files(workspace: Path, hook_commands: Sequence[str]) -> HookFiles:
    """The workspace files ``hook_commands`` (of one settings file) run, hashed now."""
    return hook_files(Path(os.path.realpath(workspace)), hook_commands)


def _hooks_of_files(workspace: Path) -> dict[str, HookFiles]:
    from shellrt.permissions.settings import load_settings_file

    out = {}
    for rel in WORKSPACE_SETTINGS_FILES:
        loaded = load_settings_file(workspace / rel, "project", home=caller_home(), inside=workspace)
        if loaded.exists:
            out[rel] = workspace_hook_files(workspace, host_commands(loaded, workspace))
    return out


def refresh_recorded_file(trust: WorkspaceTrust, rel: str, digest: str) -> bool:
    """After shellrt itself rewrote ``rel`` (a remembered "allow always in this project"),
    record ``digest``, the digest of the bytes it wrote (never of the file as it is now: a
    command may have swapped it since) — only when the workspace is in the store and the file
    was trusted (or absent) when the session started, so an untrusted file is never laundered."""
    if trust.store is None and not trust.flag:
        trust.store = trust_store_path()
    store = trust.store or trust_store_path()
    if rel in trust.untrusted:
        return False
    try:
        data = _load_for_update(store)
    except TrustStoreError:
        return False
    entry = data["workspaces"].get(str(trust.workspace))
    if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
        return False
    if entry["files"].get(rel) != trust.digests.get(rel):
        return False
    entry["files"][rel] = digest
    try:
        _write(store, data)
    except OSError:
        return False
    return True


def revoke_trust(workspace: Path, *, store: Path | None = None) -> bool:
    """Forget ``workspace``; True when it was in the store."""
    workspace = Path(os.path.realpath(workspace))
    store = store or trust_store_path()
    data = _load_for_update(store)
    found = data["workspaces"].pop(str(workspace), None) is not None
    if found:
        _write(store, data)
    return found


def list_trusted(*, store: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every trusted workspace with its recorded files (empty when there is no store)."""
    store = store or trust_store_path()
    data, problem = _read(store)
    if problem:
        raise TrustStoreError(problem)
    workspaces = data.get("workspaces", {}) if data else {}
    return dict(workspaces) if isinstance(workspaces, dict) else {}


def audit_session_trust(session_dir: Path, settings: Any) -> None:
    """Append the session's trust decision to ``<session_dir>/audit.jsonl`` (the audit record)."""
    trust = getattr(settings, "trust", None)
    if trust is None:
        return
    append_audit(
        session_dir,
        {"event": "workspace_trust", **trust.describe(), "notice": getattr(settings, "trust_notice", None)},
    )


def append_audit(session_dir: Path, record: dict[str, Any]) -> None:
    """One JSON line in the session's audit record; best effort (a full disk must not stop a session)."""
    line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **record})
    # Never through a planted symlink; a line a full disk cut is taken back (round 16).
    with contextlib.suppress(OSError):
        append_to_log(Path(session_dir) / "audit.jsonl", (line + "\n").encode("utf-8"))


# --- the store file ---------------------------------------------------------------------


def _recorded_files(store: Path, workspace: Path) -> tuple[dict[str, str | None] | None, str | None]:
    if _inside(store, workspace):
        return None, f"trust store {store} lies inside the workspace; not used"
    data, problem = _read(store)
    if problem or not data:
        return None, problem
    entry = (
        data.get("workspaces", {}).get(str(workspace)) if isinstance(data.get("workspaces"), dict) else None
    )
    if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
        return None, None
    files = entry["files"]
    return {str(k): (v if isinstance(v, str) else None) for k, v in files.items()}, None


def _recorded_hooks(store: Path, workspace: Path) -> dict[str, HookFiles | None]:
    """The hook files recorded for each settings file of ``workspace`` (absent: none recorded)."""
    data, _ = _read(store)
    workspaces = data.get("workspaces") if data else None
    entry = workspaces.get(str(workspace)) if isinstance(workspaces, dict) else None
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    if not isinstance(hooks, dict):
        return {}
    return {str(rel): HookFiles.from_json(record) for rel, record in hooks.items()}


def _read(store: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The store's JSON, or a reason it is not used (never an exception, never blocks)."""
    try:
        return read_private_json(store), None
    except UnusableStore as exc:
        return None, f"trust store {store} {exc}; workspace settings stay untrusted"


def _load_for_update(store: Path) -> dict[str, Any]:
    data, problem = _read(store)
    if problem:
        raise TrustStoreError(f"{problem}; move it away to start a new one")
    data = data or {}
    if not isinstance(data.get("workspaces"), dict):
        data["workspaces"] = {}
    data["version"] = _VERSION
    return data


def _write(store: Path, data: dict[str, Any]) -> None:
    write_private_json(store, data, indent=2)


def _rel_inside(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` when strictly below it, else None (both absolute, normalised)."""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) and len(path) > len(prefix) else None


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


def _refuse_inside(store: Path, workspace: Path) -> None:
    if _inside(store, workspace):
        raise TrustStoreError(
            f"the trust store {store} lies inside {workspace}: a command there could forge it; "
            f"set {TRUST_STORE_ENV} to a path outside the workspace"
        )
