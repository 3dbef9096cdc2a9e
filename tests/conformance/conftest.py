"""Fixtures of the conformance suite: one started backend and supervisor per test, per backend.

``no_leftovers`` (autouse) fails any test that leaves a process carrying a
shellrt run marker behind.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, SandboxBackend, SandboxPolicy
from sandbox._proctree import MARKER_VAR, is_alive, pids_with_marker
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conformance.backends import BACKENDS
from tests.conftest import require


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def session_dir(tmp_path: Path) -> Path:
    return tmp_path / "session"


def make_policy(workspace: Path, **kw: object) -> SandboxPolicy:
    return SandboxPolicy(workspace=workspace, **kw)  # type: ignore[arg-type]


#: Marker prefixes of the backends started by the current test (other test runs on the
#: same machine carry markers too; only ours are checked).
_STARTED_PREFIXES: list[str] = []


async def start_backend(name: str, policy: SandboxPolicy) -> SandboxBackend:
    backend = create_backend(BACKENDS[name](), policy)
    prefix = getattr(backend, "marker_prefix", None)
    if isinstance(prefix, str):
        _STARTED_PREFIXES.append(prefix)
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"{name} backend unavailable: {exc}")
    return backend


@pytest.fixture(params=sorted(BACKENDS))
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def backend(backend_name: str, workspace: Path) -> AsyncIterator[SandboxBackend]:
    b = await start_backend(backend_name, make_policy(workspace))
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture
async def sup(backend: SandboxBackend, session_dir: Path) -> AsyncIterator[Supervisor]:
    s = Supervisor(backend, session_dir=session_dir, progress_interval_s=0.1)
    try:
        yield s
    finally:
        await s.close()


def leftover_pids(prefixes: list[str]) -> list[int]:
    """Live processes carrying a run marker of one of ``prefixes`` (never our own process)."""
    return [p for prefix in prefixes for p in pids_with_marker(prefix, prefix=True) if is_alive(p)]


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    assert MARKER_VAR not in os.environ
    _STARTED_PREFIXES.clear()
    yield
    prefixes = list(_STARTED_PREFIXES)
    deadline = time.monotonic() + 2.0
    left = leftover_pids(prefixes)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = leftover_pids(prefixes)
    assert not left, f"processes left behind: {left}"
