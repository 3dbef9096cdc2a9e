r"""Command analysis: parse a bash/PowerShell command into a plan and judge it.

Pure (no I/O, no imports of the rest of shellrt). The entry point is
:func:`analyze`; everything a caller needs is on :class:`CommandAnalysis`.

Pipeline (one module each): ``parse`` (tree-sitter-bash, size/time limits) ->
``plan`` (allow-listed node kinds -> :class:`CommandPlan`, with ``words`` doing
static word evaluation) -> ``judge`` (read-only allow-list, using the per-program
option models in ``programs/``) -> ``effects`` (write targets, destructive hints)
-> ``git_env`` (environment the supervisor must set). ``powershell`` is the
PowerShell tokenizer/judge.

Subcommands, for permission rules: every simple command anywhere in the input
(pipelines, lists, ``$(...)``, ``<(...)``, subshells, groups, function bodies,
if/while/for/case bodies, ``[[ ]]`` operands, redirect targets, here-doc
bodies), every standalone assignment and declaration (``export X=1``). Each
carries its normalised command name (``/bin/rm``, ``\\rm``, ``timeout 5 rm`` ->
``rm``; "" when not static), the variables it assigns, whether it runs in the
background, its output redirections and the paths it reads (``parts``).
Wrappers add the command they run as a further subcommand
(``timeout 5 rm x`` -> ``timeout 5 rm x`` and ``rm x``; ``xargs rm`` -> ``rm``;
``find -exec rm {} ;`` -> ``rm {}``); ``bash -c '...'``, ``sh -c``, ``eval``,
``env -S``, ``su -c`` and ``flock -c`` have their script string parsed, so a rule
such as ``Bash(timeout:*)`` or ``Bash(bash:*)`` cannot smuggle a command past the
matcher, which must check every subcommand. When the parse failed
(``parse_ok`` false), the raw command is appended as a subcommand too and no
rule should allow it.

Here-document bodies are read the way bash reads them (``heredoc``): every
substitution in an expanding body is planned, and a body bash would end on
another line than the parser is a syntax error (``parse_ok`` false).
``timeout``/``env``/``nice``/``stdbuf``/``time``/``command`` and ``bash|sh -c
'<static script>'`` are judged by what they run (``-l``/``-i`` shells never
read-only: they source profiles).

Decisions worth knowing: programs named by path (``/bin/ls``, ``./x``) are never
read-only (we cannot know what the path holds); quoted or escaped command names
(``'ls'``, ``\ls``) are refused; any variable assignment, any ``&`` background
job, any command/process substitution, any brace expansion and any expansion in
an argument (outside echo/printf data and ``[[ ]]``/``[ OP "$x" ]`` operands) makes
a command not read-only. Results are memoised (shared objects: never
mutate them or their lists).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from .compiled import warn_if_stale

if TYPE_CHECKING:
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

#: Names re-exported on first use (PEP 562), name -> defining submodule. ``models`` builds the
#: pydantic model, which ``shellrt classify`` does not need (``analyze`` imports it on its first
#: verdict); the plan types come through ``models`` too: it gives a compiled build's dataclasses
#: back the annotations pydantic reads. The rest (``analyze`` with tree-sitter and every program's
#: option model) load when first named, so a caller of a light submodule (``kernel_paths``,
#: ``git_env``: ``shellrt permissions list`` through the hooks) does not load the analysis (round 55).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
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
        ),
        "models",
    ),
    "analyze": "analyze",
    "GIT_CONFIG_OVERRIDES": "git_env",
    "git_hardening_env": "git_env",
    "MAX_SUBCOMMANDS": "judge",
    "MAX_COMMAND_CHARS": "parse",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


class _Package(ModuleType):
    """This package, keeping ``analyze`` the function when its submodule of the same name loads.

    The import system binds each loaded submodule on its package; for ``analyze`` that would
    replace the function every caller imports (``from shellrt.analysis import analyze``) with the
    module. The eager package re-bound the function right after; lazily, this does it.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "analyze" and isinstance(value, ModuleType):
            value = value.analyze
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

warn_if_stale()  # a source checkout whose in-place compiled modules lag behind edits
