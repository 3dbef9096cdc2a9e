"""A stand-in for another shellrt process that has a session open: it holds the session's in-use
lock (``<session_dir>/.in-use``, shared) as every `Runtime` does from its start to its close. A
reopening counts a task's recorded owner as live only then (red team round 51)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from shellrt.runtime.session_dir import IN_USE_FILE

__all__ = ["start_session_owner"]

_HOLD = (
    "import fcntl, os, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "fcntl.flock(fd, fcntl.LOCK_SH)\n"
    "os.write(1, b'held')\n"
    "time.sleep(600)\n"
)


def start_session_owner(session_dir: Path, procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """A process holding ``session_dir``'s in-use lock (appended to ``procs``, whose fixture kills it),
    returned once it holds it (the real condition: it says so after the ``flock``)."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", _HOLD, str(session_dir / IN_USE_FILE)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    procs.append(proc)
    assert proc.stdout is not None
    said = proc.stdout.read(4)
    proc.stdout.close()  # it says nothing more
    assert said == b"held", f"the stand-in owner did not take the session lock (it said {said!r})"
    return proc
