"""Red team round 36 (iface): a stdio client that stops reading is noticed without a write.

A client killed mid-call (or one that closed its read end) left the call in flight, its
sandbox and the session's background tasks running until an answer's write failed: on the
MCP wire for as long as the foreground command's timeout, on the JSONL wire the same plus
every queued line. An MCP answer written to a closed pipe ended the server with an
exception-group traceback and status 1. Real server processes, real pipes, local backend.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tagged(tag: str) -> list[int]:
    """Pids whose command line carries ``tag``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if tag.encode() in cmdline and b"pytest" not in cmdline:
            pids.append(int(entry))
    return pids


def _wait(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return bool(pred())


def _start(tmp_path: Path, proto: str) -> subprocess.Popen[bytes]:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ, SHELLRT_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "shellrt", "serve", "--sandbox", "local", "--workspace", str(ws), "--allow", "Bash"]
    if proto == "jsonl":
        args.append("--jsonl")
    return subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ws
    )


def _send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _begin(proc: subprocess.Popen[bytes], proto: str, tag: str) -> None:
    """A background task and a foreground call, both running."""
    assert proc.stdout is not None
    bg = f"sh -c 'sleep 120; : {tag} bg'"
    fg = f"sh -c 'sleep 121; : {tag} fg'"
    if proto == "mcp":
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        _send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        assert b'"result"' in proc.stdout.readline()
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "Bash", "arguments": {"command": bg, "run_in_background": True}}
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        assert b"background" in proc.stdout.readline()
        call = {"name": "Bash", "arguments": {"command": fg, "timeout": 110_000}}
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    else:
        bg_use = {"command": bg, "run_in_background": True}
        _send(proc, {"type": "tool_use", "id": "t1", "name": "Bash", "input": bg_use})
        assert b"background" in proc.stdout.readline()
        fg_use = {"command": fg, "timeout": 110_000}
        _send(proc, {"type": "tool_use", "id": "t2", "name": "Bash", "input": fg_use})
    assert _wait(lambda: len(_tagged(tag)) >= 2, 30), "both commands should be running"


def _finish(proc: subprocess.Popen[bytes], tag: str) -> tuple[int | None, list[int], bytes]:
    """Wait for the server to end; what is left (then killed, whatever the outcome)."""
    try:
        code: int | None = proc.wait(30)
    except subprocess.TimeoutExpired:
        code = None
        proc.kill()
        proc.wait()
    _wait(lambda: not _tagged(tag), 5)
    left = _tagged(tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert proc.stderr is not None
    return code, left, proc.stderr.read()


@pytest.mark.parametrize("proto", ["mcp", "jsonl"])
def test_a_killed_client_leaves_nothing_running(tmp_path: Path, proto: str) -> None:
    """Both of the client's pipe ends close (as when it is SIGKILLed): commands end within seconds."""
    tag = f"r36gone{os.getpid()}{proto}"
    proc = _start(tmp_path, proto)
    _begin(proc, proto, tag)
    assert proc.stdin is not None and proc.stdout is not None
    started = time.monotonic()
    proc.stdout.close()
    proc.stdin.close()
    code, left, err = _finish(proc, tag)
    took = time.monotonic() - started
    assert code is not None, f"the server still ran 30 s after its client died ({proto})"
    assert left == [], f"{len(left)} of the client's commands outlived it"
    assert took < 20
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]


@pytest.mark.parametrize("proto", ["mcp", "jsonl"])
def test_a_client_that_stops_reading_ends_the_session(tmp_path: Path, proto: str) -> None:
    """Only the read end closes, stdin stays open and nothing more is sent: noticed all the same."""
    tag = f"r36deaf{os.getpid()}{proto}"
    proc = _start(tmp_path, proto)
    _begin(proc, proto, tag)
    assert proc.stdout is not None
    proc.stdout.close()
    code, left, err = _finish(proc, tag)
    assert code == 1, f"the server should stop with status 1 once nobody reads it ({proto}), got {code}"
    assert left == []
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]
    assert b"stopping" in err


def test_an_answer_to_a_closed_pipe_is_no_traceback(tmp_path: Path) -> None:
    """MCP: the next answer's write finds the pipe closed: a one-line note, not an exception group."""
    tag = f"r36pipe{os.getpid()}"
    proc = _start(tmp_path, "mcp")
    _begin(proc, "mcp", tag)
    assert proc.stdout is not None
    proc.stdout.close()
    _send(proc, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    code, left, err = _finish(proc, tag)
    assert code == 1 and left == []
    assert b"Traceback" not in err and b"ExceptionGroup" not in err, err.decode(errors="replace")[-2000:]


def test_a_request_read_after_the_session_stopped_ends_the_reader_quietly() -> None:
    """Failed before (CI130, 1 of ~20 runs of the test above): the session stopped (its client had
    closed stdout) while the reader held one more request; handing it over raised
    `anyio.BrokenResourceError` out of the wire's task group: a traceback and status 1 on the
    server's stderr. Now the reader ends there, the wire disconnected. Real pipes, a real reader."""
    import anyio
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    from shellrt.server._mcp_stdio import StdioWire

    async def main() -> bool:
        read_fd, feed = os.pipe()
        answers, write_fd = os.pipe()
        wire = StdioWire(read_fd, write_fd)
        send, receive = create_context_streams[SessionMessage | Exception](0)
        await receive.aclose()  # the session is gone
        os.write(feed, json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).encode() + b"\n")
        try:
            with anyio.fail_after(30):
                await wire.reader(send)
        finally:
            for fd in (read_fd, feed, answers, write_fd):
                os.close(fd)
        return wire.disconnected.is_set()

    assert anyio.run(main)
