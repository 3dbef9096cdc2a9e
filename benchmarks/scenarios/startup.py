"""Scenario — CLI start-up: each ``shellrt`` command line against a bare pydantic import.

An operator scripting ``shellrt run`` per command pays the interpreter's start-up
every time (issue 22). The baseline is ``python -c 'from pydantic import
BaseModel'`` run by the same interpreter binary (``sys.executable`` resolved:
never a pyenv shim script, which is itself a bash process). Every child reads
bytecode from one private cache written by a warm-up run, as an installed
package would (the checkout may run with ``PYTHONDONTWRITEBYTECODE``). Wall
time is what the operator waits; CPU time (user + sys of the child) is the
steadier figure on a loaded machine. ``tests/test_cli_imports.py`` holds the
budgets.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._harness import Column, Row, Table, interleave, summarize
from benchmarks.scenarios._common import RunConfig

__all__ = ["BASELINE", "COMMANDS", "FLOOR", "FLOOR_ANYIO", "PYTHON", "child_env", "measure", "run"]

PYTHON = os.path.realpath(sys.executable)
ROOT = Path(__file__).resolve().parents[2]
BASELINE = ("-c", "from pydantic import BaseModel")
#: What any command that validates one pydantic model and spawns bash under asyncio pays at least.
FLOOR = """
import asyncio
from pydantic import BaseModel
class Request(BaseModel):
    argv: list[str]
async def main(request):
    proc = await asyncio.create_subprocess_exec(*request.argv)
    await proc.wait()
asyncio.run(main(Request(argv=["bash", "-c", "true"])))
"""
#: The floor of ``shellrt run``'s own stack: anyio over asyncio, and pydantic without its plugin
#: discovery (``shellrt run`` skips it, see ``shellrt/cli/_pydantic_plugins.py``).
FLOOR_ANYIO = """
import os
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
import anyio
from pydantic import BaseModel
class Request(BaseModel):
    argv: list[str]
async def main(request):
    await anyio.run_process(request.argv)
anyio.run(main, Request(argv=["bash", "-c", "true"]))
"""

#: Row name -> interpreter arguments.
COMMANDS: dict[str, tuple[str, ...]] = {
    "python -c 'from pydantic import BaseModel'": BASELINE,
    "shellrt --help": ("-m", "shellrt", "--help"),
    "shellrt classify ls": ("-m", "shellrt", "classify", "ls"),
    "shellrt run --sandbox local -- true": ("-m", "shellrt", "run", "--sandbox", "local", "--", "true"),
    # Any option the lean local path does not take (here --cwd) runs the full, async path.
    "shellrt run --sandbox local --cwd . -- true (full path)": (
        "-m",
        "shellrt",
        "run",
        "--sandbox",
        "local",
        "--cwd",
        ".",
        "--",
        "true",
    ),
    "floor: a pydantic model + an asyncio bash spawn": ("-c", FLOOR),
    "floor of run's stack: the same on anyio, no plugin discovery": ("-c", FLOOR_ANYIO),
}
REFERENCE = "python -c 'from pydantic import BaseModel'"


def child_env(pycache: Path) -> dict[str, str]:
    """This checkout first on the path; bytecode cached under ``pycache`` (both sides alike)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def measure(args: tuple[str, ...], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one ``python args``; raises when it fails."""
    begin = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - begin
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"python {' '.join(args)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


async def run(cfg: RunConfig) -> Table:
    reps = cfg.reps(7, 15)
    cpu: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory(prefix="shellrt-bench-startup-") as tmp:
        cwd = Path(tmp) / "workspace"  # `shellrt run` scans its workspace: keep it empty
        cwd.mkdir()
        env = child_env(Path(tmp) / "pycache")
        for args in COMMANDS.values():  # warm-up: writes the bytecode cache, fills the page cache
            measure(args, env, cwd)

        async def once(name: str, rep: int) -> float:
            wall, used = measure(COMMANDS[name], env, cwd)
            cpu[name].append(used)
            return wall

        samples = await interleave(list(COMMANDS), reps, once)
    table = Table(
        name="startup",
        title="CLI start-up: one process per command line, vs a bare pydantic import",
        columns=[
            Column("wall_s", "wall ms", scale=1000.0),
            Column("wall_ratio", "wall x baseline", fmt="{:.2f}x", spread=False),
            Column("cpu_s", "CPU ms (user+sys)", scale=1000.0),
            Column("cpu_ratio", "CPU x baseline", fmt="{:.2f}x", spread=False),
        ],
        reference=REFERENCE,
    )
    base_cpu = statistics.median(cpu[REFERENCE]) if cpu[REFERENCE] else None
    base_wall = statistics.median(samples.values[REFERENCE]) if samples.values[REFERENCE] else None
    for name in COMMANDS:
        if name in samples.errors:
            table.rows.append(Row(name, status="failed", note=samples.errors[name]))
            continue
        mine, wall = statistics.median(cpu[name]), statistics.median(samples.values[name])
        table.rows.append(
            Row(
                name,
                values={
                    "wall_s": summarize(samples.values[name]),
                    "wall_ratio": wall / base_wall if base_wall else None,
                    "cpu_s": summarize(cpu[name]),
                    "cpu_ratio": mine / base_cpu if base_cpu else None,
                },
            )
        )
    table.notes += [
        f"interpreter: {PYTHON} (called directly); {reps} interleaved repetitions, medians.",
        "issue 22 goal: each shellrt row <= 1.5x the baseline. A plain local run takes the lean path"
        " (shellrt/cli/_local_run.py: no event loop, no pydantic model); the floor rows are the least any"
        " command that validates a pydantic model and runs bash under asyncio costs, as the full path"
        " does on anyio: building a first model loads pydantic.fields and the plugin loader.",
    ]
    return table
