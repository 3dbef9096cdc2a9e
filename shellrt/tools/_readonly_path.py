"""The ``PATH`` a command judged read-only runs with: no directory its session's commands write.

Why: on the local and bwrap backends a command takes the operator's ``PATH``
(`shellrt.supervisor.env.base_env`). An activated virtualenv of the repository (``.venv/bin``
first), direnv's ``PATH_add bin`` or ``node_modules/.bin`` put directories the session's commands
write before the system ones, so ``git status``, judged read-only and run without asking, ran
the repository's own ``git`` (red team round 26). A read-only command is a known program with
known options, not a project tool: it runs with the rule shellrt's own host-side programs are
found by (`host_path`: no relative entry, no entry inside a writable root, as root none another
user can write). So does a command an allow rule let run (round 27): ``Bash(git:*)`` approves
the program ``git``, not the repository's ``.venv/bin/git``. A command that a mode, a hook, a person
or a tool-wide rule approved keeps the operator's ``PATH`` (`shellrt.permissions.call_approval`).
A rule-allowed command keeps it too while no word of the command names a program the two ``PATH``s
resolve to different files (`_shadowed`): a virtualenv's ``python3`` (a link to the system's) and a
tool only the project has (``.venv/bin/pytest`` with no other) are what the rule meant.
"""

from __future__ import annotations

import os
import re
import shutil
import weakref
from collections.abc import Iterable
from os import PathLike

from shellrt.analysis import CommandAnalysis
from shellrt.permissions.host_path import host_path
from shellrt.supervisor import Supervisor
from shellrt.supervisor.env import DEFAULT_PATH

__all__ = ["with_read_only_path"]

#: A word that may name a program looked up on ``PATH`` (no slash, no expansion, no assignment).
_PROGRAM_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")

#: At most this many distinct words are looked up; a longer command is taken as shadowed.
_MAX_WORDS = 64

#: A ``PATH`` that finds nothing: an empty one would search the working directory.
_NOWHERE = "/dev/null"

#: Per session (supervisor): its read-only ``PATH``. Computed once: `host_path` stats every entry
#: and the directories above it (about a millisecond as root), and the base ``PATH`` is fixed.
_memo: weakref.WeakKeyDictionary[Supervisor, str] = weakref.WeakKeyDictionary()


def with_read_only_path(
    env: dict[str, str],
    analysis: CommandAnalysis | None,
    sup: Supervisor,
    roots: Iterable[PathLike[str] | str],
    *,
    operator_approved: bool | None = None,
) -> dict[str, str]:
    """``env`` (changed in place) with the read-only ``PATH`` when ``analysis`` judged the command
    read-only or a rule naming its programs allowed it (``operator_approved`` False), and the
    backend shows the host's programs (docker keeps its image's fixed ``PATH``).
    ``roots``: the session's writable roots (also registered; given again so none is missed)."""
    by_rule = operator_approved is False
    if not sup.backend.host_view or not (by_rule or (analysis is not None and analysis.read_only)):
        return env
    path = _memo.get(sup)
    if path is None:
        wanted = tuple(roots)
        operator = sup.base_env.get("PATH") or DEFAULT_PATH
        path = host_path(operator, wanted) or host_path(DEFAULT_PATH, wanted) or _NOWHERE
        _memo[sup] = path
    read_only = analysis is not None and analysis.read_only
    if by_rule and not read_only and not _shadowed(analysis, sup.base_env.get("PATH") or DEFAULT_PATH, path):
        return env  # the rule's programs are the operator's own: nothing shadows them
    env["PATH"] = path
    return env


def _shadowed(analysis: CommandAnalysis | None, operator: str, safe: str) -> bool:
    """True when a word of the command (any word: ``xargs git``, ``find -exec git`` run programs by
    name too) is a program that ``operator`` and ``safe`` resolve to different files (compared
    resolved: a virtualenv's ``python3`` links to the system's). A name only ``operator`` finds is
    the project's own tool: the rule could only mean it. Unknown analysis or too many words: True.
    The same ``PATH`` string both ways finds the same files: no lookup (two per word)."""
    if analysis is None:
        return True
    words = {w for part in analysis.subcommands for w in part.argv if _PROGRAM_WORD.fullmatch(w)}
    if len(words) > _MAX_WORDS:
        return True
    if operator == safe:
        return False
    for word in words:
        kept = shutil.which(word, path=safe)
        if kept is None:
            continue
        found = shutil.which(word, path=operator)
        if found is not None and os.path.realpath(found) != os.path.realpath(kept):
            return True
    return False
