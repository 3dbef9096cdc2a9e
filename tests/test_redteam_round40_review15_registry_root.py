"""Red team, round 40 (review15): a sandbox whose writable root is the peers' registry.

`_host_pause_peers` trusts its registry (``shellrt-peers-<euid>``) because no sandbox sees it. But
`sandbox._systemroots`, which refuses roots that are or hold the system places, did not know it: a
bwrap session with the registry (or a directory inside it) as its workspace was made, and its
commands removed other processes' entries (a busy process's ``b``: another's hook ran under its
task) or planted locked ones. Its own hooks refuse (the registry lies in its roots); others' did not.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.errors import SandboxPolicyError
from sandbox.factory import create_backend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.anyio


async def _removes_anothers_entry(workspace: str) -> str:
    """What happened to another process's live ``b`` entry (its workspace elsewhere) under a session
    on ``workspace``: refused at the backend's making, or removed by its command."""
    from shellrt.supervisor._host_pause_peers import announce, registry

    require_bwrap()
    registry()
    entry = announce("b", ("/nonexistent-elsewhere",))
    try:
        try:
            backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=Path(workspace)))
        except SandboxPolicyError as exc:
            return f"refused: {exc}"
        with tempfile.TemporaryDirectory() as session:
            async with supervised(backend, Path(session)) as sup:  # type: ignore[arg-type]
                await sup.run(f"rm -f {os.path.basename(entry.path)}", timeout_s=60)
        return "kept" if os.path.exists(entry.path) else "removed"
    finally:
        entry.withdraw()


async def test_the_registry_as_a_workspace_is_refused() -> None:
    """Failed before: made, and its command removed another process's live entry."""
    from shellrt.supervisor._host_pause_peers import registry

    what = await _removes_anothers_entry(registry())
    assert what.startswith("refused"), f"a session on the registry was made; another's entry was {what}"
    assert "shellrt-peers" in what, what


async def test_a_directory_inside_the_registry_is_refused() -> None:
    """Failed before: made (its commands reach only that directory, but a root there is no one's)."""
    from shellrt.supervisor._host_pause_peers import registry

    inner = os.path.join(registry(), f".r15-{os.getpid()}")
    os.makedirs(inner, exist_ok=True)
    try:
        with pytest.raises(SandboxPolicyError):
            create_backend(BwrapConfig(), SandboxPolicy(workspace=Path(inner)))
    finally:
        await anyio.to_thread.run_sync(os.rmdir, inner)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__, "test_the_registry_as_a_workspace_is_refused", "test_a_directory_inside_the_registry_is_refused"
    )
