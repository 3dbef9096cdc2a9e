"""The session directory is shellrt's, never the sandbox's.

It holds the output spools, the transcript, the resume state, persisted results,
the audit log and the quarantine: files the host opens, writes and trusts. The
default one (``~/.local/state/shellrt/sessions/<id>``) lies inside the workspace
whenever the workspace is the home directory, and any ``session_dir`` may lie in
a writable root; there a command could plant symlinks the host wrote through,
forge the state a resume trusts, or move the directory away. So such a session
directory is masked in the sandbox, as secrets are (the file tools still read it).
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox import SandboxPolicy

__all__ = ["session_dir_masks"]


def session_dir_masks(session_dir: Path, policy: SandboxPolicy) -> tuple[Path, ...]:
    """``(session_dir,)`` when it lies below a root the sandbox may write (by path or realpath), else ``()``."""
    roots = [Path(os.path.realpath(r)) for r in policy.allowed_roots()]
    roots += [Path(os.path.normpath(r)) for r in policy.allowed_roots()]
    forms = {Path(os.path.normpath(os.path.abspath(session_dir))), Path(os.path.realpath(session_dir))}
    if any(root in form.parents for form in forms for root in roots):
        return (Path(os.path.abspath(session_dir)),)
    return ()
