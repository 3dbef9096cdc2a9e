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

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shellrt.permissions.private_json import UnusableStore, read_private_json, write_private_json
from shellrt.permissions.start_digests import fresh
from shellrt.permissions.tree_marks import (
    fold_unmarked,
    overlapping_change,
    review_within,
    set_reviewed,
    unrecorded_writes,
)
from shellrt.permissions.trust_paths import trust_store_path

__all__ = [
    "LOCK_TIMEOUT_S",
    "TreeRecordBusy",
    "begin_tree_session",
    "clear_tree_writes",
    "end_tree_session",
    "tree_writes_path",
]

#: How long a read-modify-write of the record waits for another process's (then fails closed).
LOCK_TIMEOUT_S = 10.0
#: The member an entry without a list of sessions has (written before round 25): never ends.
_UNKNOWN_MEMBER = "(a session of an earlier version)"


class TreeRecordBusy(OSError):
    """The record's lock could not be had (another process holds it, or the lock file is not ours)."""


def workspace_tree_digest(root: Path) -> str | None:
    """`hook_files.workspace_tree_digest`, imported when a tree is hashed: a session that only
    marks its roots (`tree_marks`, every ``shellrt run``) never loads it (100-200 ms here)."""
    from shellrt.permissions.hook_files import workspace_tree_digest as digest

    return digest(root)


def _digest_now(root: Path) -> str | None:
    """The tree as it is now, never a session start's shared digest: what an end or a review
    compares (`shellrt.permissions.start_digests`)."""
    with fresh():
        return workspace_tree_digest(root)


def tree_writes_path() -> Path:
    """Beside the trust store (``$SHELLRT_TRUST_STORE``'s directory, else ``~/.config/shellrt``)."""
    return trust_store_path().with_name("workspace-writes.json")


def begin_tree_session(workspace: Path, *, session: str = "-") -> tuple[str | None, str | None]:
    """At session start: (why a server loading ``workspace`` whole must not start, or None; the
    tree's digest now, for `end_tree_session`). ``session`` joins the record's members: the
    record is dropped only once every member ended with the tree unchanged (round 25: a clean
    session's end dropped a record another one, still running or dead, needed). Fails closed:
    an unreadable store, or one whose lock cannot be had, refuses."""
    from shellrt.permissions.hook_files import MAX_HASHED_BYTES, MAX_TREE_ENTRIES

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
    try:
        with _locked():
            return _begin(key, now, session), now
    except OSError as exc:
        return f"what the session changes cannot be recorded in {tree_writes_path()} ({exc})", now


def _begin(key: str, now: str | None, session: str) -> str | None:
    """`begin_tree_session`'s read-modify-write, under the record's lock."""
    data, problem = _read()
    if problem is not None:
        return problem
    fold_unmarked(data)
    entry = data.get(key)
    if isinstance(entry, dict) and isinstance(entry.get("changed"), str):
        return str(entry["changed"])
    why = overlapping_change(data, key)
    if why is not None:
        return why
    if not isinstance(entry, dict):
        why = unrecorded_writes(data, key, now, session)
        if why is not None:  # refused now and until reviewed (`shellrt trust add`)
            data[key] = {"tree": now, "changed": why, "changed_at": time.time()}
            with contextlib.suppress(OSError):
                save(data)
            return why
    if isinstance(entry, dict):
        if entry.get("tree") == now:  # another session on it is running, or ended without its record
            entry["sessions"] = [*_members(entry), session]
            save(data)
            return None
        why = f"the workspace changed while an earlier session ran (started {entry.get('at', '?')})"
        entry["changed"] = why
        entry["changed_at"] = time.time()
        with contextlib.suppress(OSError):  # refused now; the record with another tree refuses next time too
            save(data)
        return why
    data[key] = {"tree": now, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "sessions": [session]}
    save(data)
    return None


def end_tree_session(workspace: Path, started: str | None, *, session: str = "-") -> None:
    """At session end: leave the record (``session`` no longer a member), dropped when no member
    is left and the tree is as it started; else mark it changed."""
    key = os.path.realpath(workspace)
    hashed_at = time.time()  # a write after this is not in ``now``: a mark ended later still counts
    now = _digest_now(Path(key))
    try:
        with _locked():
            _end(key, now, started, session, hashed_at)
    except OSError:  # the record begin left stands, with another tree: the next session refuses
        pass


def _end(key: str, now: str | None, started: str | None, session: str, hashed_at: float) -> None:
    """`end_tree_session`'s read-modify-write, under the record's lock."""
    data, problem = _read()
    if problem is not None:
        return  # begin refused already, or the next begin will
    fold_unmarked(data)
    entry = data.get(key)
    if isinstance(entry, dict) and isinstance(entry.get("changed"), str):
        return
    if not isinstance(entry, dict) and now == started:
        return  # cleared while it ran (an entry of an earlier version), the tree unchanged since
    hashed = (now or "").startswith("sha256:")
    if hashed and isinstance(entry, dict) and entry.get("tree") == now:  # as it started, or as reviewed since
        members = _members(entry)
        if session in members:
            members.remove(session)
        if members:
            entry["sessions"] = members
        else:
            data.pop(key, None)
        set_reviewed(data, key, now, hashed_at)  # the tree a guarded session left: what later ones compare
    else:
        at = entry.get("at", "?") if isinstance(entry, dict) else "?"
        why = f"the workspace changed while an earlier session ran (started {at})"
        data[key] = {"tree": now, "changed": why, "changed_at": time.time()}
    save(data)


def _members(entry: dict[str, Any]) -> list[str]:
    """The sessions an entry holds (one that never ends for an entry written before round 25)."""
    members = entry.get("sessions")
    if not isinstance(members, list):
        return [_UNKNOWN_MEMBER]
    return [str(m) for m in members]


def clear_tree_writes(workspace: Path) -> None:
    """The operator reviewed the workspace (``shellrt trust add``): its servers may start again.
    Sessions still running stay members, with the tree as reviewed: what they write after the
    review refuses a session started next (round 25: dropping the entry let that session record
    the write as its own start). Raises `TreeRecordBusy` when the record's lock cannot be had."""
    key = os.path.realpath(workspace)
    hashed_at = time.time()
    reviewed = _digest_now(Path(key))
    with _locked():
        data, problem = _read()
        if problem is not None:
            return
        fold_unmarked(data)
        entry = data.get(key)
        if isinstance(entry, dict):
            members = [m for m in _members(entry) if m != _UNKNOWN_MEMBER]
            if members:
                at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                data[key] = {"tree": reviewed, "at": at, "sessions": members}
            else:
                del data[key]
        review_within(data, key, reviewed, hashed_at)
        save(data)


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """The record's lock (``workspace-writes.json.lock`` beside it: the caller's own, 0600, not
    a link), held around one read-modify-write; `TreeRecordBusy` after `LOCK_TIMEOUT_S`."""
    store = tree_writes_path()
    store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = store.with_name(store.name + ".lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise TreeRecordBusy(exc.errno or errno.EIO, f"its lock {path} cannot be opened ({exc.strerror})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise TreeRecordBusy(errno.EPERM, f"its lock {path} is not a private file of yours (remove it)")
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TreeRecordBusy(
                        errno.EWOULDBLOCK, f"its lock {path} is held by another process for over {LOCK_TIMEOUT_S:g} s"
                    ) from None
                time.sleep(0.01)  # another shellrt's read-modify-write: a few milliseconds
        yield
    finally:
        os.close(fd)  # releases the lock


def _read() -> tuple[dict[str, Any], str | None]:
    path = tree_writes_path()
    try:
        # Never blocks: a FIFO put there hung every guarded start holding the lock (round 26).
        return read_private_json(path) or {}, None
    except UnusableStore as exc:
        return {}, f"{path} {exc} (move it away)"


def _write(data: dict[str, Any]) -> None:
    write_private_json(tree_writes_path(), data)


def save(data: dict[str, Any]) -> None:
    """Write the record, then drop the marks noted outside it (`fold_unmarked` put them in)."""
    _write(data)
    from shellrt.permissions.tree_marks import drop_unmarked

    drop_unmarked()
