"""Marks of sessions that may write a workspace without recording its tree, and what they refuse.

Why: only a session with a hook or stdio server that loads the workspace whole records the tree
(`shellrt.permissions.tree_writes`); a session without one (``shellrt run --sandbox bwrap``, a
`Runtime` with other settings, a batch worker) wrote it unrecorded, and the next session's
server imported the plant (red team round 25, second wave). Hashing the tree in every session
costs 100-250 ms (``shellrt run`` must stay cheap, issue 22), so each session that runs commands
only marks its writable roots (``~marks``: sessions open on a root, and when the last one ended),
under the record's lock, without hashing. A guarded session's clean end and ``shellrt trust add``
keep the tree they saw (``~reviewed``); a guarded start refuses when a mark overlapping its
workspace (the root itself, an ancestor or a descendant) is open or ended after that review and
the tree differs from it. Marks are lines appended to ``workspace-writes.unmarked`` (`shellrt.supervisor._tree_note`:
``shellrt run`` loads nothing of this package), folded into the record by the next holder of its
lock; a note that is not the caller's own marks every path. No command is ever blocked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterable
from typing import Any

from shellrt.supervisor._tree_note import note_path, note_roots, parse_note_line
from shellrt.supervisor.mark_owner import owner_gone

__all__ = [
    "drop_unmarked",
    "fold_unmarked",
    "mark_writable",
    "overlapping_change",
    "review_within",
    "set_reviewed",
    "unmark_writable",
    "unrecorded_writes",
]

MARKS = "~marks"
REVIEWED = "~reviewed"


def overlaps(a: str, b: str) -> bool:
    """One path is the other, or lies inside it (a nested workspace, either way)."""
    a, b = a.rstrip(os.sep) or os.sep, b.rstrip(os.sep) or os.sep
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep) or b.startswith(a.rstrip(os.sep) + os.sep)


def _within(path: str, root: str) -> bool:
    root = root.rstrip(os.sep)
    return path == root or path.startswith(root + os.sep) or root == ""


def mark_writable(roots: Iterable[object], session: str) -> None:
    """A session that may write ``roots`` starts: one appended line (`_tree_note`), no hash."""
    note_roots(roots, session, opening=True)


def unmark_writable(roots: Iterable[object], session: str) -> None:
    """That session ended: its writes, if any, are all made (folded as ``last``: now)."""
    note_roots(roots, session, opening=False)


#: The note's inode and how many bytes of it were folded into the record being written.
_folded: tuple[int, int] | None = None


def fold_unmarked(data: dict[str, Any]) -> None:
    """The note's lines become marks (the caller holds the record's lock and writes it with
    `tree_writes.save`, which then drops the folded lines: folded twice changes nothing but a
    later ``last``). A note that is a link or not the caller's own marks every path."""
    global _folded
    _folded = None
    try:
        # Never blocks: a FIFO there hung the guarded start, the record's lock held (round 26).
        fd = os.open(note_path(), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        _prune(_table(data, MARKS))  # no new lines: the owners of open marks may have died since
        return
    except OSError:
        _apply(data, [{"root": os.sep, "session": "?", "open": False, "at": time.time()}])
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        st = os.fstat(fd)
        raw = b""
        while stat.S_ISREG(st.st_mode) and (chunk := os.read(fd, 1 << 16)):
            raw += chunk
    finally:
        os.close(fd)
    if st.st_uid != os.geteuid() or not stat.S_ISREG(st.st_mode):
        _apply(data, [{"root": os.sep, "session": "?", "open": False, "at": time.time()}])
        return
    _apply(data, _note_lines(raw.decode("utf-8", "replace")))
    _folded = (st.st_ino, len(raw))


def _note_lines(text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        parsed = parse_note_line(line)
        # unreadable: every path, ended now
        root, session, opening, at = parsed if parsed is not None else (os.sep, "?", False, time.time())
        out.append({"root": root, "session": session, "open": opening, "at": at})
    return out


def _apply(data: dict[str, Any], lines: list[dict[str, Any]]) -> None:
    marks = _table(data, MARKS)
    for item in lines:
        mark = marks.get(item["root"])
        members = _open(mark)
        last = mark.get("last", 0.0) if isinstance(mark, dict) else 0.0
        if item["open"]:
            members = [*members, item["session"]] if item["session"] not in members else members
        else:
            members, last = [m for m in members if m != item["session"]], max(float(last), item["at"])
        marks[item["root"]] = {"open": members, "last": last}
    _prune(marks)


def _prune(marks: dict[str, Any]) -> None:
    """Ended marks of roots that no longer exist (a test's or a run's removed directory): nothing
    is left there to load; a directory made there later by a sandboxed session is its parent's,
    marked as such. Keeps the record from growing with every temporary workspace. Before that,
    a session whose owner process died (SIGKILL before its end, `shellrt.supervisor.mark_owner`) ends now:
    its writes are all made (its sandbox died with it), and the mark counts as ended after
    every earlier review (round 26: it stayed open for good, refusing every change even after
    ``shellrt trust add``)."""
    now = time.time()
    for root, mark in list(marks.items()):
        members = _open(mark)
        alive = [m for m in members if not owner_gone(m)]
        if len(alive) != len(members):
            last = mark.get("last", 0.0) if isinstance(mark, dict) else 0.0
            last = float(last) if isinstance(last, (int, float)) else now
            marks[root] = {"open": alive, "last": max(last, now)}
    for root in [r for r, m in marks.items() if not _open(m) and not os.path.lexists(r)]:
        del marks[root]


def drop_unmarked() -> None:
    """After the record holding the folded lines was written: remove them from the note (lines
    appended since stay; appenders wait on the lock and retry on a replaced file)."""
    global _folded
    folded, _folded = _folded, None
    if folded is None:
        return
    path = note_path()
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_ino != folded[0]:
                return
            os.lseek(fd, folded[1], os.SEEK_SET)
            rest = b""
            while chunk := os.read(fd, 1 << 16):
                rest += chunk
            if rest:
                tmp = path.with_name(path.name + ".new")
                tmp.unlink(missing_ok=True)
                new = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                with os.fdopen(new, "wb") as fh:
                    fh.write(rest)
                os.replace(tmp, path)
            else:
                path.unlink()
        finally:
            os.close(fd)


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name)
    if not isinstance(table, dict):
        table = data[name] = {}
    return table


def _open(mark: object) -> list[str]:
    members = mark.get("open") if isinstance(mark, dict) else None
    return [str(m) for m in members] if isinstance(members, list) else []


def _reviewed_at(data: dict[str, Any], key: str) -> float:
    """When ``key`` was last seen as reviewed: its own review or a review of a workspace holding it."""
    at = 0.0
    for path, seen in _table(data, REVIEWED).items():
        if _within(key, path) and isinstance(seen, dict) and isinstance(seen.get("at"), (int, float)):
            at = max(at, float(seen["at"]))
    return at


def set_reviewed(data: dict[str, Any], key: str, tree: str | None, at: float) -> None:
    """The tree a guarded session left unchanged, hashed at ``at``."""
    _table(data, REVIEWED)[key] = {"tree": tree, "at": at}


def review_within(data: dict[str, Any], key: str, tree: str | None, at: float) -> None:
    """``shellrt trust add``: ``key`` is as reviewed; marks within it that no running session
    holds are gone, and so are the changed records of workspaces inside it that no session runs
    on. An ancestor's mark or record stays (this review does not cover its other files): it
    stops counting for ``key`` only (`unrecorded_writes`, `overlapping_change` compare times)."""
    set_reviewed(data, key, tree, at)
    marks = _table(data, MARKS)
    for root in [r for r in marks if _within(r, key) and not _open(marks[r])]:
        del marks[root]
    for path in [p for p in data if not p.startswith("~") and p != key and _within(p, key)]:
        entry = data[path]
        if not isinstance(entry, dict) or not isinstance(entry.get("sessions"), list) or not entry["sessions"]:
            del data[path]


def overlapping_change(data: dict[str, Any], key: str) -> str | None:
    """A changed record of a workspace holding ``key`` or inside it, made after ``key``'s review."""
    reviewed = _reviewed_at(data, key)
    for path, entry in data.items():
        if path.startswith("~") or path == key or not overlaps(path, key) or not isinstance(entry, dict):
            continue
        why, at = entry.get("changed"), entry.get("changed_at")
        if isinstance(why, str) and not (isinstance(at, (int, float)) and at <= reviewed):
            return f"{why} on {path}, which overlaps this workspace"
    return None


def unrecorded_writes(data: dict[str, Any], key: str, now: str | None, session: str) -> str | None:
    """Why a guarded start on ``key`` (tree ``now``) is refused by marks: a session other than
    ``session`` may have written it unrecorded since the tree was last left or reviewed, and the
    tree is not that one."""
    seen = _table(data, REVIEWED).get(key)
    if isinstance(seen, dict) and seen.get("tree") == now:
        return None
    reviewed = _reviewed_at(data, key)
    for root, mark in _table(data, MARKS).items():
        if not isinstance(root, str) or not overlaps(root, key):
            continue
        others = [m for m in _open(mark) if m != session]
        last = mark.get("last") if isinstance(mark, dict) else None
        if others or not isinstance(last, (int, float)) or last > reviewed:
            state = "is running" if others else f"ended {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(last or 0))}"
            return (
                f"a sandboxed session that did not record the tree could write {root} (it {state}) and the "
                "workspace is not as a session recording it left it, nor as reviewed"
            )
    return None
