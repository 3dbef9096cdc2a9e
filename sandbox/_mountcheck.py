"""Refuse to run a command in a sandbox whose mounts below a writable root landed elsewhere.

bwrap mounts by path, even a ``--bind-fd`` (0.8 turns the fd back into its path, mounts that
path, then compares what it mounted with the fd). A command still running in an older sandbox
of the session, where a directory ``d`` of the workspace is no mount point, can swap ``d`` for a
symlink and back in a loop (``renameat2(RENAME_EXCHANGE)``): a start that meets the symlink
binds whatever it leads to -- a host directory, writable, at its own place, or a host path
masked earlier over a mask -- and meets ``d`` again when it compares (red team, rounds 9-10).

So before the command itself runs, a fixed ``bash -p`` (no startup file, no function from the
environment) reads the sandbox's own ``/proc/self/mountinfo`` and checks that every mount
bwrap made below a writable root (pins, masks, read-only binds, socket covers) has a mount
point at its destination. Each of those operations makes exactly one mount; a mount that
went astray went outside the roots (where no sandbox of the session can rename anything, so
it cannot be brought back under a checked name) or stacked on another checked mount (same
mount point): either way fewer distinct checked names have a mount than there are operations,
and the command is not run (exit 125, with a message saying why). The check sees the mount
table after everything was mounted and before anything of the command ran.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sandbox._hostpath import host_which

__all__ = ["REFUSED", "checked_mounts", "guard_argv"]

#: What a refused start says on stderr (tests and the retry logic look for it).
REFUSED = "shellrt: a mount of this sandbox did not land where it was asked"

#: bwrap flags that mount at their last argument, by their number of arguments.
_MOUNTS = {
    "--bind": 2,
    "--ro-bind": 2,
    "--dev-bind": 2,
    "--bind-try": 2,
    "--ro-bind-try": 2,
    "--dev-bind-try": 2,
    "--bind-fd": 2,
    "--ro-bind-fd": 2,
    "--tmpfs": 1,
    "--proc": 1,
    "--dev": 1,
    "--mqueue": 1,
}
#: Other bwrap flags with arguments (skipped).
_OTHERS = {
    "--cap-add": 1,
    "--cap-drop": 1,
    "--perms": 1,
    "--size": 1,
    "--chdir": 1,
    "--seccomp": 1,
    "--args": 1,
    "--json-status-fd": 1,
    "--info-fd": 1,
    "--block-fd": 1,
    "--sync-fd": 1,
    "--userns-block-fd": 1,
    "--uid": 1,
    "--gid": 1,
    "--hostname": 1,
    "--dir": 1,
    "--remount-ro": 1,
    "--unsetenv": 1,
    "--exec-label": 1,
    "--file-label": 1,
    "--setenv": 2,
    "--symlink": 2,
    "--file": 2,
    "--bind-data": 2,
    "--ro-bind-data": 2,
    "--chmod": 2,
}

_SCRIPT = r"""IFS=$' \t\n'; set -f
mapfile -t lines < /proc/self/mountinfo || exit 125
declare -A seen=()
for line in "${lines[@]}"; do fields=($line); ((seen[${fields[4]}]++)); done
n=$1; shift
for ((i = 0; i < n; i++)); do
  if ((seen[$1]-- <= 0)); then printf '%s: %s\n' "$0" "$1 (it was swapped while the sandbox started); the command was not run, run it again" >&2; exit 125; fi
  shift
done
exec "$@"
"""


def checked_mounts(bwrap_argv: Sequence[str], roots: Sequence[Path]) -> list[str]:
    """The destinations of the mounts in ``bwrap_argv`` strictly below a root, as mountinfo
    spells them (``bwrap_argv`` from the bwrap program on, whose ``--`` ends it)."""
    found: list[str] = []
    i = 0
    while i < len(bwrap_argv):
        flag = bwrap_argv[i]
        if flag == "--":
            break
        if flag in _MOUNTS:
            n = _MOUNTS[flag]
            dest = Path(os.path.normpath(bwrap_argv[i + n]))
            if any(r in dest.parents for r in roots):
                mask = flag == "--tmpfs" or (flag == "--ro-bind" and bwrap_argv[i + 1] == "/dev/null")
                found.append(_mangled(str(_landing(dest, roots) if mask else dest)))
            i += n + 1
            continue
        i += 1 + _OTHERS.get(flag, 0)
    return found  # one a mount, repeats included: two mounts asked at a name need two there


def _landing(dest: Path, roots: Sequence[Path]) -> Path:
    """Where a mask at ``dest`` lands (pins and read-only binds never cross a link): where a symlink on its way (a denied path named through
    a link of the workspace) leads now, when that is below a root too; else ``dest`` itself. A
    link out of the roots (or a swap that makes one now) is not followed: the check then wants
    the name asked for, and refuses rather than trusting a name a command can steer."""
    try:
        real = Path(os.path.realpath(dest))
    except (OSError, ValueError):  # mid-swap
        return dest
    return real if any(r in real.parents for r in roots) else dest


def guard_argv(checked: Sequence[str]) -> list[str]:
    """The argv to put before a command's: checks ``checked`` (`checked_mounts`), then execs it.
    Empty when nothing is checked (no mount below a root: nothing a swap can move)."""
    if not checked:
        return []
    return [_bash(), "-p", "-c", _SCRIPT, REFUSED, str(len(checked)), *checked]


def _bash() -> str:
    for candidate in ("/bin/bash", "/usr/bin/bash"):
        if os.access(candidate, os.X_OK):
            return candidate
    found = host_which("bash")
    if found is None:
        raise FileNotFoundError("bash is needed in the sandbox to check its mounts (apt-get install bash)")
    return found


def _mangled(path: str) -> str:
    """``path`` as /proc/self/mountinfo writes it (space, tab, newline and backslash in octal)."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)
