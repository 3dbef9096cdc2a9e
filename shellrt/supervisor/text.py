"""Turning raw process bytes into text a model or a terminal can take.

Commands print anything: invalid UTF-8, NUL bytes, a multi-byte character cut
in half at a buffer edge. Decoding never fails: invalid bytes become U+FFFD and
NUL becomes the visible ``\\0`` (a NUL inside a JSON string or a terminal
silently truncates or corrupts what follows).
"""

from __future__ import annotations

import os
import re

#: The characters ``surrogateescape`` makes of bytes that are not UTF-8 (a name from the disk).
_UNDECODED = re.compile("[\udc80-\udcff]")

__all__ = ["safe_decode", "settled", "settled_lines", "shown_dir", "shown_name", "trim_partial_utf8"]

#: A C1 control (U+0080-U+009F): the 8-bit forms of ESC [ and ESC ] among them.
_C1 = re.compile("[\x80-\x9f]")


def safe_decode(data: bytes) -> str:
    """Decode ``data`` as UTF-8, replacing invalid bytes and making NUL visible."""
    return data.decode("utf-8", "replace").replace("\x00", "\\0")


def settled(text: str) -> str:
    """``text`` with an escape sequence it ends inside (opened, never finished) shown as escapes.

    Whatever shellrt writes after a command's text -- a note, the stderr label, a cut's note --
    would otherwise be read by a terminal rendering the result as the rest of that sequence: an
    OSC takes it into the window title, a CSI eats its first characters (red team round 33; the
    spool's own cut drops such a sequence instead, round 26). Text without ESC or a C1 control
    costs two scans.
    """
    if "\x1b" not in text and _C1.search(text) is None:
        return text
    # Imported here: most output holds no escape (the lean `shellrt run` start-up budget).
    from shellrt.protocol.control_escape import escape_controls
    from shellrt.supervisor._escape_cut import open_sequence_start

    raw = text.encode("utf-8", "surrogateescape")
    start = open_sequence_start(raw)
    if start is None:
        return text
    return raw[:start].decode("utf-8", "surrogateescape") + escape_controls(
        raw[start:].decode("utf-8", "surrogateescape")
    )


def settled_lines(text: str) -> str:
    """``text`` with each line `settled` on its own: no line ends inside an escape sequence.

    For text a reader may take only some lines of (TaskOutput's ``filter``): a sequence one line
    opens and a later line closes is closed in the whole, but left open by the kept lines alone,
    and takes in whatever follows them (red team round 35). A sequence spanning lines is shown as
    escapes (fails closed). Text without ESC or a C1 control costs two scans, with only
    sequences that end on their line one pass more.
    """
    if "\x1b" not in text and _C1.search(text) is None:
        return text
    from shellrt.supervisor._escape_cut import crosses_a_line

    if not crosses_a_line(text.encode("utf-8", "surrogateescape")):
        return text  # every sequence ends on its own line (colours): one pass
    return "\n".join(map(settled, text.split("\n")))


def trim_partial_utf8(data: bytes, *, at_start: bool) -> bytes:
    """Drop an incomplete UTF-8 sequence cut by a buffer edge (start or end of ``data``).

    Only continuation bytes at a cut are dropped (at most 3), so genuinely invalid
    bytes elsewhere still show up as U+FFFD.
    """
    if not data:
        return data
    if at_start:
        i = 0
        while i < min(3, len(data)) and 0x80 <= data[i] < 0xC0:
            i += 1
        return data[i:]
    # At the end: find the last lead byte within the final 3 bytes and check its length.
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b < 0x80:
            return data
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def sendable(text: str) -> str:
    """``text`` with each undecoded byte (a lone surrogate from a name on the disk) as ``\\xNN``:
    a note naming such a path (the working directory's) could not be sent (red team round 13)."""
    return _UNDECODED.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text) if _UNDECODED.search(text) else text


def shown_name(path: str) -> str | None:
    """``path`` (a name from the disk) as bash's ``$'...'`` quoting when it holds bytes that are
    not UTF-8, else None (show it as it is).

    A name decoded with ``surrogateescape`` holds lone surrogates, which no UTF-8 encoder takes:
    a result naming ``bad\\xff.txt`` could not be sent at all (the MCP SDK's pydantic refuses it;
    red team round 13). ``$'...'`` names the bytes exactly, on one line, in a form Bash takes back.
    """
    if not _UNDECODED.search(path):
        return None
    return _dollar_quoted(path)


def shown_dir(path: str) -> str:
    """A directory a command chose, for a note of ours: as it is, or bash's ``$'...'`` when it
    holds bytes that are not UTF-8 or a character a reader cannot see.

    A name with ESC opened a sequence inside our note that took in the notes after it; a bidi
    override turned the note's line around; a newline began a line of its own (red team
    round 33). ``$'...'`` names it exactly, on one line, in a form Bash takes back.
    """
    return path if path.isprintable() else _dollar_quoted(path)


def _dollar_quoted(path: str) -> str:
    out = []
    for byte in os.fsencode(path):
        char = chr(byte)
        out.append(char if 0x20 <= byte < 0x7F and char not in "'\\" else f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"
