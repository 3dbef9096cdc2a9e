"""A script's ``#!`` line and an ``env`` prefix, read one way for every hook reader.

Why (red team round 49): round 48 read a ``#!`` line in two places, differently: one dropped
``env``'s options but kept their values (``#!/usr/bin/env -S -u PYTHONSAFEPATH python3.11`` ran
the "program" ``PYTHONSAFEPATH``; ``-S -i`` lost the ``-i`` that drops the runner's
``PYTHONSAFEPATH``), the other took the word after ``env`` for the program (``env -S bash -e``:
no shell, so the script's ``. ./lib.sh`` was never read); a hook line's ``env -C lib …`` took
``lib`` for the program. Here the words are read as GNU and BSD ``env`` read them: options, their
values, ``-S``'s string split, assignments, then the program. What cannot be read so (``-C``, a
``-S`` string with quotes, escapes or ``${…}``, an unknown option) is `EnvPrefix.unknown`: the
caller fails closed.

A ``#!`` line is split at white space (macOS passes each word; Linux passes the rest of the line
as one argument, which ``env`` reads only with ``-S``: reading it split is the union of both).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["SAFE_PATH_VAR", "SHEBANG_BYTES", "EnvPrefix", "env_prefix", "shebang", "shebang_program"]

SAFE_PATH_VAR = "PYTHONSAFEPATH"
#: ``env`` flags without a value (``-0``, ``-v``) and long options without one, that change nothing
#: a program loads.
_PLAIN_SHORT = frozenset("0v")
_PLAIN_LONG = ("--null", "--debug", "--default-signal", "--ignore-signal", "--block-signal")
#: Bytes of a script read for its ``#!`` line.
SHEBANG_BYTES = 256


@dataclass
class EnvPrefix:
    """What an ``env`` prefix does before its program: ``argv`` is the program and its words
    (``-S`` split); ``clears_safe_path``: the runner's ``PYTHONSAFEPATH`` does not reach it (``-i``,
    ``-u``, an assignment of it); ``assignments``: ``NAME=value`` words it passes; ``unknown``: why it
    cannot be read (the caller fails closed)."""

    argv: list[str | None] = field(default_factory=list)
    clears_safe_path: bool = False
    assignments: list[str] = field(default_factory=list)
    unknown: str | None = None


def env_prefix(words: Sequence[str | None]) -> EnvPrefix:
    """Read ``words`` (``env``'s arguments, after ``env`` itself; None: chosen at run time)."""
    out = EnvPrefix()
    queue = list(words)
    while queue:
        word = queue.pop(0)
        if word is None:
            out.unknown = "an env word chosen at run time"
            return out
        if word in ("-i", "--ignore-environment", "-"):
            out.clears_safe_path = True
        elif word == "--":
            out.argv = queue
            return out
        elif word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in _PLAIN_LONG:
                continue
            if name in ("--unset", "--split-string"):
                if not eq:
                    if not queue or queue[0] is None:
                        out.unknown = f"`env {name}` without a value"
                        return out
                    value = queue.pop(0) or ""
                if name == "--unset":
                    out.clears_safe_path |= value == SAFE_PATH_VAR
                elif not _split_into(value, queue, out):
                    return out
                continue
            out.unknown = f"`env {name}` (not read: it may change the directory or the program)"
            return out
        elif word.startswith("-") and len(word) > 1:
            if not _short_options(word[1:], queue, out):
                return out
        elif "=" in word and not word.startswith("="):
            out.assignments.append(word)
            out.clears_safe_path |= word.split("=", 1)[0] == SAFE_PATH_VAR
        else:
            out.argv = [word, *queue]
            return out
    return out


def _short_options(flags: str, queue: list[str | None], out: EnvPrefix) -> bool:
    """Read one ``-xyz`` word; False when it cannot be read (``out.unknown`` says why)."""
    for at, flag in enumerate(flags):
        if flag == "i":
            out.clears_safe_path = True
        elif flag in _PLAIN_SHORT:
            continue
        elif flag in "uS":
            value: str | None = flags[at + 1 :]
            if not value:
                value = queue.pop(0) if queue else None
            if value is None:
                out.unknown = f"`env -{flag}` without a value"
                return False
            if flag == "u":
                out.clears_safe_path |= value == SAFE_PATH_VAR
                return True
            return _split_into(value, queue, out)
        else:
            out.unknown = f"`env -{flag}` (not read: it may change the directory or the program)"
            return False
    return True


def _split_into(text: str, queue: list[str | None], out: EnvPrefix) -> bool:
    """``-S text``: its words go before the rest (GNU ``env`` splits them so); quotes, escapes and
    ``${…}`` are read otherwise there: not read here (False)."""
    if any(c in text for c in "'\"\\$#"):
        out.unknown = f"`env -S {text!r}` (quotes, escapes or variables are not read)"
        return False
    queue[:0] = text.split()
    return True


def shebang(head: bytes) -> list[str] | None:
    """The command a script's ``#!`` line runs it with (the script not included), ``env``'s words
    kept; None when the file has no ``#!`` line."""
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
    return line.split()


def shebang_program(words: list[str]) -> EnvPrefix:
    """The program of a ``#!`` line's words (`shebang`), through ``env`` when it names one."""
    if words and os.path.basename(words[0]) == "env":
        return env_prefix(words[1:])
    return EnvPrefix(argv=list(words))
