"""Programs given to a read-only program's option, named only at run time (red team, round 35).

ripgrep runs ``--pre CMD`` and ``--hostname-bin CMD``, fd runs ``-x``/``-X`` (``--exec``,
``--exec-batch``) with the words after it. The permission engine reads such options of other programs
(``sort --compress-program``, ``man -P``, ``tar --to-command``) and refuses a value it cannot read;
here a run-time word (``x=$(printf '\\x72m'); rg --pre "$x" y .`` removes every file it searches) or
a glob (``fd -x ./*``) there is a part no rule matches. A static name is a word the rules read.
"""

from __future__ import annotations

from typing import Final

from .globwords import expanded_by_bash
from .nodes import PlanCommand, Word

__all__ = ["RUNNERS", "run_time_program"]

#: Programs and their options whose value (with fd, the words after it) is a program they run.
RUNNERS: Final[dict[str, frozenset[str]]] = {
    "rg": frozenset({"--pre", "--hostname-bin"}),
    "fd": frozenset({"-x", "--exec", "-X", "--exec-batch"}),
    "fdfind": frozenset({"-x", "--exec", "-X", "--exec-batch"}),
}
#: fd's short options that take a value: in a cluster the rest of the word is that value.
_FD_VALUED: Final = "dEtecSjo"


def _unknown(word: Word) -> bool:
    return word.value is None or expanded_by_bash(word)


def run_time_program(command: PlanCommand) -> str:
    """The command's text when an option of `RUNNERS` is given a program known only at run time."""
    options = RUNNERS.get(command.name or "")
    if options is None:
        return ""
    words = command.argv[1:]
    fd = command.name != "rg"
    for i, word in enumerate(words):
        text = word.value if word.value is not None else word.raw
        if text == "--":
            break
        option = text.partition("=")[0]
        if option in options or (fd and _fd_cluster_runs(text)):
            if "=" in text and option.startswith("--"):
                hit = _unknown(word)  # `--pre=$x`: the value is in the word
            elif fd:
                hit = any(_unknown(w) for w in words[i + 1 :])  # fd's command is every word after
            else:
                hit = i + 1 < len(words) and _unknown(words[i + 1])
            if hit:
                return " ".join(w.raw for w in command.argv)
    return ""


def _fd_cluster_runs(text: str) -> bool:
    """``-Hx``, ``-HX``: a cluster of fd's short flags that reaches ``x``/``X`` before a valued one."""
    if text[:1] != "-" or text[1:2] in ("", "-"):
        return False
    for letter in text[1:]:
        if letter in "xX":
            return True
        if letter in _FD_VALUED:
            return False
    return False
