"""``shellrt sessions``: list, show and remove persisted sessions (transcripts hold secrets: clean up).

Sessions live in the per-user state directory (`shellrt.runtime.session.session_root`);
sessions untouched for `SESSION_RETENTION_DAYS` are also pruned whenever a new one starts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

from shellrt.cli._sandbox_options import non_negative_number

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sessions`` sub-command."""
    parser = subparsers.add_parser(
        "sessions",
        help="list, show or remove persisted sessions (transcripts, state)",
        description="Read and clean the sessions under the state directory ($XDG_STATE_HOME/shellrt/sessions).",
    )
    parser.add_argument("action", choices=("ls", "show", "rm"), help="what to do")
    parser.add_argument("ids", nargs="*", metavar="ID", help="session ids (show: one; rm: one or more)")
    parser.add_argument("--json", action="store_true", help="machine-readable output (ls, show)")
    parser.add_argument(
        "--older-than", type=non_negative_number, metavar="DAYS", help="rm: remove every session untouched for DAYS days"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="rm: remove sessions in use too (a running session's directory goes from under it)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Execute ``shellrt sessions``; 0 on success, 1 when a session is missing, 2 on misuse."""
    from shellrt.supervisor._inflight import session_root

    root = session_root()
    try:
        return _run(args, root)
    except _Unlisted as exc:
        print(f"shellrt sessions: {shown(str(exc))}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, root: Path) -> int:
    if args.action == "ls":
        rows = [row for row in map(_summary, _sessions(root)) if row is not None]
        if args.json:
            print(json.dumps(rows))
        elif not rows:
            print(f"no sessions under {root}")
        else:
            for row in rows:
                stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["modified"]))
                # Escaped: any process of the caller's names a directory there (round 55).
                print(f"{shown(row['id']):<24} {stamp}  {row['calls']:>5} calls  {row['bytes']:>10} bytes")
        return 0
    if args.action == "show":
        if len(args.ids) != 1:
            print(
                "shellrt sessions show: give exactly one session ID (see `shellrt sessions ls`)",
                file=sys.stderr,
            )
            return 2
        directory = _find(root, args.ids[0])
        if directory is None:
            return 1
        transcript = directory / "transcript.jsonl"
        if not transcript.is_file():
            return 0
        # Line by line: a long session's transcript is gigabytes (round 16: read whole, it cost
        # the host that much memory twice over). A line that is not UTF-8 is shown escaped.
        with transcript.open(encoding="utf-8", errors="surrogateescape") as fh:
            for raw in fh:
                line = raw.rstrip("\n")
                # Escaped: the model chose tool names and inputs, a client the ids (see `_terminal`).
                print(shown(line) if args.json else _one_line(line))
        return 0
    # rm
    if args.older_than is None and not args.ids:
        print("shellrt sessions rm: give session IDs or --older-than DAYS", file=sys.stderr)
        return 2
    targets: list[Path] = []
    status = 0
    for session_id in args.ids:
        found = _find(root, session_id)
        if found is None:
            status = 1
        else:
            targets.append(found)
    if args.older_than is not None:
        cutoff = time.time() - args.older_than * 86400
        targets += [d for d in _sessions(root) if _modified(d) < cutoff and d not in targets]
    for directory in targets:
        if not _remove(directory, force=args.force):
            status = 1
    return status


def _remove(directory: Path, *, force: bool) -> bool:
    """Remove a session unless it is in use (or that cannot be told) and not ``force``; whether it went.

    Why: a live session's transcript, spools and results went from under it (round 26, wave 3)."""
    from shellrt.runtime.session_dir import lock_for_removal

    held = lock_for_removal(directory)
    if isinstance(held, str) and not force:
        print(
            f"shellrt sessions rm: kept {directory.name} ({directory}): {held}; end that session "
            f"first, or remove it anyway with `shellrt sessions rm {directory.name} --force`",
            file=sys.stderr,
        )
        return False
    try:
        shutil.rmtree(directory)
    finally:
        if isinstance(held, int):
            os.close(held)
    print(f"removed {shown(str(directory))}")
    return True


def _sessions(root: Path) -> list[Path]:
    """The session directories under ``root``, oldest first (none when ``root`` does not exist).

    Judged entry by entry: sorted by one ``stat`` inside one ``try``, a single entry that could not
    be stat'ed (a dangling symlink, a directory a concurrent prune removed meanwhile) emptied the
    whole listing, and ``rm --older-than`` removed nothing and exited 0 (red team round 56)."""
    try:
        names = list(root.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:  # there, but not listable: never "no sessions" (the transcripts stay)
        raise _Unlisted(f"cannot list {root} ({exc.strerror or exc})") from None
    found: list[tuple[float, Path]] = []
    for entry in names:
        try:
            st = entry.lstat()
            if stat.S_ISDIR(st.st_mode) and ((entry / "state.json").exists() or (entry / "transcript.jsonl").exists()):
                found.append((st.st_mtime, entry))
        except OSError:
            continue  # gone meanwhile, or not a session's to judge
    return [entry for _, entry in sorted(found)]


class _Unlisted(OSError):
    """The sessions directory exists but cannot be listed."""


def _find(root: Path, session_id: str) -> Path | None:
    directory = root / session_id
    if "/" in session_id or session_id in ("", ".", "..") or directory not in _sessions(root):
        print(
            f"shellrt sessions: no session {session_id!r} under {root} (see `shellrt sessions ls`)",
            file=sys.stderr,
        )
        return None
    return directory


def _modified(directory: Path) -> float:
    """When ``directory`` last changed; +inf when it is gone meanwhile (nothing to remove)."""
    try:
        return directory.lstat().st_mtime
    except OSError:
        return float("inf")


def _summary(directory: Path) -> dict[str, Any] | None:
    """One row of ``ls``; None for a session removed while it was being listed."""
    transcript = directory / "transcript.jsonl"
    calls = 0
    try:
        if transcript.is_file():
            with transcript.open("rb") as fh:  # bytes: a transcript not UTF-8 stopped the whole listing
                calls = sum(1 for line in fh if b'"type": "call"' in line)
        size = sum(p.lstat().st_size for p in directory.rglob("*") if p.is_file() and not p.is_symlink())
        modified = directory.lstat().st_mtime
    except OSError:
        return None
    return {
        "id": directory.name,
        "path": str(directory),
        "modified": modified,
        "calls": calls,
        "bytes": size,
    }


def shown(text: str) -> str:
    """``text`` escaped for the terminal (`shellrt.cli._terminal`; imported when a session is shown)."""
    from shellrt.cli._terminal import shown as escaped

    return escaped(text)


def _one_line(line: str) -> str:
    try:
        entry = json.loads(line)
    except ValueError:
        return shown(line)
    stamp = time.strftime("%H:%M:%S", time.localtime(entry.get("ts", 0)))
    if entry.get("type") != "call":
        rest = json.dumps({k: v for k, v in entry.items() if k not in ("ts", "type")})
        # Cut as a call line's input is: a start line carries the whole input (a 2 MB Write).
        return shown(f"{stamp} {entry.get('type')}: {rest[:400]}")
    flag = "ERROR" if entry.get("is_error") else "ok"
    how = "replayed" if entry.get("replayed") else ("ran" if entry.get("ran") else "not run")
    given = json.dumps(entry.get("executed_input", entry.get("input")), ensure_ascii=False)
    return shown(f"{stamp} {entry.get('tool_use_id')} {entry.get('tool_name')} [{flag}, {how}] {given[:200]}")
