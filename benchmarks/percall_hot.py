"""A call's pieces in the call (cold) and in a tight loop (hot), side by side in one run (issue 22, item 2).

``PYTHONPATH=. python3 -m benchmarks.percall_hot [--rounds 5] [--burst 150] [--git]``

`benchmarks.percall_layers` gives each layer's loop-thread CPU inside a ``true`` call; it does
not say whether a layer is dear because of what it does or because it runs cold (the loop
thread wakes after the command's ~1.5 ms sleep, its caches taken by the other core's work).
Here the pieces round 36 left open (the transcript's start and call lines, the permission
decision and its key, the exit wait, the spools' close and the empty output's link) are timed
both ways, round by round: a burst of calls through one local Runtime with a thread-CPU
wrapper on each piece, then the same piece on the live objects of one of those calls, many
times in a row. A hot figure far below the in-call one means the piece's cost is the cold run,
which no cut of its own instructions removes in proportion; one close to it, the instructions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

from benchmarks.percall_layers import _wrap

#: (label, module, attribute path): the pieces wrapped in the call.
PIECES: list[tuple[str, str, str]] = [
    ("start line", "shellrt.runtime.session", "Runtime._transcribe_start"),
    ("call line", "shellrt.runtime.session", "Runtime._finish"),
    ("  transcript append (a line)", "shellrt.runtime.append_log", "AppendLog.append"),
    ("  facts JSON", "shellrt.runtime.session", "_facts_json"),
    ("state file check", "shellrt.runtime.session", "Runtime._save_state"),
    ("permission", "shellrt.runtime.execution", "authorize_rewrites"),
    ("  decision (engine)", "shellrt.permissions.engine", "PermissionEngine.decide"),
    ("    its key (Bash)", "shellrt.tools.bash", "ShellTool.decision_key"),
    ("exit wait", "sandbox._hostproc", "HostProcess.wait"),
    ("  poll + reap", "sandbox._hostproc", "HostProcess._poll"),
    ("  group kill", "sandbox._proctree", "ProcessTree.kill_group"),
    ("  after_exit", "sandbox._hostproc", "HostRunner.after_exit"),
    ("  exit status", "sandbox._hostproc", "HostProcess._make_status"),
    ("spools closed", "shellrt.supervisor.execution", "Execution._finish"),
    ("  empty output's link", "shellrt.supervisor.spool", "SpoolFiles.place_empty"),
]
#: Pieces that run more than once a call (their in-call figure is per call, the hot one per run).
_PER_CALL = {"  transcript append (a line)": 2}


def _install(acc: dict[str, int]) -> None:
    import importlib

    for label, module, path in PIECES:
        owner: Any = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        _wrap(owner, name, label, acc)


class _Captured:
    """The live objects of one call, taken by wrappers of `_finish` and the engine's `decide`."""

    def __init__(self) -> None:
        self.finish: dict[str, Any] = {}
        self.decide: dict[str, Any] = {}

    def install(self) -> Callable[[], None]:
        import shellrt.permissions.engine as engine
        import shellrt.runtime.session as session

        finish, decide = session.Runtime._finish, engine.PermissionEngine.decide
        seen = self

        def capture_finish(rt: Any, block: Any, envelope: Any, started: float, **kw: Any) -> Any:
            facts = dict(rt._executor.facts.get(block.id, {}))
            seen.finish = {"rt": rt, "block": block, "envelope": envelope, "started": started, "facts": facts}
            return finish(rt, block, envelope, started, **kw)

        async def capture_decide(eng: Any, tool: Any, tool_input: Any, ctx: Any, **kw: Any) -> Any:
            seen.decide = {"engine": eng, "tool": tool, "input": tool_input, "ctx": ctx}
            return await decide(eng, tool, tool_input, ctx, **kw)

        session.Runtime._finish = capture_finish  # type: ignore[method-assign,assignment]
        engine.PermissionEngine.decide = capture_decide  # type: ignore[method-assign,assignment]

        def undo() -> None:
            session.Runtime._finish = finish  # type: ignore[method-assign,assignment]
            engine.PermissionEngine.decide = decide  # type: ignore[method-assign,assignment]

        return undo


def _hot_loops(seen: _Captured, times: int) -> dict[str, float]:
    """Each piece that can run again on its own, ``times`` times in a row: us a run, thread CPU."""
    import shellrt.runtime.session as session

    rt, block, envelope = seen.finish["rt"], seen.finish["block"], seen.finish["envelope"]
    facts, started = seen.finish["facts"], seen.finish["started"]
    executor = rt._executor
    eng, tool, tool_input, ctx = (seen.decide[k] for k in ("engine", "tool", "input", "ctx"))
    call = session._call_fields(block)

    def call_line() -> None:
        executor.facts[block.id] = dict(facts)
        executor.executed.add(block.id)
        rt._finish(block, envelope, started, replayed=False, call=call)

    def setup_only() -> None:
        executor.facts[block.id] = dict(facts)
        executor.executed.add(block.id)

    def fresh_key() -> None:
        object.__setattr__(tool_input, "__pydantic_private__", None)  # no judgement kept
        tool.decision_key(tool_input, ctx)

    def memo_hit() -> None:
        object.__setattr__(tool_input, "__pydantic_private__", None)
        coro = eng.decide(tool, tool_input, ctx)
        try:
            coro.send(None)
        except StopIteration:
            pass

    # A JSON line of a start line's size (~150 bytes): the session's transcript stays readable.
    line = b'{"bench": "hot append", "pad": "' + b"x" * 114 + b'"}\n'
    files = rt.supervisor._spool_files
    links = [files.directory / f"hot-{os.getpid()}-{i}.out" for i in range(times)]
    out: dict[str, float] = {}

    def clock(label: str, fn: Callable[[], object], base: float = 0.0) -> None:
        fn()
        start = time.thread_time_ns()
        for _ in range(times):
            fn()
        out[label] = (time.thread_time_ns() - start) / times / 1e3 - base

    clock("(setup)", setup_only)
    clock("start line", lambda: rt._transcribe_start(block))
    clock("call line", call_line, out["(setup)"])
    clock("  transcript append (a line)", lambda: rt._transcript.append(line))
    clock("  facts JSON", lambda: session._facts_json(facts))
    clock("state file check", rt._save_state)
    clock("  decision (engine)", memo_hit)
    clock("    its key (Bash)", fresh_key)
    start = time.thread_time_ns()
    for path in links:  # a new name each: as a call's (the directory holds the session's files too)
        files.place_empty(path)
    out["  empty output's link"] = (time.thread_time_ns() - start) / times / 1e3
    for path in links:
        path.unlink(missing_ok=True)
    del out["(setup)"]
    return out


async def _run(rounds: int, burst: int, times: int, warmup: int = 100) -> None:
    import benchmarks.peers.ours as ours

    acc: dict[str, int] = {}
    _install(acc)
    seen = _Captured()
    cold: dict[str, list[float]] = {}
    hot: dict[str, list[float]] = {}
    load0 = os.getloadavg()[0]
    async with ours.ShellrtRuntime("local") as system:
        for _ in range(warmup):
            await system.run("true", 30.0)
        undo = seen.install()
        await system.run("true", 30.0)
        undo()
        for _ in range(rounds):
            acc.clear()
            for _ in range(burst):
                await system.run("true", 30.0)
            for label, ns in acc.items():
                cold.setdefault(label, []).append(ns / burst / 1e3)
            for label, us in _hot_loops(seen, times).items():
                hot.setdefault(label, []).append(us)
    print(
        f"{rounds} rounds x {burst} calls (hot: {times} runs a piece); load {load0:.1f} -> "
        f"{os.getloadavg()[0]:.1f}; medians, loop thread CPU us (wrappers included in the call)"
    )
    print(f"{'piece':<34} {'in call':>8} {'hot':>8} {'in/hot':>7}")
    for label, _, _ in PIECES:
        in_call = statistics.median(cold[label]) if label in cold else float("nan")
        per_run = in_call / _PER_CALL.get(label, 1)
        warm = statistics.median(hot[label]) if label in hot else None
        ratio = f"{per_run / warm:7.1f}" if warm else "      -"
        print(f"{label:<34} {in_call:8.1f} {warm if warm is not None else float('nan'):8.2f} {ratio}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.percall_hot", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--burst", type=int, default=150)
    parser.add_argument("--times", type=int, default=2000, help="runs of each piece in its hot loop")
    parser.add_argument("--warmup", type=int, default=100, help="calls before the first round")
    parser.add_argument("--git", action="store_true", help="the workspace a fresh git repository")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.git:
        os.environ["SHELLRT_BENCH_GIT_WORKSPACE"] = "1"
    anyio.run(_run, args.rounds, args.burst, args.times, args.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
