"""Red team round 27 (net): around the filtering proxy from inside a bwrap ``proxied`` sandbox.

A hostile command looks for another way to the host than the bridge on 127.0.0.1:3128: the
host's abstract unix sockets (a host listener here, named ``@shellrt-r27-<pid>``), the host's
loopback services (a TCP listener on the host's 127.0.0.1), the sockets ``/proc/net`` lists and the
bridge's (pid 1's) fds, which hold the connection to the proxy's control socket.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend, _reachable
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

_PROBE = r"""
import os, socket, sys
name, port = sys.argv[1], int(sys.argv[2])
found = []
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + name)
    found.append("abstract")
except OSError:
    pass
for host in ("127.0.0.1", "::1"):
    try:
        socket.create_connection((host, port), timeout=2).close()
        found.append("loopback " + host)
    except OSError:
        pass
unix = open("/proc/net/unix").read()
if name in unix or "proxy.sock" in unix:
    found.append("/proc/net/unix")
tcp = [l.split()[1] for l in open("/proc/net/tcp").read().splitlines()[1:]]
if any(a != "0100007F:0C38" for a in tcp):
    found.append("tcp " + " ".join(tcp))
try:
    found.append("bridge fds " + " ".join(os.readlink("/proc/1/fd/" + f) for f in os.listdir("/proc/1/fd")))
except OSError:
    pass
print("FOUND", found)
"""


@pytest.mark.anyio
async def test_no_way_around_the_bridge(tmp_path: Path) -> None:
    require_bwrap()
    py = next((p for p in (sys.executable, "/usr/bin/python3") if _reachable(p)), None)
    require(py is not None, "no Python that the sandbox uid may run")
    name = f"shellrt-r27-{os.getpid()}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + name)
    abstract.listen()
    host = socket.create_server(("127.0.0.1", 0))
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    backend = BwrapBackend(
        BwrapConfig(), SandboxPolicy(workspace=ws, network="proxied", allowed_domains=("localhost",))
    )
    try:
        async with supervised(backend, session) as sup:
            (ws / "probe.py").write_text(_PROBE)
            out = await sup.run(f"{py} -I probe.py {name} {host.getsockname()[1]}", timeout_s=30)
    finally:
        abstract.close()
        host.close()
    assert out.exit_code == 0 and "FOUND []" in out.preview, out.preview
