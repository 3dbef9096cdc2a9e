"""Reading what a process wrote to a pseudo-terminal, as an operator's terminal would see it."""

from __future__ import annotations

import os
import select
import subprocess
import time

__all__ = ["read_terminal"]


def read_terminal(master: int, proc: subprocess.Popen[bytes], timeout_s: float = 90) -> bytes:
    """Everything written to the pty whose ``master`` side we hold, until every writer closed it or
    ``proc`` ended (at most ``timeout_s``); closes ``master`` and reaps ``proc`` (killed if it is
    still running 30 s later). The caller has closed its copy of the slave side."""
    out, deadline = bytearray(), time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every holder of the slave side closed it
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return bytes(out)
