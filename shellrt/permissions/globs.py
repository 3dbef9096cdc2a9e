"""The one glob dialect of shellrt: permission rules and the file tools (Glob, Grep's ``glob``,
ignore files) all translate globs here.

The dialect is ripgrep's ``globset`` (what Glob and Grep hand to ``rg``):
``*`` within a segment, ``**`` segments, ``?``, ``[...]`` classes, ``{a,b}``
alternates, ``\\`` escapes — so ``*.{pem,key}`` means the same in
``Read(*.{pem,key})`` and in ``Glob("**/*.{pem,key}")``. Not ``pathspec``: its
gitwildmatch has no ``{a,b}``, which ripgrep (and so the tools) supports.
Permission rules add gitignore anchoring on top (documented in
``docs/permissions.md``):

- a pattern with a ``/`` at the start or in the middle is anchored at the base
  directory; a pattern without one (``.env``, ``*.pem``) matches at any depth
  below the base;
- ``*`` matches within one path segment, ``?`` one character, ``[abc]`` a class,
  ``{a,b}`` either alternative, ``**`` any number of segments (``a/**/b``, ``**/x``, ``x/**``);
- a pattern that matches a directory matches everything below it (a trailing
  ``/`` is accepted and means the same);
- nothing outside the base directory ever matches a relative pattern.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["compile_glob", "glob_matches", "glob_regex"]


def _class_to_regex(glob: str, i: int) -> tuple[str, int] | None:
    """Translate ``[...]`` starting at ``glob[i] == '['``; None if it never closes (then ``[`` is literal)."""
    j = i + 1
    negate = j < len(glob) and glob[j] in "!^"
    if negate:
        j += 1
    start = j
    if j < len(glob) and glob[j] == "]":
        j += 1
    while j < len(glob) and glob[j] != "]":
        j += 1
    if j >= len(glob):
        return None
    body = glob[start:j].replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
    return ("[^" if negate else "[") + body + "]", j + 1


def _glob_body(glob: str, *, in_alternate: bool = False) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        elif c == "*" and glob.startswith("**", i):
            at_start = i == 0 or glob[i - 1] == "/"
            at_end = i + 2 == n or glob[i + 2] == "/"
            if at_start and at_end:
                if i + 2 == n:
                    # trailing "**" (or the whole glob): anything, including "/"
                    out.append(".*")
                    i += 2
                else:
                    # "**/" : zero or more directories
                    out.append("(?:.*/)?")
                    i += 3
            else:
                out.append("[^/]*")
                i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            translated = _class_to_regex(glob, i)
            if translated is None:
                out.append(re.escape(c))
                i += 1
            else:
                out.append(translated[0])
                i = translated[1]
        elif c == "{" and not in_alternate:
            close = _matching_brace(glob, i)
            if close is None:
                out.append(re.escape(c))
                i += 1
            else:
                alternatives = _split_alternates(glob[i + 1 : close])
                out.append("(?:" + "|".join(_glob_body(a, in_alternate=True) for a in alternatives) + ")")
                i = close + 1
        elif c == "/":
            out.append("/")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _matching_brace(glob: str, i: int) -> int | None:
    j = i + 1
    while j < len(glob):
        if glob[j] == "\\":
            j += 2
            continue
        if glob[j] == "}":
            return j
        j += 1
    return None


def _split_alternates(body: str) -> list[str]:
    parts, current, j = [], [], 0
    while j < len(body):
        if body[j] == "\\" and j + 1 < len(body):
            current.append(body[j : j + 2])
            j += 2
            continue
        if body[j] == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(body[j])
        j += 1
    parts.append("".join(current))
    return parts


def glob_regex(glob: str) -> str:
    """Regex source for a glob in globset/gitignore syntax (``*`` within a segment, ``**``
    segments, ``?``, ``[...]``, ``{a,b}`` alternates, ``\\`` escapes); not anchored."""
    return _glob_body(glob)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a relative gitignore-style pattern to a regex over a relative POSIX path.

    The regex matches the path itself or any ancestor directory of it (a
    matched directory covers its contents).
    """
    pat = pattern.rstrip("/") if pattern not in ("/", "") else pattern
    anchored = "/" in pat
    pat = pat.lstrip("/")
    if pat.startswith("./"):
        pat = pat[2:]
        anchored = True
    segments = [s for s in pat.split("/") if s not in ("", ".")]
    # "dir/**" is "dir": a matched directory covers everything below it anyway.
    while len(segments) > 1 and segments[-1] == "**":
        segments.pop()
    body = ".*" if segments in ([], ["**"]) else glob_regex("/".join(segments))
    prefix = "" if anchored else "(?:[^/]+/)*"
    return re.compile(f"{prefix}{body}(?:/.*)?", re.DOTALL)


def glob_matches(pattern: str, relative_path: str) -> bool:
    """Whether ``relative_path`` (POSIX, no leading ``/``, no ``..``) is matched by ``pattern``."""
    if relative_path in ("", "."):
        relative_path = ""
        return compile_glob(pattern).fullmatch("") is not None
    return compile_glob(pattern).fullmatch(relative_path) is not None
