"""Host paths no bwrap sandbox shows at their own path, so a mask there hides nothing (red team round 28).

Every sandbox fills /tmp, the run dirs and the hidden temp dir with its own content (its private
/tmp, empty tmpfses); the writable roots and the state dir are bound back at their host paths.
A read-denied path below /tmp and outside those binds (a batch's ``--out`` or task file in
``/tmp/run``) is out of reach already, yet its mask (``--ro-bind /dev/null /tmp/run/out.jsonl``)
made bwrap create the mount point's parents inside the session's /tmp. With ``TMPDIR`` below /tmp
too, a root caller's holder had made the first of them there, root's and 0700, as the parent of
the state dir's mount point; the per-command bwrap, run as the sandbox uid, could not create the
next one: "bwrap: Can't mkdir parents for ...: Permission denied", and every command exited 1.
Masking only what a sandbox shows starts every such layout, and costs fewer mounts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["unseen"]


def _forms(path: Path) -> set[Path]:
    """The path as written (normalised) and as resolved: a mask lands on the one, the host's file
    is the other."""
    return {Path(os.path.normpath(path)), Path(os.path.realpath(path))}


def unseen(path: Path, filled: Sequence[Path], bound: Sequence[Path]) -> bool:
    """Whether no sandbox shows ``path``: in every form strictly below one of ``filled`` (places
    the sandbox fills with its own content) and neither at, below nor holding any of ``bound``
    (the host paths bound back: writable roots, the state dir). Uncertain (an error): False, so
    the mask stays."""
    normal = Path(os.path.normpath(path))
    if not any(place in normal.parents for place in filled):  # the usual case, without a realpath
        return False
    try:
        forms = _forms(path)
        places = [f for p in filled for f in _forms(p)]
        shown = [f for b in bound for f in _forms(b)]
    except (OSError, ValueError):
        return False
    for form in forms:
        if not any(place in form.parents for place in places):
            return False
        if any(b == form or b in form.parents or form in b.parents for b in shown):
            return False
    return True
