"""The run's output budget: bytes of command output and collected files on disk at once, over
every task of a run.

Each task's spool is bounded (`shellrt.supervisor.spool.OutputQuota`: 1 GiB per command, 8 GiB
per task), but a run of tasks that each print gigabytes, keep ``collect.output: full`` or
collect large files had no bound at all: the task file, not the operator, decided how much of
the disk the run takes. Every spooled byte, every kept output file and every collected file
now takes from one budget; a task's spools give theirs back when they are deleted with the
task. Once it is used up, output is no longer saved (the command's ``output_lost`` says why)
and collecting fails the task naming ``--output-budget``.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

from shellrt.supervisor.spool import OutputQuota

__all__ = ["RunOutputBudget", "TaskQuota", "machine_output_budget"]


class RunOutputBudget:
    """Bytes a whole run may hold on disk at once (None: no limit); thread-safe."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0
        #: The most one task may hold of it at once (spools and kept outputs): the runner sets
        #: ``limit // window`` so one task cannot use up what the tasks running beside it need
        #: (red team round 23). None: no share (a task may take what is left).
        self.task_share: int | None = None
        self._lock = threading.Lock()

    def take(self, want: int) -> int:
        """Up to ``want`` bytes of what is left; how many were taken."""
        with self._lock:
            got = want if self.limit is None else max(0, min(want, self.limit - self.used))
            self.used += got
            return got

    def give_back(self, amount: int) -> None:
        """Bytes freed (a deleted spool, an unused reservation)."""
        with self._lock:
            self.used = max(0, self.used - amount)

    def used_up(self) -> str:
        """Why output was not saved, saying what to do next."""
        return (
            f"the run's output budget of {self.limit or 0:,} bytes is used up (output kept or being "
            "written by every task at once); raise it with --output-budget SIZE (output_budget= in Python)"
        )


class TaskQuota(OutputQuota):
    """One task's spool quota: the per-command and per-task limits, and the run's budget."""

    def __init__(self, budget: RunOutputBudget, base: OutputQuota | None = None) -> None:
        base = base or OutputQuota.from_env()
        super().__init__(base.command_bytes, base.session_bytes)
        self.budget = budget
        #: Bytes this task took from the run's budget for its spools.
        self.taken = 0
        #: The run's budget (not this task's own limits) refused bytes since `clear_run_cut`:
        #: the loss is other tasks' doing as much as this one's, so it is no verdict on it.
        self.run_cut = False
        self._taken_lock = threading.Lock()

    def clear_run_cut(self) -> None:
        """Before each command: `run_cut` then says whether the run's budget cut that command."""
        self.run_cut = False

    def grant(self, already: int, want: int) -> tuple[int, str | None]:
        allowed, why = super().grant(already, want)
        share = self.budget.task_share
        if share is not None and self.taken + allowed > share:
            allowed = max(0, share - self.taken)
            why = (
                f"this task's share of the run's output budget ({share:,} bytes: --output-budget divided "
                "by the tasks that run at once) is used up"
            )
        got = self.budget.take(allowed)
        with self._taken_lock:
            self.taken += got
        if got < allowed:
            self.run_cut = True
            why = self.budget.used_up()
        return got, why


def machine_output_budget(paths: Iterable[Path]) -> int:
    """Half the free space of the emptiest file system holding ``paths`` (spools, artifacts)."""
    free: list[int] = []
    for path in paths:
        probe = path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            free.append(shutil.disk_usage(os.fspath(probe)).free)
        except OSError:
            continue
    return max(1, min(free) // 2) if free else 1
