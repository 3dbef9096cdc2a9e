"""A bwrap session's command against a raw spawn, side by side in one run (issue 22, item 3).

``PYTHONPATH=. python3 -m benchmarks.bwrap_ab [--rounds 40] [--burst 12] [--churn MS] [--pool N] [--no-lock-view]``

Three ways of running ``true``, taking turns in back-to-back bursts (`benchmarks._bursts`: two
bursts timed next to each other see the same load, so each round's ratio is fair on a shared
machine even when the absolute times are not):

* **raw**: ``bash -c true``, its output read through one merged pipe to EOF (what
  ``Supervisor.run`` gives a command);
* **backend**: the bwrap session backend alone (``exec`` of ``bash -c true``, output read to
  EOF, ``wait``): the sandbox's own share;
* **supervisor**: ``Supervisor.run("true")`` on that backend: what a caller pays.

Printed per row: the median of the bursts (and their quartile spread), the fastest call, the
median over rounds of the ratio to the same round's raw burst (the goal's figure: <= 2.0x), the
ratio of the fastest calls, and this process's CPU per call (``time.process_time``: wall clock
is noisy on a loaded machine, the host's own CPU far less). ``--burst 1`` times one call of each
in turn instead of bursts. ``--churn MS``: a host thread binds a socket in a fresh directory under
/var/tmp every MS ms meanwhile (a busy host); the run says how many zygotes were replaced and how
many commands found no ready init. ``--no-lock-view``: the session without its lock view
(`BwrapConfig.lock_view`), to measure what the view costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from benchmarks._bursts import alternating_bursts, cpu_timed, raw_spawn
from benchmarks._harness import summarize

__all__ = ["main"]


async def _read_all(stream: object) -> None:
    receive = stream.receive  # type: ignore[attr-defined]
    try:
        while await receive():
            pass
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        return


def _churn(every_s: float, stop: threading.Event) -> None:
    """A busy host's sockets: one bound and removed in a fresh 0755 directory under /var/tmp every
    ``every_s`` (root's, mode 0755: shown to every sandbox, connectable by none of a root
    caller's sandbox uids), as test suites and language servers do."""
    while not stop.is_set():
        where = tempfile.mkdtemp(prefix="shellrt-ab-churn-", dir="/var/tmp")
        try:
            os.chmod(where, 0o755)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.bind(os.path.join(where, "agent.sock"))
                sock.listen(1)
                stop.wait(every_s)
        finally:
            shutil.rmtree(where, ignore_errors=True)


async def _run(rounds: int, burst: int, churn_ms: float, pool: int | None, lock_view: bool = True) -> int:
    from sandbox import BwrapConfig, ExecRequest, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from shellrt.supervisor import Supervisor

    with tempfile.TemporaryDirectory(prefix="shellrt-bwrap-ab-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        backend = BwrapBackend(BwrapConfig(persistent=True, lock_view=lock_view), SandboxPolicy(workspace=ws))
        if pool is not None:
            backend.warm_pool = pool
        await backend.start()
        if not backend.persistent:
            print("the bwrap session did not start its zygote here: nothing to measure", file=sys.stderr)
            await backend.close()
            return 2
        sup = Supervisor(backend, session_dir=Path(tmp) / "session")
        request = ExecRequest(argv=("bash", "-c", "true"), cwd=str(ws), env={}, merge_stderr=True)
        try:

            async def raw() -> None:
                raw_spawn()

            async def alone() -> None:
                proc = await backend.exec(request)
                await _read_all(proc.stdout)
                status = await proc.wait()
                if status.exit_code != 0:
                    raise RuntimeError(f"backend: `true` returned {status.exit_code}")

            async def supervised() -> None:
                outcome = await sup.run("true", timeout_s=30.0)
                if outcome.exit_code != 0:
                    raise RuntimeError(f"supervisor: `true` returned {outcome.exit_code}")

            # What the session's own mechanics cost some calls (docs/performance.md, ninth round):
            # zygotes replaced (a new host socket it could reach) and commands that found no
            # ready init in the warm pool (counted by each zygote).
            zygotes: list[object] = [backend._zygote]
            cold = 0

            def note_zygote() -> None:
                nonlocal cold
                zygote = backend._zygote
                if zygote is not zygotes[-1]:
                    cold += getattr(zygotes[-1], "cold_starts", 0)
                    zygotes.append(zygote)

            async def after(fn: Callable[[], Awaitable[None]]) -> None:
                await fn()
                note_zygote()

            cpu: dict[str, list[float]] = {"raw": [], "backend": [], "supervisor": []}
            fns = {
                "raw": cpu_timed(raw, cpu["raw"]),
                "backend": cpu_timed(lambda: after(alone), cpu["backend"]),
                "supervisor": cpu_timed(lambda: after(supervised), cpu["supervisor"]),
            }
            stop = threading.Event()
            churner = threading.Thread(target=_churn, args=(churn_ms / 1e3, stop), daemon=True)
            if churn_ms > 0:
                churner.start()
            try:
                bursts = await alternating_bursts(fns, rounds, burst)
            finally:
                stop.set()
                if churner.is_alive():
                    churner.join()
            cold += getattr(zygotes[-1], "cold_starts", 0)
        finally:
            await sup.close()
            await backend.close()
    print(f"{bursts.rounds} rounds of {burst} call(s) each, taking turns; {bursts.load_text()}")
    calls = sum(len(cpu[name]) for name in ("backend", "supervisor"))
    print(
        f"session: {len(zygotes) - 1} zygote(s) replaced, {cold} of {calls} commands found no "
        "ready init (untimed warm-up calls included)"
    )
    print(
        f"{'path':<11} {'ms/call':>8} {'spread':>7} {'fastest':>8} {'x raw':>6} "
        f"{'quartiles':>11} {'fast x':>7} {'host CPU ms':>11}"
    )
    for name in fns:
        spread = summarize(bursts.medians[name])
        ratios = summarize(bursts.ratios(name, "raw"))
        print(
            f"{name:<11} {bursts.median(name) * 1e3:8.3f} {(spread.q3 - spread.q1) / 2 / spread.median * 100:6.0f}% "
            f"{bursts.fastest[name] * 1e3:8.3f} {bursts.ratio(name, 'raw'):5.2f}x "
            f"{ratios.q1:5.2f}-{ratios.q3:<5.2f} {bursts.ratio_of_fastest(name, 'raw'):6.2f}x "
            f"{statistics.median(cpu[name]) * 1e3:11.3f}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bwrap_ab", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=40, help="rounds of bursts (default 40)")
    parser.add_argument(
        "--burst", type=int, default=12, help="timed calls per burst (default 12; 1: one each in turn)"
    )
    parser.add_argument(
        "--churn",
        type=float,
        default=0.0,
        metavar="MS",
        help="a host thread binds a new socket under /var/tmp every MS ms meanwhile (default: none)",
    )
    parser.add_argument(
        "--pool", type=int, default=None, help="inits the zygote keeps ready (default: the backend's)"
    )
    parser.add_argument(
        "--no-lock-view", action="store_true", help="the session without its lock view (to measure its cost)"
    )
    args = parser.parse_args(argv)
    return anyio.run(_run, args.rounds, args.burst, args.churn, args.pool, not args.no_lock_view)


if __name__ == "__main__":
    sys.exit(main())
