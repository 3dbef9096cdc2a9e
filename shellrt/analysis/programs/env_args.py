"""The one reading of GNU ``env``'s arguments (red team, round 50).

``env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]`` as coreutils 9.1 reads it: getopt with
``+C:iS:u:v0`` (option parsing stops at the first operand) and its long options (any unique prefix),
then a lone ``-`` (``-i``), then every word holding ``=`` (``=x`` too) is put in the environment,
then the command. ``-S STRING`` is split by env's own rules (quotes, ``\\_``, ``\\c``, ``#``) and
its words replace the options read so far: option parsing starts again on them, then on the rest.

The planner, the part names, the wrapper judgement and the bindings all take env's command and
its ``NAME=VALUE`` words from here; a word or an option this reading cannot be sure of makes the
command unknown (fail closed).
"""

from __future__ import annotations

import re
import shlex
from typing import Final

from .wrappers import Unwrapped

__all__ = ["read_env", "split_string"]

#: Long options: what each is (a short letter, "opt": an optional ``=SIG``, "" a flag, "none": runs nothing).
_LONG: Final[dict[str, str]] = {
    "--ignore-environment": "",
    "--null": "",
    "--unset": "u",
    "--chdir": "C",
    "--split-string": "S",
    "--block-signal": "opt",
    "--default-signal": "opt",
    "--ignore-signal": "opt",
    "--list-signal-handling": "",
    "--debug": "",
    "--help": "none",
    "--version": "none",
}
_FLAGS: Final = "iv0"
_VALUED: Final = "CSu"
#: Most ``-S`` strings read in one command (each may hold another).
_MAX_SPLITS: Final = 8
#: A dynamic word that is one ``NAME="…"`` word whatever it holds (one double-quoted value; no ``@``:
#: ``"$@"`` and ``"${a[@]}"`` are as many words as they hold).
_QUOTED_ASSIGNMENT: Final = re.compile(r'[A-Za-z_][A-Za-z0-9_]*="[^"@]*"').fullmatch
_BLANKS: Final = " \t\n\v\f\r"
#: A NAME=VALUE word the shell also reads as an assignment (a valid name before the ``=``).
_NAME_VALUE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=").match
_ESCAPES: Final[dict[str, str]] = {'"': '"', "#": "#", "$": "$", "'": "'", "\\": "\\",
                                    "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _long(name: str) -> str | None:
    """The long option ``name`` stands for (itself or the one it abbreviates); None: unknown or ambiguous."""
    if name in _LONG:
        return name
    matches = [option for option in _LONG if option.startswith(name)]
    return matches[0] if len(matches) == 1 and len(name) > 2 else None


def split_string(text: str) -> list[str] | None:
    """The words ``env -S text`` makes, or None where env would expand (``${NAME}``) or refuse the string."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    single = double = False
    i = 0
    while i < len(text):
        char = text[i]
        i += 1
        if single:
            if char == "'":
                single = False
            elif char == "\\" and i < len(text) and text[i] in "\\'":
                current.append(text[i])
                i += 1
            else:
                current.append(char)
            continue
        if char == "'" and not double:
            single = in_word = True
        elif char == '"':
            double = not double
            in_word = True
        elif char in _BLANKS and not double:
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        elif char == "#" and not double and not in_word:
            break  # a comment: the rest of the string
        elif char == "$":
            return None  # `${NAME}`: env's value of NAME, not known here
        elif char == "\\":
            if i >= len(text):
                return None
            escaped = text[i]
            i += 1
            if escaped == "c" and not double:
                break  # `\c`: the rest of the string is ignored
            if escaped == "_":
                if double:
                    current.append(" ")
                elif in_word:
                    words.append("".join(current))
                    current, in_word = [], False
                continue
            value = _ESCAPES.get(escaped)
            if value is None:
                return None  # env refuses an unknown escape (and `\c` in quotes)
            current.append(value)
            in_word = True
        else:
            current.append(char)
            in_word = True
    if single or double:
        return None  # an unterminated quote: env refuses the string
    if in_word:
        words.append("".join(current))
    return words


def read_env(argv: list[str | None], raws: list[str] | None = None) -> Unwrapped:
    """What ``env`` runs: the index of its command in ``argv`` (``None`` entries are dynamic words),
    the indexes of its ``NAME=VALUE`` words, the names ``-u`` removes; with ``-S``, a script: env's words
    shell-quoted, which the shell's grammar reads as env's split gave them.

    ``raws``: the words as written; a dynamic ``NAME="…"`` word (one word whatever it holds) is then an
    assignment too, not the command."""
    words = list(argv)
    unset: list[str] = []
    chdir: list[str] = []
    ignore = False
    splits = 0
    i = 1
    while i < len(words):
        arg = words[i]
        if arg is None:
            if raws is not None and i < len(raws) and _QUOTED_ASSIGNMENT(raws[i]) is not None:
                break  # `NAME="…"`: no option
            return Unwrapped(unknown=True)  # an option, an assignment or the command: not known
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        i += 1
        letter = ""
        value: str | None = None
        if arg.startswith("--"):
            name, eq, attached = arg.partition("=")
            option = _long(name)
            if option is None:
                return Unwrapped(unknown=True)  # env refuses it (unknown or ambiguous): not modelled
            kind = _LONG[option]
            if kind == "none":
                return Unwrapped()  # --help, --version: no command runs
            if kind in ("", "opt"):
                if eq and kind == "":
                    return Unwrapped(unknown=True)
                ignore = ignore or option == "--ignore-environment"
                continue
            letter = kind
            if eq:
                value = attached
            elif i < len(words):
                value = words[i]
                i += 1
                if value is None:
                    return Unwrapped(unknown=True)
            else:
                return Unwrapped(unknown=True)
        else:
            body = arg[1:]
            for index, char in enumerate(body):
                if char in _FLAGS:
                    ignore = ignore or char == "i"
                    continue
                if char not in _VALUED:
                    return Unwrapped(unknown=True)  # env refuses the option: not modelled
                letter = char
                value = body[index + 1 :] or None
                if value is None:
                    if i >= len(words) or words[i] is None:
                        return Unwrapped(unknown=True)
                    value = words[i]
                    i += 1
                break
        if not letter or value is None:
            continue
        if letter == "u":
            unset.append(value)
        elif letter == "C":
            chdir.append(value)
        else:
            pieces = split_string(value)
            splits += 1
            rest = words[i:]
            if pieces is None or splits > _MAX_SPLITS or any(word is None for word in rest):
                return Unwrapped(unknown=True)
            # env starts over on the string's words, then the rest: as a script, its words quoted.
            options = [*(["-i"] if ignore else []), *[w for n in unset for w in ("-u", n)],
                       *[w for d in chdir for w in ("-C", d)]]
            again: list[str] = [*options, *pieces, *[w for w in rest if w is not None]]
            inner = read_env(["env", *again])
            plain = inner.start is not None and inner.script is None and not options
            if plain and all(_NAME_VALUE(again[k - 1]) for k in range(1, inner.start or 1)):
                # No option in them: the shell reads the same words the same way (NAME=VALUE words
                # as the command's prefix assignments), without a second `env` part.
                count = (inner.start or 1) - 1
                prefix = [w.partition("=")[0] + "=" + shlex.quote(w.partition("=")[2]) for w in again[:count]]
                return Unwrapped(script=" ".join([*prefix, shlex.join(again[count:])]), unset=tuple(unset))
            return Unwrapped(script=shlex.join(["env", *again]), unset=tuple(unset))
    if i < len(words) and words[i] == "-":
        i += 1  # a lone `-` is `-i`
    assigned: list[int] = []
    while i < len(words):
        word = words[i]
        if word is None:
            if raws is None or i >= len(raws) or _QUOTED_ASSIGNMENT(raws[i]) is None:
                break  # the command, or words bash may split: a command whose name is not static
        elif "=" not in word:
            break
        assigned.append(i)
        i += 1
    if i >= len(words):
        return Unwrapped(assigned=tuple(assigned), unset=tuple(unset))
    return Unwrapped(start=i, assigned=tuple(assigned), unset=tuple(unset))
