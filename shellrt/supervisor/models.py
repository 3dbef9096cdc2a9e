"""The supervisor's public data: command results, progress events, background task snapshots.

Models a foreground command does not produce are ``defer_build``: their validators
are built on first use, so ``shellrt run`` pays only for `CommandResult`.
"""

from __future__ import annotations

import enum
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OOM_NOTE", "BackgroundTask", "CommandResult", "ProgressEvent", "TaskOutputChunk", "TaskStatus"]

#: What an OOM-killed command's result says to do (files in a tmpfs hold memory too: round 24).
OOM_NOTE = (
    "killed by the out-of-memory killer: the session's memory limit is used up; files in /tmp and "
    "/dev/shm and shared memory count toward it: remove what is no longer needed, or raise the memory limit"
)


class ProgressEvent(BaseModel):
    """A throttled progress report for UIs while a command runs."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    elapsed_s: float
    #: Bytes of output (stdout + stderr) received so far.
    total_bytes: int
    #: The last few complete-or-partial output lines, decoded safely.
    last_lines: tuple[str, ...] = ()


class CommandResult(BaseModel):
    """How one foreground command ended, with its output spooled on disk.

    Streams: merged (the default, what a model reads), ``output_path`` /
    ``preview`` hold stdout and stderr interleaved. Kept apart
    (``merge_stderr=False``, what a harness reads), each stream has its own
    file, size, preview and truncation flag: ``output_path`` / ``stdout_bytes``
    / ``stdout`` / ``stdout_truncated`` and ``stderr_path`` / ``stderr_bytes``
    / ``stderr`` / ``stderr_truncated``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The command text, or an argv shell-quoted for display (``argv`` holds the words).
    command: str
    #: The words of a command run as an argv (no shell); None for shell text.
    argv: tuple[str, ...] | None = None
    #: Exit code (128 + signal for a signal death); None when moved to the background, or when
    #: it timed out after its shell had exited 0 (what it started ran on and was killed).
    exit_code: int | None
    #: Signal that ended the shell, when known.
    signal: int | None = None
    timed_out: bool = False
    #: Cancelled by the caller (cancel scope / abort): the tree was killed.
    interrupted: bool = False
    oom_killed: bool = False
    #: Set when the timeout moved the command to the background instead of killing it.
    backgrounded_task_id: str | None = None
    #: The full output (stdout, or stdout+stderr interleaved when merged), byte for byte.
    output_path: Path
    #: The full stderr when not merged.
    stderr_path: Path | None = None
    #: Bytes the command printed, both streams together.
    total_bytes: int = 0
    #: Head and tail of the output (the whole output when ``not truncated``).
    preview: str = ""
    #: True when ``preview`` (or, not merged, either stream's preview) is not the whole output.
    truncated: bool = False
    #: When not merged: previews of each stream separately (``preview`` is stdout's).
    stdout: str | None = None
    stderr: str | None = None
    #: Bytes in ``output_path``'s stream as printed (stdout; both interleaved when merged).
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    #: The stream's preview is head + tail only (its file has it all).
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    #: Working directory after the command (sandbox path) and whether it moved.
    cwd: str
    cwd_changed: bool = False
    #: Set when the cwd could not be kept (vanished, or outside the allowed roots).
    cwd_note: str | None = None
    duration_s: float
    #: Other things worth telling (e.g. a detached process held the output pipe open).
    notes: tuple[str, ...] = ()
    #: Set when output is missing from ``output_path`` (disk full, output quota, capture failure): what and why.
    output_lost: str | None = None
    #: Capturing failed and shellrt killed the command (output after that point was never read).
    capture_failed: bool = False
    #: Bytes actually saved in ``output_path`` (and ``stderr_path``); less than ``total_bytes`` when lost.
    saved_bytes: int | None = None
    #: Set when the sandbox itself failed while the command ran (its container died or was
    #: killed, its executor is gone): ``exit_code`` is then not the command's. Always an error.
    sandbox_failure: str | None = None


class TaskStatus(enum.StrEnum):
    """Lifecycle of a background task."""

    RUNNING = "running"
    #: Exited with code 0.
    COMPLETED = "completed"
    #: Exited with a non-zero code.
    FAILED = "failed"
    #: Stopped by TaskStop or by the session closing.
    STOPPED = "stopped"
    #: Died of a signal nobody in shellrt sent (OOM killer, ``kill`` from outside).
    KILLED = "killed"


class BackgroundTask(BaseModel):
    """A snapshot of one background task (ask `TaskManager.get` again for fresh state)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str
    command: str
    description: str = ""
    status: TaskStatus
    exit_code: int | None = None
    signal: int | None = None
    pid: int | None = None
    output_path: Path
    stderr_path: Path | None = None
    total_bytes: int = 0
    started_at: datetime
    ended_at: datetime | None = None
    #: Human explanation of how it ended when that needs one (e.g. "killed by SIGKILL from outside").
    note: str | None = None


class TaskOutputChunk(BaseModel):
    """New output of a background task since the previous read."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    task: BackgroundTask
    #: The new output (only matching lines when a filter was given), decoded safely.
    text: str
    #: New bytes consumed by this read (before filtering).
    new_bytes: int
    #: Lines kept / seen when a filter was given.
    matched_lines: int | None = None
    scanned_lines: int | None = None
    #: More unread output is already on disk (the read was capped); read again.
    more_available: bool = False
    #: A partial last line held back until it completes (task still running).
    pending_bytes: int = Field(default=0, ge=0)
    #: Bytes of output before ``text`` that were neither saved (a full disk, a quota: the task's
    #: note says why) nor kept in memory: lost (``text`` is then the end memory kept).
    lost_bytes: int = Field(default=0, ge=0)
