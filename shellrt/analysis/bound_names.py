"""Variables a command binds with no assignment word: loops and arithmetic (red team, round 48).

An assignment is a part (``x=1``, ``PATH=. ls``): deny rules search its value, and an allow rule
covers a command only when every name it sets is in ``SAFE_ENV_NAMES``. A ``for``/``select`` loop binds
its name to each of its words, and arithmetic binds the names it assigns (``(( PATH=1 ))``, ``for
((i=0; PATH=1;))``, ``[[ 1 -eq PATH=1 ]]``, ``[[ -v a[PATH=1] ]]``, ``$((HOME=1))`` in a case pattern,
``${x:=v}``), with no part at all: ``for PATH in .; do ls; done`` ran ``./ls`` under ``Bash(ls:*)``, and
``for x in 'a[$(rm y)]'; do (( x )); done`` ran ``rm y`` beside ``Bash(rm:*)`` denied. Each binding is
given as an assignment part here (``PATH=.``), judged as one; a name known only at run time (``((
$n=1 ))``) is a part with no name, which no rule matches.
"""

from __future__ import annotations

import re
from typing import Final

from .nodes import CommandPlan, Subcommand, Word

__all__ = ["binding_parts"]

_LOOPS: Final = frozenset({"for", "select"})
#: Constructs whose text bash evaluates as arithmetic (a ``[[ -v a[i] ]]`` subscript too).
_ARITHMETIC: Final = frozenset({"arithmetic", "c_for", "test_arithmetic", "test_variable"})
_EVALUATED: Final = frozenset({"arithmetic", "pure_arithmetic", "complex_parameter"})
#: A name arithmetic assigns: ``N=``, ``N[…]+=``, ``N <<= 1``, ``N++``, ``--N`` (``==``, ``<=``… compare);
#: ``$N=``/``${N}=`` assign the variable N's value names (group 2: not known here).
_ASSIGNED: Final = re.compile(
    r"(\$\{?)?([A-Za-z_][A-Za-z0-9_]*)\}?\s*(?:\[[^\]]*\])?\s*(?:(?:[-+*/%&^|]|<<|>>)?=(?!=)|\+\+|--)"
    r"|(?:\+\+|--)\s*(\$\{?)?([A-Za-z_][A-Za-z0-9_]*)"
)
#: ``${N:=v}``/``${N=v}`` assign N when it is unset (or empty).
_DEFAULTED: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")


def _arithmetic_head(text: str) -> str:
    """The ``((…))`` of a ``for ((…))`` loop (its body is other commands), by balanced parentheses."""
    start = text.find("((")
    if start < 0:
        return text
    depth = 0
    for at in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[at], 0)
        if depth == 0:
            return text[start : at + 1]
    return text


def _assigned(text: str) -> list[str]:
    """Names ``text`` (arithmetic) assigns; "" for one known only at run time."""
    found: list[str] = []
    for match in _ASSIGNED.finditer(text):
        dollar, name = (
            (match.group(1), match.group(2)) if match.group(2) else (match.group(3), match.group(4))
        )
        found.append("" if dollar else name)
    return found + _DEFAULTED.findall(text)


def binding_parts(plan: CommandPlan) -> list[Subcommand]:
    """An assignment part for each loop name (with its words) and each name arithmetic assigns."""
    bindings: dict[str, list[str]] = {}
    for construct in plan.constructs:
        if construct.kind in _LOOPS and construct.name:
            bindings.setdefault(construct.name, []).extend([w.raw for w in construct.words] or ['"$@"'])
        elif construct.kind in _ARITHMETIC:
            text = _arithmetic_head(construct.text) if construct.kind == "c_for" else construct.text
            for name in _assigned(text):
                bindings.setdefault(name, []).append("$((" + text + "))")
    words: list[Word] = [w for c in plan.constructs for w in c.words]
    words += [w for c in plan.commands for w in c.argv]
    words += [e for h in plan.heredocs for e in h.expansions]
    for word in words:
        if not _EVALUATED.isdisjoint(word.features):
            for name in _assigned(word.raw):
                bindings.setdefault(name, []).append(word.raw)
    parts: list[Subcommand] = []
    for name, values in bindings.items():
        if not name:  # `(( $n=1 ))`: a name known only at run time
            text = "a variable named at run time, set by arithmetic: " + " ".join(dict.fromkeys(values))
            parts.append(Subcommand(text, [text], "", False, [""], False, [], [], False, ""))
            continue
        argv = [f"{name}={value}" for value in dict.fromkeys(values)]
        parts.append(Subcommand(" ".join(argv), argv, "", False, [name], False, [], [], False, ""))
    return parts
