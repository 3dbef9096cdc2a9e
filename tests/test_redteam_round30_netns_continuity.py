"""Red team, round 30 (netns): a bwrap session's network namespace across zygote replacements.

A session zygote is replaced whenever a host socket appears anywhere its commands could see (any
host process makes one: an ssh control socket, another test's socket in /var/tmp), when a
read-denied path appears, or when it died. The new zygote was a new bwrap with ``--unshare-net``:
later commands ran in a NEW network namespace, and an agent's background dev server on 127.0.0.1
(or an abstract name) started before was gone for them (ECONNREFUSED). With ``network: proxied``
the proxy bridge moved with it. Now every zygote of a session starts in the first one's network
namespace (`sandbox._bwrap_netns`), and the bridge's listener is handed on; each command keeps its
own pid, mount and IPC namespaces and its Landlock scope (an abstract name of another command is
still refused: EPERM, where another namespace says ECONNREFUSED). Two sessions never share one.
Both inits (C, Python), network ``none`` and ``proxied``, root and uid 65534.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_netns, _static_build, _zinit
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: A background server: TCP on 127.0.0.1:argv[1] and the abstract name argv[2], answering "srv";
#: touches argv[3] once both listen.
_SERVE = """
import select, socket, sys
tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", int(sys.argv[1]))); tcp.listen(8)
ab = socket.socket(socket.AF_UNIX); ab.bind("\\0" + sys.argv[2]); ab.listen(8)
open(sys.argv[3], "a").close()
while True:
    for s in select.select([tcp, ab], [], [])[0]:
        c, _ = s.accept(); c.sendall(b"srv"); c.close()
"""

#: A later command: its network namespace, the server's TCP port, its abstract name (connect, then
#: bind: a name taken in this namespace is EADDRINUSE), and, given, a CONNECT through the bridge.
_PROBE = """
import os, socket, sys
print("ns", os.readlink("/proc/self/ns/net"))
def ask(family, addr):
    s = socket.socket(family)
    try:
        s.connect(addr); return s.recv(8).decode() or "empty"
    except OSError as e:
        return f"errno {e.errno}"
print("tcp", ask(socket.AF_INET, ("127.0.0.1", int(sys.argv[1]))))
print("abstract", ask(socket.AF_UNIX, "\\0" + sys.argv[2]))
b = socket.socket(socket.AF_UNIX)
try:
    b.bind("\\0" + sys.argv[2]); print("bind", "free")
except OSError as e:
    print("bind", f"errno {e.errno}")
if len(sys.argv) > 3:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=20)
    s.sendall(b"CONNECT denied.invalid:443 HTTP/1.1\\r\\nHost: denied.invalid:443\\r\\n\\r\\n")
    print("bridge", s.recv(64).split(b"\\r\\n")[0].decode())
"""

#: A background task: opens argv[1] connections to the bridge and touches /tmp/held.ready, then,
#: once /tmp/go exists, sends a CONNECT on each and prints each answer's status line (or the error).
_HOLD = """
import os, socket, sys, time
conns = [socket.create_connection(("127.0.0.1", 3128), timeout=30) for _ in range(int(sys.argv[1]))]
open("/tmp/held.ready", "a").close()
while not os.path.exists("/tmp/go"):
    time.sleep(0.02)
for c in conns:
    try:
        c.sendall(b"CONNECT denied.invalid:443 HTTP/1.1\\r\\n\\r\\n")
        print("held", c.recv(64).split(b"\\r\\n")[0].decode() or "eof")
    except OSError as e:
        print("held", f"errno {e.errno}")
"""

_PORT = "8765"
_BRIDGE = "3128"


def _cmd(program: str, *argv: str) -> str:
    encoded = base64.b64encode(program.encode()).decode()
    return f'exec python3 -c "$(echo {encoded} | base64 -d)" {" ".join(argv)}'


@contextmanager
def _host_socket() -> Iterator[None]:
    """A listening host socket the sandbox uid can reach (0755 dir of ours in /var/tmp, 0777 socket):
    the next command of a session replaces its zygote."""
    where = Path(tempfile.mkdtemp(prefix="shellrt-r30-netns-", dir="/var/tmp"))
    try:
        where.chmod(0o755)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(where / "x.sock"))
            (where / "x.sock").chmod(0o777)
            sock.listen(1)
            yield
    finally:
        shutil.rmtree(where, ignore_errors=True)


async def _serve(sup: Supervisor, name: str) -> str:
    """Start the background server; its task id once it listens."""
    task = await sup.start_background(_cmd(_SERVE, _PORT, name, "/tmp/srv.ready"), description="srv")
    for _ in range(400):
        if (await sup.run("test -e /tmp/srv.ready && echo up", timeout_s=30)).preview == "up\n":
            return task.id
        await anyio.sleep(0.05)
    pytest.fail(f"the server never listened: {sup.tasks.get(task.id).output_path.read_text()[-2000:]!r}")


async def _probe(sup: Supervisor, name: str, *bridge: str) -> dict[str, str]:
    out = (await sup.run(_cmd(_PROBE, _PORT, name, *bridge), timeout_s=60)).preview
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def _init(monkeypatch: pytest.MonkeyPatch, init: str) -> None:
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided again for this init
    monkeypatch.setattr(_static_build, "_built", {})


def _reached(seen: dict[str, str], ns: str) -> None:
    """The later command ran in namespace ``ns`` and reached the server there."""
    assert seen.get("ns") == ns, seen  # failed before: a new namespace
    assert seen.get("tcp") == "srv", seen  # failed before: errno 111 (ECONNREFUSED)
    assert seen.get("abstract") == "errno 1", seen  # EPERM: Landlock scope (another namespace: 111)
    assert seen.get("bind") == "errno 98", seen  # EADDRINUSE: the name is taken in this namespace


@pytest.mark.parametrize("init", ["c", "python"])
def test_a_replaced_zygote_keeps_the_sessions_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    """A host socket appears, then the zygote dies: each later command still reaches the
    background server started under the first zygote (failed before: ECONNREFUSED)."""
    require_bwrap()
    _init(monkeypatch, init)
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None and backend._zygote.c_init is (init == "c")
            name = f"shellrt-r30-{init}"
            await _serve(sup, name)
            first = await _probe(sup, name)
            assert first.get("tcp") == "srv", first
            zygote = backend._zygote
            with _host_socket():
                after_socket = await _probe(sup, name)
            assert backend._zygote is not zygote, "the host socket did not replace the zygote"
            _reached(after_socket, first["ns"])
            dead = backend._zygote
            assert dead is not None and dead.host_pid is not None
            os.kill(dead.host_pid, signal.SIGKILL)  # its bwrap: the sandbox dies with it
            with anyio.fail_after(20):
                while dead.alive:
                    await anyio.sleep(0.02)
            after_death = await _probe(sup, name)
            assert backend._zygote is not dead
            _reached(after_death, first["ns"])

    anyio.run(main)


def test_proxied_keeps_its_network_and_bridge(tmp_path: Path) -> None:
    """``network: proxied``: the server and the proxy bridge stay reachable after a replacement,
    the bridge still once the old zygote (its first bridge) is gone; another session has a
    namespace of its own (neither the server nor the namespace)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    policy = SandboxPolicy(workspace=ws, network="proxied")

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True), policy)
        async with supervised(backend, tmp_path / "s") as sup:
            name = "shellrt-r30-proxied"
            task = await _serve(sup, name)
            first = await _probe(sup, name, _BRIDGE)
            assert first.get("tcp") == "srv" and first.get("bridge", "").endswith("403 Forbidden"), first
            zygote = backend._zygote
            with _host_socket():
                after = await _probe(sup, name, _BRIDGE)
            assert backend._zygote is not zygote, "the host socket did not replace the zygote"
            _reached(after, first["ns"])
            assert after.get("bridge", "").endswith("403 Forbidden"), after
            # Connections a new command opened while the old zygote's bridge still ran: none may
            # be served by that bridge, which dies with its zygote (failed before: 6 of 8 cut).
            hold = await sup.start_background(_cmd(_HOLD, "8"), description="hold")
            for _ in range(400):
                if (await sup.run("test -e /tmp/held.ready && echo up", timeout_s=30)).preview == "up\n":
                    break
                await anyio.sleep(0.05)
            await sup.tasks.stop(task)
            await sup.run("true", timeout_s=30)  # the old zygote, its last command gone, is closed
            assert zygote is not None and not zygote.alive
            await sup.run("touch /tmp/go", timeout_s=30)
            held = (await sup.tasks.wait(hold.id)).output_path.read_text()
            assert held.splitlines() == ["held HTTP/1.1 403 Forbidden"] * 8, held
            later = await _probe(sup, name, _BRIDGE)
            assert later.get("ns") == first["ns"] and later.get("tcp") == "errno 111", later
            assert later.get("bridge", "").endswith("403 Forbidden"), later
            other = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=other_ws))
            async with supervised(other, tmp_path / "o") as other_sup:
                theirs = await _probe(other_sup, name)
            assert theirs.get("ns") not in (None, first["ns"]), theirs
            assert theirs.get("tcp") == "errno 111", theirs

    anyio.run(main)


def test_where_it_cannot_join_the_session_says_so_once_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A namespace of another layout is not kept, and a join nsenter refuses falls back to a new
    namespace (the behaviour before): the session goes on, the operator is told once."""
    require_bwrap()
    monkeypatch.setattr(_bwrap_netns, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="sandbox._bwrap_netns"):
        host_net = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        # The host's namespace, owned by the host's user namespace, which has no parent to check.
        assert _bwrap_netns.SessionNet.adopt([host_net], bridge=False, owner_parent="/proc/self/ns/user") is None
        with pytest.raises(OSError):
            os.fstat(host_net)  # closed
        _bwrap_netns.warn_once("again")  # once per process
        monkeypatch.setattr(_bwrap_netns, "_warned", False)
        ws = tmp_path / "ws"
        ws.mkdir()
        monkeypatch.setattr(_bwrap_netns.SessionNet, "net_arg", lambda _self: "--net=/proc/self/fd/999999")

        async def main() -> str:
            backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
            async with supervised(backend, tmp_path / "s") as sup:
                zygote = backend._zygote
                assert zygote is not None and zygote.alive and backend._net is not None
                assert zygote.host_pid is not None
                os.kill(zygote.host_pid, signal.SIGKILL)
                with anyio.fail_after(20):
                    while zygote.alive:
                        await anyio.sleep(0.02)
                said = (await sup.run("echo ok", timeout_s=30)).preview
                assert backend._zygote is not zygote and backend._net is not None  # the new one's kept
                return said

        assert anyio.run(main) == "ok\n"
    said = [r.getMessage() for r in caplog.records if r.name == "sandbox._bwrap_netns"]
    assert len(said) == 2 and all("new network namespace" in line for line in said), said
    assert "owner" in said[0] and "nsenter refused" in said[1], said


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_replaced_zygote_keeps_the_sessions_network",
        "test_proxied_keeps_its_network_and_bridge",
    )
