"""Batch harness: thousands of tasks, each in a fresh sandbox, on one machine or a Ray cluster.

``run`` / ``run_sync`` are the Python API; ``shellrt batch run`` the CLI
(docs/batch.md). The Ray backend lives in `shellrt.batch.ray_runner` and is
imported only when a Ray address is given.
"""

from __future__ import annotations

from shellrt.batch.api import BatchRun, run, run_sync
from shellrt.batch.dataset_masks import dataset_masks, scan_task_file
from shellrt.batch.floor import TaskFloor, TaskRefused
from shellrt.batch.loader import TaskLineError, iter_tasks, load_tasks
from shellrt.batch.local import LocalRunner, default_concurrency
from shellrt.batch.results import CommandOutcome, ResultWriter, TaskResult, TaskStatus, read_finished_ids
from shellrt.batch.tasks import CollectSpec, CommandSpec, Task, TaskSandbox
from shellrt.batch.worker import NodeInfo, WorkerSettings, run_task

__all__ = [
    "BatchRun",
    "CollectSpec",
    "CommandOutcome",
    "CommandSpec",
    "LocalRunner",
    "NodeInfo",
    "ResultWriter",
    "Task",
    "TaskFloor",
    "TaskLineError",
    "TaskRefused",
    "TaskResult",
    "TaskSandbox",
    "TaskStatus",
    "WorkerSettings",
    "dataset_masks",
    "default_concurrency",
    "iter_tasks",
    "load_tasks",
    "read_finished_ids",
    "run",
    "run_sync",
    "run_task",
    "scan_task_file",
]
