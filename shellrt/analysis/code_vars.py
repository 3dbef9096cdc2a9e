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

from .arith_flow import ANY_NAME, RUNTIME_BOUND, dynamic_names
from .nodes import CommandPlan
from .unread_code import is_command_variable

__all__ = ["computed_code_variable"]

#: What bash itself runs: prompts (``PS4`` under ``set -x``), start-up files of a child shell.
_SHELL_CODE: Final = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV"})
#: Builtins whose ``-n`` makes a nameref (``export -n`` only unexports).
_NAMEREF_BUILTINS: Final = frozenset({"declare", "typeset", "local"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def computed_code_variable(plan: CommandPlan) -> str:
    """A variable that holds code, bound to a value the command cannot read ("" when none is), or a
    nameref: every name check reads ``r=…`` as setting ``r``, which sets ``BASH_CMDS[ls]``, ``PATH``,
    ``PS4``… whatever it refers to (``declare -n r='BASH_CMDS[ls]'; r=$'/bin/\\x72m'; ls x``)."""
    namerefs = _nameref_targets(plan)
    if namerefs:
        return f"a nameref ({namerefs[0]})"
    found = [
        name
        for name in dynamic_names(plan)
        if name == ANY_NAME
        or ((name.isupper() or is_command_variable(name)) and name not in RUNTIME_BOUND
            and (name in _SHELL_CODE or is_command_variable(name)))
    ]
    return (min(found) or "a variable named at run time") if found else ""


def _nameref_targets(plan: CommandPlan) -> list[str]:
    """The names ``declare -n``/``local -n`` makes namerefs (``declare -n r=PS4`` -> ["r"])."""
    names: list[str] = []
    for command in plan.commands:
        if command.name not in _NAMEREF_BUILTINS:
            continue
        values = [w.value if w.value is not None else w.raw for w in command.argv[1:]]
        if any(v[:1] in ("-", "+") and "n" in v[1:] and not v.startswith("--") for v in values):
            found = [m.group(0) for v in values if v[:1] not in ("-", "+") and (m := _NAME.match(v))]
            names += found or ["?"]
    return names
