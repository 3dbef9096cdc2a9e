"""Red team round 4: a command cannot end its namespace's init (pid 1) with a signal.

The session sandbox's init is a Python process, which catches SIGINT (Python's
KeyboardInterrupt handler): the kernel delivers a signal to a namespace's pid 1
from inside only when pid 1 handles it. ``kill -INT 1`` made the init die, the
kernel killed the command with it, and shellrt reported what the init's crash
said (exit 1) instead of the command's own status; a command under a timeout
ended itself this way without ever being reported as timed out.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import CommandResult, Supervisor
from tests.conftest import require

SIGNALS = ["INT", "TERM", "HUP", "QUIT", "USR1", "USR2", "ALRM", "PIPE", "XCPU", "PWR", "TSTP"]


def _run(tmp_path: Path, persistent: bool, commands: list[tuple[str, float]]) -> list[CommandResult]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> list[CommandResult]:
        backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                return [await sup.run(c, timeout_s=t) for c, t in commands]
        finally:
            await backend.close()

    return anyio.run(main)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_signals_to_pid_1_do_not_end_the_command(tmp_path: Path, persistent: bool) -> None:
    results = _run(
        tmp_path,
        persistent,
        [(f"kill -{s} 1 2>/dev/null; sleep 0.2; echo after; exit 7", 20) for s in SIGNALS],
    )
    for signal, result in zip(SIGNALS, results, strict=True):
        assert (result.exit_code, result.preview.strip()) == (7, "after"), (signal, result)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_that_signals_pid_1_still_times_out(tmp_path: Path, persistent: bool) -> None:
    [result] = _run(tmp_path, persistent, [("kill -INT 1; kill -TERM 1; sleep 30", 3)])
    assert result.timed_out, result
