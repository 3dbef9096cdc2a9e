"""Red team, round 35 (bwrap): one session's sockets could queue the host's whole TCP/UDP memory.

``net.ipv4.tcp_mem`` and ``udp_mem`` are counted once for the whole host (a sandbox's own network
namespace included): past the hard limit every TCP socket of the host fails to allocate buffers.
A command's loopback connections with unread data queued ~3.7 MB each (round 33: 40 of them 149 MB;
~600 pass the hard limit). cgroup v1 charges socket memory to a session only with
``memory.kmem.tcp.limit_in_bytes``: the session cgroup now sets it (`sandbox._cgroup`,
`SOCKET_SHARE`: a quarter of the session's memory ceiling, 64 MiB at most); cgroup v2 charges
socket memory to ``memory.max`` by itself. Root caller (a non-root caller has no v1 memory cgroup).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox._cgroup import cgroup_unavailable_reasons
from sandbox.policy import ResourceLimits
from tests._bwrap_session import probe_lines, require_bwrap
from tests.conftest import require

pytestmark = pytest.mark.bwrap

_MB = 1 << 20
_FILL = r"""
import socket
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(64)
total, held, said = 0, [], "EAGAIN"
for _ in range(12):
    client = socket.create_connection(server.getsockname())
    held += [client, server.accept()[0]]
    client.setblocking(False)
    while True:
        try:
            total += client.send(b"x" * 65536)
        except BlockingIOError:
            break
        except OSError as exc:
            said = exc.strerror
            break
receivers, datagrams = [], 0
sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(12):  # UDP counts in the same cap (udp_mem is the same kind of budget)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    receiver.bind(("127.0.0.1", 0))
    receivers.append(receiver)
    for _ in range(500):
        sender.sendto(b"x" * 8192, receiver.getsockname())
for receiver in receivers:
    receiver.setblocking(False)
    try:
        while True:
            datagrams += len(receiver.recv(65536))
    except BlockingIOError:
        pass
print("QUEUED", total // (1 << 20), said, datagrams // (1 << 20))
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_sessions_sockets_cannot_queue_the_hosts_tcp_memory(tmp_path: Path, persistent: bool) -> None:
    """Failed before: 12 loopback connections queued 44 MiB in a session of 64 MiB (no socket cap),
    and 12 UDP sockets 47 MiB more; root 2 of 2."""
    require_bwrap()
    require("memory" not in cgroup_unavailable_reasons(), "a memory cgroup the caller can make (root)")
    ws = tmp_path / "ws"
    ws.mkdir()
    limits = ResourceLimits(memory_bytes=64 * _MB)
    said, out = probe_lines(ws, tmp_path / "s", _FILL, persistent=persistent, limits=limits)
    stream, _said, datagrams = said["QUEUED"].split()
    # 16 MiB (a quarter of 64) for both together, and what the kernel forces past it
    assert int(stream) < 16 + 8 and int(stream) + int(datagrams) < 16 + 8, out
