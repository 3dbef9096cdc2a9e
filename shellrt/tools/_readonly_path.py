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
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from os import PathLike

from shellrt.analysis import CommandAnalysis
from shellrt.permissions.host_path import host_path
from shellrt.supervisor import Supervisor
from shellrt.supervisor.env import DEFAULT_PATH

__all__ = ["with_read_only_path"]

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
    env["PATH"] = path
    return env
