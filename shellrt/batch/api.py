"""The Python API: ``shellrt.batch.run(tasks, ...)`` yields results as tasks finish.

    async with shellrt.batch.run(tasks, concurrency=8) as results:
        async for result in results:
            print(result.id, result.status)

    # or, when you always read to the end:
    async for result in shellrt.batch.run(tasks): ...

    results = shellrt.batch.run_sync(tasks)          # blocking helper

The same call runs on a Ray cluster with ``ray_address=...``. With ``out``,
every result is also appended (fsynced) to a JSONL file before it is yielded,
and ``resume=True`` skips the ids already there (a task whose line says ``error`` runs again,
its new line replacing the old).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import ObjectReceiveStream

from sandbox import ResourceLimits
from shellrt.batch.ceilings import machine_ceilings
from shellrt.batch.dataset_masks import dataset_masks, workspace_sources
from shellrt.batch.floor import TaskFloor, TaskRefused, private_workspaces_allowed
from shellrt.batch.local import LocalRunner, TaskSource, aiter_tasks, default_concurrency
from shellrt.batch.output_budget import machine_output_budget
from shellrt.batch.pool import PoolStats, ReuseMode
from shellrt.batch.results import ResultWriter, TaskResult, drop_error_lines, read_finished_ids
from shellrt.batch.tasks import Task

__all__ = ["BatchRun", "run", "run_sync"]

#: Limits from the machine (`shellrt.batch.ceilings`), an output budget from the free disk.
Machine = Literal["machine"]


class BatchRun:
    """A batch in progress: an async context manager AND an async iterator of `TaskResult`.

    Prefer ``async with run(...) as results`` when you may stop early: leaving
    the block tears every sandbox down before it returns. Iterating directly is
    fine when you read to the end.
    """

    def __init__(
        self,
        tasks: TaskSource,
        *,
        concurrency: int | None = None,
        ray_address: str | None = None,
        out: str | os.PathLike[str] | None = None,
        resume: bool = False,
        artifacts_dir: str | os.PathLike[str] | None = None,
        prestart: int | None = None,
        backend_hint: str = "local",
        ray_options: dict[str, Any] | None = None,
        reuse: ReuseMode = "auto",
        hidden_paths: Iterable[str | os.PathLike[str]] = (),
        dataset_paths: Iterable[str | os.PathLike[str]] | None = None,
        floor: TaskFloor | None = None,
        on_refused: Callable[[Task, TaskRefused], None] | None = None,
        default_limits: ResourceLimits | Machine | None = "machine",
        output_budget: int | Machine | None = "machine",
    ) -> None:
        self._tasks = tasks
        slots = concurrency or default_concurrency(backend_hint)
        if default_limits == "machine" and ray_address is None:
            default_limits = machine_ceilings(slots)
        unset = floor is not None and not floor.default_limits.model_dump(exclude_none=True)
        if floor is not None and unset and isinstance(default_limits, ResourceLimits):
            floor = dataclasses.replace(floor, default_limits=default_limits)  # a task may not ask more
        #: On Ray the ceilings are each node's share, unknown here: each node refuses a task asking
        #: more than its own (the local floor's check, red team round 16).
        self._capped_limits: tuple[str, ...] = ()
        if floor is not None and unset and default_limits == "machine" and not floor.allow_task_limits:
            explicit = floor.limits.model_dump(exclude_none=True)
            self._capped_limits = tuple(k for k in ("memory_bytes", "pids", "tmp_bytes") if k not in explicit)
        self._default_limits = default_limits
        self._output_budget = output_budget
        self._floor = floor
        self._on_refused = on_refused
        #: Ids ``floor`` refused (never run), with the reason.
        self.refused: dict[str, str] = {}
        if dataset_paths is None:  # a list names its workspaces; a lazy source needs them given
            sources = workspace_sources(tasks) if isinstance(tasks, list | tuple) else set()
            dataset_paths = dataset_masks(sources)
        self._dataset = tuple(Path(p) for p in dataset_paths)
        self._reuse: ReuseMode = reuse
        self._runner: LocalRunner | None = None
        self._concurrency = concurrency
        self._ray_address = ray_address
        self._out = Path(out) if out is not None else None
        self._resume = resume
        self._artifacts = Path(artifacts_dir) if artifacts_dir is not None else None
        if self._artifacts is None and self._out is not None:
            self._artifacts = self._out.with_name(self._out.name + ".artifacts")
        self._prestart = prestart
        #: Masked in every task's sandbox (the artifacts directory always is): bwrap shows the
        #: host, and the results file holds every other task's output previews.
        self._hidden = tuple(Path(p).absolute() for p in (*hidden_paths, *([out] if out is not None else [])))
        if self._floor is not None and not self._floor.copy_leaves_out:
            own = (*self._hidden, *([self._artifacts] if self._artifacts is not None else []))
            self._floor = dataclasses.replace(self._floor, copy_leaves_out=tuple(map(str, own)))
        self._backend_hint = backend_hint
        self._ray_options = dict(ray_options or {})
        self._cm: AbstractAsyncContextManager[AsyncIterator[TaskResult]] | None = None
        #: Ids skipped because ``resume`` found them in ``out``.
        self.skipped: set[str] = set()

    @property
    def pool_stats(self) -> PoolStats | None:
        """Docker container recycling of a local run: created, recycled, discarded (None with Ray)."""
        return self._runner.pool_stats if self._runner is not None else None

    # --- context-manager form -------------------------------------------------------
    async def __aenter__(self) -> AsyncIterator[TaskResult]:
        self._cm = self._open()
        return await self._cm.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._cm is not None
        return await self._cm.__aexit__(exc_type, exc, tb)

    # --- iterator form ------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[TaskResult]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[TaskResult]:
        async with self._open() as results:
            async for result in results:
                yield result

    # --- machinery -----------------------------------------------------------------------
    def _source(self) -> TaskSource:
        done = read_finished_ids(self._out) if self._resume and self._out is not None else set()
        seen: set[bytes] = set()  # digests: a million 200-character ids held 265 MiB as text, 78 as these

        async def remaining() -> AsyncIterator[Task]:
            async for task in aiter_tasks(self._tasks):
                key = hashlib.blake2b(task.id.encode(), digest_size=16).digest()
                if key in seen:  # a list or a lazy source: the task file's loader refuses it
                    self._refuse(task, _repeated(task))
                    continue
                seen.add(key)
                if task.id in done:
                    self.skipped.add(task.id)
                    continue
                if self._floor is not None:
                    try:
                        if task.workspace is None:
                            task = self._floor.apply(task)
                        else:  # it walks the workspace source once (`TaskFloor._check_workspace`)
                            task = await anyio.to_thread.run_sync(self._floor.apply, task)
                    except (OSError, RuntimeError, ValueError) as exc:  # TaskRefused is a ValueError
                        refusal = exc if isinstance(exc, TaskRefused) else _unjudged(task, exc)
                        self.refused[task.id] = str(refusal)
                        self._refuse(task, refusal)
                        continue
                yield task

        return remaining()

    def _refuse(self, task: Task, refusal: TaskRefused) -> None:
        if self._on_refused is not None:
            self._on_refused(task, refusal)

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[AsyncIterator[TaskResult]]:
        if self._resume and self._out is not None:  # those tasks run again, and write new lines
            await anyio.to_thread.run_sync(drop_error_lines, self._out)
        writer = ResultWriter(self._out) if self._out is not None else None
        try:
            async with self._runner_open(self._source()) as stream:
                yield _written(stream, writer)
        finally:
            if writer is not None:
                writer.close()

    def _runner_open(
        self, source: TaskSource
    ) -> AbstractAsyncContextManager[ObjectReceiveStream[TaskResult]]:
        if self._ray_address is not None:
            from shellrt.batch.ray_runner import RayRunner

            options: dict[str, Any] = {
                "default_limits": self._default_limits,
                "output_budget": self._output_budget,
                "reuse": self._reuse,
                "hidden_paths": self._hidden,
                "dataset_paths": self._dataset,
                "capped_limits": self._capped_limits,
                "private_workspaces": private_workspaces_allowed(self._floor),
                **self._ray_options,
            }
            return RayRunner(self._ray_address, artifacts_dir=self._artifacts, **options).open(source)
        self._runner = LocalRunner(
            concurrency=self._concurrency,
            prestart=self._prestart,
            artifacts_dir=self._artifacts,
            backend_hint=self._backend_hint,
            reuse=self._reuse,
            hidden_paths=self._hidden,
            dataset_paths=self._dataset,
            default_limits=self._default_limits if isinstance(self._default_limits, ResourceLimits) else None,
            output_budget=self._budget(),
        )
        return self._runner.open(source)

    def _budget(self) -> int | None:
        if self._output_budget != "machine":
            return self._output_budget
        spools = Path(tempfile.gettempdir())  # the tasks' private directories
        return machine_output_budget([self._artifacts or spools, spools])


async def _written(
    stream: ObjectReceiveStream[TaskResult], writer: ResultWriter | None
) -> AsyncIterator[TaskResult]:
    async for result in stream:
        if writer is not None:
            writer.write(result)
        yield result


def run(
    tasks: TaskSource,
    *,
    concurrency: int | None = None,
    ray_address: str | None = None,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    artifacts_dir: str | os.PathLike[str] | None = None,
    prestart: int | None = None,
    backend_hint: str = "local",
    ray_options: dict[str, Any] | None = None,
    reuse: ReuseMode = "auto",
    hidden_paths: Iterable[str | os.PathLike[str]] = (),
    dataset_paths: Iterable[str | os.PathLike[str]] | None = None,
    floor: TaskFloor | None = None,
    on_refused: Callable[[Task, TaskRefused], None] | None = None,
    default_limits: ResourceLimits | Machine | None = "machine",
    output_budget: int | Machine | None = "machine",
) -> BatchRun:
    """Run ``tasks`` (each in its own sandbox); results arrive in completion order.

    ``concurrency``: tasks executing at once on this machine (default from the
    cores and ``backend_hint``; with Ray the cluster's sandbox slots decide).
    ``artifacts_dir``: where full outputs and exported files go (default
    ``<out>.artifacts``, or a temp dir). ``ray_options`` go to `RayRunner`.
    ``reuse``: ``auto`` (default) recycles a docker container for the next
    task with an identical sandbox after a verified reset (`shellrt.batch.pool`);
    ``never`` gives every task a brand-new container. ``hidden_paths``: host paths masked in
    every task's sandbox besides ``out`` and the artifacts directory (always masked), e.g. the
    task file. ``dataset_paths``: host paths masked in every task's sandbox yet still copied into
    the workspace that names them (default: the workspace sources of ``tasks`` when it is a list
    or tuple; give them for a lazy source, e.g. `dataset_masks(scan_task_file(path), path)`).
    ``floor``: the operator's `TaskFloor` for tasks someone else wrote (``TaskFloor()`` is
    ``shellrt batch run`` without flags: no ``local``, no trust, no widening backend keys or
    network, tool_use in at most ``acceptEdits``; ``TaskFloor.trusting()`` lets the task file
    choose); a task above it is not run: ``on_refused`` sees it and ``BatchRun.refused`` keeps its
    reason. ``floor=None`` (default): the tasks are the caller's own, built in code, and run as
    they say. ``default_limits``: limits a task that sets none gets where its backend enforces
    them (``"machine"``: this machine's share per concurrent task, `shellrt.batch.ceilings`; on
    Ray each node's own); with a floor, a task may not ask for more. ``output_budget``: bytes of
    output and collected files the whole run may hold on disk at once (``"machine"``: half the
    free space; None: unbounded).
    """
    return BatchRun(
        tasks,
        concurrency=concurrency,
        ray_address=ray_address,
        out=out,
        resume=resume,
        artifacts_dir=artifacts_dir,
        prestart=prestart,
        backend_hint=backend_hint,
        ray_options=ray_options,
        reuse=reuse,
        hidden_paths=hidden_paths,
        dataset_paths=dataset_paths,
        floor=floor,
        on_refused=on_refused,
        default_limits=default_limits,
        output_budget=output_budget,
    )


def run_sync(
    tasks: TaskSource,
    *,
    on_result: Callable[[TaskResult], None] | None = None,
    **options: Any,
) -> list[TaskResult]:
    """Blocking helper: run everything, return the results (in completion order).

    ``on_result`` sees each result as it finishes. Not for use inside a running event loop.
    """

    async def main() -> list[TaskResult]:
        collected: list[TaskResult] = []
        async with run(tasks, **options) as results:
            async for result in results:
                collected.append(result)
                if on_result is not None:
                    on_result(result)
        return collected

    return anyio.run(main)


def _repeated(task: Task) -> TaskRefused:
    """The refusal of a second task of one id in one run: both ran at once into one
    ``<artifacts>/<id>``, each writing over and beside the other's outputs, and the results file held
    the id twice (``--resume`` then kept either). Only the first runs (red team round 38)."""
    return TaskRefused(
        f"task {task.id}: repeats the id of an earlier task of this run, whose outputs go to the same "
        "place; not run. Give every task its own id"
    )


def _unjudged(task: Task, exc: Exception) -> TaskRefused:
    """The refusal of a task the floor could not judge (its workspace: a NUL byte, a loop): it
    raised out of the run's task groups and stopped every task (red team round 37). Fail closed."""
    return TaskRefused(
        f"task {task.id}: its workspace {task.workspace} could not be judged on this host "
        f"({type(exc).__name__}: {exc}); name a directory of this task's files"
    )
