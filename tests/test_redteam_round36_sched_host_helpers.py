"""Red team, round 36 (sched): host processes the tools start ran at their caller's raised priority.

Round 36 (bwrap, review, bwrap3) took the caller's real-time policy, negative nice and real-time I/O
class away from every command and hook. The tools still started their own host processes straight
from the caller's thread, each working on what a hostile repository or model hands it: ripgrep and
the Python walker over the repository, git's queries in it, TaskOutput's filter child (a command's
lines, the model's pattern), Read's notebook and PDF children (a PDF kept pypdf busy for hours,
round 33), the page converter worker, and the MCP servers shellrt starts. Under ``chrt -r`` or nice
-5 each one's busy loop took up to 95% of a CPU from every ordinary process. Each site is driven here
with its program swapped for a shim that records the priority it started at, then runs the real one.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Coroutine
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.supervisor.models import TaskOutputChunk
from shellrt.tools import _convert_worker, _gitrepo, _search, read, task_output
from shellrt.tools.mcp._stdio import bounded_stdio_client
from tests import _nonroot
from tests.conftest import require
from tests.test_redteam_round36_bwrap3_hook_sched import _CALLER_NICE, _PROBE, _caller_priority

_REAL_PYTHON = sys.executable
_SITES = ("rg", "walker", "git", "filter", "notebook", "pdf", "convert", "mcp")


def _shim(tmp: Path, real: str) -> tuple[str, Path]:
    """A program that writes the priority it runs at to a file, then execs ``real`` with its args."""
    record = tmp / "record.txt"
    shim = tmp / "bin" / "probe"
    shim.parent.mkdir(exist_ok=True)
    probe = _PROBE.replace("python3", _REAL_PYTHON, 1)
    shim.write_text(f'#!/bin/sh\n{probe} > {record}.part && mv {record}.part {record}\nexec {real} "$@"\n')
    shim.chmod(0o755)
    return str(shim), record


async def _recorded(record: Path) -> dict[str, str]:
    with anyio.fail_after(20):
        while not record.exists():
            await anyio.sleep(0.02)
    return dict(line.split(" ", 1) for line in record.read_text().splitlines() if " " in line)


def _driver(site: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], Coroutine[Any, Any, None]]:
    """What starts ``site``'s process from this thread (its program: the shim)."""
    python, python_record = _shim(tmp, _REAL_PYTHON)  # the Python children's interpreter
    (tmp / "t").mkdir()
    tool, tool_record = _shim(tmp / "t", shutil.which("true") or "/bin/true")  # rg, git, a server
    monkeypatch.setattr(sys, "executable", python)
    repo = tmp / "repo"
    repo.mkdir()

    async def run() -> None:
        with suppress(Exception):  # what the real program then does with its input is not asked here
            if site == "rg":
                await _search._run_rg([tool, "--files"], repo)
            elif site == "walker":
                await _search._walker_process(b"{}", (), 10.0, repo, "too slow")
            elif site == "git":
                _gitrepo._git([tool, "--version"], repo, {"PATH": os.defpath})
            elif site == "filter":
                chunk = TaskOutputChunk.model_construct(text="a\nb\n", new_bytes=4)
                await task_output._filtered(chunk, "a")
            elif site == "notebook":
                read._render_in_child(b"{}", "x.ipynb")
            elif site == "pdf":
                read._parse_pdf(b"%PDF-1.4\n", "x.pdf", (1, 1))
            elif site == "convert":
                worker = _convert_worker._Worker()
                try:
                    await _recorded(python_record)  # an idle worker waits for a page: not ended first
                finally:
                    worker.kill()
            else:
                with open(os.devnull, "w") as errlog:
                    async with bounded_stdio_client(tool, [], env={}, cwd=str(repo), errlog=errlog):
                        await _recorded(tool_record)  # before the client's exit ends it

    return run


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["nice", "rr", "io"])
@pytest.mark.parametrize("site", _SITES)
async def test_a_host_helper_does_not_run_at_its_callers_raised_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site: str, kind: str
) -> None:
    """Failed before (root): every site at ``NICE -5``, ``POLICY 2``, ``IOCLASS 1``; uid 65534 nice."""
    require(kind == "nice" or os.geteuid() == 0, "a real-time policy or I/O class needs root")
    run = _driver(site, tmp_path, monkeypatch)
    with _caller_priority(kind):
        await run()
    where = tmp_path / ("t" if site in ("rg", "git", "mcp") else "") / "record.txt"
    said = await _recorded(where)
    assert said.get("POLICY") == str(os.SCHED_OTHER), (site, said)
    assert int(said.get("NICE", "-99")) >= 0, (site, said)
    assert said.get("IOCLASS") in ("0", "2", "3"), (site, said)


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The uid 65534 run starts at nice -5 (set here, as root, and inherited)."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, _CALLER_NICE)
    try:
        _nonroot.held_as_nobody(
            __file__,
            *(f"test_a_host_helper_does_not_run_at_its_callers_raised_priority[{s}-nice]" for s in _SITES),
        )
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)


@pytest.mark.anyio
async def test_a_missing_server_program_is_still_named(tmp_path: Path) -> None:
    """Behind the prefix a missing MCP server would be ``nice``'s exit status 127, not the start's
    `FileNotFoundError` the connection reports (a regression guard, not an attack)."""
    require(os.geteuid() == 0, "a caller at nice -5 needs root")
    errlog = (tmp_path / "err.log").open("w")
    with errlog, _caller_priority("nice"), pytest.raises(FileNotFoundError, match="no-such-mcp-server"):
        async with bounded_stdio_client("no-such-mcp-server", [], env={}, cwd=str(tmp_path), errlog=errlog):
            pass
