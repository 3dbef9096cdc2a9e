"""Round 16, exhaustion: a command's output filled the host's disk to the last byte.

The output quota is a fixed 1 GiB per command and 8 GiB per session, whatever the disk holds:
on a disk with less free than that, one session's ``yes`` (or a few background tasks) took every
free byte of the file system its session directory lives on (by default the host's home), so
every other session, user and service writing there failed. The spool now leaves a reserve free
(``SHELLRT_OUTPUT_RESERVE``, default the lesser of 1 GiB and 5 % of the file system) and says so.
Reproduced on an 8 MiB tmpfs made here (root) as the session directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor, TaskStatus
from shellrt.supervisor.spool import OutputQuota
from tests._small_disk import mounted_tmpfs

_DISK = 8 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs mounted on a directory of ``tmp_path`` (unmounted after)."""
    with mounted_tmpfs(tmp_path, _DISK) as disk:
        yield disk


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_a_flood_of_output_leaves_the_reserve_free(small_disk: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> object:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(
                backend, session_dir=small_disk / "s", quota=OutputQuota.from_env({})
            ) as sup:
                return await sup.run("head -c 20000000 /dev/zero", timeout_s=30)
        finally:
            await backend.close()

    result = anyio.run(main)
    reserve = _DISK // 20
    assert _free(small_disk) >= reserve * 3 // 4, f"{_free(small_disk):,} bytes left free"
    lost = result.output_lost  # type: ignore[attr-defined]
    assert lost is not None and "SHELLRT_OUTPUT_RESERVE" in lost, lost
    assert result.total_bytes == 20_000_000  # type: ignore[attr-defined]
    assert 0 < result.saved_bytes < 20_000_000  # type: ignore[attr-defined]


def test_background_floods_together_leave_the_reserve_free(small_disk: Path, tmp_path: Path) -> None:
    """Several spools filling one disk at once: each checks the disk, none takes the last bytes."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> None:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(
                backend, session_dir=small_disk / "s", quota=OutputQuota.from_env({})
            ) as sup:
                tasks = [await sup.start_background("head -c 6000000 /dev/zero") for _ in range(4)]
                with anyio.fail_after(20):
                    while any(sup.tasks.get(t.id).status is TaskStatus.RUNNING for t in tasks):
                        await anyio.sleep(0.05)
        finally:
            await backend.close()

    anyio.run(main)
    reserve = _DISK // 20
    assert _free(small_disk) >= reserve // 2, f"{_free(small_disk):,} bytes left free"


def test_the_reserve_is_configurable_and_can_be_turned_off() -> None:
    assert OutputQuota.from_env({"SHELLRT_OUTPUT_RESERVE": "0"}).disk_reserve_bytes == 0
    assert OutputQuota.from_env({"SHELLRT_OUTPUT_RESERVE": "2M"}).disk_reserve_bytes == 2 << 20
    assert OutputQuota.from_env({}).disk_reserve_bytes is None  # the default rule
    with pytest.raises(ValueError, match="not a size"):
        OutputQuota.from_env({"SHELLRT_OUTPUT_RESERVE": "lots"})


def test_a_small_output_on_a_nearly_full_disk_is_saved_as_before(tmp_path: Path) -> None:
    """The reserve guards floods, not every ``echo``: a disk below it still takes small outputs."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> tuple[object, object]:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            quota = OutputQuota(disk_reserve_bytes=1 << 60)  # no disk has this much free
            async with Supervisor(backend, session_dir=tmp_path / "s", quota=quota) as sup:
                small = await sup.run("echo hi", timeout_s=30)
                big = await sup.run("head -c 300000 /dev/zero", timeout_s=30)
                return small, big
        finally:
            await backend.close()

    small, big = anyio.run(main)
    assert small.output_lost is None and small.output_path.read_bytes() == b"hi\n"  # type: ignore[attr-defined]
    assert "SHELLRT_OUTPUT_RESERVE" in big.output_lost  # type: ignore[attr-defined]
    assert 0 < big.saved_bytes <= 64 << 10  # type: ignore[attr-defined]


def test_an_allowance_taken_earlier_counts_against_the_next_look(small_disk: Path) -> None:
    """Spool A looks while the disk is nearly empty and may write an eighth of its room without
    looking again; spool B then writes the disk down to the reserve. Without the shared account B
    saw none of A's allowance, and A's next write took the disk past the reserve (free space
    ended 800 KiB below it, deterministically; four background floods did so now and then)."""
    from shellrt.supervisor.spool import OutputSpool

    reserve = 1 << 20
    quota = OutputQuota(None, None, reserve)
    first = OutputSpool(small_disk / "a", quota=quota)
    second = OutputSpool(small_disk / "b", quota=quota)
    try:
        first.write(b"a" * (70 << 10))  # past the unchecked start: A looks, takes its allowance
        held = first._room_until - first.saved_bytes
        assert held > 512 << 10, held  # an eighth of ~7 MiB of room, less what it wrote
        for _ in range(8 << 4):  # 8 MiB in 64 KiB chunks: B stops at its room
            second.write(b"b" * (64 << 10))
        assert second.lost is not None and "free bytes" in second.lost, second.lost
        first.write(b"a" * held)  # within its allowance: no look
        assert first.lost is None, first.lost
    finally:
        first.close()
        second.close()
    assert _free(small_disk) >= reserve - (64 << 10), f"{_free(small_disk):,} bytes left, reserve {reserve:,}"
