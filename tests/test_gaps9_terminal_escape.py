"""Round 8's open gap: two terminal escapers with different rules.

``shellrt.batch.progress.terminal_safe`` (the batch's status and summary) and
``shellrt.permissions.shown.for_person`` (prompts, the CLI's diagnostics and transcripts)
escaped the same characters differently (a carriage return ``\\r`` in one, ``\\x0d`` in the
other; a no-break space escaped in one, kept in the other). One function now serves both,
the batch's call sites asking for one line. Checked at both call sites.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

from shellrt.batch.pool import PoolStats
from shellrt.batch.progress import Progress, terminal_safe
from shellrt.cli._terminal import shown
from shellrt.permissions.shown import CONTINUATION, for_person

#: Characters a terminal or a text view obeys instead of showing, and ones it shows.
HOSTILE = "a\rb\x1b]52;c;eA==\x07\x9b2J\u202e\u2066\u200b\u2028\u2029\x85\ufeff\U000e0041\x00\x7f"
PLAIN = "git status && ls — café 日本 a\u00a0b \\x1b"


def _raw_controls(text: str, allowed: str) -> list[str]:
    return [c for c in text if c not in allowed and not c.isprintable() and unicodedata.category(c) != "Zs"]


def test_one_rule_with_a_one_line_mode() -> None:
    for text in (HOSTILE, PLAIN, HOSTILE + "\nnext\tcol", "x\n\ny"):
        lines = for_person(text)
        one = terminal_safe(text)
        assert one == for_person(text, one_line=True)
        assert one == lines.replace(CONTINUATION, "\\n").replace("\t", "\\t")
        assert _raw_controls(lines, "\n\t") == [] and _raw_controls(one, "") == []
        assert "\n" not in one and "\t" not in one
    assert terminal_safe(PLAIN) == for_person(PLAIN) == PLAIN
    assert terminal_safe("a\rb\u00a0c") == for_person("a\rb\u00a0c") == "a\\x0db\u00a0c"


def test_both_call_sites_show_the_same_spelling() -> None:
    reason = "/dev/shm/x\r\x1b[2Kok\u202e survived"
    progress = Progress(1, live=False)
    progress.containers.add("abc")
    progress.pool = PoolStats(reasons=Counter({reason: 1}))
    summary = progress.summary()
    escaped = "/dev/shm/x\\x0d\\x1b[2Kok\\u202e survived"
    assert escaped in summary, summary
    assert shown(reason) == escaped
    assert shown("one\ntwo") == "one" + CONTINUATION + "two"
