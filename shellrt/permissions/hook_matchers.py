r"""Hook matchers that can match no tool as written: a rule's form, another case, a broken regex.

Why: a matcher is a tool name, ``A|B`` names or a regex, compared case-sensitively with the
registered names (as in Claude Code). A guard written like a permission rule (``Bash(rm:*)``, as a
regex ``Bash`` then a group: it matches ``Bashrm``) or in another case (``bash``), or with spaces around ``|``, matched no call,
so the guard never ran and nothing said so (red team round 28). A regex that nests repeats
(``(\w+)+X``) is refused too: matched on the event loop for every call, it can backtrack for hours. The hook runner reports such a
hook and drops it, and a dropped guard degrades the session (`CommandHookRunner.lost_guard`).
"""

from __future__ import annotations

import re
from typing import Any

from shellrt.permissions.rules import builtin_tool_named

__all__ = ["NAMES_ONLY", "matcher_problem"]

#: A matcher made of plain names only (``Bash``, ``Edit|Write``): compared as names, not as a regex.
NAMES_ONLY = re.compile(r"^[A-Za-z0-9_\-]+(\|[A-Za-z0-9_\-]+)*$")
#: Repeats a regex matcher may hold: its cost on a name it misses grows as the name's length to
#: this power (three: 3 ms on 256 characters; four: 0.3-16 s; red team round 37).
_MAX_REPEATS = 3
#: ``Tool(...)``: the form of a permission rule.
_RULE_FORM = re.compile(r"([A-Za-z][A-Za-z0-9_]*)\s*\((.*)\)", re.DOTALL)


def matcher_problem(matcher: str) -> str | None:
    """Why ``matcher`` cannot match any tool as the operator meant it, with what to write; or None."""
    m = matcher.strip()
    if m in ("", "*"):
        return None
    rule = _RULE_FORM.fullmatch(m)
    tool = (builtin_tool_named(rule[1]) or (rule[1] if rule[1].startswith("mcp__") else None)) if rule else None
    if tool is not None and not _matches(m, tool):  # ``Bash(Output)?`` is a regex naming Bash
        return (
            f"hook matcher {m!r} is written like a permission rule, but matchers name tools, not permission "
            f"rules (as a regex it matches no tool); write \"matcher\": {tool!r} and let the hook judge the "
            "input, or put the rule in permissions"
        )
    try:
        re.compile(m)
    except re.error as exc:
        return f"hook matcher {m!r} is not a valid regex ({exc})"
    if _nested_repeat(m):
        return (
            f"hook matcher {m!r} repeats a group that itself repeats or alternates: Python's regex engine "
            "can take exponential time on it (a 27-character MCP tool name held the session 8 s), on "
            "every call; name the tools (Edit|Write) or use one repeat (mcp__github__.*)"
        )
    if _many_repeats(m) > _MAX_REPEATS:
        return (
            f"hook matcher {m!r} has more than {_MAX_REPEATS} repeats (*, +, {{n,}}): Python's regex engine "
            "takes time growing as the tool name's length to that power on a name it does not match "
            "(`mcp__.*_.*_.*_.*_write` held the session 1.7 s on a 250-character MCP tool name, every call); "
            "name the tools (Edit|Write) or use fewer repeats (mcp__github__.*)"
        )
    squeezed = re.sub(r"\s*\|\s*", "|", m)
    if squeezed != m and NAMES_ONLY.match(squeezed):
        return (
            f"hook matcher {m!r} names no tool: tool names hold no spaces, and the matcher is compared "
            f"whole; write {squeezed!r}"
        )
    if NAMES_ONLY.match(m):
        for word in m.split("|"):
            known = builtin_tool_named(word)
            if known is not None and known != word:
                return (
                    f"hook matcher {m!r} names no tool: {word!r}; tool names are case-sensitive "
                    f"(did you mean {known!r}?)"
                )
    return None


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return False


def _many_repeats(pattern: str) -> int:
    """How many repeats of more than one (``*``, ``+``, ``{2,}``, ``{0,9}``) ``pattern`` holds, at
    any depth. Read from Python's own parse of the pattern."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    repeats = {c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)}

    def count(value: Any) -> int:
        found = 0
        if isinstance(value, (list, tuple, _parser.SubPattern)):
            items = list(value)
            if len(items) == 2 and items[0] in repeats:
                _, high, _sub = items[1]
                found += high is c.MAXREPEAT or high > 1
            found += sum(count(item) for item in items)
        return found

    return count(_parser.parse(pattern))


def _nested_repeat(pattern: str) -> bool:
    """Whether ``pattern`` repeats (more than once) something that repeats or alternates: the
    shapes whose backtracking is exponential. Read from Python's own parse of the pattern."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    repeats = {c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)}

    def parts(op: object, av: Any) -> list[Any]:
        """The sub-patterns of one parsed node that is not a repeat (none for a plain atom)."""
        if op is c.BRANCH:
            return list(av[1])
        if op is c.SUBPATTERN:
            return [av[-1]]
        if op in (c.ASSERT, c.ASSERT_NOT):
            return [av[1]]
        if op is getattr(c, "ATOMIC_GROUP", None):
            return [av]
        return []

    def walk(items: Any, inside: bool) -> bool:
        for op, av in items:
            if op in repeats:
                _, high, sub = av
                many = high is c.MAXREPEAT or high > 1
                if (many and inside) or walk(sub, inside or many):
                    return True
            elif (op is c.BRANCH and inside) or any(walk(sub, inside) for sub in parts(op, av)):
                return True
        return False

    return walk(_parser.parse(pattern), False)
