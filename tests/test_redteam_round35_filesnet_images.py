"""Red team round 35 (filesnet): Read passed the model any file whose first bytes looked like an image.

Read returns a PNG, JPEG, GIF or WebP file as an image block, judged by its first bytes only. A
repository's ``docs/diagram.png`` that is the PNG signature then garbage, or a 50 KB PNG saying it
is 20,000 x 20,000 pixels (a decompression bomb: 400 million pixels from zeros), went into the
conversation as it was; the Messages API refuses a request holding an image it cannot decode or one
over 8,000 pixels a side, and the tool result stays in every later request: the conversation fails
from then on (round 8 found the same for MCP servers' images, `shellrt/protocol/model_images.py`).
Now Read checks the header of what it sends (structure and size, nothing decoded: bounded work on
at most 3.75 MB) and refuses what the model cannot take, saying how to make a copy it can.
"""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ImageBlock, ToolContext, ToolExecutionError
from shellrt.tools.read import ReadTool


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(width: int, height: int, rows: int | None = None) -> bytes:
    """A 1-bit grey PNG of ``width`` x ``height`` (all ``rows``, or fewer: the header's size stays)."""
    raw = (b"\x00" + b"\x00" * ((width + 7) // 8)) * (height if rows is None else rows)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0))
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def _jpeg(width: int, height: int) -> bytes:
    """A baseline grey JPEG whose blocks are all one flat colour (DC 0, end of block)."""
    blocks = ((width + 7) // 8) * ((height + 7) // 8)
    bits = "00" * blocks  # a one-symbol DC table and a one-symbol AC table: code "0" each
    bits += "1" * (-len(bits) % 8)
    scan = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8)).replace(b"\xff", b"\xff\x00")

    def segment(marker: int, body: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body

    return (
        b"\xff\xd8"
        + segment(0xDB, b"\x00" + b"\x01" * 64)
        + segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
        + segment(0xC4, b"\x00" + b"\x01" + b"\x00" * 15 + b"\x00")
        + segment(0xC4, b"\x10" + b"\x01" + b"\x00" * 15 + b"\x00")
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + scan
        + b"\xff\xd9"
    )


GIF_1PX = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
WEBP_1PX = base64.b64decode("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")


def _vp8x(width: int, height: int) -> bytes:
    body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    vp8l = bytearray(WEBP_1PX[12:])  # then a VP8L image saying the canvas's size (libwebp checks)
    bits = struct.unpack_from("<I", vp8l, 9)[0] & ~0x0FFFFFFF | (width - 1) & 0x3FFF | ((height - 1) & 0x3FFF) << 14
    struct.pack_into("<I", vp8l, 9, bits)
    chunk = b"VP8X" + struct.pack("<I", len(body)) + body + bytes(vp8l)
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def _read(ctx: ToolContext, path: Path) -> list[object]:
    tool = ReadTool()

    async def go() -> list[object]:
        tool_input = tool.parse_input({"file_path": str(path)})
        assert (await tool.validate(tool_input, ctx)).ok
        content = tool.to_model_content((await tool.call(tool_input, ctx)).data)
        return list(content) if isinstance(content, list) else [content]

    return anyio.run(go)


def test_read_sends_only_images_the_model_can_take(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / ".session").mkdir()
    ctx = ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,)
    )
    bomb = _png(20_000, 20_000)  # 400 million pixels
    assert len(bomb) < 100_000
    refused = {
        "bomb.png": bomb,
        "wide.png": _png(8_001, 1),
        "signature.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40,
        "badcrc.png": _png(4, 4)[:-5] + b"\x00" + _png(4, 4)[-4:],
        "cut.png": _png(64, 64)[:40],
        "zero.png": _png(1, 1).replace(struct.pack(">II", 1, 1), struct.pack(">II", 0, 1), 1),
        "magic.jpg": b"\xff\xd8\xff\xe0" + b"\x00" * 2_000,
        "noscan.jpg": _jpeg(8, 8).split(b"\xff\xda")[0] + b"\xff\xd9",
        "tall.jpg": _jpeg(8, 9_000),
        "huge.gif": GIF_1PX[:6] + struct.pack("<HH", 65_535, 65_535) + GIF_1PX[10:],
        "screen.gif": b"GIF89a",
        "canvas.webp": _vp8x(16_383, 16_383),
        "riff.webp": b"RIFF\xff\xff\xff\x7fWEBPVP8 " + b"\x00" * 64,
    }
    fine = {"ok.png": _png(100, 80), "ok.jpg": _jpeg(16, 8), "ok.gif": GIF_1PX, "ok.webp": WEBP_1PX}
    fine["edge.png"] = _png(8_000, 2)
    # Tolerated as decoders tolerate them: stray bytes before a JPEG marker, bytes after a GIF's frame.
    fine["stray.jpg"] = _jpeg(8, 8).replace(b"\xff\xc0", b"\x00\x00\xff\xc0", 1)
    fine["tail.gif"] = GIF_1PX[:-1] + b"\x00garbage"
    sent: list[str] = []
    for name, data in refused.items():
        (root / name).write_bytes(data)
        try:
            content = _read(ctx, root / name)
        except ToolExecutionError as exc:
            message = str(exc)
            assert "model" in message and "Bash" in message, message
        else:
            if any(isinstance(block, ImageBlock) for block in content):
                sent.append(name)
    assert sent == [], f"{len(sent)} of {len(refused)} sent to the model: {sent}"
    for name, data in fine.items():
        (root / name).write_bytes(data)
        content = _read(ctx, root / name)
        images = [block for block in content if isinstance(block, ImageBlock)]
        assert len(images) == 1, name
        assert base64.b64decode(images[0].source.data) == data


@pytest.mark.parametrize("side", [1, 7_999])
def test_sizes_are_read_from_the_header(side: int) -> None:
    from shellrt.protocol.image_header import image_size

    assert image_size(_png(side, 1, rows=1), "image/png") == (side, 1)
    assert image_size(_jpeg(8, side), "image/jpeg") == (8, side)
    assert image_size(_vp8x(side, 3), "image/webp") == (side, 3)
