"""Round 56, mcpclient2: a server's progress numbers reached the session's progress sink unchecked.

JSON-RPC lines are parsed leniently enough to take ``NaN`` and ``Infinity``: a server's
``notifications/progress`` with ``"progress": NaN, "total": Infinity`` (or ``-1e999``) became a
`ProgressEvent` whose ``data`` held them, and an embedder's sink writing events as JSON
(``json.dumps(..., allow_nan=False)``, or any strict JSON reader of ``NaN``) failed, as did a UI
dividing progress by total. Now a notification whose progress is not a finite number is dropped
and a total that is not one becomes None. A real server on real pipes.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import anyio

from shellrt.protocol import ProgressEvent, ToolContext
from shellrt.tools.mcp.manager import McpConnections
from tests._mcp_tiny_server import tiny_server

_CALL = r"""
token = (msg["params"].get("_meta") or {}).get("progressToken")
for progress, total in ((float("nan"), 10), (1, float("inf")), (float("-inf"), None), (2, 4)):
    params = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    print(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}), flush=True)
result = {"content": [{"type": "text", "text": "done"}]}
"""


def test_non_finite_progress_numbers_never_reach_the_sink(tmp_path: Path) -> None:
    source = tmp_path / "srv.py"
    source.write_text(tiny_server("", name="nan", call=_CALL))
    servers = {"n": {"command": sys.executable, "args": [str(source)], "startup_timeout": 60}}
    events: list[ProgressEvent] = []
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path), allowed_roots=(tmp_path,))
    ctx.progress = events.append

    async def main() -> str:
        with anyio.fail_after(60):
            async with McpConnections(servers) as mcp:
                (tool,) = await mcp.tools()
                out = await tool.call(tool.parse_input({}), ctx.for_call("t1"))
                await anyio.sleep(0.3)  # notifications may trail the answer
                return str(out.data.content)

    assert "done" in anyio.run(main)
    assert events, "no progress reached the sink (the premise)"
    for event in events:
        json.dumps(event.model_dump(), allow_nan=False)  # raises on NaN / Infinity
        numbers = [v for v in event.data.values() if isinstance(v, float)]
        assert all(math.isfinite(v) for v in numbers), event.data
    assert any(e.data.get("progress") == 2 and e.data.get("total") == 4 for e in events), [e.data for e in events]
