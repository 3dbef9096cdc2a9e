"""Round 18, interfaces: the JSONL server under a client that floods it while a command runs.

The server reads lines while a message runs (so an interrupt can arrive) and held every line it
read in an unbounded queue: a client that kept writing while ``sleep`` ran grew the server by
everything it wrote (100 MiB here; nothing stopped it at gigabytes). The read-ahead is bounded now
(`shellrt.server.jsonl.READ_AHEAD_BYTES`): past it the server stops reading, the pipe fills and the
client's writes block. A real ``shellrt serve --jsonl`` process, local backend.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.test_server_jsonl import JsonlClient, bash, marker_pids

#: One padded list_tools line (valid JSON: blanks after the value) and how many are sent.
_LINE = b'{"type":"list_tools"}' + b" " * (1 << 20) + b"\n"
_LINES = 100


def _rss(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_client_writing_while_a_command_runs_does_not_grow_the_server(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = JsonlClient(workspace, "--sandbox", "local", "--mode", "bypassPermissions")
    proc = client.proc
    assert proc.stdin is not None and proc.stdout is not None
    stdout = proc.stdout
    answers: list[bytes] = []
    written = [0]
    try:
        assert client.send({"type": "list_tools"})["type"] == "tools"
        baseline = _rss(proc.pid)
        proc.stdin.write(json.dumps(bash("s", "sleep 4")).encode() + b"\n")
        proc.stdin.flush()

        def drain() -> None:
            for line in stdout:
                answers.append(line[:100])

        def flood() -> None:
            assert proc.stdin is not None
            for _ in range(_LINES):
                proc.stdin.write(_LINE)
                proc.stdin.flush()
                written[0] += len(_LINE)

        threads = [threading.Thread(target=drain, daemon=True), threading.Thread(target=flood, daemon=True)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 2.5
        while threads[1].is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        grown = _rss(proc.pid) - baseline
        sent = written[0]
        assert not answers, answers  # the sleep still runs: the flood was read ahead, not answered
        # Before: every line was read and held (all 100 MiB sent, the server grew by as much).
        assert grown < 48 << 20, f"the server grew by {grown >> 20} MiB while {sent >> 20} MiB were sent"
        assert sent < 48 << 20, f"{sent >> 20} MiB were taken in while a command ran"
        threads[1].join(60)  # the queue drains once the sleep ends
        assert not threads[1].is_alive()
        code = client.close(60)
        threads[0].join(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, client.stderr()
    assert len(answers) == _LINES + 1, len(answers)  # every line answered, in order
    assert answers[0].startswith(b'{"role": "user"'), answers[0]


def test_sigint_stops_a_server_whose_client_does_not_read(tmp_path: Path) -> None:
    """Before: the answer's blocking ``os.write`` held the event loop, so SIGINT was never acted on
    and the session's background task ran on (the server did not exit within 30 s)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = JsonlClient(workspace, "--sandbox", "local", "--mode", "bypassPermissions")
    proc = client.proc
    assert proc.stdin is not None
    marker = f"jsonl-unread-{time.time_ns()}"
    code = None
    left: list[int] = []
    try:
        bg = client.send(bash("b", f"sleep 1000 # {marker}", run_in_background=True))
        assert "task id" in json.dumps(bg)
        deadline = time.monotonic() + 15
        while not marker_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker_pids(marker)
        # Answers nobody reads: the stdout pipe (64 KiB) fills and the server's write waits.
        proc.stdin.write(b'{"type":"list_tools"}\n' * 40)
        proc.stdin.flush()
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            code = None
        left = marker_pids(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in marker_pids(marker):  # only ours, by the marker this test put in the command
            os.kill(pid, signal.SIGKILL)
    assert code == 128 + signal.SIGINT, code
    assert not left, "the background task outlived the server"
