"""Run ONE task in its own sandbox: prepare, execute, collect, tear down.

Shared by the local runner and the Ray node actor, so a task behaves the same
on one machine and on a cluster. Everything a task creates lives under one
private temp directory (its workspace copy and the supervisor's output spool),
and `TaskRun` removes it — with the sandbox and every process — whatever
happened, cancellation included. Only what ``collect`` asks for outlives the
task: previews in the result, full outputs and exported files under
``<artifacts_dir>/<task id>/``.

With a `SandboxPool` (the local runner always passes one) a docker task may
run on a recycled container — reset and verified pristine after its previous
task (see `shellrt.batch.pool`); the result says so (``container``,
``container_use``, ``recycled``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
import logging
import math
import os
import shutil
import socket
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from sandbox import (
    BwrapConfig,
    DockerConfig,
    ResourceLimits,
    SandboxBackend,
    SandboxConfig,
    SandboxPolicy,
    WorkspaceExporter,
)
from sandbox._anchoredcopy import copy_workspace  # by descriptors (red team round 14)
from sandbox.confine import open_beneath
from sandbox.factory import create_backend
from shellrt.batch.artifacts_dir import claim_artifacts_dir, start_clean
from shellrt.batch.ceilings import with_default_limits
from shellrt.batch.checked import checked_task
from shellrt.batch.dataset_masks import unmaskable_source, with_dataset_masks
from shellrt.batch.output_budget import RunOutputBudget, TaskQuota
from shellrt.batch.pool import Lease, SandboxPool
from shellrt.batch.results import CommandOutcome, TaskResult, TaskStatus
from shellrt.batch.tasks import CommandSpec, Task
from shellrt.protocol import ToolUseBlock
from shellrt.protocol.notes import cut_tail, note
from shellrt.runtime.sandbox_policy import derive_policy
from shellrt.runtime.session_mask import state_dirs_anywhere
from shellrt.supervisor.mark_owner import owned_mark

__all__ = ["NodeInfo", "TaskRun", "WorkerSettings", "run_task"]

log = logging.getLogger("shellrt.batch")


@dataclass(frozen=True)
class NodeInfo:
    """Where tasks run: recorded in every result."""

    node: str
    hostname: str
    label: str | None = None

    @classmethod
    def local(cls) -> NodeInfo:
        host = socket.gethostname()
        return cls(node=f"local:{host}", hostname=host)


@dataclass(frozen=True)
class WorkerSettings:
    """Per-process settings of whoever runs tasks (the local runner or a Ray node actor)."""

    #: Full outputs and exported files go under ``<artifacts_dir>/<task id>/``.
    artifacts_dir: Path
    node: NodeInfo = field(default_factory=NodeInfo.local)
    #: Parent of the per-task temp directories (None: the system temp dir).
    scratch_dir: Path | None = None
    #: Host paths no task's sandbox may read besides ``artifacts_dir`` (always hidden): the
    #: results file, the task file. bwrap shows the host read-only, and these hold every other
    #: task's output previews, commands and ``env``.
    hidden_paths: tuple[Path, ...] = ()
    #: The run's data (`shellrt.batch.dataset_masks`): every task's workspace source and the task
    #: file's tree. Masked in every sandbox, yet still copied into the workspace that names them.
    dataset_paths: tuple[Path, ...] = ()
    #: Limits a task that sets none gets where its backend enforces them (`shellrt.batch.ceilings`).
    default_limits: ResourceLimits = field(default_factory=ResourceLimits)
    #: Output bytes the whole run may hold on disk at once (`shellrt.batch.output_budget`); None: unbounded.
    output_budget: RunOutputBudget | None = None


def _sandbox_config(task: Task) -> SandboxConfig:
    config = task.sandbox.backend
    if isinstance(config, DockerConfig) and config.workspace_mode != "copy":
        # Each task owns a throwaway copy anyway; copy mode keeps the container off the host fs.
        config = config.model_copy(update={"workspace_mode": "copy"})
    if (
        isinstance(config, BwrapConfig)
        and "persistent" not in config.model_fields_set
        and len(task.commands) == 1
        and not task.sandbox.allowed_domains
        and task.sandbox.network != "proxied"  # the proxy's bridge lives in the session zygote
    ):
        # One command: a session zygote (~25 ms to start) cannot pay off, and with a single
        # command nothing could tell the two modes apart. Set `persistent` to choose.
        config = config.model_copy(update={"persistent": False})
    return config


def _scratch_shown_to_other_tasks(config: SandboxConfig, scratch: Path | None) -> str | None:
    """Why ``scratch`` cannot hold a bwrap task's private directory, or None when it can.

    bwrap shows the host read-only, and a non-root caller's tasks all run as its uid, so the
    0700 per-task directories keep no task out of another's: a task read every concurrently
    running task's workspace copy (its hidden tests, its answers) and session spools below a
    ``scratch_dir`` outside the temp dir (red team round 20). Only the places every bwrap sandbox
    of *every* process replaces with its own are accepted: /tmp and the run directories. This
    process's ``TMPDIR`` (and ``XDG_RUNTIME_DIR``) are hidden from this process's sandboxes only,
    and another shellrt process of the uid read the copies there (red team round 40, tenants2); a
    root caller's tasks run as leased uids, which cannot enter root's 0700 directories.
    """
    if scratch is None or not isinstance(config, BwrapConfig) or os.geteuid() == 0:
        return None
    from sandbox._hostsockets import RUN_DIRS

    real = Path(os.path.realpath(scratch))
    hidden = [Path(os.path.realpath(p)) for p in ("/tmp", *RUN_DIRS)]
    if any(real == h or h in real.parents for h in hidden):
        return None
    return (
        f"scratch_dir {scratch} is visible to every bwrap task of this uid (they see the host "
        "read-only: each could read this task's workspace copy, hidden tests included, and outputs); "
        "use a directory under /tmp instead (every bwrap sandbox of every process hides /tmp; TMPDIR "
        "is hidden from this process's sandboxes only), or run shellrt as root (each task gets its own uid)"
    )


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """Head and tail of ``text`` within ``limit`` characters, around a note of ours; the tail's partial
    first line marked when it reads like one (a harness or a grader reads it: round 31)."""
    if len(text) <= limit:
        return text, False
    half = max(limit // 2, 1)
    omitted = note(f"... {len(text) - 2 * half} characters omitted ...")
    return f"{text[:half]}\n{omitted}\n{cut_tail(text, len(text) - half)}", True


class TaskRun:
    """One task's sandbox and private directory; `prepare` / `execute` / `close` in one asyncio task.

    Split in phases so a runner can start sandboxes ahead of need and tear them
    down off the critical path, while each task still gets a fresh sandbox.
    """

    def __init__(self, task: Task, settings: WorkerSettings, pool: SandboxPool | None = None) -> None:
        self.task = task
        self.settings = settings
        self.pool = pool
        self._lease: Lease | None = None
        #: `execute` ran to its end: the sandbox may be recycled.
        self._finished = False
        self.started_at = time.time()
        self._t0 = time.monotonic()
        self.setup_s = 0.0
        self.error: str | None = None
        self.backend: SandboxBackend | None = None
        self._stack = AsyncExitStack()
        self._tmp: Path | None = None
        self._owned_tmp: Any = None
        self._supervisor: Any = None
        self._runtime: Any = None
        self._workspace: Path | None = None
        #: This task's spool quota (it takes from the run's output budget) and the bytes it kept.
        self._quota: TaskQuota | None = None
        self._kept = 0
        #: Why a command's output was not saved whole because the run's budget ran out (other
        #: tasks' use of it): the task is then `error`, never a `failed`/`ok` verdict (round 23).
        self._run_lost: str | None = None

    @property
    def artifacts(self) -> Path:
        return self.settings.artifacts_dir / self.task.id

    # --- phases -----------------------------------------------------------------------
    async def prepare(self) -> None:
        """Copy the workspace in and start the sandbox; failures become ``self.error``."""
        self.started_at = time.time()
        self._t0 = time.monotonic()
        try:
            self.task = checked_task(self.task)  # built by model_construct? (round 35)
        except ValueError as exc:
            self.error = str(exc)
            self.setup_s = time.monotonic() - self._t0
            return
        try:
            await self._prepare()
        except Exception as exc:
            self.error = f"sandbox setup failed: {type(exc).__name__}: {exc}"
            log.debug("task %s setup failed", self.task.id, exc_info=True)
        self.setup_s = time.monotonic() - self._t0

    async def _prepare(self) -> None:
        from shellrt.supervisor import Supervisor

        task = self.task
        scratch = self.settings.scratch_dir
        if scratch is not None:
            scratch.mkdir(parents=True, exist_ok=True)
        from sandbox._scratch import OwnedDir, sweep_orphans

        if scratch is not None:  # the temp dir's own are swept by any sandbox start
            sweep_orphans("shellrt-batch-", scratch)
        # Locked while this process lives: after a SIGKILL the next start sweeps it.
        self._owned_tmp = OwnedDir(f"shellrt-batch-{task.id[:40]}-", scratch)
        self._tmp = self._owned_tmp.path
        self._stack.push_async_callback(self._remove_tmp)
        workspace = self._tmp / "workspace"
        # Made now, so the sandbox hides it from the start (a mask covers what exists).
        claim_artifacts_dir(self.settings.artifacts_dir)  # not another user's (red team round 27)
        await anyio.to_thread.run_sync(start_clean, self.artifacts)  # no earlier attempt's (round 38)
        own = self._own_files()
        if task.workspace is not None and self.settings.dataset_paths:
            why = unmaskable_source(task.workspace, scratch)
            if why is not None:
                raise PermissionError(f"workspace {why}")
        policy, _ = derive_policy(  # default masked secrets (a Runtime adds the Read deny rules)
            SandboxPolicy(
                workspace=workspace,
                network="proxied"
                if task.sandbox.allowed_domains and task.sandbox.network == "none"
                else task.sandbox.network,
                allowed_domains=task.sandbox.allowed_domains,
                denied_domains=task.sandbox.denied_domains,
                limits=task.sandbox.limits,
            ),
            masked_paths=[*sorted(own), *state_dirs_anywhere()],  # as a Runtime's
        )
        # Left out of the copy: the masks, never the run's data (a task's own source is one).
        hidden = [*own, *map(str, policy.read_denied)]
        policy = with_dataset_masks(policy, self.settings.dataset_paths)
        config = _sandbox_config(task)
        shared = _scratch_shown_to_other_tasks(config, scratch)
        if shared is not None:
            raise PermissionError(shared)
        policy = with_default_limits(policy, config, self.settings.default_limits)
        if task.workspace is not None:
            source, judged = task.workspace, task._source_identity
            try:
                await anyio.to_thread.run_sync(
                    lambda: copy_workspace(source, workspace, hidden, identity=judged)
                )
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"{exc} on {self.settings.node.hostname}") from exc
        else:
            workspace.mkdir()
        self._workspace = workspace
        half = max(task.collect.preview_bytes // 2, 1)
        if task.uses_tools:
            from shellrt.runtime import Runtime

            runtime = Runtime(
                workspace,
                sandbox=config,
                policy=policy,
                mode=task.permission_mode,
                allow=task.allow,
                trust_workspace=task.trust_workspace,
                session_dir=self._tmp / "session",
            )
            self._stack.push_async_callback(runtime.close)
            await runtime.start()
            self._runtime = runtime
            self.backend = runtime.backend
            self._supervisor = runtime.supervisor
        else:
            if self.pool is not None:
                lease = await self.pool.acquire(config, policy, reuse=task.sandbox.reuse != "never")
                self._lease = lease
                self._stack.push_async_callback(self._release)
                backend = lease.backend
            else:
                backend = create_backend(config, policy)
                self._stack.push_async_callback(backend.close)
                await backend.start()
            self.backend = backend
            budget = self.settings.output_budget
            if budget is not None:
                self._quota = TaskQuota(budget)
            self._supervisor = await self._stack.enter_async_context(
                Supervisor(
                    backend,
                    session_dir=self._tmp / "session",
                    preview_bytes=half,
                    quota=self._quota,
                    tree_session=owned_mark(),  # a killed worker's mark reads as ended (round 26)
                )
            )

    def _own_files(self) -> set[str]:
        """The run's own files (artifacts, results, task file): no task may see them, in its
        sandbox (masked) nor in its workspace copy (left out), e.g. with ``"workspace": "."``."""
        return {os.path.realpath(p) for p in (self.settings.artifacts_dir, *self.settings.hidden_paths)}

    async def execute(self) -> TaskResult:
        """Run the commands (unless setup failed), collect, and build the result."""
        exec_t0 = time.monotonic()  # waiting for a slot (prestarted sandboxes) is not task time
        outcomes: list[CommandOutcome] = []
        error = self.error
        room, label_room = RESULT_PREVIEW_BYTES, RESULT_LABEL_BYTES
        if error is None:
            specs = list(enumerate(self.task.command_specs()))
            command_t0 = exec_t0
            deadline = self.task.deadline
            # The whole task, not each command: a task file chose every timeout and their number.
            with anyio.move_on_after(math.inf if deadline is None else deadline) as scope:
                for index, spec in specs:
                    command_t0 = time.monotonic()
                    try:
                        outcome = await self._run_command(index, spec)
                    except Exception as exc:
                        error = f"command {index} could not run: {type(exc).__name__}: {exc}"
                        log.debug("task %s command %d failed to run", self.task.id, index, exc_info=True)
                        break
                    outcome, room = _bound_previews(outcome, room)
                    outcome, label_room = _bound_label(outcome, label_room)
                    outcomes.append(outcome)
                    if self.task.stop_on_failure and (outcome.is_error or outcome.timed_out):
                        break
            if scope.cancelled_caught and len(outcomes) < len(specs):
                index, spec = specs[len(outcomes)]
                label = f"{spec.name}:{spec.id}" if isinstance(spec, ToolUseBlock) else spec.label
                label = _fitting_label(label, label_room)
                outcomes.append(
                    CommandOutcome(
                        index=index,
                        command=label,
                        timed_out=True,
                        is_error=True,
                        duration_s=round(time.monotonic() - command_t0, 4),
                        output_lost=f"the task's deadline of {deadline:g}s ran out (--task-deadline); "
                        f"{len(specs) - index - 1} later command(s) did not run",
                    )
                )
        if error is None and self._run_lost is not None:
            error = self._run_lost  # every command ran (exit codes kept), but there is no verdict
        files: list[str] = []
        if error is None and self.task.collect.files:
            try:
                files = await self._export_files()
            except Exception as exc:
                error = f"exporting files failed: {type(exc).__name__}: {exc}"
        ended = time.time()
        keeps_artifacts = self.task.collect.output == "full" or bool(self.task.collect.files)
        container = self.backend.container_id if self.backend is not None else None
        use = self._lease.use if self._lease is not None else 1
        result = TaskResult(
            id=self.task.id,
            status=_status(error, outcomes),
            error=error,
            commands=outcomes,
            backend=self.task.sandbox.backend.type,
            node=self.settings.node.node,
            node_label=self.settings.node.label,
            hostname=self.settings.node.hostname,
            started_at=round(self.started_at, 3),
            ended_at=round(ended, 3),
            duration_s=round(self.setup_s + time.monotonic() - exec_t0, 4),
            setup_s=round(self.setup_s, 4),
            artifacts_dir=(
                str(self.artifacts)
                if keeps_artifacts and (error is None or error == self._run_lost)
                else None
            ),
            files=files,
            container=container[:12] if container else None,
            container_use=use if container else None,
            recycled=bool(container) and use > 1,
            network_refusals=[  # this task's (a recycled container's proxy saw earlier tasks' too)
                dataclasses.asdict(r)
                for r in (self.backend.network_refusals if self.backend is not None else [])
                if r.time >= self.started_at
            ],
        )
        self._finished = True
        return result

    async def close(self) -> None:
        """Kill everything, remove the container and the temp dir. Idempotent; never raises.

        Not wrapped in a shielded scope: the supervisor's task group entered in
        `prepare` must be exited from the scope it was entered in. Each step
        (supervisor, backend, runtime, temp dir) shields its own teardown.
        """
        try:
            await self._stack.aclose()
        except Exception:
            log.warning("task %s: teardown failed", self.task.id, exc_info=True)
        finally:
            self._give_back()

    def _give_back(self) -> None:
        """Return this task's spool bytes to the run's budget (the spools are gone; kept ones stay counted)."""
        quota, self._quota = self._quota, None
        if quota is not None:
            quota.budget.give_back(max(0, quota.taken - self._kept))

    # --- commands -----------------------------------------------------------------------
    async def _run_command(self, index: int, spec: CommandSpec | ToolUseBlock) -> CommandOutcome:
        if isinstance(spec, ToolUseBlock):
            return await self._run_tool_use(index, spec)
        collect = self.task.collect
        quota = self._quota
        if quota is not None:
            quota.clear_run_cut()
        # Kept apart, as a harness reads them (a model reads the merged stream: tool_use blocks).
        result = await self._supervisor.run(
            spec.argv if spec.argv is not None else spec.label,
            timeout_s=spec.timeout or self.task.timeout,
            env={**self.task.env, **spec.env},
            merge_stderr=False,
            cwd=spec.cwd or self.task.cwd,
            user=spec.user or self.task.user,
        )
        output_path = stderr_path = None
        output_lost = result.output_lost
        if collect.output == "full":
            output_path = await self._keep(Path(result.output_path), self.artifacts / f"cmd-{index}.out")
            short = _short(output_path, result.stdout_bytes)
            if result.stderr_path is not None:
                stderr_path = await self._keep(Path(result.stderr_path), self.artifacts / f"cmd-{index}.err")
                short = short or _short(stderr_path, result.stderr_bytes)
            if short and output_lost is None:
                # The previews were whole, so the supervisor saw no loss; the kept files are what a
                # harness reads: an empty cmd-N.out reported whole forged this task's output.
                output_lost = "output: the kept files hold fewer bytes than the command printed"
        # A harness's verdict: any non-zero exit fails. The Bash tool's "answers" (grep 1, diff 1,
        # test 1, judged by the last program's name) are how a benchmark's check says "failed", and
        # a repository's own ``./test`` matched them too (red team round 27).
        failed = result.timed_out or result.exit_code != 0
        broken = result.sandbox_failure or (
            "shellrt could not capture its output and killed it" if result.capture_failed else None
        )
        if broken is not None and self._run_lost is None:
            # Its exit code is the sandbox's or shellrt's, not the command's: no verdict (round 28).
            self._run_lost = (
                f"command {index} did not run to its own end, so this task has no verdict: {broken}"
            )
        if output_lost is not None and quota is not None and quota.run_cut:
            if collect.output == "full":  # the kept files are short: no verdict on this task
                self._run_lost = self._budget_loss(index, quota.budget)
            # else the previews come from memory (head and tail) and the spool is deleted anyway
        else:
            failed = failed or output_lost is not None  # its own per-command or per-task limit
        previews = collect.output != "none"
        return CommandOutcome(
            index=index,
            command=spec.label,
            exit_code=result.exit_code if collect.exit_codes else None,
            timed_out=result.timed_out,
            oom_killed=result.oom_killed,
            signal=result.signal,
            is_error=failed,
            duration_s=round(result.duration_s, 4),
            total_bytes=result.total_bytes,
            preview=result.preview if previews else None,
            truncated=result.truncated,
            output_path=output_path,
            stderr=result.stderr if previews else None,
            stdout_bytes=result.stdout_bytes,
            stderr_bytes=result.stderr_bytes,
            stdout_truncated=result.stdout_truncated,
            stderr_truncated=result.stderr_truncated,
            stderr_path=stderr_path,
            output_lost=output_lost,
        )

    def _budget_loss(self, index: int, budget: RunOutputBudget) -> str:
        """The task's error when the run's budget, not its own limits, cut command ``index``'s output."""
        return (
            f"command {index}'s output was not saved whole, so this task has no verdict: {budget.used_up()}. "
            "Its commands' exit codes are in the result; run it again with a larger budget (--resume runs every error task again)"
        )

    async def _keep(self, source: Path, dest: Path) -> str:
        """Move a spool file into the task's artifacts; its bytes stay counted in the run's budget."""
        kept = await _keep(source, dest)
        self._kept += os.stat(kept).st_size
        return kept

    async def _run_tool_use(self, index: int, block: ToolUseBlock) -> CommandOutcome:
        collect = self.task.collect
        t0 = time.monotonic()
        envelopes = None
        with anyio.move_on_after(self.task.timeout):
            envelopes = await self._runtime.run_envelopes([block])
        duration = round(time.monotonic() - t0, 4)
        label = f"{block.name}:{block.id}"
        if envelopes is None:
            return CommandOutcome(
                index=index, command=label, timed_out=True, is_error=True, duration_s=duration
            )
        envelope = envelopes[0]
        text: str = envelope.model.text()
        output_path: str | None = None
        output_lost: str | None = None
        if collect.output == "full":
            data = text.encode("utf-8", "replace")
            budget = self.settings.output_budget
            got = len(data) if budget is None else budget.take(len(data))
            if got == len(data):
                dest = self.artifacts / f"cmd-{index}.out"
                await anyio.to_thread.run_sync(lambda: _write_bytes(dest, data))
                output_path = str(dest)
            elif budget is not None:
                budget.give_back(got)  # all or nothing: a cut tool_result would mislead
                output_lost = budget.used_up()
                self._run_lost = self._budget_loss(index, budget)
        preview, truncated = _cut(text, collect.preview_bytes)
        return CommandOutcome(
            index=index,
            command=label,
            exit_code=envelope.exit_code if collect.exit_codes else None,
            is_error=envelope.is_error,
            duration_s=duration,
            total_bytes=len(text.encode("utf-8", "replace")),
            preview=None if collect.output == "none" else preview,
            truncated=truncated,
            output_path=output_path,
            output_lost=output_lost,
        )

    # --- files ------------------------------------------------------------------------------
    async def _export_files(self) -> list[str]:
        assert self._workspace is not None and self._tmp is not None
        root = self._workspace
        backend = self.backend
        if isinstance(backend, WorkspaceExporter):
            # The task's files live in the sandbox's own workspace. docker's copy mode keeps it in a
            # host directory the container mounts: collect from there, bounded like any other
            # (exporting the whole workspace first wrote every byte of it to the host, sparse files
            # expanded, whatever ``max_bytes`` said: red team round 9). Else fetch it out first.
            own = backend.to_host_path(backend.workspace)
            if own is not None and own.is_dir() and not own.is_symlink():
                root = own
            else:
                root = self._tmp / "exported"
                await backend.export_workspace(root)
        dest = self.artifacts / "files"
        patterns, wanted = self.task.collect.files, self.task.collect.max_bytes
        run_budget = self.settings.output_budget
        if run_budget is None:
            return await anyio.to_thread.run_sync(lambda: _copy_matches(root, patterns, dest, wanted))
        cap, why = wanted, run_budget.used_up()
        share = run_budget.task_share
        if share is not None:  # what its spools hold counts: one task never holds more than its share
            room = max(0, share - (self._quota.taken if self._quota is not None else 0))
            if room < cap:
                cap, why = (
                    room,
                    (
                        f"this task's share of the run's output budget ({share:,} bytes: --output-budget "
                        "divided by the tasks that run at once) is used up"
                    ),
                )
        reserved = run_budget.take(cap)  # given back, but for what was copied, below
        copied: list[int] = [0]

        charged = [0]

        def charge(rel: str, extra: int) -> None:  # inodes: kept for the run like the bytes
            spare = max(0, reserved - copied[0] - charged[0])  # this collection's own reservation first
            charged[0] += min(spare, extra)
            more = extra - min(spare, extra)
            got = run_budget.take(more) if more else 0
            if got < more:
                run_budget.give_back(got)
                raise CollectTooLargeError(
                    f"collect.files at {rel!r} (each file and directory counts at least "
                    f"{_INODE_COST:,} bytes): {run_budget.used_up()}"
                )

        try:
            return await anyio.to_thread.run_sync(
                lambda: (
                    _copy_matches(root, patterns, dest, reserved, copied, why, charge)
                    if reserved < wanted
                    else _copy_matches(root, patterns, dest, reserved, copied, charge=charge)
                )
            )
        finally:
            held = copied[0] + charged[0]  # sizes may have filled what the early inodes used
            if held > reserved:
                run_budget.take(held - reserved)
            else:
                run_budget.give_back(reserved - held)

    async def _release(self) -> None:
        if self.pool is not None and self._lease is not None:
            await self.pool.release(self._lease, reusable=self._finished)

    async def _remove_tmp(self) -> None:
        owned = self._owned_tmp
        if owned is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(owned.remove)


#: Bytes of previews (stdout and stderr, every command) one task's result may hold, counted as the
#: results line writes them (`_line_bytes`): they stay in the harness's memory until the task ends
#: and become one results line (red team round 23: 200 commands of 1 MB previews made a 400 MB line
#: and a 1.2 GB harness). Past it, a command's previews are dropped (``truncated``), its exit code,
#: sizes and kept files stay.
RESULT_PREVIEW_BYTES = 16 << 20


def _bound_previews(outcome: CommandOutcome, room: int) -> tuple[CommandOutcome, int]:
    """``outcome`` with its previews dropped unless they fit in ``room``; the room left."""
    size = _line_bytes(outcome.preview) + _line_bytes(outcome.stderr)
    if size <= room:
        return outcome, room - size
    dropped = outcome.model_copy(
        update={
            "preview": "" if outcome.preview is not None else None,
            "stderr": "" if outcome.stderr is not None else None,
            "truncated": True,
            "stdout_truncated": outcome.stdout_truncated or bool(outcome.preview),
            "stderr_truncated": outcome.stderr_truncated or bool(outcome.stderr),
        }
    )
    return dropped, room


#: Bytes of command labels (shell text, an argv shell-quoted) one task's result may hold, as the line
#: writes them. The task file chose them, but `shlex.join` writes a quote in an argv word as five
#: characters and JSON as seven bytes: a 20 MB task line wrote a 140 MB results line (red team
#: round 56). Past it a label keeps its head and tail (`LABEL_CUT_CHARS`) around a note while
#: those fit too, then only a note saying how long it was (each command keeps its own line).
RESULT_LABEL_BYTES = 16 << 20
#: Characters a label past `RESULT_LABEL_BYTES` keeps (head and tail).
LABEL_CUT_CHARS = 200


def _bound_label(outcome: CommandOutcome, room: int) -> tuple[CommandOutcome, int]:
    """``outcome`` with its label cut unless it fits in ``room``; the room left."""
    label = _fitting_label(outcome.command, room)
    if label is outcome.command:
        return outcome, room - _line_bytes(label)
    return outcome.model_copy(update={"command": label}), room - min(room, _line_bytes(label))


def _fitting_label(label: str, room: int) -> str:
    """``label`` itself when it fits in ``room``, else its head and tail, else a note alone."""
    if _line_bytes(label) <= room:
        return label
    cut = _cut(label, LABEL_CUT_CHARS)[0]
    if _line_bytes(cut) <= room:
        return cut
    return note(f"... a command of {len(label):,} characters; its text is in the task file ...")


#: What `one_line` adds per character it escapes, over that character's UTF-8 bytes.
_ONE_LINE_EXTRA = {"\u2028": 3, "\u2029": 3, "\x85": 4}


def _line_bytes(text: str | None) -> int:
    """Bytes ``text`` takes in its results line, as written: JSON escapes a control character in
    six (``\\u0001``), `one_line` a line separator; counting characters (or UTF-8 bytes) let a
    task printing ``\\x01``, or naming its files so, write a line six times its bound (red team
    round 56). A name that is not UTF-8 (``\\udcff``) counts three bytes a surrogate, never raises."""
    if not text:
        return 0
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return len(text) + 2  # the common case, at C speed
    size = len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if not text.isascii():
        size += sum(text.count(sep) * extra for sep, extra in _ONE_LINE_EXTRA.items())
    return size


def _status(error: str | None, outcomes: list[CommandOutcome]) -> TaskStatus:
    if error is not None:
        return "error"
    if any(o.timed_out for o in outcomes):
        return "timeout"
    if any(o.is_error for o in outcomes):
        return "failed"
    return "ok"


def _short(path: str, printed: int) -> bool:
    """A kept output file holds fewer bytes than its command printed (a spool the budget cut)."""
    try:
        return os.stat(path).st_size < printed
    except OSError:
        return True


def _move(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(os.fspath(source), os.fspath(dest))


async def _keep(source: Path, dest: Path) -> str:
    """Move a spool file into the task's artifacts (off the event loop); its new path."""
    await anyio.to_thread.run_sync(lambda: _move(source, dest))
    return str(dest)


def _write_bytes(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


class CollectTooLargeError(Exception):
    """The files to collect add up to more than ``collect.max_bytes``."""


def _copy_bounded(source: int, target: Path, budget: int) -> int:
    """Copy the file at fd ``source`` to ``target``, at most ``budget`` bytes; how many it copied."""
    copied = 0
    with open(target, "wb") as sink:
        while chunk := os.read(source, 1 << 20):
            copied += len(chunk)
            if copied > budget:
                break
            sink.write(chunk)
    if copied > budget:
        target.unlink()
    return copied


#: At most this many files are collected (a listing holds every name in memory).
_MAX_COLLECT_NAMES = 1_000_000
#: At most this many path components over the files collected: each is an ``openat`` on the host
#: (`open_beneath`); a million files 2,000 deep were 2e9 of them (red team round 19).
_MAX_COLLECT_STEPS = 16_000_000
#: At most this many directory entries (and directories) are listed to find them: a command makes
#: each with one ``mkdir`` or ``touch``, and only matched files counted before: ``**/x``, ``out/**``
#: or ``out/*/x`` listed every name the command made, each directory whole into memory (round 20).
_MAX_COLLECT_LISTED = 4_000_000


#: What one collected file or directory costs the run's budget at least: its inode. Sizes alone
#: let a task keep up to 1,000,000 empty files per task in the artifacts directory for free, for
#: the whole run (the host's inodes; red team round 23). ext4's default bytes-per-inode.
_INODE_COST = 16_384


#: Bytes of names one collection may hold: the names are the task's commands' choice (255 bytes a
#: part, 4,095 a path), each is kept in the harness and written into the task's results line
#: (``files``). 60,000 hard links under a 3,800-byte directory chain made a 208 MB line and held it
#: twice in the harness; the count cap allowed a million (red team round 37). As `RESULT_PREVIEW_BYTES`,
#: counted as the line writes them (`_line_bytes`).
COLLECT_NAME_BYTES = 16 << 20


class _NameBytes:
    """How many more bytes of names a collection may hold; past it `CollectTooLargeError`."""

    def __init__(self, what: str) -> None:
        self.left = COLLECT_NAME_BYTES
        self.what = what

    def hold(self, name: str) -> None:
        self.left -= _line_bytes(name)  # as the results line writes it (round 56)
        if self.left < 0:
            raise CollectTooLargeError(
                f"collect.files {self.what} names of more than {COLLECT_NAME_BYTES:,} bytes in all (each "
                "is kept in the results line); narrow the patterns, or collect a directory as one archive"
            )


class _Listings:
    """How many more names a collection may list; past it `CollectTooLargeError`."""

    def __init__(self) -> None:
        self.left = _MAX_COLLECT_LISTED

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise CollectTooLargeError(
                f"collect.files lists more than {_MAX_COLLECT_LISTED:,} directory entries to find its "
                "files; narrow the patterns (name the directories that hold them)"
            )


def _expand(root: Path, rel: str, parts: list[str], listings: _Listings | None = None) -> Iterator[str]:
    """Workspace-relative paths matching the pattern ``parts`` below ``rel``, as `Path.glob`
    matches them, but never through a symlink: ``Path.glob`` descended a symlinked directory,
    and ``out -> /`` with ``out/**`` walked the host's whole file system (names the command
    chose, listed on the host, as the caller). An explicit stack, not recursion: a command's
    tree 5,000 levels deep raised `RecursionError` out of the collection (round 11)."""
    stack: list[tuple[str, tuple[str, ...]]] = [(rel, tuple(parts))]
    budget = listings if listings is not None else _Listings()
    while stack:
        rel, todo = stack.pop()
        if not todo:
            yield rel
            continue
        part, rest = todo[0], todo[1:]
        here = os.path.join(root, rel) if rel else str(root)
        if part in ("", "."):
            stack.append((rel, rest))
        elif part == "**":
            stack.append((rel, rest))
            stack.extend((os.path.join(rel, name), todo) for name, is_dir in _entries(here, budget) if is_dir)
        elif any(c in part for c in "*?["):
            for name, is_dir in _entries(here, budget):
                if fnmatch.fnmatchcase(name, part) and (is_dir or not rest):
                    stack.append((os.path.join(rel, name), rest))
        else:
            try:
                st = os.lstat(os.path.join(here, part))
            except OSError:
                continue
            if not rest or stat.S_ISDIR(st.st_mode):  # a symlink is never descended
                stack.append((os.path.join(rel, part), rest))


def _make_parents(dest: Path, rel: str, made: set[str] | None = None) -> bool:
    """Make the directories above ``dest/rel`` one by one (``Path.mkdir(parents=True)`` recurses per
    level: round 11); False when the path is too long for the host to name. ``made``: directories
    already made. Each new level is made by descriptor from the deepest one made before: making
    every level again by path for each file (the kernel walks the whole path each time) took
    0.36 s a file 2,000 deep (red team round 19)."""
    dest.mkdir(parents=True, exist_ok=True)  # the run's own directory: a few levels
    if len(os.path.join(str(dest), rel).encode()) >= 4096:
        return False
    parts = [p for p in rel.split("/") if p not in ("", ".")][:-1]
    known = made if made is not None else set()
    prefix = "/".join(parts)
    while prefix and prefix not in known:  # the deepest directory already made
        prefix = prefix.rpartition("/")[0]
    start = prefix.count("/") + 1 if prefix else 0
    if start == len(parts):
        return True
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(os.path.join(str(dest), prefix) if prefix else str(dest), flags)
    try:
        for part in parts[start:]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            deeper = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = deeper
            prefix = f"{prefix}/{part}" if prefix else part
            known.add(prefix)
    finally:
        os.close(fd)
    return True


def _entries(directory: str, listings: _Listings) -> list[tuple[str, bool]]:
    """(name, is a real directory) of each entry; empty when it cannot be listed. The directory and
    each entry are spent from ``listings`` as they are read (a huge directory stops at the bound)."""
    listings.spend()
    found: list[tuple[str, bool]] = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                listings.spend()
                try:
                    found.append((entry.name, entry.is_dir(follow_symlinks=False)))
                except OSError:
                    found.append((entry.name, False))
    except OSError:
        return []
    return found


def _files_below(root: Path, rel: str, listings: _Listings) -> Iterator[str]:
    """Workspace-relative names of everything but directories below ``rel`` (links included, never
    followed), with an explicit stack (round 11); every name listed is spent from ``listings``."""
    stack = ["" if rel in ("", ".") else rel]
    while stack:
        here = stack.pop()
        for name, is_dir in _entries(os.path.join(root, here), listings):
            if is_dir:
                stack.append(os.path.join(here, name))
            else:
                yield os.path.join(here, name)


def _copy_matches(
    root: Path,
    patterns: tuple[str, ...],
    dest: Path,
    max_bytes: int,
    copied_bytes: list[int] | None = None,
    over_budget: str | None = None,
    charge: Callable[[str, int], None] | None = None,
) -> list[str]:
    """Copy regular files matching ``patterns`` (paths or globs) from ``root``; never through a link.

    Matching only lists names; each file is then opened anchored below ``root`` with no
    symlink or ``..`` on the way and only when it is a regular file (`open_beneath`): a
    command still running (a background task) may swap a listed file for a link to a host
    secret or for a FIFO, and this copy runs on the host, as the caller. At most ``max_bytes``
    in all (`CollectTooLargeError`): the command chose the files' sizes. ``copied_bytes[0]``
    counts the bytes left on disk; ``over_budget`` is the error when ``max_bytes`` is the run's
    output budget rather than the task's ``collect.max_bytes``. ``charge(rel, n)``: takes ``n``
    more bytes from the run's budget for ``rel`` beyond its size (each file and directory made
    costs at least an inode, `_INODE_COST`), or raises `CollectTooLargeError`.
    """
    names: set[str] = set()
    too_many = f"collect.files matches more than {_MAX_COLLECT_NAMES:,} files; narrow the patterns"
    listings = _Listings()  # every directory listed, by the patterns and the walks below, counts
    held = _NameBytes("finds files of")  # what the results line lists (and this process holds)
    for pattern in patterns:
        matches: list[str] = []
        matched = _NameBytes(f"pattern {pattern!r} matches")
        for rel in _expand(root, "", pattern.split("/"), listings):
            matches.append(rel)
            matched.hold(rel)
            if len(matches) > _MAX_COLLECT_NAMES:
                raise CollectTooLargeError(too_many)
        # Each directory below one already walked is skipped: ``out/**`` matches every directory
        # of a tree, and walking each again made a chain of 2,000 take minutes (round 11).
        # Sorted by components, a directory's descendants come right after it.
        walked: str | None = None
        for rel in sorted(set(matches), key=lambda r: r.split("/")):
            if walked is not None and (walked in ("", ".") or rel == walked or rel.startswith(walked + "/")):
                continue
            match = root / rel
            if match.is_dir() and not match.is_symlink():
                walked = rel.rstrip("/")
                for name in _files_below(root, walked, listings):  # links not followed (round 11)
                    if name not in names:
                        held.hold(name)
                    names.add(name)
                    if len(names) > _MAX_COLLECT_NAMES:
                        raise CollectTooLargeError(too_many)
            else:
                if rel not in names:
                    held.hold(rel)
                names.add(rel)
            if len(names) > _MAX_COLLECT_NAMES:
                raise CollectTooLargeError(too_many)
    if sum(rel.count("/") + 1 for rel in names) > _MAX_COLLECT_STEPS:
        raise CollectTooLargeError(
            f"collect.files matches files nested more than {_MAX_COLLECT_STEPS:,} directories deep in all; "
            "narrow the patterns"
        )
    copied: list[str] = []
    made: set[str] = set()
    budget = max_bytes
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in sorted(names):
            try:
                fd = open_beneath(root_fd, rel)
            except OSError:  # a link, a FIFO or device, gone: not collected
                continue
            target = dest / rel
            try:
                dirs = len(made)
                if not _make_parents(dest, rel, made):
                    continue  # deeper than a host path can name: not collected
                size = _copy_bounded(fd, target, budget)
            finally:
                os.close(fd)
            budget -= size
            if budget < 0:
                if over_budget is not None:
                    raise CollectTooLargeError(f"collect.files at {rel!r}: {over_budget}")
                raise CollectTooLargeError(
                    f"collect.files adds up to more than collect.max_bytes ({max_bytes:,} bytes) at {rel!r}; "
                    "narrow the patterns or raise collect.max_bytes in the task"
                )
            if copied_bytes is not None:
                copied_bytes[0] += size
            if charge is not None:
                charge(rel, (len(made) - dirs) * _INODE_COST + max(0, _INODE_COST - size))
            copied.append(Path(rel).as_posix())
    finally:
        os.close(root_fd)
    return copied


async def run_task(task: Task, settings: WorkerSettings, pool: SandboxPool | None = None) -> TaskResult:
    """Run one task start to finish (teardown included, even on cancel); ``pool`` may recycle its container."""
    run = TaskRun(task, settings, pool)
    try:
        await run.prepare()
        return await run.execute()
    finally:
        await run.close()
