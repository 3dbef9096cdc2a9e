"""Bash deny and ask rules spelled so that they can match no command.

Why: a command rule is matched as text against the command's words, so a spelling slip makes a
deny rule that parses, is listed, and denies nothing — silently, in every mode (red team round 33):
``Bash(rm: *)`` (a program named ``rm:``), ``Bash(rm::*)``, ``Bash(rm:**)``, ``Bash(rm<U+FF1A>*)`` (a
fullwidth or other lookalike colon) and ``Bash("rm":*)`` (the quotes are compared as written, so
only ``"rm" x`` met it, never ``rm -rf x``). Such a rule is refused with the spelling meant: a
malformed deny or ask rule degrades the session, where an inert one let everything through.
"""

from __future__ import annotations

import re

__all__ = ["inert_command_rule"]

#: Characters that look like ':' (fullwidth, ratio, modifier letters, small and presentation forms).
_COLON_LOOKALIKES = "\uff1a\u2236\ua789\u02d0\u02f8\ufe13\ufe55\u0589\u05c3\u1361\u16ec\u205a\u0703\u0704"
#: A first word that is one plain word in quotes: 'rm' or "rm" (no character a shell would need quoted).
_QUOTED_PLAIN = re.compile(r"""(['"])([A-Za-z0-9_./+-]+)\1""")


def inert_command_rule(spec: str) -> str | None:
    """Why the Bash rule specifier ``spec`` (folded by ``command_text``) can match no command, with
    what to write instead; None when it may match one."""
    head = spec[:-2] if spec.endswith(":*") else spec
    first = head.split(" ", 1)[0]
    if first.endswith(":") and first.strip(":"):
        name = first.rstrip(":")
        return f"no program is named {first!r}, so it matches no command; did you mean {name + ':*'!r}?"
    if spec.endswith(":**"):
        return f"':**' matches no command; did you mean {spec[:-1]!r}?"
    if len(spec) >= 2 and spec[-1] == "*" and spec[-2] in _COLON_LOOKALIKES:
        return (
            f"{spec[-2]!r} (U+{ord(spec[-2]):04X}) only looks like ':', so the rule matches no command; "
            f"write {spec[:-2] + ':*'!r}"
        )
    quoted = _QUOTED_PLAIN.fullmatch(first)
    if quoted is not None:
        fixed = quoted.group(2) + spec[len(first) :]
        return f"quotes are compared as written, so {first} matches only a quoted {first}; write {fixed!r}"
    return None
