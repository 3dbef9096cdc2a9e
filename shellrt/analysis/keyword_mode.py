"""``set -k`` (``-o keyword``): every ``NAME=VALUE`` argument becomes the command's environment.

With it on, ``ls LD_PRELOAD=./x.so`` loads ``x.so`` into ls, ``bash -c : BASH_ENV=./k.sh`` runs
``k.sh``, ``git diff GIT_EXTERNAL_DIFF=./d`` runs ``d``: the words read as operands, so the checks
of loader and start-up variables (which read assignments) never see them (red team, round 33).
Nothing but such a trick turns it on in a one-off command: its switch is a part no rule matches.
"""

from __future__ import annotations

from typing import Final

from .nodes import CommandPlan

__all__ = ["keyword_switch"]

_SHELLS: Final = frozenset({"bash", "sh", "rbash"})


def keyword_switch(plan: CommandPlan) -> str:
    """The text of a command that turns keyword mode on ("" when none does)."""
    for command in plan.commands:
        values = [w.value if w.value is not None else w.raw for w in command.argv]
        name = values[0] if values else ""
        if name == "set" or name in _SHELLS or name.rpartition("/")[2] in _SHELLS:
            if any(_short_k(v) for v in values[1:]) or "keyword" in values[1:]:
                return command.text
        elif name == "shopt" and "keyword" in values[1:]:
            return command.text
        words = [*values, *[a.raw for a in command.assignments]]
        if any("SHELLOPTS" in w and "keyword" in w for w in words):
            return command.text
    return ""


def _short_k(value: str) -> bool:
    """``-k``, ``-ek``, ``-kc`` (a cluster of short options holding ``k``); ``+k`` turns it off."""
    return value[:1] == "-" and value[1:2] not in ("-", "") and "k" in value[1:] and value[1:].isalpha()
