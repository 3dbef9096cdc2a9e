"""Where a Runtime + Bash call's CPU goes, layer by layer, without a profiler (issue 22, item 2).

``PYTHONPATH=. python3 -m benchmarks.percall_layers [--rounds 6] [--burst 200] [--warm-shells 0]``

cProfile multiplies a call's cost by ~4 and most of it lands on the many small functions, so its
shares mislead. Here each layer's function is wrapped once with a thread-CPU clock
(`time.thread_time_ns`: the loop thread's own CPU, ~0.3 us a wrapper) and its inclusive time
summed; bursts of ``true`` calls through one local Runtime alternate with raw ``bash -c true``
spawns. Printed: the median over rounds of each layer's inclusive CPU a call, its own share
(inclusive minus the layers listed under it), the loop thread's total and a raw spawn's.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

from benchmarks._bursts import raw_spawn

#: (label, module, attribute path, the labels of the layers it calls): the tree printed.
LAYERS: list[tuple[str, str, str, tuple[str, ...]]] = [
    (
        "Runtime.run",
        "shellrt.runtime.session",
        "Runtime.run",
        ("parse", "start line", "run_single", "call line", "state"),
    ),
    ("parse", "shellrt.runtime.session", "parse_tool_uses", ()),
    ("start line", "shellrt.runtime.session", "Runtime._transcribe_start", ()),
    ("run_single", "shellrt.runtime.session", "run_single", ("input model", "recorded execute", "sendable")),
    ("input model", "shellrt.runtime.orchestration", "_parsed", ()),
    ("recorded execute", "shellrt.runtime.session", "_RecordingExecutor.execute", ("execute",)),
    ("sendable", "shellrt.runtime.orchestration", "sendable_envelope", ()),
    ("call line", "shellrt.runtime.session", "Runtime._finish", ("facts",)),
    ("facts", "shellrt.runtime.session", "_facts_json", ()),
    ("state", "shellrt.runtime.session", "Runtime._save_state", ()),
    ("execute", "shellrt.runtime.execution", "CallExecutor._execute", ("validate", "permission", "_call")),
    ("validate", "shellrt.runtime.execution", "CallExecutor._validate", ()),
    # Round 56: the permission step's parts. A memoised allow still makes its key afresh: the
    # session cwd as the host resolves it now (`real_dir`: open, readlink, close) and each allowed
    # root's identity (`_roots`: a stat each), then the analysis' parts judged for named paths.
    ("permission", "shellrt.runtime.execution", "authorize_rewrites", ("decide", "decision noted")),
    ("decide", "shellrt.permissions.engine", "PermissionEngine.decide", ("decision key",)),
    ("decision key", "shellrt.tools.bash", "ShellTool.decision_key", ("judgement",)),
    ("judgement", "shellrt.tools.bash", "ShellTool._judgement", ("roots", "cwd resolved")),
    ("roots", "shellrt.tools.bash", "_roots", ()),
    ("cwd resolved", "shellrt.tools.bash", "real_dir", ()),
    ("decision noted", "shellrt.permissions.gate", "note_decision", ()),
    ("_call", "shellrt.runtime.execution", "CallExecutor._call", ("Bash.call", "envelope", "input dumped")),
    ("input dumped", "shellrt.runtime.execution", "json_dump", ()),
    ("envelope", "shellrt.runtime.execution", "CallExecutor._envelope", ()),
    ("Bash.call", "shellrt.tools.bash", "ShellTool.call", ("Supervisor.run",)),
    (
        "Supervisor.run",
        "shellrt.supervisor.supervisor",
        "Supervisor.run",
        ("start", "pump", "protect before", "protect after", "result"),
    ),
    ("start", "shellrt.supervisor.supervisor", "Supervisor._start", ("peers enter", "start entered")),
    # Round 54: the start's parts. A start takes the session's entry among other shellrt
    # processes (`_host_pause_peers`: a lock and a look for their hooks; round 41), then the
    # backend's start: the caller's scheduling read (`calm_prefix`) and the spawner's hand-off.
    ("peers enter", "shellrt.supervisor.supervisor", "Supervisor._enter_start", ()),
    ("start entered", "shellrt.supervisor.supervisor", "Supervisor._start_entered", ("backend exec",)),
    ("backend exec", "sandbox.local", "LocalBackend.exec", ("host spawn",)),
    ("host spawn", "sandbox._hostproc", "HostRunner.spawn", ("calm prefix", "cgroup start")),
    ("calm prefix", "sandbox._hostproc", "HostRunner._calm_prefix", ()),
    ("cgroup start", "sandbox._session_cgroup", "SessionCgroup.start", ()),
    (
        "pump",
        "shellrt.supervisor.execution",
        "Execution.run_inline",
        ("read to EOF", "exit wait", "spools closed"),
    ),
    ("read to EOF", "shellrt.supervisor.execution", "_pipe_to_eof_within", ()),
    ("exit wait", "sandbox._hostproc", "HostProcess.wait", ()),
    ("spools closed", "shellrt.supervisor.execution", "Execution._finish", ()),
    ("protect before", "shellrt.supervisor.protect_roots", "RootGuards.before", ()),
    ("protect after", "shellrt.supervisor.supervisor", "Supervisor._guarded", ()),
    ("result", "shellrt.supervisor.supervisor", "Supervisor._result", ()),
    # Called from the start, the pump's end and the protected-files check after (inside their
    # rows): the session's entry let go once nothing runs (an `flock` unlock).
    ("(peers leave, in the rows above)", "shellrt.supervisor.supervisor", "Supervisor._settle_peer", ()),
    # Round 56: the transcript's two appends a call (a `stat` of its path and a `write` each),
    # inside the start line's and the call line's rows.
    ("(transcript lines, in rows above)", "shellrt.runtime.session", "Runtime._append_line", ()),
]


def _wrap(owner: Any, name: str, label: str, acc: dict[str, int]) -> None:
    """Replace ``owner.name`` by a wrapper adding its thread CPU to ``acc[label]``."""
    raw = owner.__dict__.get(name) if isinstance(owner, type) else None
    fn = getattr(owner, name)
    clock = time.thread_time_ns
    wrapper: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):

        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return await fn(*args, **kwargs)
            finally:
                acc[label] = acc.get(label, 0) + clock() - start

        wrapper = timed_async
    else:

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                acc[label] = acc.get(label, 0) + clock() - start

        wrapper = timed
    wrapper = functools.wraps(fn)(wrapper)
    setattr(owner, name, staticmethod(wrapper) if isinstance(raw, staticmethod) else wrapper)


def _install(acc: dict[str, int]) -> None:
    import importlib

    for label, module, path, _ in LAYERS:
        owner: Any = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        _wrap(owner, name, label, acc)


async def _run(rounds: int, burst: int, warm: int) -> None:
    import benchmarks.peers.ours as ours
    from sandbox import LocalConfig

    acc: dict[str, int] = {}
    _install(acc)
    ours._config = lambda kind: LocalConfig(warm_shells=warm)  # type: ignore[assignment,misc]
    rows: dict[str, list[float]] = {}
    load0 = os.getloadavg()[0]
    async with ours.ShellrtRuntime("docker") as system:  # a kind not "local": takes `_config`
        for _ in range(100):
            await system.run("true", 30.0)
        for _ in range(rounds):
            acc.clear()
            start = time.thread_time_ns()
            for _ in range(burst):
                await system.run("true", 30.0)
            total = time.thread_time_ns() - start
            start = time.thread_time_ns()
            for _ in range(burst):
                raw_spawn()
            raw = time.thread_time_ns() - start
            for label, ns in acc.items():
                rows.setdefault(label, []).append(ns / burst / 1e3)
            rows.setdefault("(loop thread, all)", []).append(total / burst / 1e3)
            rows.setdefault("(raw spawn, loop thread)", []).append(raw / burst / 1e3)
    median = {label: statistics.median(values) for label, values in rows.items()}
    print(
        f"{rounds} rounds x {burst} calls, warm shells {warm}; load {load0:.1f} -> {os.getloadavg()[0]:.1f};"
        " median us a call, loop thread CPU (wrappers included)"
    )
    print(f"{'layer':<34} {'inclusive':>9} {'own':>8}")
    depth: dict[str, int] = {}
    for label, _, _, children in LAYERS:
        depth.setdefault(label, 0)
        for child in children:
            depth[child] = depth[label] + 1
        inclusive = median.get(label, 0.0)
        own = inclusive - sum(median.get(child, 0.0) for child in children)
        print(f"{'  ' * depth[label] + label:<34} {inclusive:9.1f} {own:8.1f}")
    for label in ("(loop thread, all)", "(raw spawn, loop thread)"):
        print(f"{label:<34} {median[label]:9.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.percall_layers", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--git", action="store_true", help="each workspace a fresh git repository")
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--warm-shells", type=int, default=0)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.git:
        os.environ["SHELLRT_BENCH_GIT_WORKSPACE"] = "1"
    anyio.run(_run, args.rounds, args.burst, args.warm_shells)
    return 0


if __name__ == "__main__":
    sys.exit(main())
