"""The process supervisor: every command in a fresh shell, through a sandbox backend.

Owns what the peers get wrong: timeouts that kill the whole tree, background
tasks that can be found again, cwd tracked across fresh shells, a clean
environment, and output spooled to disk as it streams (bounded memory).
"""

from __future__ import annotations

from shellrt.supervisor.env import base_env
from shellrt.supervisor.errors import (
    ShellUnavailableError,
    SupervisorClosedError,
    SupervisorError,
    TaskNotFoundError,
    WorkingDirectoryError,
)
from shellrt.supervisor.exit_meaning import NON_ERROR_EXITS, exit_is_error, exit_meaning
from shellrt.supervisor.models import (
    BackgroundTask,
    CommandResult,
    ProgressEvent,
    TaskOutputChunk,
    TaskStatus,
)
from shellrt.supervisor.shells import Shell
from shellrt.supervisor.supervisor import OutputCallback, ProgressCallback, Supervisor
from shellrt.supervisor.tasks import TaskManager

__all__ = [
    "NON_ERROR_EXITS",
    "BackgroundTask",
    "CommandResult",
    "OutputCallback",
    "ProgressCallback",
    "ProgressEvent",
    "Shell",
    "ShellUnavailableError",
    "Supervisor",
    "SupervisorClosedError",
    "SupervisorError",
    "TaskManager",
    "TaskNotFoundError",
    "TaskOutputChunk",
    "TaskStatus",
    "WorkingDirectoryError",
    "base_env",
    "exit_is_error",
    "exit_meaning",
]
