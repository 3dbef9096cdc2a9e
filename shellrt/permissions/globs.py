"""Gitignore-style path globs, anchored at a base directory.

Why our own matcher: permission rules must be matched against resolved
absolute paths, with exactly the gitignore semantics users know from
``Read(./secrets/**)``, and without a dependency whose edge cases we would not
control. Semantics (documented in ``docs/permissions.md``):

- a pattern with a ``/`` at the start or in the middle is anchored at the base
  directory; a pattern without one (``.env``, ``*.pem``) matches at any depth
  below the base;
- ``*`` matches within one path segment, ``?`` one character, ``[abc]`` a class,
  ``**`` any number of segments (``a/**/b``, ``**/x``, ``x/**``);
- a pattern that matches a directory matches everything below it (a trailing
  ``/`` is accepted and means the same);
- nothing outside the base directory ever matches a relative pattern.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["compile_glob", "glob_matches"]


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = segment[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "\\" and i + 1 < len(segment):
            i += 1
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


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
    parts: list[str] = []
    for index, seg in enumerate(segments):
        last = index == len(segments) - 1
        if seg == "**":
            # `**` last: the directory itself and anything below; elsewhere: zero or more segments.
            if last and parts:
                parts[-1] = parts[-1].removesuffix("/") + "(?:/.*)?"
            else:
                parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        parts.append(_segment_regex(seg) + ("" if last else "/"))
    body = "".join(parts) if parts else ".*"
    prefix = "" if anchored else "(?:[^/]+/)*"
    return re.compile(f"{prefix}{body}(?:/.*)?", re.DOTALL)


def glob_matches(pattern: str, relative_path: str) -> bool:
    """Whether ``relative_path`` (POSIX, no leading ``/``, no ``..``) is matched by ``pattern``."""
    if relative_path in ("", "."):
        relative_path = ""
        return compile_glob(pattern).fullmatch("") is not None
    return compile_glob(pattern).fullmatch(relative_path) is not None
