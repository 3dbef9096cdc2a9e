"""The verdict on one command (a pydantic model), and the plan types it carries.

The plan itself is plain dataclasses (``nodes``); this module re-exports them so
callers import every analysis type from one place.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from . import nodes
from .compiled import restore_annotations
from .nodes import (
    Assignment,
    CommandPlan,
    Construct,
    Heredoc,
    PlanCommand,
    Redirect,
    Subcommand,
    Substitution,
    Word,
)
from .wire import wire_form

__all__ = [
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
]

# defer_build: `analyze` fills models without validating, so `shellrt classify` never pays for the
# schema of the plan types; the first validation or dump (PowerShell, the runtime) builds it.
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)

# Before pydantic builds CommandAnalysis's schema from them (a no-op unless nodes is compiled).
restore_annotations(nodes)


class CommandAnalysis(BaseModel):
    """The verdict on one command string. ``reasons`` always explains it."""

    model_config = _FROZEN

    command: str
    shell: str
    parse_ok: bool
    read_only: bool
    concurrency_safe: bool
    destructive: bool
    subcommands: list[Subcommand] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    cd_targets: list[str] = Field(default_factory=list)
    write_targets: list[str] = Field(default_factory=list)
    writes_unknown: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    plan: CommandPlan | None = None
    #: Every path the parts may read (their ``reads``, in order, deduplicated); "" = a path that is not static.
    read_paths: list[str] = Field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        """The wire form used by ``shellrt classify``: subcommands as plain strings."""
        return wire_form(self.__dict__)
