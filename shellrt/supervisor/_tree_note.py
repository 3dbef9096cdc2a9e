"""A session that may write its roots says so, cheaply: one appended line beside the record.

Why: every session that runs commands must leave a mark a later guarded start can see
(`shellrt.permissions.tree_marks`, red team round 25), and ``shellrt run`` must stay cheap
(issue 22: nothing of ``shellrt.permissions`` on its path). A line appended to
``workspace-writes.unmarked`` (the record's directory) under a shared `flock` costs a few
syscalls; the next holder of the record's lock folds the lines into it under an exclusive one.
Never raises: a note that cannot be written leaves the record as it was, and a note that is not
the caller's own file marks every path when folded (fails closed). Opened non-blocking and used
only when it is a regular file: a FIFO planted in its place (by a command that reaches the
directory) hung the writer in ``open()``, and with it the session's close (round 26, wave 3).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["COMPACT_BYTES", "note_path", "note_roots", "parse_note_line"]

#: A note past this size is compacted by the writer that finds it so (`_compact`): a machine whose
#: sessions are never guarded (only ``shellrt run``) has no folder, and the note grew ~300 bytes a run.
COMPACT_BYTES = 1 << 20

#: How the note is opened: never through a link, and never waiting for a FIFO's other end
#: (``O_NONBLOCK`` changes nothing for a regular file; `flock` still waits for the folder).
_NO_WAIT = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def note_path() -> Path:
    """``workspace-writes.unmarked`` beside the trust store (as `trust_paths.trust_store_path`)."""
    explicit = os.environ.get("SHELLRT_TRUST_STORE")
    if explicit:
        return Path(explicit).with_name("workspace-writes.unmarked")
    from shellrt.supervisor._caller_home import caller_home  # the trust store's home (round 43)

    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(caller_home(), ".config")
    return Path(config) / "shellrt" / "workspace-writes.unmarked"


def note_roots(roots: Iterable[object], session: str, *, opening: bool) -> None:
    """Append ``session`` opening (or ending) on each root; retried once when the folder took the file."""
    at = time.time()  # an end's time: the last write it may have made (folded later as ``last``)
    lines = "".join(
        json.dumps({"root": os.path.realpath(str(r)), "session": session, "open": opening, "at": at}) + "\n"
        for r in roots
    )
    path = note_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for _ in range(3):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NO_WAIT, 0o600)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return  # a FIFO or device: no line (the fold marks every path for it)
                fcntl.flock(fd, fcntl.LOCK_SH)  # the folder reads and removes it under LOCK_EX
                try:
                    same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if not same:
                    continue  # folded and removed while we waited: append to the new one
                os.write(fd, lines.encode())
                if os.fstat(fd).st_size > COMPACT_BYTES:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    _compact(path)
                return
            finally:
                os.close(fd)


def parse_note_line(line: str) -> tuple[str, str, bool, float] | None:
    """(root, session, opening, when) of one note line, None when unreadable; a root that is not
    an absolute path reads as ``/`` (every path: fails closed). The fold and `_compact` both read
    lines through this, so a compacted note folds as the note did."""
    try:
        item = json.loads(line)
        root, session, opening, at = item["root"], str(item["session"]), bool(item["open"]), float(item["at"])
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(root, str) or not root.startswith(os.sep):
        root = os.sep
    return root, session, opening, at


def _compact(path: Path) -> None:
    """Rewrite the note as what folding it would keep: per root, the sessions still open and one
    ended line at the latest end (``shellrt.permissions.tree_marks._apply`` reads an end of a session
    it never saw open as just that time). Under the exclusive lock, replaced by rename, so appenders
    waiting on the old file retry on the new one and a folder holding the old one's length drops
    nothing (another inode). Unreadable lines stay as they are (they fold to "every path")."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | _NO_WAIT)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return  # not ours to rewrite: the fold marks every path for it
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.stat(path, follow_symlinks=False).st_ino != os.fstat(fd).st_ino:
                return  # folded or compacted meanwhile
            raw = b""
            while chunk := os.read(fd, 1 << 16):
                raw += chunk
            opened: dict[str, dict[str, float]] = {}
            ended: dict[str, float] = {}
            kept: list[str] = []
            for line in raw.decode("utf-8", "replace").splitlines():
                parsed = parse_note_line(line)
                if parsed is None:
                    kept.append(line)
                    continue
                root, session, opening, at = parsed
                if opening:
                    opened.setdefault(root, {})[session] = at
                else:
                    if opened.get(root, {}).pop(session, None) is None:
                        kept.append(line)  # an end whose open was folded already: keep as it is
                    ended[root] = max(ended.get(root, at), at)
            out = [*kept]
            for root, sessions in opened.items():
                out += [
                    json.dumps({"root": root, "session": s, "open": True, "at": at})
                    for s, at in sessions.items()
                ]
            # An ended root that no longer exists is pruned when folded (a test's or a run's removed
            # directory): its line would only be dropped there.
            out += [
                json.dumps({"root": r, "session": "~compacted", "open": False, "at": at})
                for r, at in ended.items()
                if os.path.lexists(r) or opened.get(r)
            ]
            tmp = path.with_name(path.name + ".compact")
            tmp.unlink(missing_ok=True)
            new = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(new, "w", encoding="utf-8") as fh:
                fh.write("".join(f"{line}\n" for line in out))
            os.replace(tmp, path)
        finally:
            os.close(fd)
