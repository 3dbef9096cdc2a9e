"""Whether the workspace changed while a session ran: what a server loading it whole may not start on.

Why: an operator's stdio server whose ``"cwd"`` is the workspace (``npx``, ``uv run``, ``python3
-m`` search there) or whose ``env`` names the workspace itself (``PYTHONPATH=<ws>``) loads, on the
host, whatever the sandboxed commands wrote there. Its files cannot be protected (that would
revert every command's write), and the operator's own settings are never trust-checked: a command
planted ``sitecustomize.py`` and the next session's server imported it (red team round 24). So
each session records the tree (but ``.git``) when it starts, and drops the record when it ends with
the tree unchanged; a record left with another tree (changed, or a session that died) keeps such
servers from starting until the operator reviews the workspace and runs ``shellrt trust add``
(`clear_tree_writes`). Kept next to the trust store, outside every workspace.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from shellrt.permissions.hook_files import MAX_HASHED_BYTES, MAX_TREE_ENTRIES, workspace_tree_digest
from shellrt.permissions.private_json import write_private_json
from shellrt.permissions.trust_paths import trust_store_path

__all__ = ["begin_tree_session", "clear_tree_writes", "end_tree_session", "tree_writes_path"]


def tree_writes_path() -> Path:
    """Beside the trust store (``$SHELLRT_TRUST_STORE``'s directory, else ``~/.config/shellrt``)."""
    return trust_store_path().with_name("workspace-writes.json")


def begin_tree_session(workspace: Path) -> tuple[str | None, str | None]:
    """At session start: (why a server loading ``workspace`` whole must not start, or None; the
    tree's digest now, for `end_tree_session`). Fails closed: an unreadable store refuses."""
    key = os.path.realpath(workspace)
    now = workspace_tree_digest(Path(key))
    if not (now or "").startswith("sha256:"):
        return (
            f"the workspace cannot be hashed whole ({now or 'absent'}: over {MAX_TREE_ENTRIES} entries or "
            f"{MAX_HASHED_BYTES >> 20} MiB, or unreadable), so a command's change to it could not be told"
        ), now
    store = os.path.realpath(tree_writes_path())
    if store.startswith(key.rstrip(os.sep) + os.sep):  # a command could delete its own record
        return f"{store} is inside the workspace; set SHELLRT_TRUST_STORE to a path outside it", now
    data, problem = _read()
    if problem is not None:
        return problem, now
    entry = data.get(key)
    if isinstance(entry, dict):
        why = entry.get("changed")
        if not isinstance(why, str):
            if entry.get("tree") == now:
                return None, now  # another session on it is running, or ended without its record
            why = f"the workspace changed while an earlier session ran (started {entry.get('at', '?')})"
            entry["changed"] = why
            try:
                _write(data)
            except OSError:
                pass  # refused now; the record with another tree refuses next time too
        return why, now
    data[key] = {"tree": now, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        _write(data)
    except OSError as exc:
        return f"what the session changes cannot be recorded in {tree_writes_path()} ({exc})", now
    return None, now


def end_tree_session(workspace: Path, started: str | None) -> None:
    """At session end: drop the record when the tree is as it started, else mark it changed."""
    key = os.path.realpath(workspace)
    now = workspace_tree_digest(Path(key))
    data, problem = _read()
    if problem is not None:
        return  # begin refused already, or the next begin will
    entry = data.get(key)
    if isinstance(entry, dict) and isinstance(entry.get("changed"), str):
        return
    if now == started and (not isinstance(entry, dict) or entry.get("tree") == now):
        data.pop(key, None)
    else:
        at = entry.get("at", "?") if isinstance(entry, dict) else "?"
        data[key] = {"tree": now, "changed": f"the workspace changed while an earlier session ran (started {at})"}
    try:
        _write(data)
    except OSError:  # the record begin left stands, with another tree: the next session refuses
        pass


def clear_tree_writes(workspace: Path) -> None:
    """The operator reviewed the workspace (``shellrt trust add``): its servers may start again."""
    data, problem = _read()
    key = os.path.realpath(workspace)
    if problem is None and key in data:
        del data[key]
        _write(data)


def _read() -> tuple[dict[str, Any], str | None]:
    path = tree_writes_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, f"{path} cannot be read ({exc})"
    try:
        st = os.fstat(fd)
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or st.st_uid != os.geteuid():
            return {}, f"{path} is writable by others or not yours (fix: chmod 600 {path})"
        with os.fdopen(fd, "r", encoding="utf-8") as fh:
            fd = -1
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        return {}, f"{path} is not valid ({exc}; move it away)"
    finally:
        if fd >= 0:
            os.close(fd)
    if not isinstance(data, dict):
        return {}, f"{path} is not a JSON object (move it away)"
    return data, None


def _write(data: dict[str, Any]) -> None:
    write_private_json(tree_writes_path(), data)
