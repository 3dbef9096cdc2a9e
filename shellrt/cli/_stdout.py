"""Plain-mode stdout: closing it quietly when its reader went away (``| head``), and saying what was lost."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shellrt.cli._tty_filter import TerminalOutput

__all__ = ["EXIT_OUTPUT_LOST", "report_loss", "silence_stdout", "terminal_output"]

#: ``shellrt run``'s exit status when output was lost (what and why on stderr).
EXIT_OUTPUT_LOST = 74


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush cannot raise (or print a traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def report_loss(lost: str | None, capture_failed: bool, code: int) -> int:
    """Plain mode: stdout/stderr got every byte unless capturing failed; say what else happened.

    Shared by the lean local path and the full path, so both end the same way.
    """
    if not lost:
        return code
    if capture_failed:
        print(f"shellrt run: output lost: {lost}", file=sys.stderr)
        return EXIT_OUTPUT_LOST
    # Only the on-disk copy is short: the terminal/pipe received everything.
    print(
        f"shellrt run: note: every byte was streamed, but the spool copy is incomplete: {lost}",
        file=sys.stderr,
    )
    return code


def terminal_output() -> TerminalOutput | None:
    """The filter for a run whose stdout or stderr is a terminal, else None (every byte goes on).

    Loaded only then: most ``shellrt run`` calls write to pipes and keep their import budget.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.isatty():
                from shellrt.cli._tty_filter import TerminalOutput

                return TerminalOutput()
        except (AttributeError, ValueError):
            continue
    return None
