"""File listing and regex search: ripgrep when installed, the pure-Python twin otherwise.

Both backends must return the same results (tests run both over one tree).
To make that achievable, ripgrep is run with fixed, environment-independent
flags (no config file, no global gitignore, .gitignore honoured with or
without a git repository, hidden files included, ``.git`` excluded), file
types are passed as explicit globs (``--type-add``) instead of ripgrep's
version-dependent built-ins, and files containing a NUL byte are dropped from
ripgrep's results just as the fallback skips them. Set ``SHELLRT_NO_RIPGREP=1``
to force the fallback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from sandbox import confine
from sandbox._hostpath import host_which
from sandbox.errors import SandboxError
from shellrt.protocol import ToolExecutionError
from shellrt.tools import _search_types
from shellrt.tools._binary_judge import NUL_CHECK_CALL_BYTES, BinaryJudge, stream_has_nul
from shellrt.tools._fifo_wait import watch_for_fifo
from shellrt.tools._gitignore import FILE_TYPES, TooManyIgnoreRulesError, WalkTimeoutError, gitfile_along
from shellrt.tools._grep_python import (
    TOO_MANY_FILES_EXIT,
    TOO_MANY_HITS_EXIT,
    TOO_MANY_RULES_EXIT,
    compile_query,
    decode_results,
    encode_query,
    python_list_files,
)
from shellrt.tools._hostchild import calm_argv
from shellrt.tools._ignore_guard import guarded
from shellrt.tools._offloop import off_loop
from shellrt.tools._search_types import (
    KEPT_LINE_CHARS,
    MAX_HIT_LINES,
    FileHits,
    GrepQuery,
    TooManyHitsError,
    too_many_files,
    too_many_hits,
)

__all__ = [
    "NO_RIPGREP_ENV",
    "RG_DATA_BYTES",
    "OutputSink",
    "RgRunner",
    "Shown",
    "drain_after_send",
    "drain_output",
    "has_nul",
    "list_files",
    "newest_first",
    "ripgrep_binary",
    "search",
    "stream_has_nul",
]

NO_RIPGREP_ENV = "SHELLRT_NO_RIPGREP"
_COMMON = ("--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-messages")
_TIMEOUT_S = 60.0
#: Data (heap) a ripgrep may hold, host or sandbox: it reads an ignore file whole and follows a
#: symlinked one, so ``.gitignore -> /dev/zero`` grew it by gigabytes a second (red team round 42).
#: Past it ripgrep aborts (SIGABRT) and the walker answers. Its searches need tens of megabytes.
RG_DATA_BYTES = 1 << 30
#: How long the Python search may run before its process is killed (the tool's deadline).
PYTHON_SEARCH_TIMEOUT_S = 60.0

#: The search process imports the three modules it needs without running the packages'
#: ``__init__`` (pydantic, anyio and every tool would triple its start-up time).
_BOOTSTRAP = """
import sys, types
for name, path in zip(("shellrt", "shellrt.tools", "shellrt.permissions", "sandbox"), sys.argv[1:5]):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from shellrt.tools._grep_python import serve
serve()
"""
_TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
#: shellrt, shellrt.tools, shellrt.permissions and sandbox, in `_BOOTSTRAP`'s order.
_PACKAGE_DIRS = (
    os.path.dirname(_TOOLS_DIR),
    _TOOLS_DIR,
    os.path.join(os.path.dirname(_TOOLS_DIR), "permissions"),
    os.path.dirname(os.path.abspath(confine.__file__)),
)


def ripgrep_binary() -> str | None:
    """Path of ``rg``, or None when absent or disabled through ``SHELLRT_NO_RIPGREP``."""
    if os.environ.get(NO_RIPGREP_ENV, "").strip() not in ("", "0"):
        return None
    return host_which("rg")  # never a ripgrep a sandboxed command wrote: it runs on the host


#: Takes ripgrep's stdout chunk by chunk; returns False to stop the search (ripgrep is killed).
OutputSink = Callable[[bytes], bool]
#: Runs ripgrep somewhere else (inside the sandbox): ``(argv, cwd, sink) -> (exit code, stdout,
#: stderr)``; with a sink, stdout goes to it instead (and comes back empty).
RgRunner = Callable[[list[str], str, OutputSink | None], Awaitable[tuple[int, bytes, bytes]]]
#: stderr kept of a ripgrep run (its messages; a flood of them is cut).
_MAX_STDERR = 64 * 1024


class _SearchStoppedError(ToolExecutionError):
    """Raised by the walker's process when it stopped past `MAX_HIT_LINES` lines or
    `MAX_LISTED_FILES` files (`_walker_search` may search again without the refused files)."""


class _RgUnavailable(Exception):
    """Raised when ripgrep could not run inside the sandbox; the Python walker searches instead."""


async def drain_output(
    stdout: anyio.abc.ByteReceiveStream | None,
    stderr: anyio.abc.ByteReceiveStream | None,
    sink: OutputSink | None,
    stop: Callable[[], Awaitable[None]],
) -> tuple[bytes, bytes]:
    """Read a process's stdout (into ``sink`` when given) and stderr (bounded) to their ends,
    concurrently; ``stop`` (kill the process) when the sink asks to."""
    out, err = bytearray(), bytearray()

    async def read_out() -> None:
        if stdout is None:
            return
        async for chunk in stdout:
            if sink is None:
                out.extend(chunk)
            # In a worker thread: the sink parses up to megabytes and may judge each new file by
            # the session's rules (`_LineHits`, round 42); neither belongs in the event loop.
            elif not await anyio.to_thread.run_sync(sink, chunk):
                await stop()
                return

    async def read_err() -> None:
        if stderr is not None:
            async for chunk in stderr:
                err.extend(chunk[: max(0, _MAX_STDERR - len(err))])

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_out)
        tg.start_soon(read_err)
    return bytes(out), bytes(err)


async def _run_rg(
    args: list[str],
    cwd: Path,
    cwd_fd: int | None = None,
    runner: tuple[RgRunner, str] | None = None,
    sink: OutputSink | None = None,
) -> tuple[int, bytes, bytes]:
    """Run ripgrep in ``cwd`` — entered through ``cwd_fd`` when given (the anchored directory itself,
    whatever its path names by then) — or through ``runner`` in the sandbox path it names.
    ``sink``: stdout is streamed into it rather than collected (see `OutputSink`)."""
    if runner is not None:
        run, sandbox_cwd = runner
        try:
            with anyio.fail_after(_TIMEOUT_S):
                code, out, err = await run(args, sandbox_cwd, sink)
        except SandboxError as exc:
            raise _RgUnavailable(str(exc)) from None
        except TimeoutError:  # as on the host: "failed unexpectedly: TimeoutError" before (round 41)
            raise ToolExecutionError(_too_slow()) from None
        if code in (126, 127):  # ripgrep is not reachable inside the sandbox
            raise _RgUnavailable(err.decode(errors="replace"))
        return code, out, err
    where = str(cwd) if cwd_fd is None else f"/proc/self/fd/{cwd_fd}"
    passed = () if cwd_fd is None else (cwd_fd,)
    process = await anyio.open_process(
        calm_argv(_bounded_argv(args)),
        cwd=where,
        stdin=subprocess.DEVNULL,
        pass_fds=passed,
        env=_host_child_env(cwd),
    )
    stuck = False
    try:
        with anyio.move_on_after(_TIMEOUT_S) as scope:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    nonlocal stuck
                    await watch_for_fifo(process.pid)
                    stuck = True
                    process.kill()

                tg.start_soon(watch)
                out, err = await drain_output(process.stdout, process.stderr, sink, _killer(process))
                code = await process.wait()
                tg.cancel_scope.cancel()
        if stuck:  # an ignore file that is a FIFO (round 41): the walker reads only regular ones
            raise _RgUnavailable("ripgrep waited to open a FIFO named like an ignore file")
        if code == -signal.SIGABRT:  # past `RG_DATA_BYTES` (round 42): the walker reads no such file
            raise _RgUnavailable("ripgrep ran out of its memory bound (an ignore file that never ends?)")
        if scope.cancelled_caught:
            raise ToolExecutionError(_too_slow())
    finally:
        await _reap(process)
    return code, out, err


def _bounded_argv(args: list[str]) -> list[str]:
    """``args`` (ripgrep's) run under `RG_DATA_BYTES` of data: ``ulimit -d`` in a shell that then
    execs it (the process is ripgrep itself: its pid, its exit status, its wchan). A lower bound
    already set stays (the ``ulimit`` then fails, silently)."""
    return ["/bin/sh", "-c", f'ulimit -d {RG_DATA_BYTES >> 10} 2>/dev/null; exec "$0" "$@"', *args]


def _too_slow() -> str:
    return (
        f"The search did not finish within {_TIMEOUT_S:g} s (a very large tree, or a file system "
        "that does not answer, such as a hung network or FUSE mount); narrow the path or pattern."
    )


#: Seconds a killed search process is waited for. One blocked on a file system that does not
#: answer cannot die until it answers: waiting on it (shielded) held the call, deaf to interrupts,
#: for ever (red team, round 15). It is left to the child watcher, which reaps it when it ends.
_REAP_S = 2.0


async def _reap(process: anyio.abc.Process) -> None:
    """Kill ``process`` if it still runs and wait for it, at most `_REAP_S` seconds."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    with anyio.CancelScope(shield=True), anyio.move_on_after(_REAP_S):
        await process.wait()


def _killer(process: anyio.abc.Process) -> Callable[[], Awaitable[None]]:
    async def kill() -> None:
        # The sink runs in a worker thread (round 42): the process may have ended meanwhile.
        with contextlib.suppress(ProcessLookupError):
            process.kill()

    return kill


#: Whether the hits of a file (its path relative to the searched root) may be kept and counted:
#: a file the session may not read must not reach a count, a note or the line stop (round 42).
Shown = Callable[[str], bool]


class _LineHits:
    """ripgrep's line output (``--null``: ``path NUL number [:-] text LF``) parsed as it streams.

    A line holds no newline; a path may (a hostile name), and ripgrep also prints a warning
    line of its own (``path: WARNING: stopped searching binary file ...``) that no flag turns
    off: either makes the stream ambiguous -- a name could forge another file's hits -- so the
    search is left to the Python walker (`ambiguous`). Keeps `KEPT_LINE_CHARS` of each line
    (ripgrep already cut it at `_MAX_COLUMNS` bytes) and stops past `MAX_HIT_LINES` lines: memory
    is bounded whatever the files hold. ``shown``: a file it answers no for is neither kept nor
    counted (each file judged once, when its first line comes).
    """

    def __init__(self, shown: Shown | None = None) -> None:
        self.results: dict[str, FileHits] = {}
        self.kept = 0
        self.overflow = False
        self.ambiguous = False
        self._partial = b""
        self._shown = shown
        self._unshown: set[str] = set()

    def feed(self, chunk: bytes) -> bool:
        data = self._partial + chunk
        end = 0
        while not (self.overflow or self.ambiguous) and (record := _RECORD.match(data, end)) is not None:
            self._record(record)
            end = record.end()
        self._partial = data[end:]
        if len(self._partial) > _MAX_RECORD:  # no record of ours is this long
            self.ambiguous = True
        return not (self.overflow or self.ambiguous)

    def finish(self) -> None:
        """Raise what stopped the search: too many lines, or output only the Python walker can redo."""
        if self.overflow:
            raise ToolExecutionError(too_many_hits())
        if self.ambiguous or self._partial:
            raise _RgUnavailable("ripgrep's output is ambiguous (a newline in a name, or a warning)")

    def _record(self, record: re.Match[bytes]) -> None:
        if b"\n" in record[1]:
            self.ambiguous = True
            return
        path = _strip_dot(record[1].decode("utf-8", errors="surrogateescape"))
        if self._shown is not None and path not in self.results:
            if path in self._unshown:
                return
            if not self._shown(path):
                self._unshown.add(path)
                return
        number, is_match = int(record[2]), record[3] == b":"
        text = record[4].decode("utf-8", errors="replace")[:KEPT_LINE_CHARS]
        hits = self.results.setdefault(path, FileHits())
        if number not in hits.lines:
            self.kept += 1
            if self.kept > MAX_HIT_LINES:
                self.overflow = True
                return
        if is_match or number not in hits.lines:
            hits.lines[number] = (text, is_match)


#: ripgrep cuts longer lines (``--max-columns``, bytes) to a preview: 4 bytes per character at
#: most, so the preview still holds more than the 500 characters the tool shows.
_MAX_COLUMNS = 4 * KEPT_LINE_CHARS
#: Longer than any record ripgrep can print under `_MAX_COLUMNS` (a path plus a preview).
_MAX_RECORD = 1 << 20
_RECORD = re.compile(rb"([^\0]*)\0(\d+)([:-])([^\n]*)\n")


def newest_first(path: str) -> tuple[int, str]:
    """Sort key: newest modification time first, then by path (deterministic ties)."""
    try:
        return (-os.stat(path).st_mtime_ns, path)
    except OSError:
        return (0, path)


def has_nul(path: str, root_fd: int | None = None, judge: BinaryJudge | None = None) -> bool:
    """Whether the file holds a NUL byte (binary, as ripgrep judges it); unreadable counts as binary.

    ``root_fd``: ``path`` is relative to that anchored directory and opened below it without
    following any symlink. Never blocks: what is not a regular file by now (a FIFO swapped in
    after ripgrep saw a file there) counts as binary, unopened. ``judge``: the call's bounds
    (`shellrt.tools._binary_judge`); without one, the file's first 256 MiB are looked at.
    """
    try:
        if root_fd is not None:
            fd = confine.open_beneath(root_fd, path)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return True
            return judge.has_nul(fh) if judge is not None else stream_has_nul(fh)
    except OSError:
        return True


async def list_files(
    root: Path,
    root_fd: int | None = None,
    *,
    use_rg: bool = True,
    runner: tuple[RgRunner, str] | None = None,
    obey_ignores: bool = True,
    skip: tuple[str, ...] = (),
    top: str | None = None,
) -> list[str]:
    """Relative paths of the non-ignored regular files under ``root`` (unsorted).

    ``root_fd`` anchors the listing at that directory; ``use_rg=False`` forces
    the fd-anchored Python walker (ripgrep walks by path, so a directory
    swapped mid-walk could lead it elsewhere: callers use it only where that
    reaches nothing the sandbox could not read anyway). ``runner``: run ripgrep
    there instead (inside the sandbox, in the sandbox path given), where it sees
    exactly what commands see. ``obey_ignores=False``: ignore files are not obeyed (``--no-ignore``).
    ``skip``: the masked places below ``root`` (`GrepQuery.skip`), which the walker never enters;
    ripgrep runs only where there are none (local) or they are empty (bwrap). ``top``: the highest
    directory whose ignore files the walker reads (`_gitignore.ancestors_below`; docker's workspace).
    """
    rg = ripgrep_binary() if use_rg else None
    if rg is None:
        return await _python_list(root, root_fd, obey_ignores, skip, top=top)
    # In a worktree, no exclude file at all: its .git file led ripgrep to the main repository's (round 47).
    # A stat per ancestor: off the event loop, under the file deadline (a hung mount; round 15).
    read_exclude = not obey_ignores or not await off_loop(gitfile_along, root, root_fd, top, what=f"Listing {root}")
    ignores = ("--no-ignore",) if not obey_ignores else () if read_exclude else ("--no-ignore-exclude",)
    names = _NulNames()
    # An explicit "./": without a path, ripgrep searches stdin whenever stdin is not a terminal.
    run = functools.partial(
        _run_rg,
        [rg, "--files", *_COMMON, *ignores, "--null", "-g", "!.git", "--", "./"],
        root,
        root_fd,
        runner,
        names.feed,
    )
    try:
        # Where ignore files are obeyed, only if ripgrep read the rules the walker reads (round 45).
        got = await guarded(root, root_fd, skip, run, top, read_exclude) if obey_ignores else (await run(),)
        if got is None:
            return await _python_list(root, root_fd, obey_ignores, skip, top=top)
        code, _, err = got[0]
    except _RgUnavailable:
        return await _python_list(root, root_fd, obey_ignores, skip, top=top)
    if names.overflow:
        raise ToolExecutionError(too_many_files(root))
    if code not in (0, 1) and err.strip():
        raise ToolExecutionError(f"ripgrep failed listing {root}: {err.decode(errors='replace').strip()}")
    return names.finish()


#: How long Glob's listing may run in a thread of this process before it starts again in the
#: walker's child process (a thread cannot be stopped; the walk checks this between entries).
IN_PROCESS_LIST_S = 2.0


async def _python_list(
    root: Path,
    root_fd: int | None,
    obey_ignores: bool = True,
    skip: tuple[str, ...] = (),
    deadline_s: float | None = None,
    top: str | None = None,
) -> list[str]:
    """`python_list_files`: in a worker thread for `IN_PROCESS_LIST_S`, then in the walker's child
    process. The tree and its ignore files are the sandbox's to shape: a listing that takes longer
    gets the search's deadline and memory bound (in a thread it had neither, and held the host).
    ``deadline_s``: what is left of a search's deadline (default `PYTHON_SEARCH_TIMEOUT_S`)."""
    limit = PYTHON_SEARCH_TIMEOUT_S if deadline_s is None else deadline_s
    deadline = time.monotonic() + min(IN_PROCESS_LIST_S, limit)
    try:
        return await anyio.to_thread.run_sync(
            python_list_files, root, root_fd, None, deadline, obey_ignores, skip, top
        )
    except TooManyHitsError:
        raise ToolExecutionError(too_many_files(root)) from None
    except TooManyIgnoreRulesError as exc:
        raise ToolExecutionError(f"Cannot search: {exc}.") from None
    except WalkTimeoutError:
        pass
    request = json.dumps(
        {
            "list": {
                "root": str(root),
                "root_fd": root_fd,
                "max_files": _search_types.MAX_LISTED_FILES,
                "obey_ignores": obey_ignores,
                "skip": list(skip),
                "top": top,
            },
            "deadline_s": limit,
        }
    )
    out = await _walker_process(
        request.encode(),
        tuple(fd for fd in (root_fd,) if fd is not None),
        limit,
        root,
        f"Listing {root} took longer than {PYTHON_SEARCH_TIMEOUT_S:g} s (a very large tree); list it with "
        "Bash instead (e.g. `find`), or give a narrower path.",
    )
    names: list[str] = json.loads(out)
    return names


class _NulNames:
    """NUL-terminated paths (``rg --files --null``, ``--files-with-matches --null``) as they stream,
    at most `MAX_LISTED_FILES` of them."""

    def __init__(self, shown: Shown | None = None) -> None:
        self.names: list[str] = []
        self.overflow = False
        self._partial = b""
        self._shown = shown

    def feed(self, chunk: bytes) -> bool:
        *complete, self._partial = (self._partial + chunk).split(b"\0")
        found = [_strip_dot(p.decode("utf-8", errors="surrogateescape")) for p in complete if p]
        self.names += found if self._shown is None else [n for n in found if self._shown(n)]
        if len(self.names) > _search_types.MAX_LISTED_FILES or len(self._partial) > _MAX_RECORD:
            self.overflow = True
        return not self.overflow

    def finish(self) -> list[str]:
        if self._partial:
            self.feed(b"\0")
        return self.names


def _strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


async def _rg_search(
    rg: str,
    query: GrepQuery,
    runner: tuple[RgRunner, str] | None = None,
    shown: Shown | None = None,
    read_exclude: bool = True,
) -> dict[str, FileHits]:
    args = [rg, *_COMMON]
    if not query.obey_ignores:
        args.append("--no-ignore")
    elif not read_exclude:
        args.append("--no-ignore-exclude")
    if query.ignore_case:
        args.append("--ignore-case")
    else:
        args.append("--case-sensitive")
    if query.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if query.single_file is None:
        for glob in query.globs:
            args += ["--glob", glob]
        args += ["--glob", "!.git"]
        if query.file_type:
            for glob in FILE_TYPES[query.file_type]:
                args += ["--type-add", f"shellrtsel:{glob}"]
            args += ["--type", "shellrtsel"]
    if query.files_only:
        args += ["--files-with-matches", "--null"]
    else:
        args += ["--null", "--line-number", "--with-filename", "--no-heading", "--color", "never"]
        args += ["--no-context-separator"]
        args += ["--max-columns", str(_MAX_COLUMNS), "--max-columns-preview"]
        args += ["--after-context", str(query.after), "--before-context", str(query.before)]
    args += ["--regexp", query.pattern]
    cwd = query.root
    if query.only is not None:  # named paths are searched whatever the ignore files say
        args += ["--", *query.only]
    else:
        args += ["--", str(query.single_file) if query.single_file is not None else "./"]
    lines = None if query.files_only else _LineHits(shown)
    names = _NulNames(shown) if query.files_only else None
    code, _, err = await _run_rg(
        args,
        cwd,
        query.root_fd if query.single_file is None else None,
        runner,
        lines.feed if lines is not None else names.feed if names is not None else None,
    )
    if names is not None and names.overflow:
        raise ToolExecutionError(too_many_files(cwd))
    if lines is not None:
        lines.finish()
    message = err.decode("utf-8", errors="replace").strip()
    # Exit 2 without a message: every file was filtered out ("no files were searched") — no results.
    if code == 2 and not (lines and lines.results) and not (names and names.names) and message:
        raise ToolExecutionError(
            f"Invalid search: {message}. Escape regex metacharacters (e.g. \\( \\. \\[) "
            "to search for them literally."
        )
    results: dict[str, FileHits] = {} if lines is None else lines.results
    if names is not None:  # up to a million names: made into hits off the event loop
        results = await anyio.to_thread.run_sync(lambda: {path: FileHits() for path in names.finish()})
    drop = await anyio.to_thread.run_sync(_binary_hits, list(results), query)
    for path in drop:
        del results[path]
    return results


def _binary_hits(paths: list[str], query: GrepQuery) -> list[str]:
    """The hits ripgrep reported that hold a NUL byte (judged on the anchored root, in a worker
    thread, within one `BinaryJudge`'s bounds: round 37)."""
    judge = BinaryJudge(NUL_CHECK_CALL_BYTES)

    def binary(path: str) -> bool:
        if os.path.isabs(path):
            return has_nul(path, judge=judge)
        if query.root_fd is not None:
            return has_nul(path, query.root_fd, judge)
        return has_nul(os.path.join(str(query.root), path), judge=judge)

    return [p for p in paths if binary(p)]


async def search(
    query: GrepQuery,
    *,
    use_rg: bool = True,
    runner: tuple[RgRunner, str] | None = None,
    shown: Shown | None = None,
) -> dict[str, FileHits]:
    """Run ``query`` with ripgrep when available (and ``use_rg``), else in Python (in a worker thread).

    A single file opened by the caller (``file_fd``) is always searched in Python, on that fd.
    ``shown``: the files whose hits may be kept and counted (`Shown`); the others are not read by
    the walker and not counted from ripgrep's stream (ripgrep still reads them: it runs only where
    a command could, local or in the sandbox).
    """
    if query.file_type is not None and query.file_type not in FILE_TYPES:
        known = ", ".join(sorted(FILE_TYPES))
        raise ToolExecutionError(
            f"Unknown file type {query.file_type!r}. Known types: {known}. Or use `glob`."
        )
    rg = ripgrep_binary() if use_rg and query.file_fd is None else None
    if rg is None:
        return await _walker_search(query, shown)
    guard = query.obey_ignores and query.single_file is None  # a file named alone reads no ignore file
    # In a worktree, no exclude file at all: its .git file led ripgrep to the main repository's (round 47).
    read_exclude = not guard or not await off_loop(
        gitfile_along, query.root, query.root_fd, query.top, what=f"Searching {query.root}"
    )
    run = functools.partial(_rg_search, rg, query, runner, shown, read_exclude)
    try:
        if not guard:
            return await run()
        # Only if ripgrep read the ignore rules the walker reads (red team round 45).
        got = await guarded(query.root, query.root_fd, query.skip, run, query.top, read_exclude)
    except _RgUnavailable:
        return await _walker_search(query, shown)
    return got[0] if got is not None else await _walker_search(query, shown)


async def _walker_search(query: GrepQuery, shown: Shown | None) -> dict[str, FileHits]:
    """`python_search_process`; when it stops (too many lines or files) and ``shown`` refuses some
    file below the root, again without reading those (`GrepQuery.skip`). The walker judges no
    file by the session's rules, and what it reads it counts: only a stop can tell what a refused
    file holds (its hits are dropped after), so only a stop pays for judging every file.
    Every pass shares one `PYTHON_SEARCH_TIMEOUT_S`: each with a deadline of its own, a hostile
    tree (a refused file that stops the first pass at once, a slow rest) held the call 3 times
    as long (red team round 43)."""
    end = time.monotonic() + PYTHON_SEARCH_TIMEOUT_S
    try:
        return await python_search_process(query)
    except _SearchStoppedError as exc:
        if shown is None or query.single_file is not None or query.only is not None:
            raise
        stopped = exc
    listed = await _python_list(
        query.root, query.root_fd, query.obey_ignores, query.skip, _left(end, query), top=query.top
    )
    deadline = min(time.monotonic() + JUDGE_AFTER_STOP_S, end)
    refused = await anyio.to_thread.run_sync(_refused_within, listed, shown, deadline)
    if refused is None:  # said whatever the refused files hold: only the tree's size decides it
        raise ToolExecutionError(
            f"The search stopped (too many lines or files), and the files below {query.root} could "
            "not all be judged against the session's deny rules in time (at most "
            f"{JUDGE_AFTER_STOP_S:g} s, within the search's {PYTHON_SEARCH_TIMEOUT_S:g} s); "
            "narrow the path, glob or pattern."
        )
    if not refused:
        raise stopped
    again = dataclasses.replace(query, skip=(*query.skip, *refused))
    return await python_search_process(again, _left(end, query))


def _left(end: float, query: GrepQuery) -> float:
    """Seconds left until ``end`` (`time.monotonic`) of a search's shared deadline; past it the
    search's too-slow error, which no refused file's content decides."""
    left = end - time.monotonic()
    if left <= 0:
        raise ToolExecutionError(
            f"The search stopped (too many lines or files), and searching {query.root} again without "
            f"the files the session may not read did not finish within {PYTHON_SEARCH_TIMEOUT_S:g} s; "
            "narrow the path, glob or pattern."
        )
    return left


#: Seconds `_walker_search` may judge the walked files after a stop (~150 µs a file: ~130,000).
JUDGE_AFTER_STOP_S = 20.0


def _refused_within(listed: list[str], shown: Shown, deadline: float) -> list[str] | None:
    """The ``listed`` files ``shown`` refuses; None past ``deadline`` (a thread cannot be stopped)."""
    refused: list[str] = []
    for i, path in enumerate(listed):
        if i % 256 == 0 and time.monotonic() > deadline:
            return None
        if not shown(path):
            refused.append(path)
    return refused


async def python_search_process(query: GrepQuery, deadline_s: float | None = None) -> dict[str, FileHits]:
    """`python_search` in a child process, killed at ``deadline_s`` (default
    `PYTHON_SEARCH_TIMEOUT_S`) or when the call is cancelled: a backtracking pattern costs
    at most the deadline, and leaves nothing running."""
    compile_query(query)  # a bad pattern fails here, with its message
    limit = PYTHON_SEARCH_TIMEOUT_S if deadline_s is None else deadline_s
    fds = tuple(fd for fd in (query.root_fd, query.file_fd) if fd is not None)
    out = await _walker_process(
        encode_query(query, limit),
        fds,
        limit,
        query.root,
        f"The pattern took too long: {query.pattern!r} ran past {limit:g} s (Python's regex engine "
        "backtracks on nested or adjacent repeats such as (a+)+ or .*.*); simplify it, or search "
        "a smaller path.",
    )
    return decode_results(out)


def _host_child_env(searched: Path) -> dict[str, str]:
    """The environment of a host process started over the searched tree: the operator's, without
    what would load code from that tree or any sandbox's writable root (``LD_PRELOAD=./x.so``,
    ``LD_LIBRARY_PATH=:/opt/lib`` -- an empty entry is the cwd, the workspace), as hooks get it
    (`shellrt.permissions.hook_env`; red team round 34, lead)."""
    from shellrt.permissions.hook_env import hook_env

    return hook_env(os.environ, [searched])


async def _walker_process(
    request: bytes, fds: tuple[int, ...], limit: float, root: Path, too_slow: str
) -> bytes:
    """Run `_grep_python.serve` on ``request`` (its fds passed under the same numbers); its stdout.
    Killed at ``limit`` seconds (then ``too_slow`` is the error) or when the call is cancelled."""
    process = await anyio.open_process(
        calm_argv([sys.executable, "-I", "-c", _BOOTSTRAP, *_PACKAGE_DIRS]),
        pass_fds=fds,
        start_new_session=True,
        cwd="/",  # it works on the fds it is given: never from shellrt's cwd (often the workspace)
        env=_host_child_env(root),
    )
    try:
        out = b""
        err = b""
        with anyio.move_on_after(limit) as scope:
            out, err = await _communicate(process, request)
            await process.wait()
        if scope.cancelled_caught:
            raise ToolExecutionError(too_slow)
    finally:
        await _reap(process)
    why = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {process.returncode}"]
    if process.returncode == TOO_MANY_HITS_EXIT:
        raise _SearchStoppedError(too_many_hits())
    if process.returncode == TOO_MANY_FILES_EXIT:
        raise _SearchStoppedError(too_many_files(root))
    if process.returncode == TOO_MANY_RULES_EXIT:
        raise ToolExecutionError(f"Cannot search: {why[0]}.")
    if process.returncode != 0:
        raise ToolExecutionError(f"The search failed: {why[0]}; retry, or narrow the path or pattern.")
    return out


async def _communicate(process: anyio.abc.Process, data: bytes) -> tuple[bytes, bytes]:
    return await drain_after_send(process, data)


async def drain_after_send(process: anyio.abc.Process, data: bytes) -> tuple[bytes, bytes]:
    """Send ``data`` on stdin, read stdout and stderr to their ends (concurrently: no pipe fills up)."""
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    async def drain(name: str, stream: anyio.abc.ByteReceiveStream | None) -> None:
        if stream is not None:
            async for chunk in stream:
                chunks[name].append(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(drain, "out", process.stdout)
        tg.start_soon(drain, "err", process.stderr)
        if process.stdin is not None:
            await process.stdin.send(data)
            await process.stdin.aclose()
    return b"".join(chunks["out"]), b"".join(chunks["err"])
