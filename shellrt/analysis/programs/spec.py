"""Generic option models: which flags a program accepts and which take a value.

An argv is read-only for a :class:`ProgramSpec` when every option is known and
not forbidden. Short options may be bundled (``-rn``) and a value may be attached
(``-n5``, ``-ovalue``) or separate (``-n 5``); long options take ``--name=value``
or, for required values, ``--name value``. Anything else is not read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

__all__ = ["ARG", "NOARG", "OPTARG", "ParsedArgs", "ProgramSpec", "longs", "parse_args"]

NOARG: Final = 0
ARG: Final = 1
#: Optional value, only in the attached form (``--color`` or ``--color=auto``).
OPTARG: Final = 2
#: Two separate values (``jq --arg name value``).
ARG2: Final = 3

#: Extra per-program check over the parsed arguments; returns reasons (empty: fine).
Check = Callable[["ParsedArgs"], list[str]]


def longs(spec: str) -> dict[str, int]:
    """Parse ``"all color=? width= arg=2"`` into ``{name: arity}``."""
    out: dict[str, int] = {}
    for item in spec.split():
        if item.endswith("=?"):
            out[item[:-2]] = OPTARG
        elif item.endswith("=2"):
            out[item[:-2]] = ARG2
        elif item.endswith("="):
            out[item[:-1]] = ARG
        else:
            out[item] = NOARG
    return out


@dataclass(frozen=True)
class ProgramSpec:
    """Option model of one read-only program."""

    name: str
    short: str = ""
    short_arg: str = ""
    #: Short options whose value can only be attached (``-M50%``); never consume the next word.
    short_opt: str = ""
    long: dict[str, int] = field(default_factory=dict)
    #: ``head -5`` style numeric options.
    numeric: bool = False
    #: Options that are recognised but make the command not read-only, with why.
    forbidden: dict[str, str] = field(default_factory=dict)
    max_positional: int | None = None
    #: Every option of the program is harmless, so a glob that expands to an
    #: option cannot do harm (``ls *``). Only set after reading the man page.
    glob_safe: bool = False
    #: Arguments are printed data (echo): parameter expansions are allowed.
    data_args: bool = False
    #: Accept any static argument (programs with no options that write or execute).
    free_form: bool = False
    #: Options end at the first positional (``--`` always ends them).
    posix_order: bool = False
    check: Check | None = None
    #: Long options are matched as whole words (jq compares with ``strcmp``): ``--name=value`` is an
    #: unknown option to the program, never a value, so the model must not read one either.
    whole_long: bool = False


class ParsedArgs:
    """Options (normalised name -> values) and positionals of one invocation.

    A plain class with ``__init__`` (not a dataclass): built for every judged
    command, and mypyc compiles a hand-written ``__init__`` to native code.
    """

    __slots__ = ("options", "positionals", "reasons")

    def __init__(
        self,
        options: list[tuple[str, str | None]] | None = None,
        positionals: list[str] | None = None,
        reasons: list[str] | None = None,
    ) -> None:
        self.options: list[tuple[str, str | None]] = [] if options is None else options
        self.positionals: list[str] = [] if positionals is None else positionals
        self.reasons: list[str] = [] if reasons is None else reasons

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [v for name, v in self.options if name in names and v is not None]


def parse_args(spec: ProgramSpec, args: Iterable[str]) -> ParsedArgs:
    """Parse ``args`` (argv without the program name) against ``spec``."""
    options: list[tuple[str, str | None]] = []
    positionals: list[str] = []
    reasons: list[str] = []
    parsed = ParsedArgs(options, positionals, reasons)
    # Typed: isinstance narrows to list[Any], and compiled code treats Any with generic (slow) operations.
    items: list[str] = args if isinstance(args, list) else list(args)
    count = len(items)
    name = spec.name
    forbidden = spec.forbidden
    numeric = spec.numeric
    posix_order = spec.posix_order
    i = 0
    only_positional = False
    while i < count:
        arg = items[i]
        i += 1
        if only_positional or arg == "-" or arg[:1] != "-":
            positionals.append(arg)
            if posix_order:
                only_positional = True
            continue
        if arg == "--":
            only_positional = True
            continue
        if arg[1] == "-":
            long_name, eq, value = arg[2:].partition("=")
            key = "--" + long_name
            arity = spec.long.get(long_name)
            if arity is None:
                reasons.append(f"{name}: unknown option {key}")
                continue
            if key in forbidden:
                reasons.append(f"{name} {key}: {forbidden[key]}")
            if eq and spec.whole_long:
                reasons.append(
                    f"{name}: {key}=... is not an option to {name} (it takes no --option=value; the words after "
                    "it are read differently); write the value as the next word"
                )
            if arity == NOARG:
                if eq:
                    reasons.append(f"{name}: option {key} takes no value")
                options.append((key, None))
            elif arity == OPTARG:
                options.append((key, value if eq else None))
            elif eq:
                options.append((key, value))
                if arity == ARG2:
                    i += 1
            else:
                if i >= count:
                    reasons.append(f"{name}: option {key} needs a value")
                    break
                options.append((key, items[i]))
                i += 2 if arity == ARG2 else 1
            continue
        body = arg[1:]
        if numeric and body.isascii() and body.isdigit():
            options.append(("-#", body))
            continue
        short_arg = spec.short_arg
        short_opt = spec.short_opt
        short = spec.short
        j = 0
        while j < len(body):
            ch = body[j]
            key = "-" + ch
            j += 1
            if forbidden and key in forbidden:
                reasons.append(f"{name} {key}: {forbidden[key]}")
            if ch in short_arg:
                value = body[j:]
                if not value:
                    if i >= count:
                        reasons.append(f"{name}: option {key} needs a value")
                        break
                    value = items[i]
                    i += 1
                options.append((key, value))
                break
            if ch in short_opt:
                options.append((key, body[j:] or None))
                break
            if ch in short:
                options.append((key, None))
                continue
            if numeric and ch.isascii() and ch.isdigit():
                options.append(("-#", body[j - 1 :]))
                break
            if key not in forbidden:
                reasons.append(f"{name}: unknown option {key}")
            break
    if spec.max_positional is not None and len(positionals) > spec.max_positional:
        reasons.append(
            f"{name}: more than {spec.max_positional} operand(s) (an extra operand is an output file)"
        )
    return parsed
