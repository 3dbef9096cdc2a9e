"""Round 16, exhaustion: the protected-file guard kept a snapshot of every protected file in memory.

Each protected file up to 1 MiB was snapshotted (to put its content back after a command changes
it), with no bound on their number: a hostile repository's 300 files of 1 MB under
``.claude/agents/`` cost the host 288 MB of memory for the session, and as much again (base64) in
the in-flight record written to disk before commands. All snapshots of a guard now hold at most
16 MiB; past it a file keeps none, and a command's change to it is still undone.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor


def _rss_mb() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) // 1024


def test_snapshots_of_a_big_repositorys_protected_files_are_bounded(tmp_path: Path) -> None:
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

    grown = anyio.run(main)
    assert grown < 48, f"the guard's check grew the host by {grown} MB for 100 MB of protected files"
    assert not (agents / "a99.md").exists() or (agents / "a99.md").read_bytes() != b"evil\n"
