"""Red team round 35 (net): the proxy's request vetting, as a command in a bwrap ``proxied``
sandbox meets it: raw bytes written to the bridge (127.0.0.1:3128) with bash's ``/dev/tcp``.

A NUL in a header value is refused (400) and never reaches the server; a clean request goes,
with the vetted name as its Host whatever the client spelt (`test_redteam_round35_net_smuggle`
has the cases; the proxy runs on the host, the same code for root and non-root callers; the test
runs for both).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend, _reachable
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require
from tests.test_redteam_round27_net_proxy import upstream  # noqa: F401 (the recording server fixture)
from tests.test_redteam_round35_net_smuggle import _settled


@pytest.mark.anyio
async def test_a_command_behind_the_bridge_cannot_send_control_bytes_or_its_own_host(
    tmp_path: Path,
    upstream: tuple[int, list[bytes]],  # noqa: F811 (the imported fixture)
) -> None:
    require_bwrap()
    require(_reachable("/bin/bash"), "bash is not installed where the sandbox uid may run it")
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    policy = SandboxPolicy(workspace=ws, network="proxied", allowed_domains=("localhost",))
    port, received = upstream
    ask = (
        "exec 3<>/dev/tcp/127.0.0.1/3128; printf '%s' >&3; head -c 12 <&3; echo; exec 3<&-"
    )  # fmt: skip
    command = " ; ".join(
        ask % request
        for request in (
            f"GET http://localhost:{port}/x HTTP/1.1\\r\\nX-A: a\\0smuggle\\r\\n\\r\\n",
            f"GET http://LOCALHOST.:{port}/ok HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n",
        )
    )
    async with supervised(BwrapBackend(BwrapConfig(), policy), session) as sup:
        out = await sup.run(command, timeout_s=60)
    assert out.preview.split() == ["HTTP/1.1", "400", "HTTP/1.1", "200"], out.preview
    received = _settled(received, 1)
    assert len(received) == 1 and b"smuggle" not in received[0], received
    assert received[0].startswith(b"GET /ok HTTP/1.1\r\nHost: localhost:%d\r\n" % port), received


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__, "test_a_command_behind_the_bridge_cannot_send_control_bytes_or_its_own_host"
    )
