"""Round 16, exhaustion: the protected-file guard kept a snapshot of every protected file in memory.

Each protected file up to 1 MiB was snapshotted (to put its content back after a command changes
it), with no bound on their number: a hostile repository's 300 files of 1 MB under
``.claude/agents/`` cost the host 288 MB of memory for the session, and as much again (base64) in
the in-flight record written to disk before commands. All snapshots of a guard now hold at most
16 MiB; past it a file keeps none, and a command's change to it is still undone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

_ROOT = Path(__file__).resolve().parent.parent


def _rss_mb() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) // 1024


def _grown_mb(tmp_path: Path) -> int:
    """How much one command's guard check grows this process, over 100 MB of protected files."""
    ws = tmp_path / "ws"
    agents = ws / ".claude" / "agents"
    agents.mkdir(parents=True)
    for i in range(100):  # 100 MB of protected files, each under the 1 MiB snapshot limit
        (agents / f"a{i}.md").write_bytes(b"%d" % i + b"x" * 999_000)

    async def main() -> int:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                before = _rss_mb()
                await sup.run("true", timeout_s=30)
                grown = _rss_mb() - before
                await sup.run("echo evil > .claude/agents/a99.md", timeout_s=30)
                return grown
        finally:
            await backend.close()

    return anyio.run(main)


def test_snapshots_of_a_big_repositorys_protected_files_are_bounded(tmp_path: Path) -> None:
    # Measured in a fresh interpreter: a test worker's heap after thousands of other tests grew 62 MB
    # for the same check that grows a fresh one 18 MB (CI110; main and the branch alike).
    code = f"from tests.{Path(__file__).stem} import _grown_mb; from pathlib import Path; print(_grown_mb(Path({str(tmp_path)!r})))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=_ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    grown = int(done.stdout.split()[-1])
    agents = tmp_path / "ws" / ".claude" / "agents"
    assert grown < 48, f"the guard's check grew the host by {grown} MB for 100 MB of protected files"
    assert not (agents / "a99.md").exists() or (agents / "a99.md").read_bytes() != b"evil\n"
