"""Per-page cost of WebFetch's HTML conversion: in this process (round 19) vs the worker (round 20).

``python -m benchmarks.bench_webconvert [--pages 40] [--kb 60]``: the same page converted both
ways, alternating, medians; and the cost of starting a worker (paid only when none is idle).
"""

from __future__ import annotations

import argparse
import statistics
import time

from shellrt.tools import _convert_worker
from shellrt.tools._web_text import body_to_text, html_to_markdown


def _page(kb: int) -> bytes:
    item = b"<li><a href='/x'>link</a> some <b>text</b> &amp; more</li>"
    para = b"<h2>Section</h2><p>" + b"Lorem ipsum dolor sit amet. " * 20 + b"</p><ul>" + item * 10 + b"</ul>"
    return b"<html><body>" + para * max(1, kb * 1024 // len(para)) + b"</body></html>"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--kb", type=int, default=60)
    args = parser.parse_args()
    page = _page(args.kb)
    text = page.decode()
    _convert_worker.shutdown()
    start = time.perf_counter()
    _convert_worker.convert_html("<p>x</p>", "http://p/", deadline=time.monotonic() + 30, max_chars=100)
    cold = time.perf_counter() - start
    inproc, worker = [], []
    for _ in range(args.pages):
        start = time.perf_counter()
        html_to_markdown(text, "http://p/", deadline=time.monotonic() + 30, max_chars=200_000)
        inproc.append(time.perf_counter() - start)
        start = time.perf_counter()
        body_to_text(page, "text/html", "http://p/", deadline=time.monotonic() + 30, max_chars=200_000)
        worker.append(time.perf_counter() - start)
    _convert_worker.shutdown()
    print(f"page {len(page):,} bytes, {args.pages} pages each, alternating")
    print(f"in-process median {statistics.median(inproc) * 1000:.1f} ms")
    print(f"worker     median {statistics.median(worker) * 1000:.1f} ms")
    print(f"worker start (cold, once) {cold * 1000:.0f} ms")


if __name__ == "__main__":
    main()
