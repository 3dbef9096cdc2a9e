"""Red team round 6: a batch task's command filled the host's disk through ``collect.files``.

``collect.files`` copies matching workspace files into the task's artifacts on the host, after
the last command. The command chooses what they are: ``truncate -s 1T out/big`` costs nothing in
the workspace (a sparse file) and became a terabyte of zeros on the host's disk; a hundred hard
links to one file became a hundred copies. The copy now stops at ``collect.max_bytes`` (1 GiB by
default; the operator may raise it) and the task ends in an error that says so.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shellrt.batch import Task, run

pytestmark = pytest.mark.anyio


def _size(tree: Path) -> int:
    return sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    "plant",
    [
        "mkdir out && truncate -s 1G out/big",
        "mkdir out && head -c 4M /dev/zero > out/f && for i in $(seq 64); do ln out/f out/l$i; done",
    ],
)
async def test_collected_files_are_bounded(tmp_path: Path, plant: str) -> None:
    task = Task.model_validate(
        {"id": "fill", "commands": [plant], "collect": {"files": ["out/*"], "max_bytes": 64 << 20}}
    )
    [result] = [r async for r in run([task], artifacts_dir=tmp_path / "art")]
    assert result.status == "error" and "collect.max_bytes" in (result.error or ""), result
    assert _size(tmp_path / "art") <= 64 << 20


async def test_collection_within_the_bound_is_whole(tmp_path: Path) -> None:
    task = Task.model_validate(
        {
            "id": "ok",
            "commands": ["mkdir out && head -c 1M /dev/urandom > out/a"],
            "collect": {"files": ["out/*"]},
        }
    )
    [result] = [r async for r in run([task], artifacts_dir=tmp_path / "art")]
    assert result.status == "ok" and result.files == ["out/a"], result
    assert (tmp_path / "art/ok/files/out/a").stat().st_size == 1 << 20


async def test_collection_never_walks_through_a_symlinked_directory(tmp_path: Path) -> None:
    """``out -> /usr`` with ``out/**``: ``Path.glob`` walked the host's /usr (37 s here; ``/``: the
    whole host, every name held in memory) for files it then refused to copy."""
    task = Task.model_validate(
        {
            "id": "walk",
            "commands": [
                "ln -s /usr out && mkdir -p real/sub && echo x > real/sub/a.txt && ln -s /usr real/up"
            ],
            "collect": {"files": ["out/**", "*/**", "real/**/*.txt"]},
        }
    )
    with anyio.fail_after(20):
        [result] = [r async for r in run([task], artifacts_dir=tmp_path / "art")]
    assert result.status == "ok" and result.files == ["real/sub/a.txt"], result
