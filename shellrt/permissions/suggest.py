"""Rules that "allow always" would save for a call — as narrow as possible.

Why narrow: a remembered answer should allow what the person saw, not more.
Commands are remembered exactly (one rule per subcommand), written files by
exact path, read files by their directory, domains by exact host. An
incomplete subject gets no suggestion: no rule could allow it anyway.

The call's text is written into a rule, whose language reads some characters
as patterns (red team round 7): a path's glob characters are escaped, and a
command or host holding a ``*`` (which command and domain rules cannot escape:
``Bash(python3 -c 'print(*x)')`` would allow any code between the two halves)
gets no rule — that answer holds for the call only.
"""

from __future__ import annotations

import os

from shellrt.permissions.rules import command_text
from shellrt.protocol import PermissionSubject

__all__ = ["suggest_rules"]


def suggest_rules(tool_name: str, subject: PermissionSubject) -> list[str]:
    """Rule strings that would allow this exact call next time (possibly empty)."""
    if subject.incomplete:
        return []
    out: list[str] = []
    if subject.commands:
        # Folded as allow rules fold (outside quotes only): the rule allows this call's text alone.
        out += [f"{tool_name}({command_text(c)})" for c in subject.commands if c.strip() and "*" not in c]
    elif subject.paths:
        rule_tool = "Read" if subject.access == "read" else "Edit" if subject.access == "write" else tool_name
        for path in subject.paths:
            real = os.path.realpath(path)
            target = (
                f"{_glob_literal(os.path.dirname(real))}/**"
                if subject.access == "read"
                else _glob_literal(real)
            )
            out.append(f"{rule_tool}(/{target})")
    elif subject.domains:
        out += [f"{tool_name}(domain:{d.lower()})" for d in subject.domains if "*" not in d]
    else:
        out.append(tool_name)
    return list(dict.fromkeys(out))


def _glob_literal(path: str) -> str:
    """``path`` as a path rule that matches it alone (``shellrt.permissions.globs`` escapes)."""
    return "".join(f"\\{c}" if c in _GLOB_SPECIAL else c for c in path)


_GLOB_SPECIAL = frozenset("\\*?[]{}")
