"""A zygote session facing a host bind mount, run alone in a private mount namespace.

``unshare -m --propagation private python3 -m tests._reach_scenario CASE OUTSIDE HIDDEN WS``: the
bind mounts it makes live and die in that namespace (no other process on the machine sees them).
Prints one JSON line: whether the session's zygote was replaced by the command after the socket
appeared, and what that command's ``connect()`` to the socket's shown path said.

Cases (``HIDDEN`` is a directory below /tmp, ``OUTSIDE`` one below /var/tmp, both empty):

* ``alias``: HIDDEN bind-mounted at OUTSIDE before the session; the socket bound in HIDDEN after
  its first command, connected to through OUTSIDE;
* ``nested``: OUTSIDE bind-mounted at HIDDEN (a mount below /tmp of a shown tree); the socket bound
  through HIDDEN, connected to at OUTSIDE;
* ``late``: the socket bound in HIDDEN first, the bind of HIDDEN at OUTSIDE made after the first
  command (in the namespace every bwrap of the session starts in), connected to through OUTSIDE.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import anyio

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor

#: An interpreter every sandbox uid can run (the host's may live under a 0700 /root).
SANDBOX_PYTHON = "/usr/bin/python3"

CONNECT = (
    "import socket,sys\n"
    "s=socket.socket(socket.AF_UNIX)\n"
    "try:\n"
    "    s.connect(sys.argv[1]); print('CONNECTED')\n"
    "except OSError as e:\n"
    "    print('REFUSED', type(e).__name__)\n"
)


def _listen(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    path.chmod(0o777)  # the sandbox uid may connect: only the mask can stop it
    return sock


def _bind(source: Path, target: Path, ns: list[str] | None = None) -> None:
    subprocess.run([*(ns or []), "mount", "--bind", str(source), str(target)], check=True)


async def _main(case: str, outside: Path, hidden: Path, ws: Path) -> dict[str, object]:
    socket_dir, shown = hidden, outside  # bound through the hidden path, reached at the shown one
    if case == "alias":
        _bind(hidden, outside)
    elif case == "nested":
        _bind(outside, hidden)
    held: list[socket.socket] = []
    if case == "late":
        held.append(_listen(socket_dir / "s.sock"))
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    await backend.start()
    sup = Supervisor(backend, session_dir=ws.parent / "session")
    try:
        first = await sup.run("true", timeout_s=30)
        zygote = backend._zygote
        if case == "late":
            holder = backend._holder.host_pid if backend._holder is not None else None
            ns = ["nsenter", f"--mount=/proc/{holder}/ns/mnt", "--"] if holder is not None else None
            _bind(hidden, outside, ns)
        else:
            held.append(_listen(socket_dir / "s.sock"))
        result = await sup.run([SANDBOX_PYTHON, "-I", "-c", CONNECT, str(shown / "s.sock")], timeout_s=30)
        return {
            "first": first.exit_code,
            "retired": backend._zygote is not zygote,
            "said": result.preview.strip(),
        }
    finally:
        await sup.close()
        await backend.close()
        for sock in held:
            sock.close()


if __name__ == "__main__":
    case, outside, hidden, ws = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    os.umask(0o022)
    print(json.dumps(anyio.run(_main, case, outside, hidden, ws)))
