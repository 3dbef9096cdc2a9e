"""What a workspace copy into a sandbox leaves out (the copy itself: `sandbox._anchoredcopy.copy_workspace`).

Why: the host copies as the caller (often root), so the copy is a way around
every mask -- a source holding ``~/.ssh`` (``"workspace": "~"``) carried the keys
into the sandbox's own workspace. So every path the policy hides (its
``read_denied``, and whatever else the caller names) is left out, a source
that is or lies inside one is refused, and only regular files, directories and
symlinks (copied as links) are copied: a device node such as ``/dev/zero``'s
would be read forever (a FIFO or socket fails the copy). Other names of a hidden
file (a hard link made before the rule, or to a file below a hidden directory)
are left out too: the copy would carry its bytes under the harmless name. docker's
copy mode applies the same rules (`sandbox.docker._workspace.copy_in`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection

from sandbox._maskaliases import denied_inodes

__all__ = ["hidden_aliases", "left_out"]


def hidden_aliases(root: str, hidden: Collection[str]) -> frozenset[tuple[int, int]]:
    """``(st_dev, st_ino)`` of the hidden files another name below ``root`` could show (red team
    round 13: Inspect's and batch's copies carried a hard link of a denied file). Bounded like the
    sandbox's own search (`sandbox._maskaliases.denied_inodes`: `SandboxExecError` past it)."""
    return frozenset(denied_inodes([(h, h) for h in sorted(hidden)], [root]))


def left_out(
    directory: str,
    names: list[str],
    hidden: Collection[str],
    aliased: Collection[tuple[int, int]] = frozenset(),
) -> list[str]:
    """The ``names`` in ``directory`` a workspace copy skips (the copy's ignore filter).

    Those whose path is in ``hidden`` (spelt as ``directory`` is), other names of a hidden file
    (``aliased``, from `hidden_aliases`), and everything but regular files, directories and
    symlinks: FIFOs, sockets and devices are no workspace content, and a device would be read
    forever. A name that cannot be examined is skipped too.
    """
    skip = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except OSError:
            skip.append(name)
            continue
        mode = st.st_mode
        if path in hidden or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)) or (aliased and stat.S_ISREG(mode) and st.st_nlink > 1 and (st.st_dev, st.st_ino) in aliased):
            skip.append(name)
    return skip
