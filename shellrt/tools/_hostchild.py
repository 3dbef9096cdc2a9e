"""A host process a tool starts runs at an ordinary priority, never its caller's raised one.

The tools start host processes of their own: ripgrep and the Python walker over a repository,
git's queries in it, TaskOutput's filter child, Read's notebook and PDF children, the page
converter worker, the MCP servers. Each works on what a hostile repository or model hands it, and
each inherited the thread that started it: shellrt run under ``chrt -r``, at nice -5 or under
``ionice -c 1`` (a harness keeping its supervision responsive) gave them a real-time policy, a
negative nice or the real-time I/O class, so one busy loop on crafted input took up to 95% of a
CPU (or the disks first) from every ordinary process (red team round 36, sched). Commands and
hooks start under `sandbox._bwrap_sched.calm_prefix` since round 36; every tool start goes
through `calm_argv`, the one place that puts it before theirs.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence

from sandbox._bwrap_sched import calm_prefix

__all__ = ["calm_argv"]


def calm_argv(argv: Sequence[str], path: str | None = None) -> list[str]:
    """``argv`` behind `calm_prefix` (with its rlimits): unchanged, no exec more, for an ordinary
    caller. Call it on the thread that starts the process (priority is per thread on Linux).

    ``path``: the ``PATH`` the child searches (None: this process's). A program named without a
    ``/`` is looked up there first when a prefix is needed, so a missing one is still the
    `FileNotFoundError` the start raised before, not an exit status of the prefix's exec.
    Raises `FileNotFoundError` (saying what to install) when a program of the prefix is missing."""
    prefix = calm_prefix(limits=True)
    if not prefix:
        return list(argv)
    program = argv[0]
    if (
        "/" not in program
        and shutil.which(program, path=os.environ.get("PATH") if path is None else path) is None
    ):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    return [*prefix, *argv]
