"""Telling a host without bubblewrap from a session whose workspace or policy made bwrap fail.

Why: ``auto`` means "bwrap where it works, else local", and local confines nothing. A start
failure caused by what the session brings (a repository's settings file masking thousands of
paths overflowed bwrap's 9000 arguments; red team round 39 novel5) fell back to local with a
warning, so a hostile workspace chose its own sandbox away. Before falling back, bwrap is
started once more on an empty scratch workspace with the default policy: when that works, the
host has bubblewrap and the session is refused with the original reason and what to do.
Only the failure path pays for this probe.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend

__all__ = ["bwrap_fails_for_this_session"]


async def bwrap_fails_for_this_session(exc: BackendUnavailableError) -> BackendUnavailableError | None:
    """The refusal to raise instead of falling back to local after ``exc``, or None when bubblewrap
    also fails on an empty workspace (the host lacks it: the fallback's warning is fair)."""
    try:
        scratch = Path(tempfile.mkdtemp(prefix="shellrt-bwrap-check-"))
    except OSError as err:  # cannot tell: fail closed
        return _refusal(exc, f"the check on an empty workspace could not run: {err}")
    try:
        os.chmod(scratch, 0o755)
        backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=scratch))
        try:
            await backend.start()
        finally:
            await backend.close()
    except BackendUnavailableError:
        return None  # bubblewrap fails here whatever the session brings
    except Exception as err:  # cannot tell: fail closed
        return _refusal(exc, f"the check on an empty workspace failed too: {err}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _refusal(exc, "it starts on an empty workspace with the default policy")


def _refusal(exc: BackendUnavailableError, why: str) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"bubblewrap did not start for this session ({exc}), but {why}: what failed is this "
        "session's workspace or policy (its masked paths, deny rules, limits or network), and "
        "sandbox 'auto' does not drop the sandbox because of what a workspace holds. Fix: remove "
        "the cause bwrap names above (e.g. a settings file's long maskedPaths list), or choose "
        "--sandbox local (sandbox='local') to run commands on this host without isolation"
    )
