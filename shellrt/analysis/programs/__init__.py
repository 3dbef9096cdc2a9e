"""Per-program option models: which programs are read-only and with which flags."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .find import check_find, find_exec_commands
from .git import check_git
from .jq import check_jq
from .sed import check_sed
from .simple import SIMPLE_SPECS, check_lsof, check_ps, check_xxd
from .spec import ProgramSpec, parse_args
from .wrappers import INTERPRETERS, JUDGED_WRAPPERS, SHELLS, WRAPPERS, Unwrapped, check_wrapper, unwrap

__all__ = [
    "INTERPRETERS",
    "JUDGED_WRAPPERS",
    "SHELLS",
    "WRAPPERS",
    "ProgramSpec",
    "Unwrapped",
    "check_program",
    "check_wrapper",
    "find_exec_commands",
    "program_spec",
    "unwrap",
]

_CUSTOM: Final[dict[str, Callable[[list[str]], list[str]]]] = {
    "find": check_find,
    "sed": check_sed,
    "git": check_git,
    "xxd": check_xxd,
    "ps": check_ps,
    "lsof": check_lsof,
    "jq": check_jq,
}
#: Custom-checked programs keep the glob/arity hints of their simple spec if they have one.
_CUSTOM_SPECS: Final = {name: SIMPLE_SPECS.get(name, ProgramSpec(name)) for name in _CUSTOM}
#: Every known read-only program's spec, custom-checked ones included (one lookup).
_SPECS: Final[dict[str, ProgramSpec]] = {**SIMPLE_SPECS, **_CUSTOM_SPECS}
#: The spec of a free-form program for its ``check`` (it sees no options and no operands).
_FREE_FORM_SPECS: Final = {name: ProgramSpec(name, free_form=True) for name in SIMPLE_SPECS}

def program_spec(name: str) -> ProgramSpec | None:
    """The option model of a read-only program, or None when the program is not known read-only.

    A function, not ``_SPECS.get``: compiled callers call it natively (a bound method is a Python call).
    """
    return _SPECS.get(name)


def check_program(name: str, args: list[str]) -> list[str]:
    """Reasons ``name args`` is not read-only; the program must have a :func:`program_spec`."""
    custom = _CUSTOM.get(name)
    if custom is not None:
        return custom(args)
    spec = SIMPLE_SPECS[name]
    if spec.free_form:
        reasons: list[str] = []
        if args and spec.forbidden:
            first = args[0]
            for option, why in spec.forbidden.items():
                # `-v NAME` and the attached `-vNAME` alike (bash's getopt takes both)
                if first == option or (len(option) == 2 and first.startswith(option)):
                    reasons.append(f"{name} {option}: {why}")
        if spec.check is not None:
            reasons.extend(spec.check(parse_args(_FREE_FORM_SPECS[name], [])))
        return reasons
    parsed = parse_args(spec, args)
    reasons = parsed.reasons  # a fresh list of this parse
    if spec.check is not None:
        reasons.extend(spec.check(parsed))
    return reasons
