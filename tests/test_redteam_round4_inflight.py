"""Red team round 4: a plant survives a shellrt killed before its after-command check.

The protected-files check compares the workspace with a baseline taken before a
command. If shellrt is SIGKILLed after a command planted a hook but before the
check ran, the next session took the plant as its own baseline and git then ran
it. A "command in flight" record (the pre-command baseline) now stays in the
state directory until the check ran; a session that finds one whose owner is
dead checks against it first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text as _text

_CHILD = textwrap.dedent(
    """
    import sys, anyio, shellrt
    from pathlib import Path
    from shellrt.protocol import ToolUseBlock
    from shellrt.tools.bash import Bash

    async def main() -> None:
        ws = Path(sys.argv[1])
        async with shellrt.Runtime(workspace=ws, sandbox="local", session_dir=ws.parent / ".s-killed",
                                   tools=[Bash()], settings_files=(), mode="bypassPermissions") as rt:
            await rt.run_envelopes([ToolUseBlock(id="rt4inflight-killed", name="Bash", input={"command": sys.argv[2]})])
            if len(sys.argv) > 3:  # idle: the command's check ran; killed between commands
                Path(sys.argv[3]).touch()
                await anyio.sleep(60)

    anyio.run(main)
    """
)


async def _next_session(ws: Path) -> ResultEnvelope:
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="local",
        session_dir=ws.parent / ".s-next",
        tools=[Bash()],
        settings_files=(),
        mode="bypassPermissions",
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id="rt4inflight-next", name="Bash", input={"command": "echo next"})]
        )
        return envelope


@pytest.mark.parametrize("plant", ["hook", "gitconfig"])
def test_a_plant_made_before_shellrt_was_killed_is_reverted_by_the_next_session(
    tmp_path: Path, plant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
    if plant == "hook":
        planted, write = (
            ws / ".git" / "hooks" / "pre-commit",
            "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
        )
    else:
        planted, write = (
            ws / ".git" / "config",
            "printf '[core]\\n\\tfsmonitor = touch PWNED\\n' >> .git/config",
        )
    marker = tmp_path / "planted"
    (tmp_path / "plant.sh").write_text(f"{write}\ntouch {marker}\nsleep 5\n")  # opaque to the analysis
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(ws), f"sh {tmp_path / 'plant.sh'}"],
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline, "the command never ran"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)  # before the after-command check
    finally:
        child.kill()
        child.wait()
    assert "PWNED" in planted.read_text()
    envelope = anyio.run(_next_session, ws)
    assert "next" in _text(envelope)
    if plant == "hook":
        assert not planted.exists(), "the next session took the planted hook as its baseline"
    else:
        assert "fsmonitor" not in planted.read_text(), (
            "the next session took the planted config as its baseline"
        )
    assert "reverted" in _text(envelope) and "killed" in _text(envelope), _text(envelope)


def test_a_session_killed_between_commands_reverts_nothing_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its check ran: the operator's own change after the kill is not taken for a plant."""
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    marker = tmp_path / "idle"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(ws), "true", str(marker)],
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline, "the session never got idle"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")  # the operator's own, while no session runs
    hook.chmod(0o755)
    envelope = anyio.run(_next_session, ws)
    assert hook.exists() and "reverted" not in _text(envelope), _text(envelope)
    assert list((tmp_path / "home" / "inflight").glob("*")) == []


def test_a_clean_end_leaves_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SHELLRT_HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    envelope = anyio.run(_next_session, ws)
    assert "reverted" not in _text(envelope)
    records = list((home / "inflight").glob("*")) if (home / "inflight").exists() else []
    assert records == []
