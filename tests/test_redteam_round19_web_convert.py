"""Red team round 19 (web): WebFetch's HTML conversion cost time quadratic in a page's size.

Round 18 left it: a page's conversion may use the call's whole deadline of CPU. The converter
feeds html.parser 8 KiB slices; html.parser holds back an unclosed start tag and scans it again
from its start at every feed, so a page that opens a tag and never closes it (``<a x=y x=y …``)
cost the host time quadratic in its size: 1 MB took 11 s of CPU, against 1 s for the same bytes
as closed tags. Measured here as CPU of this thread, against that baseline in the same run.
"""

from __future__ import annotations

import time

from shellrt.tools._web_text import body_to_text

_SIZE = 1_000_000


def _cpu(body: bytes) -> tuple[float, str]:
    start = time.thread_time()
    converted = body_to_text(
        body, "text/html", "http://page.test/", deadline=time.monotonic() + 120, max_chars=200_000
    )
    # Round 20: HTML converts in a worker process, which reports its own CPU time.
    return time.thread_time() - start + converted.cpu_s, converted.note


def test_an_unclosed_tag_costs_what_closed_tags_of_its_size_do() -> None:
    closed, _ = _cpu(b"<html>" + b"<a x=y>" * (_SIZE // 7))
    unclosed, note = _cpu(b"<html><a " + b"x=y " * (_SIZE // 4))
    assert "took too long" not in note, note
    assert unclosed < 3 * closed + 0.3, f"unclosed tag: {unclosed:.2f} s of CPU, closed tags: {closed:.2f} s"


def test_an_unclosed_run_of_tags_at_the_end_costs_what_closed_tags_do() -> None:
    """html.parser's ``close`` scanned the rest of the page once per ``<`` of an unclosed tail:
    40 KB of ``<a <a …`` cost 18 s of CPU, after the deadline (it is not checked inside ``close``)."""
    closed, _ = _cpu(b"<html>" + b"<a x=y>" * (40_000 // 7))
    unclosed, note = _cpu(b"<html><p>before</p>" + b"<a " * (40_000 // 3))
    assert "took too long" not in note, note
    assert unclosed < 3 * closed + 0.3, f"unclosed tail: {unclosed:.2f} s of CPU, closed tags: {closed:.2f} s"


def test_text_after_a_long_unclosed_construct_is_still_converted() -> None:
    """Feeding what the parser holds in one slice loses nothing that follows it."""
    body = b'<html><img src="data:image/png;base64,' + b"A" * 100_000 + b'"><p>after the image</p>'
    converted = body_to_text(
        body, "text/html", "http://page.test/", deadline=time.monotonic() + 60, max_chars=200_000
    )
    assert "after the image" in converted.text, converted.text[-200:]
    assert not converted.note, converted.note
