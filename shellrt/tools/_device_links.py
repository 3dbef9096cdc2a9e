"""A workspace word that a link turns into standard input, a descriptor or a device (red team, round 53).

The analysis reads words as text: ``bash /dev/stdin <<< CODE`` and ``source /proc/self/fd/0`` are code no rule
reads, and the engine asks beside a command rule. A link in the workspace (``s -> /dev/stdin``, ``w ->
/proc/self/fd``, ``d -> /dev``, left by an earlier call or the repository) spells the same file as ``s``,
``w/0`` or ``d/stdin``: ``bash s <<< 'x=r; ${x}m y'`` ran ``rm`` beside ``Bash(rm:*)`` denied in
bypassPermissions. The tools resolve words on the host; this says which of a part's words a link leads into
``/proc`` or ``/dev`` (not ``/dev/null``, a regular file or a directory there), where what a program opens is not
a file of the workspace that any rule can read.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence

from shellrt.analysis.kernel_paths import names_stdin

__all__ = ["as_stdin", "device_links"]

#: Links followed in one word (the kernel's own limit is 40).
_MAX_HOPS = 40
#: A process's root or working directory link, what follows it walked on from ``/`` or the part's directory.
_PROCESS_PLACE = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/(root|cwd)(?=/|$)")
#: Words looked at per part: past this many, a part is not checked (a long argv of plain names is not code).
_MAX_WORDS = 256


def device_links(words: Sequence[str], bases: Sequence[str], to_host: Callable[[str], str]) -> dict[str, str]:
    """Each of ``words`` (a part's argv and assignments) with a value a link leads to standard input, a
    descriptor or a device, mapped to the word with that value replaced by the path the link leads to (as text:
    ``s`` -> ``/dev/stdin``, ``--rcfile=s`` -> ``--rcfile=/dev/stdin``); a value is the word, what follows its
    ``=``, or an attached short option's value (``-fs``); resolved from each of ``bases`` (host directories), an
    absolute word's directory through ``to_host``."""
    found: dict[str, str] = {}
    for word in list(dict.fromkeys(words))[:_MAX_WORDS]:
        for value in _values(word):
            target = next((t for base in bases if (t := _linked_target(value, base, to_host))), "")
            if target:
                found[word] = word[: len(word) - len(value)] + target
                break
    return found


def as_stdin(words: Sequence[str]) -> list[dict[str, str]]:
    """What `device_links` could make of ``words`` at most, one reading per kind of value: every word read as
    ``/dev/stdin``, every ``=`` value (``BASH_ENV=/dev/stdin``), every attached short option's value
    (``-f/dev/stdin``). Pure text: when no code check fires on any of them, no link can make one fire, and
    the filesystem is not looked at (most parts)."""
    readings: list[dict[str, str]] = [{}, {}, {}]
    for word in words:
        for kind, value in enumerate(_kinds(word)):
            if _path_like(value):
                readings[kind][word] = word[: len(word) - len(value)] + "/dev/stdin"
    return [reading for reading in readings if reading]


def _kinds(word: str) -> tuple[str, str, str]:
    """A word's possible values by kind: itself, what follows its ``=``, an attached short option's value."""
    attached = word[2:] if word.startswith("-") and not word.startswith("--") else ""
    return word, word.partition("=")[2], attached


def _values(word: str) -> list[str]:
    """The path-like values a word may hand a program: itself, after ``=`` (``--rcfile=s``, ``BASH_ENV=s``), and
    an attached short option's value (``-fs``)."""
    return [v for v in _kinds(word) if _path_like(v)]


def _path_like(value: str) -> bool:
    """A value a program may open as a path: not empty, no NUL, not an option."""
    return bool(value) and "\0" not in value and not value.startswith("-")


def _linked_target(value: str, base: str, to_host: Callable[[str], str]) -> str:
    """Where ``value`` leads when a link (not its text) takes it into ``/proc`` or ``/dev``, to standard input, a
    descriptor, or something that is not a regular file, a directory or ``/dev/null`` ("" otherwise)."""
    expanded = os.path.expanduser(value)
    written = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(base, expanded))
    if _kernel_owned(written):
        return ""  # the text says it: the analysis reads it (`kernel_paths`)
    start = to_host(os.path.dirname(written)) if os.path.isabs(expanded) else base
    target = _first_kernel_path(start, os.path.basename(written) if os.path.isabs(expanded) else expanded)
    if not target or target == "/dev/null":
        return ""
    if names_stdin(target):
        return target  # the caller's descriptor, never this process's: not looked at here
    try:
        mode = os.stat(target).st_mode
    except (OSError, ValueError):
        return ""
    return "" if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else target


def _kernel_owned(path: str) -> bool:
    return path in ("/proc", "/dev") or path.startswith(("/proc/", "/dev/"))


def _first_kernel_path(directory: str, relative: str) -> str:
    """The path (as text) at which resolving ``relative`` from ``directory`` (a real host directory), name by name
    and each link followed as the kernel does, enters ``/proc`` or ``/dev`` ("" when it never does, or when a link
    is not readable). It stops there: ``/proc/self`` is the caller's process, not this one."""
    names = [n for n in relative.split("/") if n and n != "."]
    here = start = directory
    hops = 0
    while names:
        name = names.pop(0)
        if name == "..":
            here = os.path.dirname(here) or "/"
            continue
        step = os.path.join(here, name)
        if _kernel_owned(step):
            text = "/".join([step, *names])
            place = _PROCESS_PLACE.match(text)
            if place is None or hops >= _MAX_HOPS:
                return text  # as text: `kernel_paths` reads a `..` after the kernel's links
            # The caller's root or working directory (`c -> /proc/self/cwd`, then `c/s`): walked on from there.
            hops += 1
            here = "/" if place.group(1) == "root" else start
            names = [n for n in text[place.end() :].split("/") if n and n != "."]
            continue
        if not os.path.islink(step):
            here = step
            continue
        hops += 1
        try:
            link = os.readlink(step)
        except (OSError, ValueError):
            return ""
        if hops > _MAX_HOPS:
            return ""  # the kernel's ELOOP: nothing opens
        if link.startswith("/"):
            here = "/"
        names = [n for n in link.split("/") if n and n != "."] + names
    return ""
