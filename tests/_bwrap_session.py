"""A bwrap session sandbox under its zygote, with a Supervisor on it, for the pool and slice suites."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests.conftest import require


def require_bwrap() -> None:
    """Fail (CI) or skip when bubblewrap is missing, saying how to install it."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")


@asynccontextmanager
async def supervised(backend: BwrapBackend, session_dir: Path) -> AsyncIterator[Supervisor]:
    """``backend`` started (fails in CI, skips elsewhere, when bwrap is unusable here) with a
    Supervisor on it; both closed after."""
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    sup = Supervisor(backend, session_dir=session_dir)
    try:
        yield sup
    finally:
        await sup.close()
        await backend.close()


@asynccontextmanager
async def zygote_session(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    """A persistent bwrap backend over ``tmp_path/ws`` that must run under its zygote."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        assert backend._zygote is not None, "the session sandbox must run under its zygote here"
        yield backend, sup
