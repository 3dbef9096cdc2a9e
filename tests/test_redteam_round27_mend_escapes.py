"""Round 27 (mend): one escape-sequence table (`shellrt.protocol.escapes`), three parsers.

The preview cut, ``shellrt run``'s terminal filter and the pattern of escapes a reader does not see
each spelled out the introducers and terminators. They derive them from the table now; this checks
every introducer of the table, in both forms, reaches each parser (an added one cannot be missed
by one of them), and that each keeps its own documented leniency.
"""

from __future__ import annotations

from shellrt.cli._tty_filter import TerminalFilter
from shellrt.protocol.escapes import C1_KINDS, C1_LEAD, ESC, ESC_KINDS, STRING_KINDS, TERMINATORS
from shellrt.protocol.textchars import ANSI
from shellrt.supervisor._escape_cut import open_sequence_start


def test_every_introducer_of_the_table_reaches_the_three_parsers() -> None:
    head = b"text "
    for form, kinds in (("7-bit", ESC_KINDS), ("C1", C1_KINDS)):
        for byte, kind in kinds.items():
            intro = bytes([ESC, byte]) if form == "7-bit" else bytes([C1_LEAD, byte])
            body = b"1;2" if kind == "csi" else b"0;title"
            # The cut: a sequence left open is found where it starts; a closed one is not open.
            assert open_sequence_start(head + intro + body) == len(head), (form, kind)
            ends = [b"m"] if kind == "csi" else list(TERMINATORS[kind])
            for end in [*ends, b"\x18"]:
                assert open_sequence_start(head + intro + body + end + b" after") is None, (form, kind, end)
            # The filter: none of it reaches the terminal (a CSI other than the kept ones, a string).
            seen = TerminalFilter()
            out = seen.feed(head + intro + (b"?1049h" if kind == "csi" else body + b"\x07") + b" after")
            assert out == head + b" after" and seen.dropped == 1, (form, kind, out)
    # The reader's pattern: every 7-bit introducer begins an escape it hides; an OSC up to its
    # 7-bit ends; the other strings only as two characters (lenient: a reader's view, not a terminal's).
    for byte, kind in ESC_KINDS.items():
        text = (bytes([ESC, byte]) + (b"1m" if kind == "csi" else b"")).decode()
        assert ANSI.fullmatch(text), kind
    for end in (e for e in TERMINATORS["osc"] if e.isascii()):
        assert ANSI.sub("", (b"a\x1b]0;title" + end + b"b").decode()) == "ab", end
    assert STRING_KINDS < set(ESC_KINDS.values()) == set(C1_KINDS.values())
