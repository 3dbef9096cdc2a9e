"""Issue 22 item 3, round 55: what a bwrap session command's init costs, and one cut of it.

An init's lock view covers what no group covers in a shared overlay's directory (``cover_rest``,
round 38): it listed ``/`` and opened and ``statx``'ed every entry, then skipped the directories of
the plan (~20 of ~25 entries), three system calls each, in every init. The directory entry says
the type already: a planned subdirectory is skipped before it is opened. What is bound is unchanged
(the round 38 and 50 tests of ``cover_rest`` hold it); this pins the calls.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest

from benchmarks import bwrap_cpu
from tests.conftest import require

pytestmark = pytest.mark.bwrap

_COUNT_DIRS = 'n=0; for d in /*; do [ -d "$d" ] && [ ! -L "$d" ] && n=$((n+1)); done; echo $n'


def _require_session() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    require(os.geteuid() == 0, "the shared overlay of / (cover_rest) is a root caller's")


async def _read_all(stream: object) -> bytes:
    chunks = []
    receive = stream.receive  # type: ignore[attr-defined]
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        while chunk := await receive():
            chunks.append(chunk)
    return b"".join(chunks)


def _traced(server: int, out: Path) -> subprocess.Popen[bytes]:
    tracer = subprocess.Popen(
        ["strace", "-f", "-qq", "-e", "trace=statx", "-o", str(out), "-p", str(server)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # attached: the kernel names its tracer
        with open(f"/proc/{server}/status", encoding="ascii") as f:
            if re.search(r"^TracerPid:\s+[1-9]", f.read(), re.M):
                return tracer
        time.sleep(0.02)
    tracer.kill()
    tracer.wait()
    pytest.fail("strace did not attach to the init server within 10 s")


def test_an_init_statxes_no_planned_subdirectory_of_slash(tmp_path: Path) -> None:
    """Failed before: 1 of 1 (each init made 22-24 ``statx`` calls of ``/``'s entries here, with
    21 directories in ``/``). Now only the entries that are not planned directories: 1-3."""
    _require_session()
    require(shutil.which("strace") is not None, "strace is not installed")
    from sandbox import BwrapConfig, ExecRequest, SandboxPolicy
    from sandbox.bwrap import BwrapBackend

    ws = tmp_path / "ws"
    ws.mkdir()
    trace = tmp_path / "statx.txt"

    async def main() -> tuple[int, Counter[int]] | None:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            require(backend.persistent and backend._zygote is not None, "no bwrap session zygote here")
            assert backend._zygote is not None and backend._zygote.host_pid is not None
            require(backend._zygote.c_init, "the C init did not build here")

            async def run(script: str) -> bytes:
                proc = await backend.exec(
                    ExecRequest(argv=("bash", "-c", script), cwd=str(ws), env={}, merge_stderr=True)
                )
                out = await _read_all(proc.stdout)
                assert (await proc.wait()).exit_code == 0, out
                return out

            dirs = int(await run(_COUNT_DIRS))
            zygote = backend._zygote
            _zpid, server = bwrap_cpu.session_processes(zygote.host_pid)
            tracer = _traced(server, trace)
            try:
                for _ in range(4):  # each makes the pool's next init, set up under the trace
                    await run("true")
                await anyio.sleep(0.3)  # the last refill's set-up
            finally:
                tracer.terminate()
                tracer.wait(10)
            if backend._zygote is not zygote:  # a host socket appeared meanwhile: try again
                return None
        finally:
            await backend.close()
        per_init: Counter[int] = Counter()
        for line in trace.read_text().splitlines():
            if m := re.match(r"(\d+)\s+statx\(\d+, \"\", [A-Z_|]*AT_EMPTY_PATH", line):
                per_init[int(m.group(1))] += 1
        return dirs, per_init

    for _attempt in range(5):  # bounded: a zygote replaced under the trace proves nothing
        found = anyio.run(main)
        if found is not None:
            break
    else:
        pytest.fail("the zygote was replaced in each of 5 attempts (host sockets coming and going)")
    dirs, per_init = found
    assert dirs >= 5, f"only {dirs} directories in the sandbox's /"
    assert per_init, f"no init was traced setting up its lock view: {trace.read_text()[-2000:]}"
    assert max(per_init.values()) < dirs, (dirs, per_init)


def test_the_cpu_benchmark_finds_the_session_processes_and_counts_each_part() -> None:
    """`benchmarks.bwrap_cpu`: its table has every row and part, in milliseconds a call."""
    _require_session()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert bwrap_cpu.main(["--calls", "3", "--turns", "1"]) == 0
    text = out.getvalue()
    for row in ("bash -c true", "true (no shell)", "raw bash -c true"):
        line = next((line for line in text.splitlines() if line.startswith(row + " ")), None)
        assert line is not None, text
        values = [float(v) for v in line[len(row) :].split()]
        assert len(values) == 6 and all(v >= 0 for v in values), line
        assert values[0] > 0, line  # the wall time of a call


def test_the_cpu_benchmark_refuses_a_turn_of_no_calls() -> None:
    with pytest.raises(SystemExit):
        bwrap_cpu.main(["--calls", "0"])
