"""Red team round 56 (web3): IPv6 ranges IANA lists as not globally reachable were called public.

WebFetch and the network proxy share one judgement of addresses (`sandbox._proxy.is_global_address`):
``ipaddress.is_global`` plus the IPv4 an IPv6 address carries. Python 3.11's table predates three entries
of IANA's special-purpose registry: ``3fff::/20`` (documentation, RFC 9637), ``5f00::/16`` (SRv6 segment
identifiers, RFC 9602: routed inside an operator's network, to its routers' functions) and
``100:0:0:1::/64`` (dummy prefix, RFC 9780). An address there, as a URL literal or a name's answer, was
fetched as a public host. Judged without DNS (literals) by the permission check, and by the proxy's
function itself.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox._proxy import is_global_address
from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

_NOT_GLOBAL = ["3fff::1", "3fff:fff:ffff::1", "5f00::1", "5f00:ffff::1", "100:0:0:1::1", "100:0:0:1:ffff::1"]
#: The deprecated 6to4 relay anycast (RFC 7526), also through the IPv6 spellings that carry it (web3's Left).
_NOT_GLOBAL_V4 = ["192.88.99.1", "192.88.99.255", "::ffff:192.88.99.1", "2002:c058:6301::1"]


@pytest.mark.parametrize("address", _NOT_GLOBAL + _NOT_GLOBAL_V4)
def test_a_non_global_ipv6_range_is_refused(tmp_path: Path, address: str) -> None:
    assert not is_global_address(address)
    ctx = ToolContext(
        session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path), settings={}
    )
    verdict = anyio.run(WebFetchTool().check_permissions, WebFetchInput(url=f"http://[{address}]/" if ":" in address else f"http://{address}/"), ctx)
    assert verdict.behavior == "deny", (address, verdict)


@pytest.mark.parametrize("address", ["2001:4860:4860::8888", "2606:4700::1111", "4000::1", "3ffe:ffff::1", "192.88.98.1", "192.88.100.1"])
def test_public_neighbours_stay_public(address: str) -> None:
    assert is_global_address(address)
