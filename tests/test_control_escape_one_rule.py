"""Every escaper people read shows a character alike: one rule, `escape_char`.

Round 8 found two escapers disagreeing (a carriage return as ``\\r`` in one, ``\\x0d`` in the other; a
no-break space escaped by one, kept by the other); round 39's re-read found three copies of the rule
again (`for_people`, `escape_controls`, `for_person`). This walks every character of the first two planes'
interesting ranges and the tag block through each of them.
"""

from __future__ import annotations

import unicodedata

from shellrt.permissions.shown import for_person
from shellrt.protocol.control_escape import escape_char, escape_controls
from shellrt.protocol.tool import rendered_content
from shellrt.tools._bidi import isolated
from shellrt.tools._people import for_people

_SAMPLE = [
    chr(code)
    for code in (
        *range(0x0, 0x3100),
        *range(0xD7F0, 0xE010),
        *range(0xFDD0, 0x10000),
        *range(0xE0000, 0xE0080),
    )
    if chr(code) not in "\n\t"
]


def test_each_escaper_shows_a_character_as_escape_char_does() -> None:
    differing = []
    for ch in _SAMPLE:
        want = escape_char(ch)
        if unicodedata.category(ch) in ("Mn", "Me") or ch in "\u115f\u1160\u2800\u3164":
            continue  # for_person names runs of blanks and marks; one alone is itself there too
        got = {
            "escape_controls": escape_controls(ch),
            "rendered_content": rendered_content(ch),
            "for_person": for_person(ch),
            "for_people": for_people(ch),
        }
        wants = {
            "escape_controls": want,
            "rendered_content": want,
            "for_person": want,
            "for_people": isolated(escape_char(ch, {"\r": "\\r"})),
        }
        differing += [
            (hex(ord(ch)), name, got[name], wants[name]) for name in got if got[name] != wants[name]
        ]
    assert differing == []


def test_what_is_escaped_and_what_is_kept() -> None:
    assert escape_char("\x1b") == "\\x1b"
    assert escape_char("\x85") == "\\x85"  # C1 NEL
    assert escape_char("\u202e") == "\\u202e"
    assert escape_char("\U000e0041") == "\\U000e0041"  # a tag character prints as nothing
    assert escape_char("\u00a0") == "\u00a0"  # a no-break space shows as a space
    assert escape_char("é") == "é"
    assert escape_char("\n", {"\n": "\\n"}) == "\\n"


def test_layout_is_the_callers() -> None:
    text = "a\tb\u00e9\nc\x1b[2K\u200b"
    assert escape_controls(text) == "a\tb\u00e9\nc\\x1b[2K\\u200b"
    assert for_people(text) == "a\tb\u00e9\\nc\\x1b[2K\\u200b"
    assert for_person(text, one_line=True) == "a\\tb\u00e9\\nc\\x1b[2K\\u200b"


def test_no_combining_mark_is_a_word_character() -> None:
    """`name_mark_runs` looks only at runs of non-ASCII characters that are not ``\\w``: a Python whose
    Unicode made a mark a word character would let a run of it pass unnamed (round 40, review17)."""
    import re
    import sys

    word = re.compile(r"\w")
    marks = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Mn", "Me") and word.match(chr(code))
    ]
    assert marks == []
