"""Command substitutions a hook line may hold and stay trackable (red team round 50).

Why: since round 49 a hook line with any command substitution records the whole workspace (a
program chosen at run time may search the tree), so ``notify-send "$(jq -r .message)"`` stopped
for the session after the first write there. A substitution is harmless to the record when what
it runs loads no workspace code and its output only becomes a plain argument of a program that
never runs, loads or searches for code by its operands (it prints, speaks or logs them). So the
rule is two small tables, and anything else keeps the line untrackable (fail closed):

- `PRINTERS`: the programs whose argument may hold the substitution. ``echo``, ``notify-send``,
  ``say``, ``logger``; ``printf`` only when its format is static (bash's ``printf -v NAME`` sets a
  variable: a format chosen at run time could be ``-v`` and the next argument ``PATH``). Not
  ``osascript`` (runs its argument), ``terminal-notifier`` (``-execute``), ``eval``, any shell.
- `DATA_PROGRAMS`: what a substitution may run: programs that read standard input or named files
  as data and print (``jq``'s own modules are jq code, which has no effects but its output).

Also: the substitution's words are static (no variable, no nested substitution but inside a
printer), it is not wrapped (``timeout 5 jq``: the wrapper is the program), no redirection target
is chosen at run time, a printer's output is not piped on (``echo "$(jq -r .x)" | xargs …``
would make it a command), and each substitution's text is inside an allowed argument (one in a
here-document or an assignment is not). The substitution's own command is still resolved as any
part of the line (the files it names are recorded).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shellrt.analysis.models import CommandPlan, Word

__all__ = ["DATA_PROGRAMS", "PRINTERS", "allowed_substitution_words"]

#: Programs whose operands are only printed, spoken or logged: never run, loaded or searched for.
PRINTERS = frozenset({"echo", "printf", "notify-send", "say", "logger"})
#: Programs a substitution may run: they read data (standard input, named files) and print.
DATA_PROGRAMS = frozenset(
    {
        *("jq", "cat", "head", "tail", "cut", "tr", "wc"),
        *("date", "basename", "dirname", "hostname", "whoami", "id"),
    }
)
#: The options each data program may take in a substitution (red team round 51): short letters
#: (clustered or alone) and whole words; a program's other options fail closed. Not listed: jq's
#: ``-L``/``--library-path``, ``-f``/``--from-file``, ``--rawfile``/``--slurpfile`` (jq code or
#: files from the cwd by a name not read as a path), ``date -f``/``-r``/``-s``, ``hostname -F``/a
#: name operand (sets it), ``wc --files0-from``.
_OPTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "jq": ("rjcnseMCSa", frozenset({
        "--raw-output", "--join-output", "--compact-output", "--null-input", "--slurp", "--exit-status",
        "--sort-keys", "--ascii-output", "--tab", "--arg", "--argjson", "--"})),
    "cat": ("nbsETvAetu", frozenset({"--"})),
    "head": ("nqvc0123456789", frozenset({"--"})),
    "tail": ("nqvc0123456789", frozenset({"--"})),
    "cut": ("s", frozenset({"--complement", "--only-delimited", "--"})),
    "tr": ("dscCt", frozenset({"--"})),
    "wc": ("lcwmL", frozenset({"--"})),
    "date": ("uRI", frozenset({"--utc", "--rfc-email", "--iso-8601", "-d", "--date"})),
    "basename": ("asz", frozenset({"--"})),
    "dirname": ("z", frozenset({"--"})),
    "hostname": ("sfdiIA", frozenset()),
    "whoami": ("", frozenset()),
    "id": ("ugnrGz", frozenset()),
}
#: Options whose value is attached and is data (``cut -d, -f1``, ``head -n5``).
_ATTACHED = {"cut": "dfcb", "head": "nc", "tail": "nc"}
#: jq's module directives: ``import "m" as m {search: "./"}`` loads ``m.jq`` from the cwd.
_JQ_MODULES = re.compile(r"\b(?:import|include|modulemeta|get_search_list)\b")
#: Programs whose operands never name something they set or run (``hostname NAME`` sets the name).
_NO_OPERANDS = frozenset({"hostname", "whoami", "id"})


def _unlisted_word(program: str, words: list[str]) -> str | None:
    """The first of ``words`` (a data program's arguments) `_OPTIONS` does not allow, or None."""
    letters, whole = _OPTIONS.get(program, ("", frozenset()))
    for word in words:
        if program == "jq" and _JQ_MODULES.search(word):
            return word
        if not word.startswith("-") or word == "-":
            if program in _NO_OPERANDS:
                return word
            continue
        if word in whole or (program == "date" and word.startswith(("--iso-8601=", "--date="))):
            continue
        if word.startswith("--") or not letters:
            return word
        body = word[1:]
        attached = _ATTACHED.get(program, "")
        if body[0] in attached or all(c in letters for c in body):
            continue
        return word
    return None


#: Word features a printer's argument may have beside its substitution (quoting).
_ARG_FEATURES = frozenset({"command_substitution", "quoted", "dq_whole"})
_SUBSTITUTION_CONTEXTS = frozenset({"command_substitution"})


def allowed_substitution_words(plan: CommandPlan) -> tuple[set[int], str | None]:
    """(ids of the argv words that hold an allowed substitution, None) when every substitution
    of ``plan`` is allowed by the module's rule; else (empty, why not)."""
    why = "uses a command substitution"
    if any(s.kind not in ("command", "backtick") for s in plan.substitutions):
        return set(), why
    allowed: list[Word] = []
    for part in plan.commands:
        inside = "command_substitution" in part.context
        if "process_substitution" in part.context:
            return set(), why
        if any(r.target is not None and r.target.value is None for r in part.redirects):
            return set(), why + " (a redirection chosen at run time)"
        name = part.argv[0].value if part.argv else None
        program = os.path.basename(name or "")
        dynamic = [w for w in part.argv[1:] if w.value is None]
        if inside:
            if program not in DATA_PROGRAMS or part.wrapped_by is not None or part.assignments:
                return set(), f"{why} running {name or 'a program chosen at run time'!r}"
            if name is None or dynamic:
                return set(), f"{why} with words chosen at run time"
            odd = _unlisted_word(program, [w.value or "" for w in part.argv[1:]])
            if odd is not None:
                return set(), f"{why} running `{program} {odd}` (it may read code or files not named)"
        if not dynamic:
            continue
        if program not in PRINTERS or part.wrapped_by is not None or "pipeline" in part.context:
            return set(), why
        if program == "printf" and (
            part.argv[1].value is None or part.argv[1].value.startswith("-")  # the format, or -v
        ):
            return set(), f"{why} (printf's format chosen at run time)"
        for word in dynamic:
            if not word.features <= _ARG_FEATURES or "command_substitution" not in word.features:
                return set(), why
        allowed += dynamic
    for substitution in plan.substitutions:
        if not any(substitution.text in word.raw for word in allowed):
            return set(), why
    return {id(w) for w in allowed}, None
