"""Red team round 33 (files): a repository's slow PDF was reported as a dead file system, and held
the process-wide budget of stuck file operations.

Read parses a PDF (and a large notebook) in a child process killed at its own deadline, inside
`off_loop`, whose deadline was the same 30 s: `off_loop` won, answered "the file system does not
answer (a hung network or FUSE mount?)", and counted the thread as stuck until the child died. Past
`MAX_STUCK` (16) such Reads every file tool of every session of the process was refused. A 10 KB
PDF whose page shows one 10 MB string takes pypdf seconds to minutes. The child also sent every
page's whole text (20 MB here) to the host, which keeps 100,000 characters.
Now the children's deadlines end within `off_loop`'s (as Glob's matching does) and each page's
text is cut in the child.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zlib
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools import _offloop, read
from shellrt.tools.read import ReadTool


def _slow_pdf(chars: int, pages: int) -> bytes:
    """Every page shows the same compressed content stream: one string of ``chars`` letters."""
    stream = zlib.compress(b"BT /F1 1 Tf (" + b"A" * chars + b") Tj ET\n", 9)
    font = 4 + pages
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{4 + i} 0 R' for i in range(pages))}] /Count {pages} >>".encode(),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        *(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
            for _ in range(pages)
        ),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _ctx(root: Path) -> ToolContext:
    (root / ".session").mkdir()
    return ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,)
    )


def _read(ctx: ToolContext, path: Path, **extra: object) -> str:
    tool = ReadTool()

    async def go() -> str:
        tool_input = tool.parse_input({"file_path": str(path), **extra})
        assert (await tool.validate(tool_input, ctx)).ok
        return str(tool.to_model_content((await tool.call(tool_input, ctx)).data))

    return anyio.run(go)


needs_pypdf = pytest.mark.skipif(importlib.util.find_spec("pypdf") is None, reason="pypdf is not installed")


def test_children_end_within_the_file_operation_deadline() -> None:
    for deadline in (read.pdf_deadline(), read.notebook_deadline()):
        assert deadline < _offloop.FILE_IO_TIMEOUT_S


@needs_pypdf
def test_a_slow_pdf_is_named_as_slow_and_leaves_nothing_stuck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file-operation deadline is lowered so the test stays short; the relation is the real one
    # (the child's 3 s, then 1.5 s to spare for killing it on a loaded machine).
    monkeypatch.setattr(_offloop, "FILE_IO_TIMEOUT_S", 4.5)
    # Its own threads alone: another test's abandoned threads still running in this worker (round 44
    # batch2's Glob matching, up to 20 s) would count as stuck under the shortened deadline.
    monkeypatch.setattr(_offloop, "_abandoned", {})
    stuck_before = _offloop.stuck_threads()  # a per-process count: earlier tests in this worker
    root = tmp_path.resolve()
    ctx = _ctx(root)
    slow = root / "report.pdf"
    slow.write_bytes(_slow_pdf(10_000_000, 2))
    with pytest.raises(ToolExecutionError) as info:
        _read(ctx, slow)
    message = str(info.value)
    assert "to parse" in message and "Bash" in message, message
    assert "file system does not answer" not in message
    assert _offloop.stuck_threads() == stuck_before


@needs_pypdf
def test_the_pdf_child_sends_at_most_what_read_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[int] = []
    real = subprocess.run

    def run(*args: object, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        done: subprocess.CompletedProcess[bytes] = real(*args, **kwargs)  # type: ignore[call-overload]
        sent.append(len(done.stdout))
        return done

    monkeypatch.setattr(subprocess, "run", run)
    root = tmp_path.resolve()
    ctx = _ctx(root)
    wide = root / "wide.pdf"
    wide.write_bytes(_slow_pdf(300_000, 3))  # 900,000 characters of text, 3 pages
    shown = _read(ctx, wide)
    assert "--- page 1 of 3 ---" in shown and "Output budget reached" in shown
    assert sent and max(sent) < 3 * (read.MAX_OUTPUT_CHARS + 1_000), sent
    assert sys.getsizeof(shown) < 2 * read.MAX_OUTPUT_CHARS
