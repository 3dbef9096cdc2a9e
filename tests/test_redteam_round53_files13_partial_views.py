"""Red team round 53 (files13): a notebook or PDF Read showed in part counted as read whole.

Write replaces a file only after a Read of all of it: a text file Read in part (offset/limit, the
line limit, the output budget) is refused with "You only read part of". A notebook's Read stops at
the output budget ("showing cells 1-N of M") and a PDF's at 20 pages or the asked range, but their
records said whole: a Write after them replaced the cells and pages the model never saw (a
repository's notebook with long cells hides its later cells behind the budget). Now such a Read
is recorded as partial, as a text file's is; one shown whole still lets Write replace it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from shellrt.protocol import ToolExecutionError

sys.path.insert(0, str(Path(__file__).parent))
from test_tools_write import make_ctx, read, write  # noqa: E402


def _notebook(path: Path, cells: int, source_chars: int) -> None:
    body = {
        "cells": [
            {"cell_type": "code", "source": f"# cell {i}\n" + "x" * source_chars, "outputs": []}
            for i in range(cells)
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(body))


def _pdf(path: Path, pages: int) -> None:
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    with path.open("wb") as fh:
        writer.write(fh)


@pytest.mark.parametrize("cells", [80, 150], ids=["in_process", "in_the_child"])
def test_a_notebook_shown_up_to_the_budget_is_not_replaced(tmp_path: Path, cells: int) -> None:
    nb = tmp_path / "long.ipynb"
    # ~160,000 or ~300,000 characters: past Read's 100,000; the second past what is rendered in process.
    _notebook(nb, cells=cells, source_chars=2_000)
    before = nb.read_bytes()
    ctx = make_ctx(tmp_path)
    read(ctx, nb)
    with pytest.raises(ToolExecutionError, match="only read part"):
        write(ctx, file_path=str(nb), content="{}\n")
    assert nb.read_bytes() == before


def test_a_pdf_shown_in_part_is_not_replaced(tmp_path: Path) -> None:
    pdf = tmp_path / "long.pdf"
    _pdf(pdf, 25)  # Read shows 20 pages a call
    before = pdf.read_bytes()
    ctx = make_ctx(tmp_path)
    read(ctx, pdf)
    with pytest.raises(ToolExecutionError, match="only read part"):
        write(ctx, file_path=str(pdf), content="x\n")
    read(ctx, pdf, pages="2-3")
    with pytest.raises(ToolExecutionError, match="only read part"):
        write(ctx, file_path=str(pdf), content="x\n")
    assert pdf.read_bytes() == before


def test_a_notebook_and_a_pdf_shown_whole_may_be_replaced(tmp_path: Path) -> None:
    nb = tmp_path / "short.ipynb"
    _notebook(nb, cells=3, source_chars=10)
    pdf = tmp_path / "short.pdf"
    _pdf(pdf, 3)
    ctx = make_ctx(tmp_path)
    read(ctx, nb)
    read(ctx, pdf)
    write(ctx, file_path=str(nb), content="{}\n")
    write(ctx, file_path=str(pdf), content="x\n")
    assert nb.read_text() == "{}\n" and pdf.read_text() == "x\n"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_a_text_file_with_a_line_shown_cut_is_not_replaced(tmp_path: Path, encoding: str) -> None:
    f = tmp_path / "long_line.txt"
    f.write_text("short\n" + "a" * 5_000 + "TAIL-NEVER-SHOWN\nend\n", encoding=encoding)
    before = f.read_bytes()
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    with pytest.raises(ToolExecutionError, match="only read part"):
        write(ctx, file_path=str(f), content="short\nend\n")
    assert f.read_bytes() == before
