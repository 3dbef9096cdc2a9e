"""Spool files made off the hot path: lazy creation at the first byte, shared empty inode, cleanup."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.spool import OutputSpool, SpoolFiles

pytestmark = pytest.mark.anyio


def test_lazy_spool_files(tmp_path: Path) -> None:
    files = SpoolFiles(tmp_path, "cmd-t")
    empty = OutputSpool(tmp_path / f"{files.take()}.out", files=files)
    assert not empty.path.exists()  # nothing allocated until a byte arrives
    empty.close()
    assert empty.path.read_bytes() == b""
    full = OutputSpool(tmp_path / f"{files.take()}.out", files=files)
    full.write(b"a\x00b")
    full.write(b"c\n")
    full.close()
    assert full.path.read_bytes() == b"a\x00bc\n"
    other = OutputSpool(tmp_path / f"{files.take()}.out", files=files)
    other.close()
    # two empty outputs may share one inode; a written one never does
    assert os.stat(full.path).st_ino not in (os.stat(empty.path).st_ino, os.stat(other.path).st_ino)
    files.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cmd-t-0001.out",
        "cmd-t-0002.out",
        "cmd-t-0003.out",
    ]
    assert empty.path.read_bytes() == b"" and other.path.read_bytes() == b""


async def test_every_foreground_result_has_its_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = LocalBackend(None, SandboxPolicy(workspace=ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        results = [await sup.run(cmd, timeout_s=10) for cmd in ("true", "echo hi", "true", "printf x >&2")]
        split = await sup.run("echo out", timeout_s=10, merge_stderr=False)
        moved = await sup.run("sleep 0.3; echo late", timeout_s=0.05, background_on_timeout=True)
        assert moved.backgrounded_task_id is not None
        assert moved.output_path.exists()  # a task's file exists while it runs
        await sup.tasks.stop(moved.backgrounded_task_id)
    assert [r.output_path.read_bytes() for r in results] == [b"", b"hi\n", b"", b"x"]
    assert split.output_path.read_bytes() == b"out\n"
    assert split.stderr_path is not None and split.stderr_path.read_bytes() == b""
    assert not [p for p in (tmp_path / "session" / "shell").iterdir() if p.name.startswith(".")]
