"""Red team round 55 (iface8): a call the runtime takes must not be refused by the HTTP wire unexplained.

`shellrt serve --http` bounds a POST body at `MAX_BODY_BYTES` (one tool input of 4 Mi characters,
every character escaped: round 40) and answers a larger one 413 with a JSON-RPC error saying what
to do. The MCP SDK (2.x) puts its own body limit behind that, 4 MiB by default, answered with a
plain-text ``413 Request body too large`` that no MCP client can pair: the client saw
``-32603 Server returned an error response``. So a Write of 2.2 Mi characters (4.4 MB as UTF-8),
which the stdio wire and the runtime take, failed over HTTP with nothing to act on.

Real ``shellrt serve --http`` process, real MCP client with the token.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from tests._mcp_http_sessions import http_session, served, text_of

TOKEN = "r55-iface8-" + "k" * 32
#: 2.2 Mi characters, 4.4 MB as UTF-8 (each "é" two bytes, each newline escaped as two): under
#: the runtime's 4 Mi characters, over the SDK's default 4 MiB body.
CONTENT = "é\n" * 1_100_000


def test_a_write_under_the_input_bound_is_taken_over_http(tmp_path: Path) -> None:
    assert len(CONTENT) < 4 * 1024 * 1024 < len(json.dumps(CONTENT, ensure_ascii=False).encode("utf-8"))

    async def main() -> str:
        with served(tmp_path, TOKEN) as port:
            async with http_session(port, TOKEN) as session:
                with anyio.fail_after(120):
                    result = await session.call_tool("Write", {"file_path": "big.txt", "content": CONTENT})
                assert not result.is_error, text_of(result)[:500]
                return text_of(result)

    said = anyio.run(main)
    written = (tmp_path / "ws" / "big.txt").read_text(encoding="utf-8")
    assert written == CONTENT, (len(written), said[:300])
