"""Red team, round 21 (bwrap): a command that spends the session's whole process budget.

A background task holding every process the session may have (the pids cap: the session cgroup
for a root caller, RLIMIT_NPROC for a non-root one) must not cost the session its sandbox: the
next command is refused with the session's process-limit text (what to do next), the caller's own
programs still start meanwhile, and once the task is stopped the session's next command runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.errors import SandboxError
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests._bomb_peak import open_ws
from tests.conftest import require

pytestmark = pytest.mark.bwrap

CAP = 48
#: Forks sleepers until the kernel refuses one (bash would retry its fork for minutes), says how
#: many, and holds them.
_FILL = (
    "python3 -c 'import os, time\nn = 0\ntry:\n while n < 400:\n  if os.fork() == 0:\n"
    "   time.sleep(60); os._exit(0)\n  n += 1\nexcept OSError: pass\n"
    'print("filled", n, flush=True); time.sleep(60)\''
)


@pytest.fixture
def ws() -> Iterator[Path]:
    yield from open_ws("rt21-pids-")


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_spent_process_budget_refuses_cleanly_and_recovers(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    """As root, one bwrap per command failed before (1 of 2): the spawner said only "cannot start
    /usr/bin/bwrap: Resource temporarily unavailable", not the session's process-limit text."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")

    async def main() -> tuple[str, str, int, str]:
        backend = create_backend(
            BwrapConfig(persistent=persistent, default_pids=CAP), SandboxPolicy(workspace=ws)
        )
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                task = await sup.start_background(_FILL)
                said = ""
                with anyio.fail_after(40):
                    while "filled" not in said:
                        await anyio.sleep(0.2)
                        said += (await sup.tasks.read_new(task.id)).text
                try:
                    during = await sup.run("echo next", timeout_s=30)
                    refused = f"exit {during.exit_code}: {during.preview}"
                except SandboxError as exc:
                    refused = f"refused: {exc}"
                host = await anyio.to_thread.run_sync(
                    lambda: subprocess.run(["true"], timeout=30, check=False).returncode
                )
                await sup.tasks.stop(task.id)
                after = (await sup.run("echo again", timeout_s=30)).preview
        finally:
            await backend.close()
        return said, refused, host, after

    said, refused, host, after = anyio.run(main)
    assert "filled" in said and int(said.split("filled")[1].split()[0]) < 400, said
    assert "next" not in refused.split(":", 1)[1].split(), f"a command ran with the budget spent: {refused}"
    # A non-root caller's one bwrap per command: bwrap's own "Creating new namespace failed:
    # Resource temporarily unavailable" (its stderr is the command's; docs, round 21 "Left").
    told = "process limit" in refused or (
        not persistent and os.geteuid() != 0 and "Resource temporarily unavailable" in refused
    )
    assert told, f"not told why, or what to do: {refused}"
    assert host == 0, "the caller's own program did not start"
    assert after.strip() == "again", f"the session did not recover: {after!r}"
