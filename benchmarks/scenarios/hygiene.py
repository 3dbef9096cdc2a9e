"""Scenario 4 — timeout hygiene: a command that leaves five kinds of stray ``sleep`` behind, 2 s timeout.

    sleep A & setsid sleep B & nohup sleep C & (sleep D &); sleep E

Each measurement runs in a fresh process (`benchmarks._child`): time until the
call returns, then how many of the five sleeps are still alive 0.5 s after it
returned (while the session would go on), and after the system was closed and
its process exited. Every survivor is killed by pid afterwards.
"""

from __future__ import annotations

import functools
import os
import secrets

import anyio

from benchmarks._child import hygiene_args
from benchmarks._harness import Column, Row, Table, summarize
from benchmarks.peers import make
from benchmarks.scenarios._common import RunConfig, kill_pids, sleepers
from benchmarks.scenarios._spawn import run_child

__all__ = ["SYSTEM_IDS", "TIMEOUT_S", "run"]

TIMEOUT_S = 2.0
#: A call with a 2 s timeout that has not returned by then is hung (held by a stray process).
CAP_S = 30.0
QUICK_CAP_S = 6.0
SYSTEM_IDS = [
    "raw-bash",
    "shellrt-local",
    "shellrt-bwrap",
    "shellrt-docker",
    "shellrt-runtime-local",
    "swerex-session",
    "swerex-oneshot",
    "inspect-local",
]
REFERENCE = "shellrt-local"


def _tag(rep: int) -> str:
    """Unique per measurement, so concurrent or earlier runs never cross-talk."""
    return f"{os.getpid() % 1000:03d}{rep:02d}{secrets.randbelow(1000):03d}"


async def run(cfg: RunConfig) -> Table:
    reps = cfg.reps(1, 5)
    cap_s = QUICK_CAP_S if cfg.quick else CAP_S
    available: list[str] = []
    rows: dict[str, Row] = {}
    for system_id in SYSTEM_IDS:
        system = make(system_id)
        reason = system.unavailable()
        if reason:
            rows[system_id] = Row(system.name, status="skipped", note=reason)
        else:
            available.append(system_id)

    returns: dict[str, list[float]] = {s: [] for s in available}
    after_return: dict[str, list[int]] = {s: [] for s in available}
    after_close: dict[str, list[int]] = {s: [] for s in available}
    timed_out: dict[str, list[bool]] = {s: [] for s in available}
    dnf: dict[str, int] = {}
    errors: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    #: For runs that never returned: sleeps alive when the harness gave up on the call.
    hung_alive: dict[str, int] = {}
    for rep in range(reps):
        k = rep % max(1, len(available))
        for system_id in available[k:] + available[:k]:
            if system_id in errors or system_id in unavailable or system_id in dnf:
                continue  # a system that hung once is not run again (it would hang again)
            tag = _tag(rep)
            args = hygiene_args(tag)
            at_cap: list[int] = []
            result = await anyio.to_thread.run_sync(
                functools.partial(
                    run_child,
                    "hygiene",
                    system_id,
                    tag,
                    TIMEOUT_S,
                    cap_s,
                    on_cap=functools.partial(_count_into, at_cap, args),
                )
            )
            await anyio.sleep(0.3)
            leftovers = sleepers(args)
            if result is None:
                dnf[system_id] = dnf.get(system_id, 0) + 1
                after_close[system_id].append(len(leftovers))
                hung_alive[system_id] = max([hung_alive.get(system_id, 0), *at_cap])
            elif "unavailable" in result:
                unavailable[system_id] = str(result["unavailable"])
            elif "error" in result:
                errors[system_id] = str(result["error"])
            else:
                returns[system_id].append(float(result["return_s"]))
                after_return[system_id].append(int(result["alive_after_return"]))
                after_close[system_id].append(len(leftovers))
                timed_out[system_id].append(bool(result["timed_out"]))
            kill_pids(leftovers)

    table = Table(
        name="hygiene",
        title=f"timeout hygiene: `{_display_command()}`, {TIMEOUT_S:.0f} s timeout",
        columns=[
            Column("return_s", "time to return s", ratio=True),
            Column("alive_after_return", "sleeps alive after return (of 5)", fmt="{:.0f}", spread=False),
            Column("alive_after_close", "alive after close/exit (of 5)", fmt="{:.0f}", spread=False),
            Column("reported_timeout", "reported a timeout", spread=False),
        ],
    )
    for system_id in SYSTEM_IDS:
        name = make(system_id).name
        if system_id in rows:
            row = rows[system_id]
        elif system_id in unavailable:
            row = Row(name, status="skipped", note=unavailable[system_id])
        elif system_id in errors:
            row = Row(name, status="failed", note=errors[system_id])
        elif not returns[system_id]:
            row = Row(name, status="did not finish", values={"return_s": f"did not return in {cap_s:.0f} s"})
            if system_id in hung_alive:
                row.values["alive_after_return"] = f"{hung_alive[system_id]} (call still hung)"
            if after_close[system_id]:
                row.values["alive_after_close"] = max(after_close[system_id])
        else:
            row = Row(
                name,
                values={
                    "return_s": summarize(returns[system_id]),
                    "alive_after_return": max(after_return[system_id]),
                    "alive_after_close": max(after_close[system_id]),
                    "reported_timeout": "yes" if all(timed_out[system_id]) else "no",
                },
            )
            if system_id in dnf:
                row.note = f"{dnf[system_id]} run(s) did not return within {cap_s:.0f} s"
        if system_id == REFERENCE:
            table.reference = row.system
        table.rows.append(row)
    table.notes += [
        f"{reps} interleaved repetition(s), each in a fresh process with unique sleep arguments;"
        " survivor counts are the worst repetition" + (" (--quick: one repetition)." if cfg.quick else "."),
        "after return = 0.3 s after the call returned, with the system still open (an agent session goes on);"
        " after close/exit = once the system was closed and its process exited. Survivors were then killed by pid.",
        "SWE-ReX session: on its timeout we send BashInterruptAction (Ctrl-C) as SWE-agent does; that is inside the"
        " measured call.",
        f"a call that has not returned {cap_s:.0f} s after its {TIMEOUT_S:.0f} s timeout is reported as did not"
        " return (its process group is killed and it is not repeated); its 'after return' count is taken when the harness"
        " gave up on the call, its after close/exit count after that kill.",
    ]
    return table


def _count_into(counts: list[int], args: list[str]) -> None:
    counts.append(len(sleepers(args)))


def _display_command() -> str:
    return "sleep 1001 & setsid sleep 1002 & nohup sleep 1003 & (sleep 1004 &); sleep 1005"
