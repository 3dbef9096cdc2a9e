"""A bwrap session sandbox under its zygote, with a Supervisor on it, for the pool and slice suites."""

from __future__ import annotations

import base64
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.policy import ResourceLimits
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


def probe_lines(
    ws: Path, session_dir: Path, probe: str, *, persistent: bool, limits: ResourceLimits | None = None
) -> tuple[dict[str, str], str]:
    """Run the Python program ``probe`` in a bwrap sandbox over ``ws`` (a session under its zygote,
    or one command; the policy's ``limits`` if given) and return ({first word: the rest} of each
    output line, the output)."""
    command = f"echo {base64.b64encode(probe.encode()).decode()} | base64 -d | python3 -"
    policy = SandboxPolicy(workspace=ws, limits=limits or ResourceLimits())

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
        async with supervised(backend, session_dir) as sup:
            return (await sup.run(command, timeout_s=60)).preview

    out = anyio.run(main)
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line), out
