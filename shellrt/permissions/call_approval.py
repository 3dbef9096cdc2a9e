"""Who let a call run, for the tool that runs it: a rule or the tool's own check, or a person.

Why: a shell command finds its programs on ``PATH``. An allow rule ``Bash(git:*)`` approves the
program ``git``, not the repository's ``.venv/bin/git`` that an activated virtualenv puts first
(red team round 27): such a command runs with the ``PATH`` of read-only commands
(`shellrt.tools._readonly_path`). A mode, a hook, a person's answer or a tool-wide rule approved
whatever the command runs, project code included, and keeps the operator's ``PATH``.

The gate records its final decision in a context variable of the task that asked; the runtime
runs the call in that same task right after (`shellrt.runtime.execution`). The record names the
input it was made for, so a call with another input (or none recorded) is never taken for it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

from shellrt.permissions.interfaces import PermissionDecision

if TYPE_CHECKING:
    from shellrt.permissions.ruleset import RuleSet

__all__ = ["note_decision", "operator_approved"]

#: Decision sources whose allow approved whatever the call runs (not one named program).
_WHOLE = frozenset({"mode", "user", "hook"})

#: (tool name, its command, whether the allow approved whatever it runs) of the last decision.
_last: ContextVar[tuple[str, str, bool] | None] = ContextVar("shellrt_call_approval", default=None)


def note_decision(tool_name: str, command: object, decision: PermissionDecision, rules: RuleSet) -> None:
    """Record how this task's call was decided (``command``: a shell tool's input ``command``, else
    nothing is recorded). ``rules`` are looked at only for an allow by a rule: whether it is the
    tool-wide one (a walk of every allow rule; not paid on each call)."""
    if not isinstance(command, str):
        _last.set(None)
        return
    whole = decision.behavior == "allow" and (decision.source in _WHOLE or _by_wide_rule(tool_name, decision, rules))
    _last.set((tool_name, command, whole))


def _by_wide_rule(tool_name: str, decision: PermissionDecision, rules: RuleSet) -> bool:
    """Whether the rule that decided is the tool-wide allow rule naming ``tool_name``."""
    if decision.rule is None:
        return False
    wide = rules.tool_wide("allow", tool_name)
    return wide is not None and decision.rule == wide.text


def operator_approved(tool_name: str, command: str) -> bool | None:
    """True when a mode, hook, person or tool-wide rule allowed this very command in this task;
    False when a rule naming its programs (or the tool's own check) did; None when not known."""
    last = _last.get()
    if last is None or last[0] != tool_name or last[1] != command:
        return None
    return last[2]
