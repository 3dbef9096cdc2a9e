"""Expansions that run a variable's value as code, where the command binds the value at run time.

``${x@P}`` expands the value as a prompt (a ``$(…)`` in it runs); ``${!x}`` reads the value as a
variable name and evaluates its subscript (``a[$(rm y)]`` runs rm). ``x=$(printf '\\x24(\\x72m
y)'); echo ${x@P}`` shows no ``rm``. The tools' text check (``evaluated_code``) found these by
searching the raw text, quotes included, so ``grep -rn '${!' .`` met every deny rule (red team,
round 34); this reader takes them from the plan's words and asks :func:`bound_reached`.
"""

from __future__ import annotations

import re
from typing import Final

from .arith_flow import bound_reached, code_plans, plan_words
from .nodes import CommandPlan

__all__ = ["expanded_value"]

_NAME: Final = r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#])"
#: ``${!x}``, ``${!x:-d}``, ``${!x[0]}``, ``${!1}``; not ``${!x*}``/``${!x@}`` (names with a prefix)
#: nor ``${!a[@]}``/``${!a[*]}`` (an array's keys), which list names and evaluate no value.
_INDIRECT = re.compile(r"\$\{!" + _NAME + r"(?!\*\}|@\}|\[[@*]\]\})")
#: ``${x@P}``, ``${a[i]@P}``, ``${!x@P}``.
_PROMPT = re.compile(r"\$\{!?" + _NAME + r"(?:\[[^\]]*\])?@P\}")


def expanded_value(plan: CommandPlan) -> str:
    """The text of a ``${!x}`` or ``${x@P}`` whose value may be bound at run time ("" if none)."""
    plans = [plan, *code_plans(plan)]
    for each in plans:
        for word in plan_words(each):
            if "complex_parameter" not in word.features:
                continue
            found = _INDIRECT.findall(word.raw) + _PROMPT.findall(word.raw)
            names = {"@" if not name[:1].isalpha() and name[:1] != "_" else name for name in found}
            if names and bound_reached(plans, names):
                return word.raw
    return ""
