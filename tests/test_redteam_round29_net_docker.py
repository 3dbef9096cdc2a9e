"""Red team round 29 (net): a denied name's address through the proxy, from a docker ``proxied``
container (the same host-side proxy as bwrap's; `tests/test_redteam_round29_net_proxynames.py`).

The container's command opens a CONNECT to the proxy on its loopback (bash's ``/dev/tcp``: the
test image has no curl) for ``alias.example``, whose DNS answers the address of
``internal.example``, a name on the deny-list; DNS (outside the machine) is a hook.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sandbox._proxy import BRIDGE_PORT
from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_sh
from tests._own_address import own_ipv4
from tests.test_redteam_round28_filesnet_webfetch import _dns

_CONNECT = (
    "for h in alias.example other.example; do bash -c 'exec 3<>/dev/tcp/127.0.0.1/{bridge} && "
    'printf "CONNECT %s:{port} HTTP/1.1\\r\\n\\r\\n" "$0" >&3 && head -c 12 <&3; echo\' "$h"; done'
)


@pytest.mark.anyio
async def test_a_container_gets_no_denied_names_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_docker()
    own = own_ipv4()
    _dns(monkeypatch, {"internal.example": [own], "alias.example": [own], "other.example": ["127.0.0.7"]})
    allowed = ("alias.example", "other.example", own, "127.0.0.7")
    with socket.create_server(("0.0.0.0", 0)) as listener:  # the kernel completes each handshake
        port = int(listener.getsockname()[1])
        settings = policy(
            tmp_path, network="proxied", allowed_domains=allowed, denied_domains=("internal.example",)
        )
        async with DockerBackend(config(), settings) as backend:
            code, out = await run_sh(backend, _CONNECT.format(bridge=BRIDGE_PORT, port=port))
    assert code == 0 and out.split() == ["HTTP/1.1", "403", "HTTP/1.1", "200"], (code, out)
