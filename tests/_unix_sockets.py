"""Real unix sockets on the host for the host-socket mask tests."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path


def outside_dir(prefix: str) -> Iterator[Path]:
    """A host directory outside /tmp (sockets under /tmp are the sandbox's own), crossable by anyone.

    A generator for a pytest fixture: the directory is removed afterwards.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def listen_unix(path: Path) -> socket.socket:
    """A listening stream socket bound at ``path``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    return sock
