"""Where a read-denied path's mask lands: where the path leads (red team, round 29).

A mask is a mount, and bwrap makes it at the path as written. When a symlink is on the way
(the path itself or a directory above it), that fails in two ways:

* an absolute link is followed inside bwrap's own set-up root, where its target does not exist:
  "Can't create file at ...", and the sandbox does not start. A command that made a link at a
  denied name that was missing (``ln -s /etc/hostname .env`` with ``Read(./.env)`` denied) stopped
  every later command of its session, with an error blaming user namespaces;
* a link below a place the sandbox fills itself (/tmp) got its mask inside the private /tmp, on
  nothing, and the file it leads to stayed readable (``/tmp/x/link -> WS/secret``).

shellrt's policy layer resolves links when it derives a policy; this is the backend's own rule,
applied at every start, for links made later and for policies given to `sandbox` directly: the
mask goes on the real path, which hides the file under every name. A real path that is or holds a
writable root or the state dir is not masked (it would hide the workspace from itself; what it
leads to is shown anyway), as the policy layer decides.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["mask_at", "root_holders"]


def _holds(real: Path, bound: Sequence[Path]) -> bool:
    """Whether ``real`` is or holds one of ``bound`` (each as its real path)."""
    for root in bound:
        try:
            form = Path(os.path.realpath(root))
        except (OSError, ValueError):
            return True  # uncertain: as if it held it
        if form == real or real in form.parents:
            return True
    return False


def root_holders(denied: Sequence[Path], roots: Sequence[Path]) -> list[Path]:
    """The read-denied paths that are or hold a writable root (as written or as real paths). Their
    mask, an empty directory mounted after the roots, hid the workspace itself ("cannot enter the
    working directory") and left the session unusable; shellrt's policy layer drops them with a
    note, a policy given to the backend directly is refused (`BwrapBackend.start`)."""
    held = []
    for path in denied:
        try:
            forms = {Path(os.path.normpath(path)), Path(os.path.realpath(path))}
        except (OSError, ValueError):
            forms = {Path(os.path.normpath(path))}
        if any(_holds(form, roots) for form in forms):
            held.append(path)
    return held


def mask_at(path: Path, kind: str | None, bound: Sequence[Path]) -> Path | None:
    """The path to mount ``path``'s mask on: itself when nothing on its way is a link (or it is
    missing: ``kind`` None, frozen as written), else its real path; None when that is or holds one
    of ``bound``."""
    if kind is None:
        return path
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return path  # as written: bwrap fails the start rather than show it (fail closed)
    if real == Path(os.path.normpath(path)):
        return path
    return None if _holds(real, bound) else real
