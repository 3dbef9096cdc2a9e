"""One measurement in a fresh process, so peak RSS and stray processes belong to one system.

    python -m benchmarks._child output  SYSTEM_ID NBYTES TIMEOUT_S OUT_JSON
    python -m benchmarks._child hygiene SYSTEM_ID TAG    TIMEOUT_S OUT_JSON

The parent (`benchmarks.scenarios.output` / `.hygiene`) enforces the time cap
(counted from ``OUT_JSON.ready``, touched when the measured call starts, so a
slow import is not held against a system) and cleans up survivors; this
process only measures and writes ``OUT_JSON``.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks.peers import SystemUnavailable, make
from benchmarks.scenarios._common import sleepers

__all__ = ["hygiene_args", "hygiene_command", "output_command"]

#: 99 letters and a newline per line: realistic line-oriented output.
_LINE = "x" * 99


def output_command(nbytes: int) -> str:
    return f"yes {_LINE} | head -c {nbytes}"


def hygiene_args(tag: str) -> list[str]:
    """The five unique ``sleep`` arguments of one hygiene run (1001<tag> .. 1005<tag>)."""
    return [f"{k}{tag}" for k in range(1001, 1006)]


def hygiene_command(tag: str) -> str:
    a = hygiene_args(tag)
    return f"sleep {a[0]} & setsid sleep {a[1]} & nohup sleep {a[2]} & (sleep {a[3]} &); sleep {a[4]}"


def _hwm_kb() -> int:
    """Peak RSS of this process so far (VmHWM), in kB.

    Not ``ru_maxrss``: Linux carries the parent's RSS at fork over the exec into
    the child's ``ru_maxrss``, which would hide everything below that level.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover - non-Linux


def _ready(out: str) -> None:
    """Tell the parent the measured part starts now (its time cap counts from here)."""
    Path(out + ".ready").touch()


async def _output(system_id: str, nbytes: int, timeout_s: float, out: str) -> dict[str, Any]:
    system = make(system_id)
    async with system:
        await system.run("true", 30.0)
        before_kb = _hwm_kb()
        _ready(out)
        begin = time.perf_counter()
        outcome = await system.run(output_command(nbytes), timeout_s)
        wall = time.perf_counter() - begin
        peak_kb = _hwm_kb()
    return {
        "wall_s": wall,
        "peak_rss_kb": peak_kb,
        "rss_before_kb": before_kb,
        "recoverable_bytes": outcome.recoverable_bytes,
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "note": outcome.note,
    }


async def _hygiene(system_id: str, tag: str, timeout_s: float, out: str) -> dict[str, Any]:
    system = make(system_id)
    args = hygiene_args(tag)
    async with system:
        await system.run("true", 30.0)
        _ready(out)
        begin = time.perf_counter()
        outcome = await system.run(hygiene_command(tag), timeout_s)
        returned = time.perf_counter() - begin
        await anyio.sleep(0.3)
        alive_after_return = len(sleepers(args))
    await anyio.sleep(0.3)
    return {
        "return_s": returned,
        "alive_after_return": alive_after_return,
        "alive_after_close": len(sleepers(args)),
        "timed_out": outcome.timed_out,
        "exit_code": outcome.exit_code,
        "note": outcome.note,
    }


def main(argv: list[str]) -> int:
    kind, system_id, arg, timeout, out = argv
    try:
        if kind == "output":
            result = anyio.run(_output, system_id, int(arg), float(timeout), out)
        elif kind == "hygiene":
            result = anyio.run(_hygiene, system_id, arg, float(timeout), out)
        else:
            raise SystemExit(f"unknown measurement {kind!r}")
    except SystemUnavailable as exc:
        result = {"unavailable": str(exc)}
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    Path(out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
