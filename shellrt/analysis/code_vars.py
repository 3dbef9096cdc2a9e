"""Variables whose value runs as code, set to a value the command cannot read.

``PS4`` is expanded before each command ``set -x`` traces, ``GIT_EDITOR``/``GIT_SSH_COMMAND``/
``…PAGER`` are command lines a program hands to ``sh -c``. Set by ``NAME=$…`` the engine already
refuses them; set through another binding the text shows no assignment to the name: ``printf -v
PS4 %b '\\x24(\\x72m x)'; set -x; :``, ``read -r PS4 <<< …``, ``mapfile -t PS4``, ``for PS4 in …``,
a nameref (``declare -n r=PS4; r=$'…'``) ran ``rm`` past ``Bash(rm:*)`` (red team, round 33).
"""

from __future__ import annotations

import re
from typing import Final

from .arith_flow import ANY_NAME, dynamic_names
from .nodes import CommandPlan
from .unread_code import is_command_variable

__all__ = ["computed_code_variable"]

#: What bash itself runs: prompts (``PS4`` under ``set -x``), start-up files of a child shell.
_SHELL_CODE: Final = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV"})
_DECLARATIONS: Final = frozenset({"declare", "typeset", "local", "readonly", "export"})
_NAMEREF = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=([A-Za-z_][A-Za-z0-9_]*)")


def computed_code_variable(plan: CommandPlan) -> str:
    """A variable that holds code, bound to a value the command cannot read ("" when none is)."""
    bound = dynamic_names(plan)
    if not bound:
        return ""
    targets = _nameref_targets(plan)
    for name in list(bound):
        bound |= targets.get(name, set())
    for name in sorted(bound):
        if name == ANY_NAME or name in _SHELL_CODE or is_command_variable(name):
            return name or "a variable named at run time"
    return ""


def _nameref_targets(plan: CommandPlan) -> dict[str, set[str]]:
    """``declare -n r=PS4``: r -> {PS4} (a target written at run time is refused elsewhere)."""
    targets: dict[str, set[str]] = {}
    for command in plan.commands:
        if command.name not in _DECLARATIONS:
            continue
        values = [w.value or "" for w in command.argv[1:]]
        if not any(v[:1] in ("-", "+") and "n" in v[1:] and not v.startswith("--") for v in values):
            continue
        for value in values:
            found = _NAMEREF.fullmatch(value)
            if found is not None:
                targets.setdefault(found.group(1), set()).add(found.group(2))
    return targets
