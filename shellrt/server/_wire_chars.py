"""How large an MCP message may be on the wire, judged from its bytes before it is parsed.

Why: the runtime refuses a tool input past `MAX_INPUT_CHARS` (4 Mi characters), but only after
the server read the line whole, copied it, parsed it twice (the strict reader, then the SDK's
model) and handed it on. A client's 60 MiB line cost `shellrt serve` 246 MB of peak memory and
0.74 s of CPU to be refused; six in a row 450 MB and 4 s (red team round 40, iface3). No MCP
message needs more than one tool input and a small envelope, so:

- `MAX_MESSAGE_BYTES` is the longest a message may be: a maximal input with every character
  escaped as ``\\uXXXX`` (6 bytes), plus `ENVELOPE_BYTES`; a longer line is skipped as it is read,
  never held whole;
- `too_many_chars` refuses a shorter one whose bytes alone prove it holds more than the input
  bound: every byte counts but whitespace, UTF-8 continuation bytes and up to 6 bytes per
  backslash (the most an escape can shrink by), less the envelope. Strings count their characters
  in `input_chars`, and containers, members and numbers count 16 each (more than their bytes), so
  only a message the runtime would refuse anyway is refused here (a number written with more than
  ~27 digits is the exception: fail closed).
"""

from __future__ import annotations

from shellrt.runtime.input_size import MAX_INPUT_CHARS

__all__ = ["ENVELOPE_BYTES", "MAX_MESSAGE_BYTES", "least_chars", "too_many_chars"]

#: Bytes of a message that are not its tool input (``jsonrpc``, ``id``, ``method``, the tool's
#: name, ``_meta``): far more than any client sends.
ENVELOPE_BYTES = 64 * 1024
#: The most bytes one escape (``\\uXXXX``) takes for one character.
_ESCAPE_BYTES = 6
MAX_MESSAGE_BYTES = _ESCAPE_BYTES * MAX_INPUT_CHARS + ENVELOPE_BYTES
_WHITESPACE = (b" ", b"\t", b"\r", b"\n")
#: Every byte but UTF-8's continuation bytes (0x80-0xBF): deleted, what is left is counted.
_NOT_CONTINUATION = bytes(b for b in range(256) if not 0x80 <= b < 0xC0)


def least_chars(raw: bytes) -> int:
    """The fewest characters ``raw`` can count as once parsed (see the module's note); C-speed
    counts only (~25 ms for 25 MiB), no copy of an ASCII line."""
    chars = len(raw) - _ESCAPE_BYTES * raw.count(b"\\") - sum(raw.count(space) for space in _WHITESPACE)
    if not raw.isascii():
        chars -= len(raw.translate(None, _NOT_CONTINUATION))
    return chars - ENVELOPE_BYTES


def too_many_chars(raw: bytes, what: str = "message") -> str | None:
    """Why ``raw`` is refused unread (it holds more than one tool input may), or None."""
    if len(raw) <= MAX_INPUT_CHARS + ENVELOPE_BYTES:
        return None  # cannot be past the bound by its bytes alone
    least = least_chars(raw)
    if least <= MAX_INPUT_CHARS:
        return None
    return (
        f"the {what} holds at least {least:,} characters, more than one tool call may send "
        f"({MAX_INPUT_CHARS:,}); it was not read. Send less at once: write a large file in parts "
        "(Write the first part, then Edit to add the rest), or generate it with a command"
    )
