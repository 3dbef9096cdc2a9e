"""``jq``: where its filter file comes from must not depend on jq's version.

jq 1.6 and 1.7 read ``-f``/``--from-file`` as a flag: the filter file is the *first operand*,
wherever it is (``jq -f -n prog`` and ``jq -nf prog`` read ``prog``), while the option model (and
newer jq) read the word after ``-f``. A filter file is read for its ``import``/``include``
directives before a jq command is allowed (they read files outside the workspace), so the two
readings must name the same file, and ``-f`` must be a word of its own where that check sees
it: ``-f FILE`` (or ``--from-file FILE``) once, after flags only, with ``FILE`` not an option.
"""

from __future__ import annotations

from typing import Final

from .simple import SIMPLE_SPECS
from .spec import NOARG, ProgramSpec, parse_args

__all__ = ["check_jq"]

_FROM_FILE: Final = ("-f", "--from-file")
_SPEC: Final = SIMPLE_SPECS["jq"]


def check_jq(args: list[str]) -> list[str]:
    """Reasons ``jq ARGS`` is not read-only (the option model's and the filter file's)."""
    spec = _SPEC
    parsed = parse_args(spec, args)
    reasons = parsed.reasons
    if not parsed.has(*_FROM_FILE):
        return reasons
    words = [i for i, arg in enumerate(args) if arg in _FROM_FILE]
    uses = sum(1 for key, _ in parsed.options if key in _FROM_FILE)
    why = ""
    if len(words) != 1 or uses != 1:
        why = "-f/--from-file more than once or inside a cluster of flags (write it once, as its own word)"
    else:
        at = words[0]
        before = args[:at]
        if any(not _is_flag(spec, word) for word in before):
            why = "a word before -f that is not a flag (jq 1.6/1.7 read the filter file from the first operand)"
        elif at + 1 >= len(args) or args[at + 1][:1] == "-":
            why = "-f not followed by the filter file (jq 1.6/1.7 read the first operand as the filter file)"
    if why:
        reasons.append(f"jq: {why}; write `jq [flags] -f FILE [inputs]`")
    return reasons


def _is_flag(spec: ProgramSpec, word: str) -> bool:
    """``word`` is one or more of jq's value-less options (``-n``, ``-nr``, ``--slurp``)."""
    if word[:2] == "--":
        return spec.long.get(word[2:]) == NOARG
    return len(word) > 1 and word[0] == "-" and all(ch in spec.short for ch in word[1:])
