"""An image's size in pixels, read from its header, and whether the file is laid out as its format says.

Why: Read sends a PNG, JPEG, GIF or WebP file to the model as it is, and the file is the
repository's (an external MCP server's images are walked too: `model_images`). The Messages API refuses a request holding an image it cannot decode or one over
`MAX_MODEL_IMAGE_SIDE` pixels a side, and the tool result stays in every later request: one such
file (the PNG signature then garbage; a 50 KB PNG of 20,000 x 20,000 zeros, a decompression bomb)
made the rest of the conversation fail (red team, round 35; round 8 found the same for MCP images).
Nothing here decodes pixels (that is the bomb): a walk over the format's chunks, segments or
blocks, checksums included for PNG, linear in the file's bytes (at most Read's 3.75 MB).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

__all__ = ["MAX_MODEL_IMAGE_SIDE", "image_size"]

#: The longest side, in pixels, of an image the Messages API takes.
MAX_MODEL_IMAGE_SIDE = 8000
#: Chunks, segments or blocks walked at most: real files have hundreds (a GIF's 255-byte
#: sub-blocks: ~15,000 in 3.75 MB); 3.75 MB of 4-byte JPEG segments took 1.1 s of Python unbounded.
MAX_STEPS = 50_000


def image_size(data: bytes, media_type: str) -> tuple[int, int]:
    """(width, height) of the ``media_type`` image ``data``; `ValueError` saying what is wrong when
    the file is not laid out as that format says (cut short, a bad checksum, no image data)."""
    reader = _READERS.get(media_type)
    if reader is None:
        raise ValueError(f"{media_type} is not an image type the model takes")
    try:
        return reader(data)
    except (struct.error, IndexError):
        raise ValueError("it ends inside its header") from None
    except _TooLong:
        raise ValueError(f"it has more than {MAX_STEPS:,} chunks, segments or blocks") from None


class _TooLong(Exception):
    """More than `MAX_STEPS` parts walked."""


def _steps() -> Callable[[], None]:
    """A counter that raises `_TooLong` past `MAX_STEPS` calls."""
    count = [0]

    def step() -> None:
        count[0] += 1
        if count[0] > MAX_STEPS:
            raise _TooLong

    return step


#: Bit depths each PNG colour type allows (PNG specification, IHDR).
_PNG_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}


def _png(data: bytes) -> tuple[int, int]:
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError("no PNG signature")
    pos, size, seen_data, step = 8, None, False, _steps()
    while True:
        step()
        if pos + 12 > len(data):
            raise ValueError("it ends before its IEND chunk")
        (length,) = struct.unpack_from(">I", data, pos)
        kind = data[pos + 4 : pos + 8]
        end = pos + 8 + length
        if length > 0x7FFFFFFF or end + 4 > len(data):
            raise ValueError(f"chunk {kind!r} runs past the end of the file")
        if zlib.crc32(data[pos + 4 : end]) != struct.unpack_from(">I", data, end)[0]:
            raise ValueError(f"chunk {kind!r} has a bad checksum")
        if size is None:
            if kind != b"IHDR" or length != 13:
                raise ValueError("its first chunk is not IHDR")
            width, height, depth, colour, method, filtering, interlace = struct.unpack_from(
                ">IIBBBBB", data, pos + 8
            )
            if depth not in _PNG_DEPTHS.get(colour, ()) or method or filtering or interlace > 1:
                raise ValueError("its IHDR chunk names no valid PNG layout")
            size = (width, height)
        elif kind == b"IHDR":  # libpng refuses one out of place; another decoder may take it
            raise ValueError("it has a second IHDR chunk")
        seen_data = seen_data or kind == b"IDAT"
        if kind == b"IEND":
            if not seen_data:
                raise ValueError("it has no IDAT chunk")
            return size
        pos = end + 4


#: JPEG start-of-frame markers (baseline, extended, progressive, lossless; not DHT, JPG, DAC).
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> tuple[int, int]:
    if not data.startswith(b"\xff\xd8"):
        raise ValueError("no JPEG start of image")
    pos, size, step = 2, None, _steps()
    while True:
        step()
        if data[pos] != 0xFF:  # extraneous bytes before a marker: skipped, as libjpeg does
            pos = data.find(b"\xff", pos)
            if pos < 0:
                raise ValueError("it ends before its first scan")
        while data[pos + 1] == 0xFF:  # fill bytes
            step()
            pos += 1
        marker = data[pos + 1]
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers without a length
            pos += 2
            continue
        if marker == 0xD9:
            raise ValueError("it ends before its first scan")
        (length,) = struct.unpack_from(">H", data, pos + 2)
        if length < 2 or pos + 2 + length > len(data):
            raise ValueError(f"segment 0x{marker:02X} has a bad length")
        if marker in _JPEG_FRAMES:
            if size is not None:  # libjpeg refuses a second one; which would another decoder take?
                raise ValueError("it has a second frame header before its first scan")
            height, width = struct.unpack_from(">HH", data, pos + 5)
            size = (width, height)
        elif marker == 0xDA:  # start of scan: the header is complete
            if size is None:
                raise ValueError("its first scan comes before its frame header")
            return size
        pos += 2 + length


def _gif(data: bytes) -> tuple[int, int]:
    if data[:6] not in (b"GIF87a", b"GIF89a"):
        raise ValueError("no GIF signature")
    width, height, flags = struct.unpack_from("<HHB", data, 6)
    pos = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    images, step = 0, _steps()
    while pos < len(data):
        step()
        block = data[pos]
        if block == 0x3B:  # trailer
            break
        if block == 0x21:  # extension: label, then sub-blocks
            pos = _gif_sub_blocks(data, pos + 2, step)
        elif block == 0x2C:  # image descriptor, local colour table, LZW code size, sub-blocks
            frame_w, frame_h, frame_flags = struct.unpack_from("<HHB", data, pos + 5)
            if not frame_w or not frame_h:
                raise ValueError("a frame has no pixels")
            if max(frame_w, frame_h) > MAX_MODEL_IMAGE_SIDE:  # its pixels are decoded, whatever the screen
                raise ValueError(f"a frame of {frame_w:,} x {frame_h:,} pixels")
            pos += 10 + (3 << ((frame_flags & 7) + 1) if frame_flags & 0x80 else 0)
            pos = _gif_sub_blocks(data, pos + 1, step)
            images += 1
        elif images:
            break  # bytes after the last frame, as a missing trailer: decoders stop there
        else:
            raise ValueError(f"an unknown block 0x{block:02X} before any frame")
    if not images:
        raise ValueError("it holds no image")
    return width, height


def _gif_sub_blocks(data: bytes, pos: int, step: Callable[[], None]) -> int:
    """The position after the sub-blocks starting at ``pos`` (each a length byte, then that many)."""
    while data[pos]:
        step()
        pos += 1 + data[pos]
    return pos + 1


def _webp(data: bytes) -> tuple[int, int]:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise ValueError("no RIFF WEBP header")
    (riff_size,) = struct.unpack_from("<I", data, 4)
    (chunk_size,) = struct.unpack_from("<I", data, 16)
    if riff_size + 8 > len(data) or 20 + chunk_size > min(len(data), riff_size + 8):
        raise ValueError("it is shorter than its header says")
    kind, body = data[12:16], data[20 : 20 + chunk_size]
    if kind == b"VP8 ":
        if body[3:6] != b"\x9d\x01\x2a":
            raise ValueError("its VP8 frame has no start code")
        width, height = struct.unpack_from("<HH", body, 6)
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L":
        if body[0] != 0x2F:
            raise ValueError("its VP8L stream has no signature")
        (bits,) = struct.unpack_from("<I", body, 1)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        if len(body) < 10 or 20 + chunk_size >= riff_size + 8:
            raise ValueError("its VP8X header is cut or no image follows it")
        canvas = int.from_bytes(body[4:7], "little") + 1, int.from_bytes(body[7:10], "little") + 1
        if body[0] & _WEBP_ANIMATED:
            _webp_frames_fit(data, 20 + chunk_size, riff_size + 8, canvas)
        elif _webp_still_size(data, 20 + chunk_size, riff_size + 8) != canvas:
            raise ValueError("its image is not the size of its VP8X canvas")  # libwebp refuses it too
        return canvas
    raise ValueError(f"its first chunk {kind!r} is not VP8, VP8L or VP8X")


#: VP8X's flag for an animation (ANMF frames, placed on the canvas) rather than one still image.
_WEBP_ANIMATED = 0x02


def _webp_frames_fit(data: bytes, pos: int, end: int, canvas: tuple[int, int]) -> None:
    """`ValueError` unless an animated WebP has a frame (ANMF) and each lies on the canvas with a
    bitstream of its own stated size, as libwebp's demuxer requires (review of round 35)."""
    frames, step = 0, _steps()
    while pos + 8 <= end:
        step()
        kind, (size,) = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)
        if kind == b"ANMF":
            at = pos + 8
            x, y = 2 * int.from_bytes(data[at : at + 3], "little"), 2 * int.from_bytes(data[at + 3 : at + 6], "little")
            w, h = int.from_bytes(data[at + 6 : at + 9], "little") + 1, int.from_bytes(data[at + 9 : at + 12], "little") + 1
            if size < 16 or x + w > canvas[0] or y + h > canvas[1]:
                raise ValueError(f"a frame of {w:,} x {h:,} pixels at ({x:,}, {y:,}) does not lie on its canvas")
            if _webp_still_size(data, at + 16, min(end, at + size)) != (w, h):
                raise ValueError("a frame's image is not the size its frame header says")
            frames += 1
        pos += 8 + size + (size & 1)
    if not frames:
        raise ValueError("it is marked animated but has no frame")


def _webp_still_size(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """The size a still extended WebP's VP8/VP8L chunk says (after ICCP, ALPH...), or None if none:
    a decoder takes that bitstream, and refuses one whose size is not the canvas's (review of round 35)."""
    step = _steps()
    while pos + 8 <= end:
        step()
        kind, (size,) = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)
        if kind in (b"VP8 ", b"VP8L"):
            return _webp(b"RIFF" + struct.pack("<I", 4 + 8 + size) + b"WEBP" + data[pos : pos + 8 + size])
        pos += 8 + size + (size & 1)
    return None


_READERS: dict[str, Callable[[bytes], tuple[int, int]]] = {
    "image/png": _png,
    "image/jpeg": _jpeg,
    "image/gif": _gif,
    "image/webp": _webp,
}
