"""Command analysis: parse a bash/PowerShell command into a plan and judge it.

Pure (no I/O, no imports of the rest of shellrt). The entry point is
:func:`analyze`; everything a caller needs is on :class:`CommandAnalysis`.
"""

from __future__ import annotations

from .analyze import analyze
from .git_env import GIT_CONFIG_OVERRIDES, git_hardening_env
from .judge import MAX_SUBCOMMANDS
from .models import (
    Assignment,
    CommandAnalysis,
    CommandPlan,
    Construct,
    Heredoc,
    PlanCommand,
    Redirect,
    Subcommand,
    Substitution,
    Word,
)
from .parse import MAX_COMMAND_CHARS

__all__ = [
    "GIT_CONFIG_OVERRIDES",
    "MAX_COMMAND_CHARS",
    "MAX_SUBCOMMANDS",
    "Assignment",
    "CommandAnalysis",
    "CommandPlan",
    "Construct",
    "Heredoc",
    "PlanCommand",
    "Redirect",
    "Subcommand",
    "Substitution",
    "Word",
    "analyze",
    "git_hardening_env",
]
