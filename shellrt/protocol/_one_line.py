"""JSON lines that stay one line however a reader splits them.

Both wires (the JSONL protocol, MCP over stdio), ``shellrt run --json`` and a batch run's results
file write one JSON value per line, with text kept as UTF-8 where it can be. JSON leaves U+2028, U+2029 and U+0085 (NEL) raw inside strings, but
Python's ``str.splitlines()`` and other Unicode line splitters break lines there: a command
printing one of them then a JSON object made such a client read a second answer the command
wrote whole (red team round 8). They can only occur inside JSON strings, where ``\\u`` escapes
mean the same text, so they are escaped (round 35: the report and the results file too).

What the CLI prints on stdout as JSON for a person to read as well (``shellrt run --json``,
``shellrt classify``, ``shellrt permissions check``) goes further, `printable_json`: every
character that does not print is a ``\\u`` escape. ``ensure_ascii=False`` escapes only
U+0000..U+001F, and a command's or an input's C1 controls (U+009B is a whole CSI, U+009D an OSC:
a clipboard write on a terminal that honours C1), bidirectional overrides (U+202E) and invisible
characters reached the operator's terminal raw (red team round 29 for classify, round 47 the rest).
"""

from __future__ import annotations

import re

__all__ = ["one_line", "printable_json"]

_SEPARATORS = ("\u2028", "\u2029", "\x85")
_ESCAPES = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def one_line(text: str) -> str:
    """``text`` (serialised JSON) with the Unicode line separators inside its strings escaped."""
    if text.isascii() or not any(sep in text for sep in _SEPARATORS):
        return text  # the common case: one scan (ASCII is checked at C speed)
    return text.translate(_ESCAPES)


def printable_json(text: str) -> str:
    """``text`` (serialised JSON) with every character that does not print written as a JSON
    ``\\u`` escape: the same JSON to a reader, nothing a terminal obeys; letters stay as they are.

    Outside its strings a JSON text holds only ASCII whitespace and punctuation, so only string
    contents change (the separators `one_line` escapes are among them: they do not print)."""
    if text.isascii() or text.isprintable():
        return text  # json.dumps escaped the ASCII controls already; checked at C speed
    text = _COMMON.sub(lambda m: _json_escape(m.group()), text)  # the usual ones, at regex speed
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _json_escape(ch) for ch in text)


#: Characters that do not print and a hostile text uses (DEL and C1, no-break and soft hyphen, the
#: Arabic and Mongolian format marks, the zero-width, bidi and separator ranges, the BOM, the
#: annotation marks, surrogates); the rest (private use, unassigned, tags) is found one by one.
_COMMON = re.compile(
    "[\x7f-\xa0\xad\u0600-\u0605\u061c\u06dd\u070f\u180e\u2000-\u200f\u2028-\u202f"
    "\u205f-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
