"""Pure-Python search with ripgrep's results, for machines without ``rg``.

The walk comes from `shellrt.tools._gitignore` (ripgrep's ignore rules); the
matching follows ripgrep's model: a line-by-line search unless ``multiline``
(then the whole file, with ``.`` matching newlines, and every line a match
touches counts as a matching line); files containing a NUL byte are binary
and skipped (the ripgrep backend drops them the same way); a UTF-8 BOM is
stripped. Regex dialect: Python's ``re`` — patterns using syntax only one of
the two engines knows (``\\p{L}`` vs look-around) fail with a clear message.

``re`` backtracks: ``(a+)+b`` over a line of 40 ``a`` runs for hours, and a
thread cannot be stopped. So a search runs in a child process (`serve`, started
by `shellrt.tools._search`) that is killed at the deadline; it imports only what
the search needs, so it starts in about the time of a bare interpreter.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
import re
import signal
import stat
import sys
from pathlib import Path
from typing import Any

from sandbox import confine
from shellrt.tools import _search_types
from shellrt.tools._gitignore import GlobList, TooManyIgnoreRulesError, TypeFilter, walk_entries, walk_files
from shellrt.tools._search_types import KEPT_LINE_CHARS, MAX_HIT_LINES, FileHits, GrepQuery, TooManyHitsError

__all__ = [
    "MAX_SEARCH_BYTES",
    "SEARCH_MEMORY_BYTES",
    "TOO_MANY_FILES_EXIT",
    "TOO_MANY_HITS_EXIT",
    "TOO_MANY_RULES_EXIT",
    "TooManyFilesError",
    "compile_query",
    "decode_results",
    "encode_query",
    "python_list_files",
    "python_search",
    "serve",
]

#: Text files above this are not searched by the Python walker (memory stays bounded; ripgrep,
#: which streams, has no such limit).
MAX_SEARCH_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20
#: `serve`'s exit status when the search found more than `MAX_HIT_LINES` lines.
TOO_MANY_HITS_EXIT = 3
#: ... more than `MAX_LISTED_FILES` matching files.
TOO_MANY_FILES_EXIT = 4
#: ... ignore files with more rules than a walk obeys (its message on stderr).
TOO_MANY_RULES_EXIT = 5
#: The search process's address space: a walk of a hostile tree costs the host no more.
SEARCH_MEMORY_BYTES = 4 << 30


class TooManyFilesError(TooManyHitsError):
    """Raised by a search that found more than `MAX_LISTED_FILES` matching files."""


def python_list_files(
    root: Path,
    root_fd: int | None = None,
    max_files: int | None = None,
    deadline: float | None = None,
    obey_ignores: bool = True,
    skip: tuple[str, ...] = (),
    top: str | None = None,
) -> list[str]:
    """What ``rg --files`` (with our flags) lists under ``root`` (anchored at ``root_fd`` when given);
    raises `TooManyHitsError` past ``max_files`` (default `MAX_LISTED_FILES`) paths and
    `WalkTimeoutError` past ``deadline`` (`time.monotonic`). ``skip``: masked places, never entered."""
    bound = _search_types.MAX_LISTED_FILES if max_files is None else max_files
    listed: list[str] = []
    overrides = GlobList.parse(["!.git"])
    for path in walk_files(
        root,
        overrides=overrides,
        root_fd=root_fd,
        deadline=deadline,
        obey_ignores=obey_ignores,
        skip=skip,
        top=top,
    ):
        listed.append(path)
        if len(listed) > bound:
            raise TooManyHitsError(len(listed))
    return listed


def compile_query(query: GrepQuery) -> re.Pattern[str]:
    """The query's regex; a bad pattern raises `ToolExecutionError` saying how to fix it."""
    from shellrt.protocol import ToolExecutionError  # here: the search process must not import it

    flags = re.IGNORECASE if query.ignore_case else 0
    if query.multiline:
        flags |= re.MULTILINE | re.DOTALL
    try:
        return re.compile(query.pattern, flags)
    except re.error as exc:
        raise ToolExecutionError(
            f"Invalid regular expression {query.pattern!r}: {exc}. Escape regex metacharacters "
            "(e.g. \\( \\. \\[) to search for them literally."
        ) from None


def _open_at(name: str, dir_fd: int | None) -> int | None:
    """A regular file's fd, opened without following a symlink (relative to ``dir_fd`` when given)."""
    try:
        if dir_fd is not None:
            return confine.open_beneath(dir_fd, name)  # never opens a FIFO or device it walked past
        return os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None


def _read_at(name: str, dir_fd: int | None) -> bytes | None:
    """A regular file's bytes (`_read_fd`), opened as `_open_at` opens it."""
    fd = _open_at(name, dir_fd)
    return None if fd is None else _read_fd(fd)


class _Linked:
    """Hits already found for a file with more than one name (its `confine.Stamp`): its other
    names are not read again (round 37: 50 links of a 1 GB file were read 50 times). The change
    time is part of the key: a file made under the searched one's freed inode number, with its
    size and modification time put back, was given its hits (red team round 53)."""

    def __init__(self, skip_inodes: tuple[tuple[int, int], ...] | None = ()) -> None:
        self._found: dict[confine.Stamp, FileHits | None] = {}
        #: Masked files' inodes (`GrepQuery.skip_inodes`): their other names are never read.
        self._skip = None if skip_inodes is None else frozenset(skip_inodes)

    def search(self, fd: int | None, rx: re.Pattern[str], query: GrepQuery, room: int) -> FileHits | None:
        """`_search_file` of the file ``fd`` (consumed), or what a name of it already found."""
        if fd is None:
            return None
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        if st.st_nlink < 2 or not stat.S_ISREG(st.st_mode):
            return _search_file(_read_fd(fd), rx, query, room)
        key = confine.stamp(st)
        if self._skip is None or (st.st_dev, st.st_ino) in self._skip:
            os.close(fd)
            return None
        if key in self._found:
            os.close(fd)
            return self._found[key]
        found = self._found[key] = _search_file(_read_fd(fd), rx, query, room)
        return found


def _read_fd(fd: int) -> bytes | None:
    """Bytes of a regular file fd (consumed); None for anything else.

    Read in chunks: the first NUL byte ends it (binary: skipped, as ripgrep skips it). At most
    `MAX_SEARCH_BYTES` are read -- a sparse file of terabytes costs one chunk, not the host's
    memory -- and a longer text file is searched in its lines within them: it was skipped whole,
    so ``eval`` on line 1 of a 257 MiB file was "No matches found." (red team round 37).
    """
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        with os.fdopen(os.dup(fd), "rb") as fh:
            fh.seek(0)
            while size < MAX_SEARCH_BYTES and (chunk := fh.read(min(_CHUNK, MAX_SEARCH_BYTES - size))):
                size += len(chunk)
                if b"\x00" in chunk:
                    return None
                chunks.append(chunk)
            cut = size >= MAX_SEARCH_BYTES and fh.read(1) != b""
        data = b"".join(chunks)
        if cut:  # the last line may go on past the bound: search whole lines only
            end = data.rfind(b"\n")
            data = data[: end + 1] if end >= 0 else data
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


def _search_file(
    data: bytes | None, rx: re.Pattern[str], query: GrepQuery, room: int = MAX_HIT_LINES
) -> FileHits | None:
    """The file's hits; raises `TooManyHitsError` when they would pass ``room`` lines."""
    if data is None:
        return None
    if b"\x00" in data:
        return None
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    matched: list[int] = []
    if query.multiline:
        newlines = [m.start() for m in re.finditer("\n", text)]
        seen: set[int] = set()
        for m in rx.finditer(text):
            first = bisect.bisect_left(newlines, m.start()) + 1
            last = bisect.bisect_left(newlines, m.end() - 1) + 1 if m.end() > m.start() else first
            for n in range(first, min(last, len(lines)) + 1):
                if n not in seen:
                    seen.add(n)
                    matched.append(n)
            if len(matched) > room:
                raise TooManyHitsError(len(matched))
            if matched and query.files_only:
                break
        matched.sort()
    else:
        for n, line in enumerate(lines, 1):
            if rx.search(line):
                matched.append(n)
                if query.files_only:
                    break
                if len(matched) > room:
                    raise TooManyHitsError(len(matched))
    if not matched:
        return None
    hits = FileHits()
    if query.files_only:
        return hits
    for n in matched:
        for c in range(max(1, n - query.before), min(len(lines), n + query.after) + 1):
            hits.lines.setdefault(c, (lines[c - 1][:KEPT_LINE_CHARS], False))
    for n in matched:
        hits.lines[n] = (lines[n - 1][:KEPT_LINE_CHARS], True)
    if len(hits.lines) > room:
        raise TooManyHitsError(len(hits.lines))
    return hits


def python_search(query: GrepQuery) -> dict[str, FileHits]:
    """Search like ripgrep; keys are paths relative to ``query.root`` (or the file's own path).

    Raises `TooManyHitsError` past `MAX_HIT_LINES` kept lines.
    """
    rx = compile_query(query)
    results: dict[str, FileHits] = {}
    if query.single_file is not None:
        data = (
            _read_fd(os.dup(query.file_fd))
            if query.file_fd is not None
            else _read_at(str(query.single_file), None)
        )
        found = _search_file(data, rx, query)
        if found is not None:
            results[str(query.single_file)] = found
        return results
    if query.only is not None:
        return _search_only(query, rx)
    overrides = GlobList.parse([*query.globs, "!.git"])
    types = TypeFilter.for_type(query.file_type) if query.file_type else None
    kept = 0
    linked = _Linked(query.skip_inodes)
    for rel, dir_fd, name in walk_entries(
        query.root,
        overrides=overrides,
        types=types,
        root_fd=query.root_fd,
        obey_ignores=query.obey_ignores,
        skip=query.skip,
        top=query.top,
    ):
        found = linked.search(_open_at(name, dir_fd), rx, query, MAX_HIT_LINES - kept)
        if found is not None:
            results[rel] = found
            if len(results) > _search_types.MAX_LISTED_FILES:
                raise TooManyFilesError(len(results))
            kept += len(found.lines)
            if kept > MAX_HIT_LINES:
                raise TooManyHitsError(kept)
    return results


def _search_only(query: GrepQuery, rx: re.Pattern[str]) -> dict[str, FileHits]:
    """`python_search` of the paths ``query.only`` alone, each opened below the anchored root
    without following a symlink (`confine.open_beneath`)."""
    results: dict[str, FileHits] = {}
    kept = 0
    linked = _Linked(query.skip_inodes)  # a masked file's other name is not read here either (round 53)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    top = os.dup(query.root_fd) if query.root_fd is not None else os.open(str(query.root), flags)
    try:
        for rel in query.only or ():
            found = linked.search(_open_at(rel, top), rx, query, MAX_HIT_LINES - kept)
            if found is not None:
                results[rel] = found
                kept += len(found.lines)
                if kept > MAX_HIT_LINES:
                    raise TooManyHitsError(kept)
    finally:
        os.close(top)
    return results


# --- the search process ---------------------------------------------------------------------------


def encode_query(query: GrepQuery, deadline_s: float) -> bytes:
    """What `serve` reads on stdin (its fds are passed to the child under the same numbers)."""
    fields = {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(query).items()}
    return json.dumps({"query": fields, "deadline_s": deadline_s}).encode()


def _decode_query(raw: dict[str, Any]) -> GrepQuery:
    fields = dict(raw)
    fields["root"] = Path(fields["root"])
    if fields["single_file"] is not None:
        fields["single_file"] = Path(fields["single_file"])
    fields["globs"] = tuple(fields["globs"])
    if fields.get("only") is not None:
        fields["only"] = tuple(fields["only"])
    fields["skip"] = tuple(fields.get("skip", ()))
    inodes = fields.get("skip_inodes", ())
    fields["skip_inodes"] = None if inodes is None else tuple((int(d), int(i)) for d, i in inodes)
    return GrepQuery(**fields)


def decode_results(data: bytes) -> dict[str, FileHits]:
    """`serve`'s stdout back into hits (paths keep their undecodable bytes as surrogates)."""
    results: dict[str, FileHits] = {}
    for path, lines in json.loads(data).items():
        results[path] = FileHits({int(n): (text, bool(match)) for n, text, match in lines})
    return results


def serve() -> None:
    """The child's entry: one query (or listing) on stdin, its hits (or paths) as JSON on stdout.

    It ends itself at the deadline (SIGALRM's default action) even if its parent is gone.
    """
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (SEARCH_MEMORY_BYTES, SEARCH_MEMORY_BYTES))
    request = json.loads(sys.stdin.buffer.read())
    signal.alarm(max(1, int(request["deadline_s"]) + 1))
    encoded: object
    try:
        if "list" in request:  # Glob's listing: ``{"list": {"root": ..., "root_fd": ..., "max_files": ...}}``
            listing = request["list"]
            encoded = python_list_files(
                Path(listing["root"]),
                listing["root_fd"],
                listing["max_files"],
                obey_ignores=listing.get("obey_ignores", True),
                skip=tuple(listing.get("skip", ())),
                top=listing.get("top"),
            )
        else:
            hits = python_search(_decode_query(request["query"]))
            encoded = {
                path: [[n, text, match] for n, (text, match) in h.lines.items()] for path, h in hits.items()
            }
    except TooManyFilesError:
        sys.exit(TOO_MANY_FILES_EXIT)
    except TooManyHitsError:
        sys.exit(TOO_MANY_HITS_EXIT if "query" in request else TOO_MANY_FILES_EXIT)
    except TooManyIgnoreRulesError as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(TOO_MANY_RULES_EXIT)
    sys.stdout.buffer.write(json.dumps(encoded).encode())
    sys.stdout.buffer.flush()
