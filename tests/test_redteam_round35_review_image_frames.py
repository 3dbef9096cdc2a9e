"""Review of round 35 (filesnet): the image header walker judged one frame header and sent another.

`image_header.image_size` took a JPEG's size from its LAST frame header before the scan, a PNG's
from its first IHDR whatever followed, and a GIF's from its logical screen alone. A JPEG with a
20,000 px frame header and then a 100 px one, a PNG with a second 20,000 px IHDR, and a 100 px GIF
whose frame says 30,000 x 30,000 (LZW data the model's side decodes: the bomb of round 35 by
another door) were all judged 100 x 100 and sent; libjpeg refuses a second frame header, libpng
an IHDR out of place. Now each is refused.
"""

from __future__ import annotations

import base64
import struct
import zlib

from shellrt.protocol.image_header import image_size


def _segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def _sof(width: int, height: int) -> bytes:
    return _segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _ihdr(width: int, height: int) -> bytes:
    return _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0))


def _gif(screen: int, frame: int) -> bytes:
    head = b"GIF89a" + struct.pack("<HHBBB", screen, screen, 0, 0, 0)
    descriptor = b"\x2c" + struct.pack("<HHHHB", 0, 0, frame, frame, 0)
    return head + descriptor + b"\x02" + b"\x02\x4c\x01\x00" + b"\x3b"


#: A 1 x 1 lossless WebP (round 35 filesnet's); its VP8L header rewritten to any size below.
_WEBP_1PX = base64.b64decode("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")


def _webp(canvas: int, image: int) -> bytes:
    """A still extended WebP: a VP8X canvas of ``canvas`` a side, then a VP8L saying ``image``."""
    vp8l = bytearray(_WEBP_1PX[12:])
    bits = struct.unpack_from("<I", vp8l, 9)[0] & ~0x0FFFFFFF | (image - 1) | (image - 1) << 14
    struct.pack_into("<I", vp8l, 9, bits)
    body = b"\x00\x00\x00\x00" + (canvas - 1).to_bytes(3, "little") * 2
    chunk = b"VP8X" + struct.pack("<I", len(body)) + body + bytes(vp8l)
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def _animated(canvas: int, frame: int, offset: int = 0) -> bytes:
    """An animated WebP: a ``canvas`` px VP8X, ANIM, one ANMF of ``frame`` px at ``offset``."""
    still = _webp(frame, frame)
    vp8l = still[12 + 18 :]  # the VP8L chunk after the VP8X chunk (8 + 10 bytes)
    header = (offset // 2).to_bytes(3, "little") * 2 + (frame - 1).to_bytes(3, "little") * 2 + b"\x64\x00\x00\x00"
    anmf = b"ANMF" + struct.pack("<I", len(header) + len(vp8l)) + header + vp8l
    anim = b"ANIM" + struct.pack("<I", 6) + b"\x00" * 6
    body = b"\x02\x00\x00\x00" + (canvas - 1).to_bytes(3, "little") * 2
    chunk = b"VP8X" + struct.pack("<I", len(body)) + body + anim + anmf
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def test_every_frame_header_is_judged() -> None:
    sos = _segment(0xDA, b"\x01\x01\x00\x00\x3f\x00") + b"\x00\xff\xd9"
    idat = _chunk(b"IDAT", zlib.compress(b"\x00\x00" * 100)) + _chunk(b"IEND", b"")
    files = {
        "jpeg two frame headers": (b"\xff\xd8" + _sof(20_000, 20_000) + _sof(100, 100) + sos, "image/jpeg"),
        "png second IHDR": (b"\x89PNG\r\n\x1a\n" + _ihdr(100, 100) + _ihdr(20_000, 20_000) + idat, "image/png"),
        "gif frame past the side limit": (_gif(100, 30_000), "image/gif"),
        "webp canvas over another bitstream": (_webp(100, 16_000), "image/webp"),
        "webp frame past its canvas": (_animated(100, 16_000), "image/webp"),
        "webp frame placed past its canvas": (_animated(100, 60, offset=50), "image/webp"),
    }
    # The well-formed versions still pass.
    assert image_size(b"\xff\xd8" + _sof(100, 100) + sos, "image/jpeg") == (100, 100)
    assert image_size(b"\x89PNG\r\n\x1a\n" + _ihdr(100, 100) + idat, "image/png") == (100, 100)
    assert image_size(_gif(100, 100), "image/gif") == image_size(_gif(100, 8_000), "image/gif") == (100, 100)
    assert image_size(_webp(100, 100), "image/webp") == image_size(_animated(100, 50, 50), "image/webp") == (100, 100)
    sent = {}
    for name, (data, media_type) in files.items():
        try:
            sent[name] = image_size(data, media_type)
        except ValueError:
            pass
    assert not sent, f"judged by another header than the decoder uses, and sent: {sent}"
