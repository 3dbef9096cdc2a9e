"""Live progress on a terminal and the end-of-run summary.

On a TTY one status line is redrawn in place at most every ``interval_s``:
done/total, rate, failures, ETA. When the stream is not a TTY (CI logs, pipes)
nothing is printed while running — a log file full of carriage returns helps
no one — and only the summary appears at the end.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from typing import TextIO

from shellrt.batch.pool import PoolStats
from shellrt.batch.results import TaskResult
from shellrt.permissions.shown import for_person

__all__ = ["Progress", "percentile", "terminal_safe"]


def terminal_safe(text: str) -> str:
    """``text`` for one line of the operator's terminal: `for_person` with ``one_line=True``.

    What the batch prints about a task comes from its task file or its container: raw, an
    escape sequence would reach the operator's terminal (OSC 52 sets the clipboard, OSC 0 the
    title, CSI rewrites the screen), a newline or carriage return would forge a line.
    """
    return for_person(text, one_line=True)


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (0 for an empty list)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Counts results; draws a status line on a TTY; renders the summary."""

    def __init__(
        self,
        total: int | None,
        *,
        stream: TextIO | None = None,
        live: bool | None = None,
        interval_s: float = 0.2,
        skipped: int = 0,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.skipped = skipped
        self.live = self.stream.isatty() if live is None else live
        self.interval_s = interval_s
        self.started = time.monotonic()
        self.done = 0
        self.statuses: Counter[str] = Counter()
        self.durations: list[float] = []
        self.bad_lines = 0
        #: Docker containers seen in results, and tasks that ran on a recycled one.
        self.containers: set[str] = set()
        self.container_tasks = 0
        self.recycled = 0
        #: The run's container pool (set by the caller; local runs only).
        self.pool: PoolStats | None = None
        self._last_draw = 0.0
        self._drawn = False

    # --- updates ----------------------------------------------------------------------
    def add(self, result: TaskResult) -> None:
        self.done += 1
        self.statuses[result.status] += 1
        self.durations.append(result.duration_s)
        if result.container:
            self.containers.add(result.container)
            self.container_tasks += 1
            self.recycled += result.recycled
        self._maybe_draw()

    def bad_line(self) -> None:
        self.bad_lines += 1

    @property
    def failures(self) -> int:
        return self.done - self.statuses["ok"]

    def _maybe_draw(self, force: bool = False) -> None:
        if not self.live:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < self.interval_s:
            return
        self._last_draw = now
        self.stream.write("\r\x1b[2K" + self.line(now))
        self.stream.flush()
        self._drawn = True

    def line(self, now: float | None = None) -> str:
        """The status line: ``[#####.....] 120/500  8.1/s  fail 3  ETA 47s``."""
        elapsed = max((now or time.monotonic()) - self.started, 1e-9)
        rate = self.done / elapsed
        parts = []
        if self.total:
            width = 24
            filled = min(width, int(width * self.done / self.total))
            parts.append("[" + "#" * filled + "." * (width - filled) + "]")
            parts.append(f"{self.done}/{self.total}")
        else:
            parts.append(f"{self.done} done")
        parts.append(f"{rate:.1f}/s")
        parts.append(f"fail {self.failures}")
        if self.total and rate > 0 and self.done < self.total:
            parts.append(f"ETA {_duration((self.total - self.done) / rate)}")
        return "  ".join(parts)

    def finish(self) -> None:
        """Clear the live line (before the summary is printed)."""
        if self.live and self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()

    # --- summary ------------------------------------------------------------------------
    def summary(self, *, interrupted: bool = False) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        lines = [
            f"{'interrupted after' if interrupted else 'finished'} {self.done} task(s) in {elapsed:.1f}s"
            f" ({self.done / elapsed:.2f} tasks/s)"
            + (f"; {self.skipped} skipped (already in results)" if self.skipped else "")
        ]
        if self.durations:
            lines.append(
                f"task time p50 {percentile(self.durations, 50):.3f}s  p95 {percentile(self.durations, 95):.3f}s"
                f"  max {max(self.durations):.3f}s"
            )
        kinds = ", ".join(
            f"{k} {self.statuses[k]}" for k in ("ok", "failed", "timeout", "error") if self.statuses[k]
        )
        if kinds:
            lines.append(f"status: {kinds}")
        if self.bad_lines:
            lines.append(f"skipped {self.bad_lines} invalid task line(s) (see messages above)")
        if self.containers:
            lines.append(self.container_line())
        return "\n".join(lines)

    def container_line(self) -> str:
        """``docker: 9 container(s) for 500 task(s) (491 on recycled containers), 1 discarded after a failed reset``."""
        line = (
            f"docker: {len(self.containers)} container(s) for {self.container_tasks} task(s)"
            f" ({self.recycled} on recycled containers)"
        )
        if self.pool is not None:
            line += f", {self.pool.discarded} discarded after a failed reset"
            if self.pool.not_reusable:
                line += f", {self.pool.not_reusable} not reusable"
            if self.pool.reasons:
                reasons = self.pool.reasons.most_common(3)  # they may name what a task left in its container
                line += " [" + "; ".join(f"{terminal_safe(r)} ({n})" for r, n in reasons) + "]"
        return line
