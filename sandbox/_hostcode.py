"""Where the host process loads its own code from stays read-only in the sandbox.

shellrt runs on the host and imports lazily (a tool's dependency on first use, a backend when
a session picks it). Run from a virtual environment inside the project (``.venv``) or from a
source tree below the workspace, its interpreter's prefix and ``sys.path`` entries lie in a
writable root: a command wrote a module there, or a ``.pth`` file every later start of that
interpreter runs, and the host ran it unsandboxed, as the caller (red team, round 16). Each
such directory strictly inside a writable root is bound read-only (and pinned: its parents are
mount points, so ``mv`` cannot swap a writable directory in at its path).

An entry that *is* a writable root, or holds one (``python -m`` run from the workspace puts the
workspace itself first on ``sys.path``), cannot be made read-only without taking the workspace
away: `host_code_places` names those roots for a warning.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["host_code_places"]


def _code_places() -> set[str]:
    """Real paths the running interpreter loads code from: its prefixes, its executable's
    directory and every ``sys.path`` entry (an empty entry: the current directory)."""
    places = {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable or "")}
    places.update(entry or os.getcwd() for entry in sys.path if isinstance(entry, str))
    out = set()
    for place in places:
        if not place:
            continue
        try:
            real = os.path.realpath(place)
        except (OSError, ValueError):
            continue
        if os.path.exists(real):
            out.add(real)
    return out


def _forms(root: Path) -> set[str]:
    return {os.path.normpath(str(root)), os.path.realpath(root)}


def host_code_places(roots: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(each place of `_code_places` strictly inside a writable root, shortest first -- a venv's
    prefix and its site-packages are both listed, the binds nest; each writable root that is, or
    lies below, such a place: it cannot be made read-only)."""
    places = _code_places()
    inside: list[Path] = []
    exposed: list[Path] = []
    for root in roots:
        forms = _forms(root)
        for place in places:
            if any(place != form and place.startswith(form.rstrip("/") + "/") for form in forms):
                inside.append(Path(place))
            elif any(form == place or form.startswith(place.rstrip("/") + "/") for form in forms):
                exposed.append(root)
    return sorted(set(inside), key=lambda p: (len(p.parts), str(p))), list(dict.fromkeys(exposed))
