"""The other names a built-in tool answers to, for everything in settings that names a tool.

The registry resolves a call to ``KillShell`` as TaskStop and ``BashOutput`` as TaskOutput (the
names other agents, and their users' settings, use). Rules and hook matchers compared the
canonical name only, so ``deny: ["KillShell"]`` or a PreToolUse guard on ``BashOutput`` matched
nothing, silently, and the tool ran (round 12). A rule or matcher naming an alias now means the
tool itself. ``KillBash`` is Claude Code's older name for the same tool. A test pins that every
alias a built-in tool declares is listed here.
"""

from __future__ import annotations

__all__ = ["TOOL_ALIASES", "canonical_tool_name", "names_of"]

#: alias -> the tool's canonical name.
TOOL_ALIASES: dict[str, str] = {
    "BashOutput": "TaskOutput",
    "KillShell": "TaskStop",
    "KillBash": "TaskStop",
}


def canonical_tool_name(name: str) -> str:
    """``name`` itself, or the tool it is another name of."""
    return TOOL_ALIASES.get(name, name)


def names_of(tool_name: str) -> tuple[str, ...]:
    """``tool_name`` and every alias of it (what a hook matcher may name the tool by)."""
    return (tool_name, *(alias for alias, canonical in TOOL_ALIASES.items() if canonical == tool_name))
