"""``shellrt batch --ray`` against a cluster that does not answer: bounded, clear, exit 2; signals stop it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent


def _batch(tmp_path: Path, address: str, **env: str) -> subprocess.Popen[bytes]:
    require(find_spec("ray") is not None, "ray is not installed")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "commands": ["echo hi"]}\n')
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shellrt",
            "batch",
            "run",
            str(tasks),
            "--ray",
            address,
            "--out",
            str(tmp_path / "out.jsonl"),
            "--quiet",
        ],
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


def _drain(listener: socket.socket) -> None:
    """Close the connections already queued on ``listener``."""
    listener.setblocking(False)
    try:
        while True:
            listener.accept()[0].close()
    except BlockingIOError:
        pass


def _wait_for_probe(listener: socket.socket) -> None:
    """Until the batch probes the address (it connects once before ``ray.init``; its signal
    handlers are up by then): a fixed wait falls short while a loaded machine still imports it."""
    listener.settimeout(60)
    listener.accept()[0].close()
    time.sleep(0.5)  # inside ray.init, stuck


def test_refused_address_fails_fast_with_exit_2(tmp_path: Path) -> None:
    proc = _batch(tmp_path, "127.0.0.1:1")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert b"could not connect to the Ray cluster at 127.0.0.1:1" in err


def test_silent_address_times_out_and_sigterm_stops_it_at_once(tmp_path: Path) -> None:
    with socket.socket() as listener:  # accepts TCP, never speaks Ray
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        proc = _batch(tmp_path, address, SHELLRT_RAY_CONNECT_TIMEOUT="3")
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, err
        assert b"did not accept the connection within 3s" in err

        _drain(listener)  # the first run's probe
        proc = _batch(tmp_path, address)  # the default 30 s bound
        _wait_for_probe(listener)
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        proc.communicate(timeout=60)
        took = time.monotonic() - start
    assert proc.returncode == 130
    assert took < 20, f"SIGTERM took {took:.1f}s to stop a batch stuck connecting"
