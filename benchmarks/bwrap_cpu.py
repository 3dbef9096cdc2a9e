"""Where a bwrap session command's CPU goes, process by process (issue 22, item 3).

``PYTHONPATH=. python3 -m benchmarks.bwrap_cpu [--calls 300] [--turns 3] [--no-lock-view]``

On two cores a session is CPU-bound back to back (docs/performance.md, stop 59), so its wall
ratio to a raw spawn follows the CPU every command costs in all the processes it touches, not
only in the caller. This counts that CPU per command, from the kernel's own accounting
(``/proc/<pid>/stat``: a process's time and what it reaped), with no profiler attached:

* **host**: this process (request, pool hand-out, output and status read, the socket watch);
* **zygote**: the zygote's Python (refilling the pool, reaping);
* **server**: the C init server (one clone per init);
* **inits+cmd**: the inits with everything under them: set-up (lock view, /proc, credentials,
  seccomp), the command, the namespace's teardown at the init's exit (the zygote reaps them:
  ``CLONE_PARENT``).

Two commands, taking turns: ``bash -c true`` (what the latency figures time) and ``true`` run
without a shell, whose "inits+cmd" is mostly the init's own cost (the hardening), bash aside;
and, for reference, a raw ``bash -c true`` spawned on the host (its child CPU). Clock ticks are
10 ms: use a few hundred calls.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

__all__ = ["main", "session_processes"]

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, list[str]]:
    """(parent pid, the fields after the command name) of ``pid``."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[1]), fields


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if _stat(int(name))[0] == pid:
                    found.append(int(name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def session_processes(host_pid: int) -> tuple[int, int]:
    """(the zygote's pid, the C init server's pid) below the session's bwrap ``host_pid``: the
    server is the process named ``shellrt-init`` whose command line says ``server``, the zygote its
    parent. Raises `LookupError` when there is none (the Python init, or no session)."""
    todo = [host_pid]
    for _depth in range(6):
        below: list[int] = []
        for pid in todo:
            for child in _children(pid):
                try:
                    with open(f"/proc/{child}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                    with open(f"/proc/{child}/comm", encoding="utf-8") as f:
                        comm = f.read().strip()
                except OSError:
                    continue
                if comm == "shellrt-init" and b"server" in argv:
                    return pid, child
                below.append(child)
        todo = below
    raise LookupError("no C init server in this session")


def _cpu(pid: int) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds of ``pid``."""
    _ppid, fields = _stat(pid)
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime) / _TICK, (cutime + cstime) / _TICK


async def _read_all(stream: object) -> None:
    receive = stream.receive  # type: ignore[attr-defined]
    try:
        while await receive():
            pass
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        return


async def _run(calls: int, turns: int, lock_view: bool = True) -> int:
    from sandbox import BwrapConfig, ExecRequest, SandboxPolicy
    from sandbox.bwrap import BwrapBackend

    with tempfile.TemporaryDirectory(prefix="shellrt-bwrap-cpu-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        backend = BwrapBackend(BwrapConfig(persistent=True, lock_view=lock_view), SandboxPolicy(workspace=ws))
        await backend.start()
        rows: dict[str, list[dict[str, float]]] = {"bash -c true": [], "true (no shell)": [], "raw bash -c true": []}
        true_path = shutil.which("true") or "/bin/true"
        argvs = {"bash -c true": ("bash", "-c", "true"), "true (no shell)": (true_path,)}
        try:
            if not backend.persistent:
                print("the bwrap session did not start its zygote here: nothing to measure", file=sys.stderr)
                return 2

            async def one(argv: tuple[str, ...]) -> None:
                request = ExecRequest(argv=argv, cwd=str(ws), env={}, merge_stderr=True)
                proc = await backend.exec(request)
                await _read_all(proc.stdout)
                status = await proc.wait()
                if status.exit_code != 0:
                    raise RuntimeError(f"{argv[0]} returned {status.exit_code}")

            for _ in range(10):
                await one(argvs["bash -c true"])
            for _turn in range(turns):
                for label, argv in argvs.items():
                    zygote = backend._zygote
                    assert zygote is not None and zygote.host_pid is not None
                    zpid, spid = session_processes(zygote.host_pid)
                    z0, s0, h0, w0 = _cpu(zpid), _cpu(spid), time.process_time(), time.perf_counter()
                    for _ in range(calls):
                        await one(argv)
                    h1, w1 = time.process_time(), time.perf_counter()
                    try:
                        if backend._zygote is not zygote:
                            raise LookupError
                        z1, s1 = _cpu(zpid), _cpu(spid)
                    except (OSError, LookupError):  # replaced meanwhile (a new host socket): its counts are gone
                        print(f"{label}: the zygote was replaced during the turn; not counted", file=sys.stderr)
                        continue
                    rows[label].append(
                        {
                            "wall": (w1 - w0) / calls,
                            "host": (h1 - h0) / calls,
                            "zygote": (z1[0] - z0[0]) / calls,
                            "server": (s1[0] - s0[0]) / calls,
                            "inits+cmd": (z1[1] - z0[1]) / calls,
                        }
                    )
                c0, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                h0 = time.process_time()
                for _ in range(calls):
                    subprocess.run(["bash", "-c", "true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
                c1, w1, h1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter(), time.process_time()
                rows["raw bash -c true"].append(
                    {
                        "wall": (w1 - w0) / calls,
                        "host": (h1 - h0) / calls,
                        "zygote": 0.0,
                        "server": 0.0,
                        "inits+cmd": (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / calls,
                    }
                )
        finally:
            await backend.close()
    print(f"{turns} turn(s) of {calls} calls each, taking turns; load {os.getloadavg()[0]:.1f} at the end")
    parts = ("wall", "host", "zygote", "server", "inits+cmd")
    print(f"{'command':<18} " + " ".join(f"{p:>10}" for p in parts) + f" {'CPU total':>10}   (ms a call, medians of turns)")
    for label, turns_rows in rows.items():
        if not turns_rows:
            continue
        med = {p: statistics.median(r[p] for r in turns_rows) * 1e3 for p in parts}
        total = sum(med[p] for p in parts[1:])
        print(f"{label:<18} " + " ".join(f"{med[p]:10.3f}" for p in parts) + f" {total:10.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bwrap_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per turn (default 300)")
    parser.add_argument("--turns", type=int, default=3, help="turns of each command (default 3)")
    parser.add_argument(
        "--no-lock-view", action="store_true", help="the session without its lock view (what the view costs)"
    )
    args = parser.parse_args(argv)
    if args.calls < 1 or args.turns < 1:
        parser.error("--calls and --turns must be at least 1")
    return anyio.run(_run, args.calls, args.turns, not args.no_lock_view)


if __name__ == "__main__":
    sys.exit(main())
