"""What the CLI prints on the operator's terminal, when others chose the text.

Diagnostics and transcripts carry text the operator did not write: a tool name or an input
the model chose, an MCP server's stderr and error messages, a repository's settings. Printed
raw, their escape sequences act on the operator's terminal: erase or rewrite lines (a
transcript line saying what ran), set the title, or write the clipboard (OSC 52) with a
command the operator then pastes. `shown` escapes them (``shellrt.permissions.shown``), and
`escape_log_lines` does the same for every warning the runtime logs while a sub-command runs.
"""

from __future__ import annotations

import logging
import sys

from shellrt.permissions.shown import for_person

__all__ = ["escape_log_lines", "shown"]


def shown(text: str) -> str:
    """``text`` with control, format and separator characters escaped (newlines marked)."""
    return for_person(text)


class _EscapingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return for_person(super().format(record))


def escape_log_lines() -> None:
    """Send every logger's warnings to stderr escaped (instead of logging's raw last resort).

    The ``shellrt`` loggers quote MCP servers' stderr, settings and tool names; the libraries'
    loggers quote their peers too (the MCP SDK logs a remote server's unknown SSE event name and
    an HTTP client's ``Host`` header, round 28): the root logger gets the same handler, so no
    library's line reaches the terminal raw. A handler the embedding program set is left alone.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_EscapingFormatter("%(message)s"))
    logger = logging.getLogger("shellrt")
    if not any(isinstance(h.formatter, _EscapingFormatter) for h in logger.handlers):
        logger.addHandler(handler)
        logger.propagate = False
    root = logging.getLogger()
    if not root.handlers:  # else lines already go where the program chose, not to the last resort
        root.addHandler(handler)
