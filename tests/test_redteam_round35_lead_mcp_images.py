"""Round 35 (lead; filesnet's Left): an external MCP server's image reached the model unchecked.

Round 8 checked an MCP image's type, size and base64; round 35 filesnet found that the Messages
API also refuses an image it cannot decode or one over 8,000 px a side (and the refused tool result
stays in every later request), and walked Read's images for it. An MCP server's images did not get
that walk: the PNG signature then garbage, and a 50 KB PNG of 20,000 x 20,000 pixels, went to the
model (2 of 2 failed before).
"""

from __future__ import annotations

import base64
import struct
import zlib

from shellrt.protocol.messages import ImageBlock, TextBlock
from shellrt.protocol.model_images import image_for_model


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\0" * 11)) + _chunk(b"IEND", b"")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_an_mcp_image_the_api_would_refuse_is_left_out() -> None:
    for data, why in ((b"\x89PNG\r\n\x1a\n" + b"garbage" * 20, "well-formed"), (_png(20_000, 20_000), "8,000")):
        got = image_for_model("image/png", _b64(data), origin="mcp__srv__shot")
        assert isinstance(got, TextBlock), f"sent to the model: {data[:40]!r}"
        assert "not shown" in got.text and why in got.text and "mcp__srv__shot" in got.text, got.text


def test_a_well_formed_mcp_image_is_sent() -> None:
    got = image_for_model("image/png", _b64(_png(10, 10)), origin="mcp__srv__shot")
    assert isinstance(got, ImageBlock)
