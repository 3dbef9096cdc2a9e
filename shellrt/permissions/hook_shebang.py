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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shellrt.analysis.models import PlanCommand

__all__ = [
    "SAFE_PATH_VAR",
    "SHEBANG_BYTES",
    "EnvPrefix",
    "drops_safe_path",
    "env_prefix",
    "shebang",
    "shebang_program",
    "without_safe_path",
]

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


#: Programs that start their operand with an environment of their own, not the caller's
#: (``sudo``'s ``env_reset``, ``doas``, ``su -c``, ``runuser``, ``pkexec``, ``systemd-run``): the
#: runner's ``PYTHONSAFEPATH`` does not reach what they run.
_ENV_RESETTERS = frozenset({"sudo", "doas", "su", "runuser", "pkexec", "systemd-run"})
#: Shell builtins that change an exported variable for the rest of the line or script.
_ENV_BUILTINS = frozenset({"unset", "export", "declare", "typeset", "local", "readonly", "printf", "read"})


def drops_safe_path(parts: Sequence[PlanCommand]) -> bool:
    """Whether any of ``parts`` (one planned hook line, or a whole hook script) drops the runner's
    ``PYTHONSAFEPATH`` for what runs inside or after it (red team round 50): an assignment of it,
    ``env -i``/``-u``/``PYTHONSAFEPATH=`` whatever program ``env`` runs (``env -u … nice python3``,
    ``nice env -u … python3``: the wrapped part that runs Python is planned without it), a builtin
    naming it (``unset PYTHONSAFEPATH; python3 -m x``), ``exec -c``, or a wrapper that resets the
    environment (`_ENV_RESETTERS`). A line or script that does is read as if every command of it ran
    with it unset (over-reads: a drop in one command counts for all)."""
    for part in parts:
        if any(a.name == SAFE_PATH_VAR for a in part.assignments):
            return True
        words = [w.value for w in part.argv]
        program = os.path.basename(words[0] or "") if words else ""
        if program == "env":
            prefix = env_prefix(words[1:])
            if prefix.clears_safe_path:
                return True
        if program in _ENV_RESETTERS or (
            program == "exec" and any(w and w.startswith("-") for w in words[1:2])
        ):
            return True
        if program == "printf" and "-v" not in words[1:]:
            continue  # prints only (a format chosen at run time: `hook_substitutions` refuses it)
        if program in _ENV_BUILTINS and any(w is None or SAFE_PATH_VAR in w for w in words[1:]):
            return True
    return False


def without_safe_path(part: PlanCommand) -> PlanCommand:
    """A copy of ``part`` read as run with the runner's ``PYTHONSAFEPATH`` unset (the planner's
    result may be shared, so never changed in place)."""
    from shellrt.analysis.models import Assignment
    from shellrt.analysis.models import PlanCommand as Part

    unset = Assignment(SAFE_PATH_VAR, f"{SAFE_PATH_VAR}=", None)
    return Part(part.argv, [*part.assignments, unset], part.redirects, part.context, part.wrapped_by)
