"""Which ``shellrt run`` invocations take the lean local path (`shellrt.cli._local_run`).

An operator scripting ``shellrt run`` pays the interpreter's start-up per
command (issue 22): the full path (`shellrt.cli.run.run_full`: anyio, the
`Supervisor`, the backend's and the result's pydantic models) costs ~2.3x a bare
pydantic import before the command even starts. A local run in plain mode needs
none of that. Every other combination (``--json``, ``--cwd``, ``--user``,
``--background-on-timeout``, limits, network or docker options, other
sandboxes) keeps the full path, so the lean one never has to repeat its errors
and refusals. Cheap to import: the lean path itself loads only when chosen.
"""

from __future__ import annotations

import argparse
import math
import threading

__all__ = ["eligible", "run_local"]

#: What the lean path understands; any other option given on the command line (``--json``,
#: ``--cwd``, ``--user``, limits, domains, docker's, and any option added later) sends the run
#: down the full path: an allow-list, so a new option is never silently ignored here.
_LEAN_OPTIONS = frozenset(
    {
        "func",
        "version",
        "command",
        "sandbox",
        "workspace",
        "writable",
        "deny_read",
        "no_default_masks",
        "network",
        "timeout",
        "env",
        "no_shell",
    }
)


def eligible(args: argparse.Namespace) -> bool:
    """True when this run is a plain local one that the lean path runs exactly as the full path would."""
    if args.sandbox not in ("local", "none") or args.network not in (None, "none", "host"):
        return False
    if any(_given(value) for name, value in vars(args).items() if name not in _LEAN_OPTIONS):
        return False
    if args.timeout is not None and math.isnan(args.timeout):
        return False
    # Signals are watched through a wake-up fd, which only the main thread may set.
    return threading.current_thread() is threading.main_thread()


def _given(value: object) -> bool:
    """An option set on the command line (``0`` and ``0.0`` included: the full path refuses those)."""
    return value is not None and value is not False and value != []


def run_local(args: argparse.Namespace, command: str | list[str]) -> int:
    """Run an `eligible` command on the lean path; the exit status."""
    from shellrt.cli._local_run import run

    return run(args, command)
