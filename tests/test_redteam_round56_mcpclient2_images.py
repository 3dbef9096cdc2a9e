"""Round 56, mcpclient2: one result's images, each acceptable, together made a request the API refuses.

Each image of an external server's result is checked (type, base64, 5 MB, sides: rounds 8 and
35), but not how many came: a result of 150 valid 1x1 PNGs went to the model as 150 image
blocks (the Messages API takes at most 100 images a request, and past 20 a smaller side), and
images of 4 MB each were all kept (20 MB for five; eight pass the API's 32 MB a request). The
request was refused, and every later one too, until the result was removed by hand. Now a result keeps its first
`MAX_RESULT_IMAGES` images within `MAX_RESULT_IMAGE_BYTES` (base64 characters); each one left out becomes a line
saying so. A real server on real pipes.
"""

from __future__ import annotations

import base64
import struct
import sys
import zlib
from pathlib import Path

import anyio

from shellrt.protocol import ImageBlock, TextBlock, ToolContext
from shellrt.tools.mcp.manager import McpConnections
from tests._mcp_tiny_server import tiny_server


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(padding: int = 0) -> str:
    """A valid 1x1 PNG, with ``padding`` bytes of a text chunk."""
    head = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    text = _chunk(b"tEXt", b"k\x00" + b"x" * padding) if padding else b""
    body = head + text + _chunk(b"IDAT", zlib.compress(b"\x00\x00")) + _chunk(b"IEND", b"")
    return base64.b64encode(body).decode()


def _blocks(tmp_path: Path, count: int, padding: int) -> list[TextBlock | ImageBlock]:
    image = {"type": "image", "mimeType": "image/png", "data": _png(padding)}
    source = tmp_path / "srv.py"
    source.write_text(tiny_server("", name="pics", call=f"result = {{'content': [{image!r}] * {count}}}"))
    servers = {"p": {"command": sys.executable, "args": [str(source)], "startup_timeout": 60}}
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path), allowed_roots=(tmp_path,))

    async def main() -> list[TextBlock | ImageBlock]:
        with anyio.fail_after(60):
            async with McpConnections(servers) as mcp:
                (tool,) = await mcp.tools()
                out = await tool.call(tool.parse_input({}), ctx.for_call("t1"))
                return list(out.data.content)

    return anyio.run(main)


def test_150_small_images_are_not_all_passed_on(tmp_path: Path) -> None:
    blocks = _blocks(tmp_path, 150, 0)
    images = [b for b in blocks if isinstance(b, ImageBlock)]
    assert 0 < len(images) <= 20, len(images)
    assert any(isinstance(b, TextBlock) and "not shown" in b.text for b in blocks)


def test_five_4_mb_images_stay_under_the_request_size(tmp_path: Path) -> None:
    blocks = _blocks(tmp_path, 5, 3_000_000)
    kept = sum(len(b.source.data) for b in blocks if isinstance(b, ImageBlock))
    assert 0 < kept <= 10 * 1024 * 1024, kept


def test_a_few_images_all_pass(tmp_path: Path) -> None:
    blocks = _blocks(tmp_path, 3, 0)
    assert [type(b) for b in blocks] == [ImageBlock] * 3
