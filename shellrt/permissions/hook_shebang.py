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
    "unread_shebang",
    "without_safe_path",
]

SAFE_PATH_VAR = "PYTHONSAFEPATH"
#: Bytes of a script read for its ``#!`` line.
SHEBANG_BYTES = 256
#: ``env -S`` strings read inside one another, at most (`env_args.read_env` bounds its own too).
_MAX_DEPTH = 8


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


def env_prefix(words: Sequence[str | None], _depth: int = 0) -> EnvPrefix:
    """Read ``words`` (``env``'s arguments, after ``env`` itself; None: chosen at run time) by the
    analysis' one reading of ``env`` (`shellrt.analysis.programs.env_args.read_env`, red team round
    51: this module's own reader took ``=x`` for the program and could not read ``-S`` quotes,
    ``\\_`` or an abbreviated ``--split-s``, so a ``#!/usr/bin/env -S "bash" -e`` script was not
    read as a shell script). What it cannot read, and ``-C`` (another directory), is `unknown`."""
    import shlex

    from shellrt.analysis.programs.env_args import read_env

    argv = ["env", *words]
    got = read_env(argv)
    unknown = EnvPrefix(unknown=f"`env {' '.join(w or '$…' for w in words)}` cannot be read")
    if got.unknown or _depth > _MAX_DEPTH:
        return unknown
    if got.script is not None:  # ``-S``: env's words, shell-quoted by the reader
        again = shlex.split(got.script)
        if again and again[0] == "env":
            inner = env_prefix(again[1:], _depth + 1)
        else:
            count = next((k for k, w in enumerate(again) if "=" not in w), len(again))
            inner = EnvPrefix(argv=list(again[count:]), assignments=again[:count])
        inner.clears_safe_path |= SAFE_PATH_VAR in got.unset or _assigns_safe_path(inner.assignments)
        return inner
    first = min([*got.assigned, got.start or len(argv)])
    options = [w for w in argv[1:first] if w is not None]
    ignores = "-" in options  # a lone ``-`` is ``-i``
    if options and options[-1] in ("-", "--"):
        options.pop()
    # The options as the reader re-emits them before a ``-S`` string: ``-i`` and ``-C`` shown.
    shown = read_env(["env", *options, "-S", "true"]).script or ""
    shown_words = shlex.split(shown)
    if "-C" in shown_words:
        return EnvPrefix(unknown=f"`env {' '.join(options)}` changes the directory (not read)")
    out = EnvPrefix(
        argv=argv[got.start :] if got.start is not None else [],
        assignments=[argv[k] or "" for k in got.assigned],
    )
    out.clears_safe_path = (
        ignores or "-i" in shown_words or SAFE_PATH_VAR in got.unset or _assigns_safe_path(out.assignments)
    )
    return out


def _assigns_safe_path(assignments: Sequence[str]) -> bool:
    return any(a.partition("=")[0] == SAFE_PATH_VAR for a in assignments)


def shebang(head: bytes) -> list[str] | None:
    """The command a script's ``#!`` line runs it with (the script not included), ``env``'s words
    kept; None when the file has no ``#!`` line."""
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
    return line.split()


def unread_shebang(path: str) -> str | None:
    """Why the ``#!`` line of the file at ``path`` cannot be read (its ``env`` words), or None
    (red team round 51: such a script was read as neither a shell nor a Python script, so what it
    sources went unread; its caller records the tree instead)."""
    from shellrt.permissions.hook_read import read_regular

    head = read_regular(path, SHEBANG_BYTES)
    line = shebang(head) if head is not None else None
    return shebang_program(line).unknown if line is not None else None


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
            if prefix.clears_safe_path or prefix.unknown is not None:
                return True  # round 51: an ``env`` not read may drop it (fails closed)
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
