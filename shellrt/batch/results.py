"""Result lines: the per-task result model, a crash-safe appender, and --resume reading.

One JSON object per finished task, appended, flushed and fsynced before the
next one is reported: whatever kills the run (SIGKILL, OOM, power), every
result already written survives. A crash can leave at most one partial last
line; `ResultWriter` trims it away before appending, and `read_finished_ids`
ignores it, so ``--resume`` runs that task again and the file stays valid JSONL
with every id exactly once. A task whose line says ``error`` (it could not run) runs again too:
`drop_error_lines` takes its line out first.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from shellrt.protocol._one_line import one_line

__all__ = [
    "CommandOutcome",
    "ResultWriter",
    "ResultsWriteError",
    "TaskResult",
    "TaskStatus",
    "drop_error_lines",
    "read_finished_ids",
]

log = logging.getLogger("shellrt.batch")

#: ``ok``: every command ran and exited 0. ``failed``: a command exited non-zero
#: (or a tool_use returned an error). ``timeout``: a command hit its timeout.
#: ``error``: the task could not run (sandbox did not start, workspace missing,
#: internal error) — the only status that makes the CLI exit 1.
TaskStatus = Literal["ok", "failed", "timeout", "error"]


class CommandOutcome(BaseModel):
    """How one command of a task ended."""

    model_config = ConfigDict(extra="forbid")

    index: int
    #: The shell text, an argv shell-quoted, or ``<tool name>:<tool_use id>`` for a tool_use block.
    command: str
    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    signal: int | None = None
    #: tool_use blocks: the tool_result's ``is_error``; shell commands: exit code != 0 or timed out.
    is_error: bool = False
    duration_s: float = 0.0
    #: Bytes printed, stdout and stderr together.
    total_bytes: int = 0
    #: Head and tail of stdout (``collect.output`` ``preview``/``full``); a tool_use block: its result text.
    preview: str | None = None
    #: ``preview`` or ``stderr`` is not the whole stream.
    truncated: bool = False
    #: The whole stdout file (``collect.output: full``), on the machine named by the task's ``node``.
    output_path: str | None = None
    #: Shell commands keep stderr apart from stdout: its head and tail, size, truncation and
    #: (``collect.output: full``) whole file; None / 0 for tool_use blocks.
    stderr: str | None = None
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stderr_path: str | None = None
    #: Why the saved output (``output_path``/``stderr_path``, or the spool a preview's tail came
    #: from) misses bytes: a per-command, per-task or run output budget, a full disk. None: whole.
    output_lost: str | None = None


class TaskResult(BaseModel):
    """One result line."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: TaskStatus
    #: Why the task could not run (``error``) — or what went wrong with collection.
    error: str | None = None
    commands: list[CommandOutcome] = Field(default_factory=list)
    #: Backend that ran it.
    backend: str = ""
    #: Where it ran: the Ray node id, or ``local:<hostname>``.
    node: str = ""
    #: A label of the node (its custom Ray resource name, when it has one).
    node_label: str | None = None
    hostname: str = ""
    started_at: float = 0.0
    ended_at: float = 0.0
    #: Task time: sandbox start + commands + export (waiting for a slot and teardown excluded).
    duration_s: float = 0.0
    #: Part of ``duration_s`` spent creating the workspace and starting the sandbox.
    setup_s: float = 0.0
    #: Task artifacts (full outputs, exported files), on the driver's disk unless ``node`` says otherwise.
    artifacts_dir: str | None = None
    #: Exported files, relative to ``artifacts_dir/files``.
    files: list[str] = Field(default_factory=list)
    #: 1 + how many times the task was re-run because its node died (Ray).
    attempt: int = 1
    #: Docker: the container that ran the task (12-hex id); None for other backends.
    container: str | None = None
    #: Docker: 1 when the container was fresh; n when this was its n-th task (recycled, reset in between).
    container_use: int | None = None
    #: Docker: the task ran on a recycled container (``container_use > 1``).
    recycled: bool = False
    #: Network 'proxied': each connection the proxy refused while the task ran
    #: (time, sandbox, host, port, reason; docs/network.md).
    network_refusals: list[dict[str, Any]] = Field(default_factory=list)


class ResultsWriteError(OSError):
    """A result line could not be appended (a full disk): the run stops, the file stays valid."""


class ResultWriter:
    """Append-only, fsync-per-line result file. Use as a context manager."""

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _trim_partial_tail(self.path)
        self._fh = self.path.open("ab")
        self.written = 0

    def write(self, result: TaskResult) -> None:
        """Append one line and make it durable before returning; raises `ResultsWriteError` (the
        part of the line that fitted taken back out) when the file refuses it."""
        data = one_line(result.model_dump_json()).encode("utf-8") + b"\n"  # a command's U+2028: round 35
        before = self._fh.tell()
        try:
            self._fh.write(data)
            self._fh.flush()
            if self._fsync:
                os.fsync(self._fh.fileno())
        except OSError as exc:
            self._take_back(before)
            raise ResultsWriteError(
                exc.errno,
                f"cannot append task {result.id!r}'s result to {self.path} ({exc.strerror or exc}); the run "
                "stopped. Free space there (a task may have filled the disk: give the temp dir a file system "
                "of its own), then finish with --resume",
            ) from exc
        self.written += 1

    def _take_back(self, size: int) -> None:
        """Cut what a failed write left past ``size`` (round 28: a full disk kept a partial line)."""
        try:
            self._fh.close()  # its buffer may still hold the line: dropped with the file object
        except OSError:
            pass
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        except OSError:
            pass  # left for `_trim_partial_tail` at the next open (--resume)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _trim_partial_tail(path: Path) -> None:
    """Cut a crash's partial last line (no trailing newline) so appends stay valid JSONL."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with path.open("rb+") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        # Walk back to the last newline (results are small; read the tail in blocks).
        pos = size
        block = 65_536
        cut = 0
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                cut = start + idx + 1
                break
            pos = start
        log.warning("%s: dropping a partial last line (%d bytes) left by a crash", path, size - cut)
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())


def read_finished_ids(path: str | Path) -> set[str]:
    """Ids of every task with a complete result line of a status other than ``error`` (missing
    file: empty set).

    Unparseable lines (a crash's truncated tail) are skipped: those tasks run again. So are
    ``error`` lines: the task could not run (a missing workspace, a sandbox that did not start, the
    run's output budget), which says nothing about the task; `drop_error_lines` removes them before
    a resumed run appends the new ones (red team round 28: they were skipped for good).
    """
    done: set[str] = set()
    for data in _complete_lines(Path(path)):
        if isinstance(data, dict) and isinstance(data.get("id"), str) and data.get("status") != "error":
            done.add(data["id"])
    return done


def drop_error_lines(path: str | Path) -> int:
    """Rewrite ``path`` without its ``error`` lines (and a crash's partial tail); how many it dropped.

    What a resumed run does first: those tasks run again and append their new lines, so the file
    still holds each id once. Every other line is kept byte for byte. The new file is written beside
    the old one (its real path: a link stays a link) and renamed over it once it is on the disk: a
    crash or a full disk leaves the old file whole. Raises OSError saying what to do.
    """
    target = Path(os.path.realpath(path))
    try:
        with target.open("rb") as fh:
            dropped = sum(1 for raw in fh if raw.endswith(b"\n") and _is_error_line(raw))
    except FileNotFoundError:
        return 0
    if not dropped:
        return 0
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        mode = target.stat().st_mode & 0o777
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "wb") as out, target.open("rb") as fh:
            for raw in fh:
                if raw.endswith(b"\n") and not _is_error_line(raw):
                    out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
        dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(
            exc.errno,
            f"--resume: cannot rewrite {path} without its {dropped} error line(s), whose tasks run again "
            f"({exc.strerror or exc}); free space there, or run those tasks with another --out",
        ) from exc
    return dropped


def _is_error_line(raw: bytes) -> bool:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and isinstance(data.get("id"), str) and data.get("status") == "error"


def _complete_lines(path: Path) -> Iterator[Any]:
    """Each complete line of ``path`` parsed (unparseable ones and a partial tail skipped)."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                continue  # partial tail of a crashed run
            try:
                yield json.loads(raw)
            except (ValueError, RecursionError):  # RecursionError: nested too deeply to be ours
                continue
