"""shellrt's own state is shellrt's, never the sandbox's.

The session directory holds the output spools, the transcript, the resume state,
persisted results, the audit log and the quarantine; the per-user state directory
holds every session and the in-flight records a later session restores protected
files from; the config directory holds the workspace trust store (which decides
whether a repository's hooks run on the host); the cache holds the docker
identity helper. The host opens, writes and trusts all of them. With the home
directory as the workspace (or a ``session_dir`` / ``SHELLRT_HOME`` inside a
writable root) they were the sandbox's to write: a command planted symlinks the
host wrote through, trusted a hostile repository, forged records, replaced the
helper. So each of them below a writable root is masked in the sandbox, as secrets
are (made first when missing, so the mask holds from the first command). The file
tools still read the session directory (`shellrt.tools._paths.view_for`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from sandbox import SandboxPolicy

__all__ = ["own_state_dirs", "session_dir_masks"]


def own_state_dirs(session_dir: Path) -> list[Path]:
    """The directories shellrt keeps state in for this session (whether they exist or not)."""
    from shellrt.permissions.trust import trust_store_path
    from shellrt.runtime.session import session_root
    from shellrt.supervisor._inflight import inflight_dir

    dirs = [session_dir, session_root().parent, inflight_dir().parent, trust_store_path().parent]
    # The docker identity helper's cache (`sandbox.docker._priv._cache_dirs`; the temp dir one is
    # the host's /tmp, which no sandbox sees): named here, importing the docker backend costs seconds.
    if os.environ.get("XDG_CACHE_HOME"):
        dirs.append(Path(os.environ["XDG_CACHE_HOME"]) / "shellrt")
    home = os.path.expanduser("~")
    if home and home != "~":
        dirs.append(Path(home) / ".cache" / "shellrt")
    return dirs


def session_dir_masks(session_dir: Path, policy: SandboxPolicy) -> tuple[Path, ...]:
    """Those of `own_state_dirs` strictly below a root the sandbox may write (by path or realpath),
    created (0700) when missing: a mask only covers what exists when the sandbox starts."""
    roots = {Path(os.path.realpath(r)) for r in policy.allowed_roots()}
    roots |= {Path(os.path.normpath(r)) for r in policy.allowed_roots()}
    masks: list[Path] = []
    for directory in own_state_dirs(session_dir):
        path = Path(os.path.normpath(os.path.abspath(directory)))
        forms = {path, Path(os.path.realpath(path))}
        if any(root in form.parents for form in forms for root in roots):
            with contextlib.suppress(OSError):
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            masks.append(path)
    return tuple(dict.fromkeys(masks))
