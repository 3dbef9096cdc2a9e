"""Red team round 5: a 17 KB PDF held a Read (and a host thread) for hours.

Read parsed PDFs with pypdf in a worker thread of the shellrt process. A page that draws a form
XObject 100 times, which draws another 100 times, which shows text 2,000 times, is 15 KB on disk; pypdf's text
extraction of it ran for many minutes (more for a few bytes more), uncancellable (a thread), with
the GIL contended (the event loop of every session slowed), and a few such Reads took every worker
thread of the process. PDFs are now parsed in a child process with a deadline and a memory limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pypdf = pytest.importorskip("pypdf")  # Read refuses PDFs without it (its own test covers that)


def _pdf(calls: int, shows: int) -> bytes:
    """One page drawing form XObject X ``calls`` times; X draws form Y ``calls`` times; Y shows "x"
    ``shows`` times (pypdf stops after 5,000 form invocations: 5,000 x ``shows`` text operations)."""
    leaf = b"BT /F1 12 Tf 10 10 Td " + b"(x) Tj " * shows + b"ET"
    draw = b"/X Do " * calls
    fonts = b"/Font << /F1 4 0 R >>"
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 5 0 R "
        b"/Resources << /XObject << /X 10 0 R >> %s >> >>" % fonts,
        4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        5: b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draw), draw),
        10: b"<< /Type /XObject /Subtype /Form /BBox [0 0 100 100] /Resources << /XObject << /X 11 0 R >> %s >> "
        b"/Length %d >>\nstream\n%s\nendstream" % (fonts, len(draw), draw),
        11: b"<< /Type /XObject /Subtype /Form /BBox [0 0 100 100] /Resources << %s >> "
        b"/Length %d >>\nstream\n%s\nendstream" % (fonts, len(leaf), leaf),
    }
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref = len(out)
    out += b"xref\n0 12\n0000000000 65535 f \n"
    for number in range(1, 12):
        out += b"%010d 00000 n \n" % offsets[number] if number in offsets else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size 12 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


_READ = r"""
import json, sys, anyio
from pathlib import Path
import shellrt
import shellrt.tools.read as read
read.PDF_TIMEOUT_S = 5.0

ws = Path(sys.argv[1])

async def main():
    async with shellrt.Runtime(workspace=ws, sandbox="local", mode="bypassPermissions",
                               session_dir=ws.parent / "session", settings_files=()) as rt:
        for name in ("bomb.pdf", "fine.pdf"):
            user = await rt.run([{"type": "tool_use", "id": "pdf-" + name, "name": "Read",
                                  "input": {"file_path": str(ws / name)}}])
            block = user["content"][0]
            content = block["content"]
            text = content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)
            print(json.dumps({"name": name, "is_error": bool(block.get("is_error")), "text": text[:500]}))

anyio.run(main)
"""


def test_a_pdf_that_takes_forever_to_extract_is_cut_off(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bomb.pdf").write_bytes(_pdf(100, 2000))
    (ws / "fine.pdf").write_bytes(_pdf(1, 3))
    assert (ws / "bomb.pdf").stat().st_size < 20_000
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(ws)], capture_output=True, text=True, timeout=90, env=env
    )
    results = {r["name"]: r for r in map(json.loads, done.stdout.splitlines())}
    bomb, fine = results["bomb.pdf"], results["fine.pdf"]
    assert bomb["is_error"] and "took longer than" in bomb["text"] and "pdftotext" in bomb["text"], bomb
    assert not fine["is_error"] and "xxx" in fine["text"].replace(" ", "").replace("\n", ""), fine
