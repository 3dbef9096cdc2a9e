"""``fc`` runs commands from the history list, which the command itself may fill with any text.

With ``set -o history``, ``history -s $'\\x72m x'`` (or ``history -r FILE``, a file of the
repository) puts a line in the list and ``fc -s`` (or ``fc -e ed``) runs it: the text no rule reads
(red team, round 33). Only ``fc -l`` lists; any other ``fc`` is a part no rule matches.
"""

from __future__ import annotations

from .nodes import CommandPlan

__all__ = ["history_rerun"]


def history_rerun(plan: CommandPlan) -> str:
    """The text of an ``fc`` that may run a history entry ("" when there is none)."""
    for command in plan.commands:
        if command.name != "fc":
            continue
        options = [w.value or "" for w in command.argv[1:] if (w.value or "-").startswith("-")]
        if not any(o[:1] == "-" and o[1:2] != "-" and "l" in o[1:] and "s" not in o[1:] and "e" not in o[1:]
                   for o in options):
            return command.text
    return ""
