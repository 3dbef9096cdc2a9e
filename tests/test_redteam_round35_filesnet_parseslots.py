"""Red team round 35 (filesnet): parallel Reads of a repository's slow PDFs and notebooks ran one
parse child each, with no bound in the process.

Read parses a PDF (pypdf) and a notebook over 256 KB in a child process held to 20 s and an
address space of 2 GiB (PDF) or 1 GiB (notebook). Read is concurrency safe: a session runs 10 at
once, and every session of a ``serve`` process more. A 68 KB PDF whose page shows one 70 MB string
made pypdf hold 871 MB and a core for 42 s (cut at 20 s): ten such Reads asked the host for ~9 GB
and ten cores, three sessions more memory than this 23 GB machine has. Now at most
`_parse_slots.MAX_PARSING` parse children run at once in the process (as WebFetch's converter,
`MAX_BUSY`); a Read waits for a slot at most half its child's deadline, then says what to do.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools import _offloop
from shellrt.tools.read import ReadTool
from tests._child_procs import count_children
from tests.conftest import require
from tests.test_redteam_round33_files_pdfdeadline import _slow_pdf

#: Text only the parse children's command lines hold (`read._PDF_CHILD`, `read._NOTEBOOK_CHILD`).
_MARKS = (b"import pypdf", b"from shellrt.tools._notebook import serve")


def _parse_children() -> int:
    """This process's Read parse children running now."""
    return count_children(_MARKS)


def _notebook(cells: int) -> bytes:
    """A valid notebook over the in-process size (rendered in the child)."""
    cell = '{"cell_type": "code", "source": ["x = 1\\n"], "outputs": [], "metadata": {}}'
    return ('{"cells": [' + ",".join([cell] * cells) + '], "metadata": {}, "nbformat": 4}').encode()


def test_parallel_reads_run_a_bounded_number_of_parse_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(importlib.util.find_spec("pypdf") is not None, "pypdf is not installed")
    # The file-operation deadline is lowered so the test stays short (children: 3 s).
    monkeypatch.setattr(_offloop, "FILE_IO_TIMEOUT_S", 4.5)
    root = tmp_path.resolve()
    (root / ".session").mkdir()
    ctx = ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,)
    )
    slow = _slow_pdf(10_000_000, 2)
    paths = []
    for i in range(5):
        (root / f"r{i}.pdf").write_bytes(slow)
        paths.append(root / f"r{i}.pdf")
    (root / "big.ipynb").write_bytes(_notebook(20_000))  # ~1.5 MB: the child renders it
    paths.append(root / "big.ipynb")

    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _parse_children())
            time.sleep(0.02)

    answers: list[str] = []

    async def read_all(paths: list[Path]) -> None:
        tool = ReadTool()

        async def one(path: Path) -> None:
            tool_input = tool.parse_input({"file_path": str(path)})
            try:
                answers.append(str(tool.to_model_content((await tool.call(tool_input, ctx)).data)))
            except Exception as exc:  # noqa: BLE001 - each answer is judged below
                answers.append(f"error: {exc}")

        async with anyio.create_task_group() as tg:
            for path in paths:
                tg.start_soon(one, path)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.monotonic()
    try:
        anyio.run(read_all, paths)
    finally:
        stop.set()
        watcher.join()
    took = time.monotonic() - started
    assert peak[0] <= 2, (peak[0], answers)  # `_parse_slots.MAX_PARSING`
    assert peak[0] >= 1
    assert len(answers) == len(paths)
    busy = [a for a in answers if "other PDF or notebook" in a]
    for answer in busy:
        assert "Read it again" in answer and "Bash" in answer, answer
    # Each Read ended within the file-operation deadline, none counted stuck.
    assert took < _offloop.FILE_IO_TIMEOUT_S + 3, took
    assert not any("file system does not answer" in a for a in answers), answers
    assert _parse_children() == 0

    # Parses that end soon only wait: four notebooks at once, at the real deadline, are all shown.
    monkeypatch.setattr(_offloop, "FILE_IO_TIMEOUT_S", 30.0)
    answers.clear()
    books = []
    for i in range(4):
        (root / f"n{i}.ipynb").write_bytes(_notebook(5_000))
        books.append(root / f"n{i}.ipynb")
    anyio.run(read_all, books)
    assert all(a.startswith("Notebook ") for a in answers), [a[:200] for a in answers]
