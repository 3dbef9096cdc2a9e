"""``.`` and ``..`` in a path rule, folded when the rule is read.

Paths are compared after ``..`` is folded, so a pattern that kept one matched no
path at all: ``Read(./secrets/../secrets/key)``, ``Read(../shared/token)`` (a
sibling of the project) or ``Edit(src/./main.c)`` were accepted as deny rules and
denied nothing, in every mode (red team round 7). A rule is folded here once: a
``..`` after a literal directory removes it, one that climbs above the rule's root
makes the rule absolute (``//parent/shared/token``), and one that cannot be folded
(after a pattern such as ``*`` or ``**``, above the home directory, or with no root
known) is a syntax error — a malformed deny or ask rule degrades the session,
never silently matches nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "GLOB_ESCAPABLE",
    "DotSegmentError",
    "escape_reading",
    "fold_dot_segments",
    "windows_form",
    "windows_forms",
    "windows_separated",
]

#: A backslash before one of these is a glob escape (``\\*``: a literal star; ``\\ `` a blank
#: kept at the end and ``\\#`` a leading hash, as gitignore writes them); before anything else it
#: is a Windows separator (``.\\secrets\\key``), which never matches a POSIX path.
GLOB_ESCAPABLE = frozenset("*?[]{},!\\ #")

_ESCAPE = re.compile(r"\\(.)")
_GLOB = re.compile(r"(?<!\\)[*?\[\]{}]")


class DotSegmentError(ValueError):
    """A path rule's ``..`` cannot be folded (the caller turns this into a rule syntax error)."""


def _is_dot(segment: str, dots: str) -> bool:
    return segment == dots or ("\\" in segment and _ESCAPE.sub(r"\1", segment) == dots)


def fold_dot_segments(spec: str, root: Path | None) -> str:
    """``spec`` with its ``.``/``..`` segments folded (unchanged when it has none)."""
    if spec.startswith("//"):
        prefix, rest = "//", spec[2:]
    elif spec.startswith("~/"):
        prefix, rest = "~/", spec[2:]
    elif spec.startswith("/"):
        prefix, rest = "/", spec[1:]
    elif spec.startswith("./"):
        prefix, rest = "./", spec[2:]
    else:
        prefix, rest = "", spec
    segments = rest.split("/")
    if not any(_is_dot(s, ".") or _is_dot(s, "..") for s in segments):
        return spec
    kept: list[str] = []
    climbed = 0
    for segment in segments:
        if segment == "" or _is_dot(segment, "."):
            continue  # 'a//b' and 'a/./b' are 'a/b', as the paths compared are
        if not _is_dot(segment, ".."):
            kept.append(segment)
        elif not kept:
            climbed += 1
        elif _GLOB.search(kept[-1]):
            raise DotSegmentError(
                f"'..' after the pattern {kept[-1]!r} cannot be folded; write the path without it"
            )
        else:
            kept.pop()
    folded = "/".join(kept) + ("/" if kept and rest.endswith("/") else "")
    if prefix == "//":
        return "//" + folded  # above / is / itself
    if climbed and prefix == "~/":
        raise DotSegmentError("'..' climbs above your home directory; write the path as //absolute/path")
    if prefix == "~/":
        return "~/" + folded if folded else "~"
    if climbed or not folded:
        if root is None:
            raise DotSegmentError("'..' climbs above the rule's root; write the path as //absolute/path")
        target = os.path.normpath(os.path.join(str(root), *([".."] * climbed), folded))
        return "//" + target.lstrip("/")
    # Anchored as written (it held a '/'): never turned into a pattern that floats to any depth.
    return "/" + folded


def windows_separated(spec: str) -> str | None:
    """``spec`` with each backslash that is not a glob escape (a Windows separator, or a lone one
    at the end) read as ``/``; None when it has none."""
    if "\\" not in spec:
        return None
    out: list[str] = []
    i, changed = 0, False
    while i < len(spec):
        if spec[i] == "\\" and i + 1 < len(spec) and spec[i + 1] in GLOB_ESCAPABLE:
            out.append(spec[i : i + 2])
            i += 2
            continue
        changed = changed or spec[i] == "\\"
        out.append("/" if spec[i] == "\\" else spec[i])
        i += 1
    return "".join(out) if changed else None


def windows_form(spec: str, root: Path | None) -> str | None:
    """`windows_separated` folded (``.\\secrets\\key`` -> ``/secrets/key``); None when ``spec``
    has no Windows separator or the form cannot be folded.

    Why: a backslash before a letter is a glob escape of that letter, so a repository's
    ``Read(.\\secrets\\key)`` denied ``.secretskey`` in the permission layer while the sandbox
    compile called it Windows-style and masked nothing (red team round 42). Deny and ask rules match
    this form too, and the sandbox masks it: one reading in both places."""
    form = windows_separated(spec)
    if form is None:
        return None
    try:
        return fold_dot_segments(form, root)
    except DotSegmentError:
        return None


def windows_forms(spec: str, root: Path | None) -> tuple[str, ...]:
    """Every Windows reading of ``spec`` a deny or ask rule matches: `windows_form` (a backslash
    before a glob character an escape) and, when that differs, the form where every backslash is a
    separator (``.\\secrets\\*`` -> ``/secrets/*``); () when ``spec`` has no Windows separator.

    Why: a rule with a Windows separator in it is a Windows path, so its other backslashes are
    separators too; round 42 kept ``\\*`` an escape, and a repository's ``Read(.\\secrets\\*)``
    denied and masked the names ``secrets/*`` and ``.secrets*`` while ``secrets/key`` was read
    (rounds 42/43's Left; round 45). A rule with no such separator (``./secrets\\*``) keeps
    gitignore's escapes: it is not Windows-style."""
    if windows_separated(spec) is None:
        return ()
    forms = [windows_form(spec, root)]
    try:
        forms.append(fold_dot_segments(spec.replace("\\", "/"), root))
    except DotSegmentError:
        pass
    return tuple(dict.fromkeys(f for f in forms if f is not None))


def escape_reading(spec: str) -> str | None:
    """``spec`` as the permission layer's glob also reads it: each backslash that `windows_separated`
    takes for a separator is an escape of the next character (``.\\secrets\\key`` -> ``.secretskey``;
    a lone one at the end dropped); None when ``spec`` has no such backslash.

    Why: a deny rule matches both readings (`windows_form` and this), so the sandbox must mask
    both; it masked the separator reading alone and ``cat .secretskey`` read a denied file
    (red team round 43)."""
    if windows_separated(spec) is None:
        return None
    out: list[str] = []
    i = 0
    while i < len(spec):
        if spec[i] == "\\":
            out.append(spec[i : i + 2] if i + 1 < len(spec) and spec[i + 1] in GLOB_ESCAPABLE else spec[i + 1 : i + 2])
            i += 2
            continue
        out.append(spec[i])
        i += 1
    return "".join(out)
