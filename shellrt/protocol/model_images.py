"""Images a tool got from elsewhere, passed to the model only when the Messages API takes them.

The API refuses a whole request whose tool_result holds an image of another type, data that is
not base64, or more than 5 MB; the conversation then fails on every later turn until the result
is removed by hand. An image from a party shellrt does not trust (an external MCP server) is
therefore checked here, and one the API would refuse becomes a line saying what was left out.
"""

from __future__ import annotations

import base64
import binascii

from shellrt.protocol.image_header import MAX_MODEL_IMAGE_SIDE, image_size
from shellrt.protocol.messages import ImageBlock, ImageSource, TextBlock

__all__ = ["MAX_MODEL_IMAGE_BYTES", "MODEL_IMAGE_TYPES", "image_for_model"]

#: Image types the Messages API takes.
MODEL_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
#: Largest image the Messages API takes (decoded bytes).
MAX_MODEL_IMAGE_BYTES = 5 * 1024 * 1024


def image_for_model(media_type: str, data: str, *, origin: str) -> ImageBlock | TextBlock:
    """An image block, or a text block naming why ``origin``'s image was left out."""
    kind = media_type.strip().lower()
    if kind not in MODEL_IMAGE_TYPES:
        why = f"its type {media_type[:60]!r} is not one the model takes ({', '.join(sorted(MODEL_IMAGE_TYPES))})"
        return _left_out(origin, why)
    size = len(data) * 3 // 4
    if size > MAX_MODEL_IMAGE_BYTES + 3:
        return _left_out(origin, f"it is about {size:,} bytes, over the model's {MAX_MODEL_IMAGE_BYTES:,}")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return _left_out(origin, "its data is not valid base64")
    # The API also refuses an image it cannot decode or one too large a side (round 35): walked
    # as Read walks a file's, without decoding a pixel.
    try:
        width, height = image_size(raw, kind)
    except ValueError as exc:
        return _left_out(origin, f"its data is not a well-formed {kind} image ({exc})")
    if not (0 < width <= MAX_MODEL_IMAGE_SIDE and 0 < height <= MAX_MODEL_IMAGE_SIDE):
        return _left_out(
            origin, f"it is {width:,} x {height:,} pixels; the model takes at most {MAX_MODEL_IMAGE_SIDE:,} a side"
        )
    return ImageBlock(source=ImageSource(media_type=kind, data=data))


def _left_out(origin: str, why: str) -> TextBlock:
    return TextBlock(text=f"[image from {origin} not shown: {why}]")
