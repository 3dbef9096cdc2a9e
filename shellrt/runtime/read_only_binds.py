"""What commands see read-only (`SandboxPolicy.read_only`), derived once per session.

- **This session's results, shown again.** shellrt's state directory is masked for
  commands (`shellrt.runtime.session_mask`), this session's directory with it; its
  ``tool-results/``, ``shell/`` and ``tasks/`` (the full output a result points at)
  are bound back read-only, so ``grep``/``cat`` of a path the model was given works
  in the sandbox, while nothing there can be written, linked or moved.
- **A home inside the workspace.** The names a later host program runs or obeys from
  the home (`shellrt.supervisor._protect_home`) that exist when the session starts are
  bound read-only onto themselves, before any command: the post-command check is the
  net for what is created later. A path under a mask stays masked.

Backends that cannot bind (docker, local) ignore the field; the check holds there.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from sandbox import SandboxPolicy
from shellrt.supervisor._protect_home import HOME_FILES, HOME_TREES, HomeNames
from shellrt.tools._paths import SESSION_RESULT_DIRS

__all__ = ["read_only_for_commands"]

def read_only_for_commands(session_dir: Path, policy: SandboxPolicy) -> tuple[Path, ...]:
    """The read-only paths for ``policy`` (see the module docstring)."""
    denied = [Path(os.path.normpath(p)) for p in policy.read_denied]

    def masked(path: Path) -> bool:
        return any(m == path or m in path.parents for m in denied)

    shown: list[Path] = []
    own = Path(os.path.normpath(os.path.abspath(session_dir)))
    if masked(own):
        with contextlib.suppress(OSError):
            own.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in SESSION_RESULT_DIRS:
            with contextlib.suppress(OSError):
                (own / name).mkdir(mode=0o700, exist_ok=True)
            shown.append(own / name)
    for root in policy.allowed_roots():
        for home in HomeNames(root).homes:
            for rel in sorted(HOME_FILES | HOME_TREES):
                path = Path(os.path.normpath(os.path.join(home, rel)))
                if os.path.exists(path) and not masked(path):
                    shown.append(path)
    return tuple(dict.fromkeys(shown))
