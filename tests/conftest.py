"""Shared test configuration.

Tests run on asyncio through anyio's pytest plugin (``@pytest.mark.anyio``).
`require(condition, why)` skips locally but FAILS under CI=true, so a missing
bubblewrap or Docker daemon can never turn a CI run green by skipping.
"""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def require(condition: bool, why: str) -> None:
    """Skip the test when ``condition`` is false — or fail it when running in CI."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI but unavailable: {why}")
    pytest.skip(why)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test a stale in-place build: its extension modules would shadow edited sources."""
    import shellrt.analysis  # noqa: F401  (loads the analysis modules)
    from shellrt.analysis.compiled import REBUILD_ADVICE, stale_modules

    stale = stale_modules()
    if stale:
        pytest.exit(
            f"compiled analysis modules are older than their sources: {', '.join(stale)}. {REBUILD_ADVICE}",
            returncode=2,
        )
