"""Run tasks concurrently on this machine: a three-stage pipeline with bounded memory.

Each task is one `TaskRun` (its own sandbox, private temp dir) going through
prepare -> execute -> teardown inside a single asyncio task. Three limits
shape the pipeline:

* ``concurrency`` — how many tasks execute commands at once;
* ``prestart`` — how many more sandboxes may be started ahead of need, so a
  container is already up when an execution slot frees (docker start costs
  hundreds of ms; local/bwrap almost nothing);
* docker containers come from a `SandboxPool` of at most ``concurrency +
  prestart`` containers: with ``reuse="auto"`` (default) a finished task's
  container is reset, verified pristine and handed to the next task with an
  identical sandbox (the reset happens in the teardown stage, off the
  critical path); with ``reuse="never"`` each container serves exactly one
  task and is destroyed after it;
* teardown happens outside the execution slot *and* outside the window: a
  finished task hands its window slot on before its sandbox is removed, so
  the next task's sandbox starts while the previous container is being torn
  down. A separate limit (``window`` again) bounds the sandboxes being torn
  down at once. Teardown still runs inside the runner's task group: the run
  does not end, and Ctrl-C does not return, before every sandbox is gone.

The window (``concurrency + prestart``) bounds live sandboxes, temp dirs and
buffered results (at most twice the window exist while teardowns lag), and
tasks are pulled lazily from the iterable, so memory stays flat whatever the
size of the task file.
"""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
from anyio.abc import ObjectReceiveStream

from sandbox import ResourceLimits
from shellrt.batch.output_budget import RunOutputBudget
from shellrt.batch.pool import PoolStats, ReuseMode, SandboxPool
from shellrt.batch.results import TaskResult
from shellrt.batch.tasks import Task
from shellrt.batch.worker import NodeInfo, TaskRun, WorkerSettings

__all__ = ["LocalRunner", "TaskSource", "default_concurrency"]

TaskSource = Iterable[Task] | AsyncIterable[Task]


def default_concurrency(backend: str = "local", cpus: int | None = None) -> int:
    """Tasks executing at once by default.

    Shell tasks spend much of their time in process start-up and I/O, so two
    per core keeps the cores busy; docker adds a daemon round-trip per container
    and is capped so dockerd itself does not become the bottleneck.
    """
    cores = cpus or os.cpu_count() or 1
    if backend == "docker":
        return max(2, min(2 * cores, 16))
    return max(2, min(2 * cores, 64))


async def aiter_tasks(tasks: TaskSource) -> AsyncIterator[Task]:
    """Iterate a sync or async task source (pulling lazily)."""
    if isinstance(tasks, AsyncIterable):
        async for task in tasks:
            yield task
    else:
        for task in tasks:
            yield task


class LocalRunner:
    """Concurrent runner on this machine; see the module docstring for the pipeline."""

    def __init__(
        self,
        *,
        concurrency: int | None = None,
        prestart: int | None = None,
        artifacts_dir: Path | None = None,
        scratch_dir: Path | None = None,
        node: NodeInfo | None = None,
        backend_hint: str = "local",
        reuse: ReuseMode = "auto",
        hidden_paths: tuple[Path, ...] = (),
        dataset_paths: tuple[Path, ...] = (),
        default_limits: ResourceLimits | None = None,
        output_budget: int | None = None,
    ) -> None:
        self.concurrency = concurrency or default_concurrency(backend_hint)
        self.reuse: ReuseMode = reuse
        #: What the container pool did in the last `open` (None before the first).
        self.pool_stats: PoolStats | None = None
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.prestart = self.concurrency if prestart is None else max(0, prestart)
        #: The artifacts directory is this runner's own temp directory (none was given): removed
        #: when a run leaves it empty, made afresh for the next run.
        self._own_artifacts = artifacts_dir is None
        #: Runs (`open`) under way: only the last to end may remove the directory the others share.
        self._open_runs = 0
        self.settings = WorkerSettings(
            artifacts_dir=artifacts_dir or _default_artifacts(),
            node=node or NodeInfo.local(),
            scratch_dir=scratch_dir,
            hidden_paths=hidden_paths,
            dataset_paths=dataset_paths,
            default_limits=default_limits or ResourceLimits(),
            output_budget=RunOutputBudget(output_budget) if output_budget is not None else None,
        )

    @asynccontextmanager
    async def open(self, tasks: TaskSource) -> AsyncIterator[ObjectReceiveStream[TaskResult]]:
        """Start running ``tasks``; yield a stream of results in completion order.

        Leaving the block early (break, error, cancellation) cancels what is
        running and tears every sandbox down before it returns.
        """
        if self._own_artifacts and self._open_runs == 0 and not self.settings.artifacts_dir.is_dir():
            self.settings = replace(self.settings, artifacts_dir=_default_artifacts())
        self._open_runs += 1
        try:
            async with self._run(tasks) as results:
                yield results
        finally:
            self._open_runs -= 1
            if self._own_artifacts and self._open_runs == 0:
                # The last run out: another's tasks may still write there, and the sandboxes of
                # theirs hide it (a mask is a mount: removing its directory took it away; round 56).
                _remove_if_empty(self.settings.artifacts_dir)

    @asynccontextmanager
    async def _run(self, tasks: TaskSource) -> AsyncIterator[ObjectReceiveStream[TaskResult]]:
        """One run of `open`."""
        window = self.concurrency + self.prestart
        send, receive = anyio.create_memory_object_stream[TaskResult](max_buffer_size=window)
        slots = anyio.Semaphore(window)
        execute = anyio.CapacityLimiter(self.concurrency)
        starting = anyio.CapacityLimiter(max(1, math.ceil(window / 2)))
        tearing = anyio.Semaphore(window)
        pool = SandboxPool(capacity=window, reuse=self.reuse)
        budget = self.settings.output_budget
        if budget is not None and budget.limit is not None:
            budget.task_share = max(1, budget.limit // window)  # one task cannot starve its neighbours
        self.pool_stats = pool.stats

        async def one(task: Task, send_clone: anyio.abc.ObjectSendStream[TaskResult]) -> None:
            # The clone stays open through teardown: the result stream ends (and the
            # run with it) only once every sandbox is removed or back in the pool.
            async with send_clone:
                run: TaskRun | None = None
                try:
                    run = TaskRun(task, self.settings, pool)
                    async with starting:
                        await run.prepare()
                    async with execute:
                        result = await run.execute()
                    await send_clone.send(result)
                finally:
                    await self._teardown(run, tearing, slots)

        async def feed(tg: anyio.abc.TaskGroup) -> None:
            async with send:
                async for task in aiter_tasks(tasks):
                    await slots.acquire()
                    tg.start_soon(one, task, send.clone())

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(feed, tg)
                try:
                    async with receive:
                        yield receive
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await pool.aclose()  # shielded: no container outlives the run, Ctrl-C included

    @staticmethod
    async def _teardown(run: TaskRun | None, tearing: anyio.Semaphore, slots: anyio.Semaphore) -> None:
        """Hand the window slot on, then remove the sandbox (always, cancellation included)."""
        acquired = False
        try:
            if run is not None:
                await tearing.acquire()  # back-pressure: at most a window of sandboxes in removal
                acquired = True
        finally:
            slots.release()  # the next task may start its sandbox while this one is removed
            try:
                if run is not None:
                    await run.close()
            finally:
                if acquired:
                    tearing.release()


def _remove_if_empty(directory: Path) -> None:
    """Remove a run's own temp artifacts directory that nothing was written to: one empty
    ``/tmp/shellrt-batch-artifacts-*`` was left behind by every run that collected nothing."""
    try:
        directory.rmdir()
    except OSError:
        pass  # holds a task's outputs (kept for the caller), or already gone


def _default_artifacts() -> Path:
    import tempfile

    from sandbox._scratch import HOLDER_BASE

    # Fresh and 0700, right in /tmp: a predictable name under a shared subdirectory (once
    # /tmp/shellrt-batch/artifacts-<pid>) could be another local user's, or a symlink of theirs. /tmp,
    # not TMPDIR: every bwrap sandbox of every process hides /tmp, another process's TMPDIR it does
    # not (red team round 40, tenants2).
    return Path(tempfile.mkdtemp(prefix="shellrt-batch-artifacts-", dir=HOLDER_BASE))
