"""Red team round 47 (iface6): a call cut short by the server's shutdown was answered as a success.

``shellrt serve --http`` given SIGTERM (or Ctrl-C) lets uvicorn finish the requests in flight
(shielded, up to 10 s) while the session's own tasks are cancelled at once, the task that pumps
a running command's output among them. The command's foreground wait then saw an execution that
had ended with no exit status, and the Bash result said what a finished command says: ``echo
before; sleep 30; echo after`` came back ``{"content": "before", "isError": false}`` over HTTP (3
of 3 probes, SIGTERM 2 s into the call): the client (a model) read that the command had run to
its end and succeeded; it had been cut off half-way, and was killed as the runtime closed.

Now a foreground command that ends with no exit status and no reason of ours (timeout, interrupt,
sandbox failure) is an error whose text says that it was stopped before it finished
(`shellrt.tools.bash`): on every interface, for whatever closes a session under a call.

The test plays what ``serve_http`` does, deterministically: a real `Runtime` (local backend, a real
command), the call shielded as uvicorn's requests are, the runtime's own scope cancelled.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock

pytestmark = pytest.mark.anyio


async def test_a_call_cut_short_by_its_session_closing_is_not_a_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    results: list[ResultEnvelope] = []
    # Past the supervisor's inline pump window (20 ms) before it says it started: the output pump
    # is then a task of the session's own, as any command running when a server shuts down.
    command = "echo before; sleep 0.5; touch started; exec sleep 30"
    with anyio.fail_after(60), anyio.CancelScope() as closing:
        async with (
            shellrt.Runtime(ws, "local", mode="bypassPermissions", session_dir=tmp_path / "s") as rt,
            anyio.create_task_group() as tg,
        ):

            async def call() -> None:
                with anyio.CancelScope(shield=True):  # as uvicorn's requests while it shuts down
                    block = ToolUseBlock(id="toolu_cut", name="Bash", input={"command": command})
                    results.extend(await rt.run_envelopes([block]))

            tg.start_soon(call)
            while not (ws / "started").exists():
                await anyio.sleep(0.02)
            closing.cancel()  # SIGTERM: the session's own tasks are cancelled
    assert len(results) == 1
    result = results[0].model
    text = result.content if isinstance(result.content, str) else str(result.content)
    assert result.is_error, f"a command cut off half-way was answered as a success: {text!r}"
    assert text.startswith("before") and "stopped before it finished" in text, text
    assert not _running_in(ws), "the command outlived its session"


def _running_in(directory: Path) -> list[int]:
    """Processes whose working directory is ``directory``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd") == str(directory.resolve()):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
