"""The process supervisor: every command in a fresh shell, through a sandbox backend.

Owns what the peers get wrong: timeouts that kill the whole tree, background
tasks that can be found again, cwd tracked across fresh shells, a clean
environment, and output spooled to disk as it streams (bounded memory).

The public names load on first use (PEP 562): ``shellrt run``'s lean local path
uses the plain modules (`env`, `shells`, `spool`, `protect`) without the async
`Supervisor` and its pydantic models (issue 22).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Bound now: ``exit_meaning`` is also a submodule's name, and importing that submodule
# (anyone may, first) would otherwise leave the module where the function belongs.
from shellrt.supervisor.exit_meaning import NON_ERROR_EXITS, exit_is_error, exit_meaning

if TYPE_CHECKING:
    from shellrt.supervisor.env import base_env
    from shellrt.supervisor.errors import (
        ShellUnavailableError,
        SupervisorClosedError,
        SupervisorError,
        TaskNotFoundError,
        WorkingDirectoryError,
    )
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

#: Module (below ``shellrt.supervisor``) of each public name.
_HOME = {
    "base_env": "env",
    **dict.fromkeys(
        (
            "ShellUnavailableError",
            "SupervisorClosedError",
            "SupervisorError",
            "TaskNotFoundError",
            "WorkingDirectoryError",
        ),
        "errors",
    ),
    **dict.fromkeys(
        ("BackgroundTask", "CommandResult", "ProgressEvent", "TaskOutputChunk", "TaskStatus"), "models"
    ),
    "Shell": "shells",
    **dict.fromkeys(("OutputCallback", "ProgressCallback", "Supervisor"), "supervisor"),
    "TaskManager": "tasks",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'shellrt.supervisor' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"shellrt.supervisor.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
