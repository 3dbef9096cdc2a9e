"""Red team round 7: Read of a planted notebook cost the host process ~30 times its size.

Read parses a ``.ipynb`` (up to 10 MB) whole, and did so in a worker thread of the shellrt
process: a 10 MB notebook of 3.4 million empty outputs (``{},{},...``: three bytes each, a Python
dict each) parsed into 300-500 MB and seconds of CPU there, for every Read of it, and Reads are
concurrency-safe (several at once); and a first cell was shown whole however long (13 MB of
text to the model: Read's results are not persisted, its own budget is all there is). The notebook is the command's to write. A notebook is now
parsed and rendered in a child process held to a deadline and an address space (as PDFs were),
and every cell is clipped to the budget.

Measured as the shellrt process's peak resident memory growth over the Read, in a child
interpreter so the test's own heap does not blur it; the file is written by a real bwrap command.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

_ATTACK = r"""
import anyio, os, resource, sys
from pathlib import Path
import shellrt
from shellrt.tools import _offloop, read

# The parse deadline (20 s: two thirds of off_loop's 30) is not what this tests: CI127's 63-minute
# lane parsed past it and Read failed closed ("took longer than 20 s to parse"). Raised past any
# loaded run; the child's address space, the host's growth and the budget are the test.
_offloop.FILE_IO_TIMEOUT_S = 240.0
read.NOTEBOOK_TIMEOUT_S = 160.0

tmp = Path(sys.argv[1])
ws = tmp / "ws"
ws.mkdir()
(ws / "ok.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "print(1)", "outputs": []}]}')

async def main() -> None:
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", mode="bypassPermissions",
                               session_dir=tmp / "s", settings_files=()) as rt:
        async def call(name, raw):
            user = await rt.run([{"type": "tool_use", "id": "r7n" + os.urandom(6).hex(), "name": name, "input": raw}])
            block = user["content"][0]
            content = block["content"]
            return block["is_error"], content if isinstance(content, str) else " ".join(c.get("text", "") for c in content)
        plant = ("python3 -c \"import sys; sys.stdout.write('{\\\"cells\\\":[{\\\"cell_type\\\":\\\"code\\\",\\\"source\\\":\\\"x\\\","
                 "\\\"outputs\\\":[' + ','.join(['{}'] * 3400000) + ']}]}')\" > big.ipynb && echo planted")
        print("PLANTED", *(await call("Bash", {"command": plant})))
        error, body = await call("Read", {"file_path": "ok.ipynb"})
        print("OK", error, body.replace("\n", " "))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        error, body = await call("Read", {"file_path": "big.ipynb"})
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
        print("BIG", error, grown, len(body), body[:200].replace("\n", " "))

anyio.run(main)
"""


@pytest.mark.slow  # 10-25 s in CI: handed out first (tests/conftest.py)
def test_a_planted_notebook_costs_the_host_process_little(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    done = subprocess.run(
        [sys.executable, "-c", _ATTACK, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.split()}
    assert "PLANTED" in lines and "planted" in lines["PLANTED"], (done.stdout, done.stderr[-3000:])
    assert "OK False" in lines.get("OK", "") and "print(1)" in lines["OK"], lines
    big = lines.get("BIG", "")
    assert big, (done.stdout, done.stderr[-3000:])
    grown_mb = int(big.split()[2])
    assert grown_mb < 60, big  # was 517 MB
    assert int(big.split()[3]) < 150_000, big  # Read's budget (a lone first cell had none: 10 MB)
    assert big.split()[1] == "False" and "big.ipynb (1 cells)" in big, big  # rendered, in the child
