"""Plan a command whose last word opens a ``'`` quote that never closes, without the parser.

``echo 'unterminated`` is a syntax error: bash refuses to run it, and tree-sitter-bash
recovers from it with its costliest path (~5x a whole simple command's analysis). The
tree it yields is always the same when one simple command comes before the quote: that
command, as it would parse alone, then a top-level ``ERROR`` node holding nothing the
planner reads. (After a list or pipeline it is not: after ``a | b | c`` the ``ERROR``
node takes ``c``.) So the plan is the parser-free plan of the command before the quote (:func:`plan_simple`)
plus what the planner records for that node: a ``\\n`` operator before it (a statement
with no operator before it) and ``ERROR`` as an unsupported construct. The verdict is
the parser path's: not read-only, ``parse_ok`` false, the whole command as a part.

It fails closed (None: the caller parses) unless: the command has exactly one ``'`` and
no ``"``; a blank comes right before the quote and something other than ``;``, ``&`` or
``|`` before that blank; the text before it is one simple command (no operator; wrapped
commands are fine); everything after the quote is printable ASCII or tab (no newline,
NUL or other control character, which the parser path refuses or reads differently);
and the fast path plans that command. Tests compare both paths on
generated commands with hostile text after the quote.
"""

from __future__ import annotations

from typing import Final

from .fastplan import plan_simple
from .nodes import CommandPlan

__all__ = ["plan_unterminated_quote"]

#: Operators that must not end the text before the quote: the tree's shape differs after them.
_OPERATOR_ENDS: Final = frozenset(";&|")


def plan_unterminated_quote(command: str) -> CommandPlan | None:
    """The parser's plan of ``<simple commands> '<text without a quote>`` (see the module doc), else None."""
    quote = command.find("'")
    if quote < 1 or command.find("'", quote + 1) >= 0 or '"' in command:
        return None
    if command[quote - 1] != " " and command[quote - 1] != "\t":
        return None
    for index in range(quote + 1, len(command)):
        code = ord(command[index])
        if code > 126 or (code < 32 and code != 9):
            return None  # newline, NUL, another control character or non-ASCII: the parser decides
    prefix = command[:quote].rstrip(" \t")
    if not prefix or prefix[-1] in _OPERATOR_ENDS:
        return None
    plan = plan_simple(prefix)
    if plan is None or plan.operators:
        return None  # after a pipeline of three, tree-sitter moves the last command into the ERROR node
    plan.operators.append("\n")
    plan.unsupported.append("ERROR")
    return plan
