"""Round 19, interfaces: a JSONL client that closes stdin and never reads kept the session's
processes running.

Round 18 left it open: EOF on stdin stops every process of the session, but only after the
answers are written, and a client that never reads holds the last write (and with it a background
task) for as long as it keeps stdout open. Once stdin has ended and every line read is handled, no
later line can use a task: the server now stops the session's background tasks before it waits to
write the last answers (which a slow reader, ``| less``, still gets whole). A real ``shellrt serve
--jsonl`` process, local backend.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

from tests.test_server_jsonl import JsonlClient, bash, marker_pids

#: A list_tools answer is some 10 KiB: this many fill a pipe the client never reads.
_FLOOD = 64


def test_a_client_that_closes_stdin_and_never_reads_does_not_keep_tasks_running(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = JsonlClient(workspace, "--sandbox", "local", "--mode", "bypassPermissions")
    proc = client.proc
    assert proc.stdin is not None and proc.stdout is not None
    marker = f"r19eof{secrets.token_hex(4)}"
    try:
        started = client.send(bash("bg", f"sleep 300 # {marker}", run_in_background=True))
        assert not started["content"][0]["is_error"], started
        deadline = time.monotonic() + 20
        while not marker_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker_pids(marker), "the background task did not start"
        proc.stdin.write(b'{"type":"list_tools"}\n' * _FLOOD)
        proc.stdin.close()  # and stdout is never read again
        deadline = time.monotonic() + 30
        while marker_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = marker_pids(marker)
        assert proc.poll() is None, "the server ended: the flood did not fill the pipe"
        assert not left, f"the background task {left} still runs while the server waits for a reader"
        # A late reader still gets every answer, then the server ends.
        answers = proc.stdout.read().splitlines()
        assert len(answers) == _FLOOD and all(json.loads(a)["type"] == "tools" for a in answers)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in marker_pids(marker):
            import os
            import signal

            os.kill(pid, signal.SIGKILL)
