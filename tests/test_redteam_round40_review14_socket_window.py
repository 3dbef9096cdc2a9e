"""Red team round 40 (review14): a socket bound between a bwrap session's socket listing and its masks.

Round 40 (speed) works a zygote's masks out from the other namespaces' lines its `SocketWatch` was
made from. A socket another program binds in another network namespace in that window is in
neither: not masked, and not in the watch's starting set. This pins that the watch sees it as new
before the first command, so that command runs in a zygote that masks it (root; the foreign
namespace needs `unshare -n`). Held: the command sees /dev/null there. The test fails when
`SocketWatch.nothing_new` is made to answer True (the socket is then a socket in the sandbox).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _hostsockets
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised

pytestmark = [pytest.mark.bwrap]

_SERVE = (
    "import os,socket,sys,time\n"
    "open(sys.argv[2],'w').write(str(os.getpid()))\n"
    "s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(8)\n"
    "end=time.time()+60\n"
    "while time.time()<end:\n"
    "    s.settimeout(1)\n"
    "    try:\n"
    "        c,_=s.accept(); c.sendall(b'SECRET-r40'); c.close()\n"
    "    except OSError: pass\n"
)

_CONNECT = (
    "stat -c 'kind: %F' {path}; python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
    "print('got', s.recv(64).decode())\" {path} 2>&1 | tail -1"
)


def test_a_foreign_socket_bound_in_the_start_window_is_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_bwrap()
    if os.geteuid() != 0:
        pytest.fail("needs root: the socket's network namespace is made with unshare -n")
    ws = tmp_path / "ws"
    ws.mkdir()
    path = Path(f"/var/tmp/r40rev14-{secrets.token_hex(4)}.sock")
    pidfile = tmp_path / "server.pid"
    real_init = _hostsockets.SocketWatch.__init__
    bound: list[int] = []

    def init_then_bind(self: _hostsockets.SocketWatch, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)  # the watch's listing: the masks come from its lines
        if not bound:
            # setsid -f: reparented, so not a namespace of this process's sandboxes
            serve = ["setsid", "-f", "unshare", "-n", "python3", "-c", _SERVE, str(path), str(pidfile)]
            subprocess.run(serve, check=True)
            deadline = time.monotonic() + 10
            while not path.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert path.exists(), "the foreign socket was not bound"
            bound.append(1)

    monkeypatch.setattr(_hostsockets.SocketWatch, "__init__", init_then_bind)

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None, "the session must run under its zygote here"
            out = (await sup.run(_CONNECT.format(path=path), timeout_s=60)).preview
            return out

    try:
        out = anyio.run(main)
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)  # the server this test started
        path.unlink(missing_ok=True)
    assert bound, "the window was not raced"
    assert "SECRET-r40" not in out, f"a socket bound in the start window was reachable: {out}"
    assert "kind: socket" not in out, f"a socket bound in the start window was not masked: {out}"
