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
