"""Plan one simple command fed by a quoted here-document without the parser (anything else: None).

Agents write files with ``cat > path <<'EOF'`` ... ``EOF``. With a quoted delimiter
bash reads the body literally, so when the first line is a command the parser-free
path (:func:`~shellrt.analysis.fastplan.plan_simple`) plans and the body cannot be
read two ways, :func:`plan_heredoc` builds the plan the tree-sitter path builds:
that command with a ``<<`` redirection last and a :class:`Heredoc` holding the body.

It fails closed (None: the caller parses) unless: the here-document operator is
``<<`` (not ``<<-``), after a blank, is the last thing on the first line, and has a
delimiter of word characters in single or double quotes; the first line before it
is one command the fast path takes (no operator, no wrapper, ``cd`` or shell whose
arguments the planner reads); the body is printable ASCII, tabs and newlines
without ``$``, backquote, backslash or the delimiter anywhere, and its first line is not
blank (the parser starts such a body later than bash reads it); the input ends with
the delimiter line (and at most one newline). Tests compare both paths.
"""

from __future__ import annotations

from typing import Final

from .fastplan import MAX_CHARS, PLANNER_NAMES, plan_simple
from .nodes import CommandPlan, Heredoc, Redirect

__all__ = ["plan_fast", "plan_heredoc"]

#: By ASCII code point: 1 may start a delimiter, 2 may continue it, 4 may be in a body.
_CLASSES: Final = bytes(
    [
        (1 if char.isalpha() or char == "_" else 0)
        | (2 if char.isalnum() or char == "_" else 0)
        | (4 if (" " <= char <= "~" and char not in "$`\\") or char in "\t\n" else 0)
        for char in [chr(code) for code in range(128)]
    ]
)


def plan_fast(command: str) -> CommandPlan | None:
    """The parser-free plan of ``command`` (a simple list, or one command with a quoted here-document), or None."""
    if "\n" in command:
        return plan_heredoc(command)
    return plan_simple(command)


def plan_heredoc(command: str) -> CommandPlan | None:
    """The plan of ``command <<'DELIM'\\nbody\\nDELIM`` (see the module doc), else None."""
    if len(command) > MAX_CHARS:
        return None
    newline = command.find("\n")
    if newline < 0:
        return None
    first_line = command[:newline]
    operator = first_line.find("<<")
    if operator <= 0 or first_line[operator - 1] not in " \t" or first_line.find("<<", operator + 2) >= 0:
        return None
    delimiter = _quoted_delimiter(first_line[operator + 2 :].lstrip(" \t"))
    if delimiter is None:
        return None
    rest = command[newline + 1 :]
    if rest.endswith("\n"):
        rest = rest[:-1]
    if rest == delimiter:
        body = ""
    elif rest.endswith("\n" + delimiter):
        body = rest[: len(rest) - len(delimiter)]
        if delimiter in body or not _plain_body(body):
            return None
        if not body[: body.find("\n")].strip(" \t"):
            return None  # a blank first body line: the parser starts the body elsewhere than bash
    else:
        return None
    plan = plan_simple(first_line[:operator])
    if plan is None or len(plan.commands) != 1 or plan.operators:
        return None
    planned = plan.commands[0]
    argv = planned.argv
    if not argv or argv[0].raw in PLANNER_NAMES:
        return None
    if not planned.redirects and argv[-1].raw == "-":
        return None  # the grammar drops a lone `-` before a redirection: the parser path refuses that
    redirect = Redirect(None, "<<", None, "heredoc")
    planned.redirects = [*planned.redirects, redirect]
    plan.redirects.append(redirect)
    plan.heredocs.append(Heredoc(delimiter, False, body, []))
    return plan


def _quoted_delimiter(text: str) -> str | None:
    """``'NAME'`` or ``"NAME"`` (word characters, nothing after it): NAME, else None."""
    if len(text) < 3 or text[0] not in "'\"" or text[-1] != text[0]:
        return None
    name = text[1:-1]
    flag = 1
    for index in range(len(name)):
        code = ord(name[index])
        if code >= 128 or not _CLASSES[code] & flag:
            return None
        flag = 2
    return name


def _plain_body(body: str) -> bool:
    for index in range(len(body)):
        code = ord(body[index])
        if code >= 128 or not _CLASSES[code] & 4:
            return False
    return True
