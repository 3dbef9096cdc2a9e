"""The output quota: per command and per session, cut with a message that says what and why."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.spool import OutputQuota, parse_size


def test_parse_size() -> None:
    assert parse_size("2G") == 2 << 30 and parse_size("500m") == 500 << 20 and parse_size("10") == 10
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_quota_defaults_keep_the_300_mb_benchmark_whole() -> None:
    quota = OutputQuota.from_env({})
    assert quota.command_bytes is not None and quota.command_bytes >= 1 << 30
    assert OutputQuota.from_env({"SHELLRT_OUTPUT_LIMIT": "0"}).command_bytes is None


def test_session_quota_cuts_the_command_that_crosses_it(tmp_path: Path) -> None:
    async def main() -> tuple[object, object]:
        backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path))
        await backend.start()
        try:
            quota = OutputQuota(command_bytes=None, session_bytes=100_000)
            async with Supervisor(backend, session_dir=tmp_path / "s", quota=quota) as sup:
                first = await sup.run("head -c 80000 /dev/zero", timeout_s=30)
                second = await sup.run("head -c 80000 /dev/zero", timeout_s=30)
        finally:
            await backend.close()
        return first, second

    first, second = anyio.run(main)
    assert first.output_lost is None and first.output_path.stat().st_size == 80_000  # type: ignore[attr-defined]
    assert second.total_bytes == 80_000 and second.saved_bytes == 20_000  # type: ignore[attr-defined]
    assert second.output_path.stat().st_size == 20_000  # type: ignore[attr-defined]
    lost = second.output_lost  # type: ignore[attr-defined]
    assert (
        "80,000 bytes" in lost and "20,000 bytes are saved" in lost and "SHELLRT_SESSION_OUTPUT_LIMIT" in lost
    )
