"""``shellrt batch run tasks.jsonl --out results.jsonl``: many tasks, each in a fresh sandbox.

Exit codes: 0 when every task ran (even if its commands failed or timed out —
that is data, in the results); 1 when a task could not run (status ``error``)
or a task line was invalid; 2 for usage errors; 130 on Ctrl-C / SIGTERM, after
every running sandbox is torn down (results already written are kept; run again
with ``--resume`` to finish).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from shellrt.cli._sandbox_options import (
    non_negative_int,
    non_negative_number,
    parse_size,
    positive_int,
    positive_number,
)

if TYPE_CHECKING:
    from shellrt.batch import Task, TaskFloor

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``batch`` (with its ``run`` sub-command) to the top-level parser."""
    parser = subparsers.add_parser(
        "batch",
        help="run a JSONL file of tasks, each in a fresh sandbox (locally or on Ray)",
        description="Run many sandboxed tasks concurrently. Task file format: docs/batch.md.",
    )
    sub = parser.add_subparsers(dest="batch_command", metavar="SUBCOMMAND")
    run = sub.add_parser(
        "run",
        help="run every task of a JSONL file",
        description=(
            "Run every task of TASKS (JSONL), appending one result line per finished task to --out. "
            "Exit 0 when every task ran (commands may have failed), 1 when a task could not run or a "
            "line was invalid, 130 when interrupted."
        ),
    )
    run.add_argument("tasks", type=Path, help="task file (JSONL, one task per line)")
    run.add_argument("--out", "-o", type=Path, required=True, help="results file (JSONL, appended)")
    run.add_argument(
        "--concurrency",
        "-j",
        type=positive_int,
        default=None,
        help="tasks executing at once (local; see --slots-per-node)",
    )
    run.add_argument(
        "--prestart", type=non_negative_int, default=None, help="sandboxes started ahead of need (default: = concurrency)"
    )
    run.add_argument(
        "--docker-reuse",
        choices=("auto", "never"),
        default="auto",
        help="auto (default): recycle a docker container for the next task with an identical sandbox "
        "after a verified reset; never: a brand-new container per task (docs/batch.md)",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="skip tasks whose id is already in --out (those that ended in error run again)",
    )
    run.add_argument(
        "--ray", metavar="ADDRESS", default=None, help="run on a Ray cluster (e.g. auto, host:6379)"
    )
    run.add_argument(
        "--slots-per-node",
        type=positive_int,
        default=None,
        help="with --ray: sandboxes per node (default: the node's CPU count)",
    )
    run.add_argument(
        "--artifacts",
        type=Path,
        default=None,
        help="full outputs and exported files (default: <out>.artifacts)",
    )
    run.add_argument(
        "--trust-workspace",
        action="store_true",
        help="every task obeys its workspace's own settings files (as the task field trust_workspace)",
    )
    floor = run.add_argument_group(
        "operator floor (the task file is not trusted by default: docs/batch.md, "
        '"Running a task file you did not write")'
    )
    floor.add_argument(
        "--sandbox",
        choices=("bwrap", "docker", "local"),
        default=None,
        help="every task runs on this backend; a task naming another is refused (skipped, exit 1). "
        "Default: a task may choose bwrap or docker, one naming none runs on bwrap",
    )
    floor.add_argument(
        "--trust-task-file",
        action="store_true",
        help="the task file chooses everything, as a file you wrote (all --allow-task-* below, "
        "--permission-mode bypassPermissions, limits above the machine's defaults)",
    )
    floor.add_argument(
        "--allow-task-local",
        action="store_true",
        help="a task may choose the local backend (no sandbox: commands run as you, on the host); "
        "a task naming no backend then runs on local too",
    )
    floor.add_argument(
        "--allow-task-trust",
        action="store_true",
        help="a task may set trust_workspace (its workspace's hooks would run on the host)",
    )
    floor.add_argument("--no-task-trust", action="store_true", help=argparse.SUPPRESS)  # the default now
    floor.add_argument(
        "--allow-task-backend-keys",
        action="store_true",
        help="let tasks set bwrap_path, sandbox_uid/gid, uid_pool_start/size, docker_host, user, root_can_administer "
        "(refused by default: they widen the sandbox's boundary)",
    )
    floor.add_argument(
        "--allow-task-network",
        action="store_true",
        help="a task may choose network host or bridge and allow any domain",
    )
    floor.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="DOMAIN",
        help="a task may allow this domain (allowed_domains, WebFetch(domain:...) rules); "
        "*.example.org covers its subdomains; repeat for more",
    )
    floor.add_argument(
        "--allow-image",
        action="append",
        default=[],
        metavar="IMAGE",
        help="a docker task may name this image (its whole root: the task reads its files); repeat for more",
    )
    floor.add_argument(
        "--permission-mode",
        choices=("plan", "default", "dontAsk", "acceptEdits", "bypassPermissions"),
        default=None,
        help="the most a tool_use task's permission_mode may allow, and the mode of one that sets none "
        "(default: acceptEdits)",
    )
    floor.add_argument(
        "--memory",
        type=parse_size,
        default=None,
        metavar="SIZE",
        help="per-task memory ceiling (default: 3/4 of the memory divided by --concurrency, where the "
        "backend enforces it)",
    )
    floor.add_argument(
        "--pids",
        type=positive_int,
        default=None,
        metavar="N",
        help="per-task process ceiling (default: from the machine)",
    )
    floor.add_argument("--cpus", type=positive_number, default=None, metavar="N", help="per-task CPU ceiling (cores)")
    floor.add_argument(
        "--tmp-size",
        type=parse_size,
        default=None,
        metavar="SIZE",
        help="per-task /tmp ceiling (default: half the memory ceiling, where the backend enforces it)",
    )
    floor.add_argument(
        "--output-budget",
        type=_budget,
        default="machine",
        metavar="SIZE",
        help="output and collected files the whole run may hold on disk at once (default: half the "
        "free space; 'none': no limit)",
    )
    floor.add_argument(
        "--task-deadline",
        type=non_negative_number,
        default=None,
        metavar="SECONDS",
        help="seconds all of a task's commands may take together; a task may ask less, not more "
        "(default: 21600, six hours; 0: none; none with --trust-task-file)",
    )
    run.add_argument("--quiet", "-q", action="store_true", help="no progress line and no summary")
    run.set_defaults(func=_run)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _budget(text: str) -> int | str | None:
    if text.strip().lower() in ("none", "machine"):  # argparse passes a string default through here
        return None if text.strip().lower() == "none" else "machine"
    return parse_size(text)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for raw in fh if raw.strip() and not raw.lstrip().startswith(b"#"))


def _run(args: argparse.Namespace) -> int:
    import anyio

    if not args.tasks.is_file():
        print(f"shellrt batch: task file {args.tasks} not found", file=sys.stderr)
        return 2
    if args.concurrency is not None and args.concurrency < 1:
        print("shellrt batch: --concurrency must be at least 1", file=sys.stderr)
        return 2
    for wide in ("trust_workspace", "allow_task_trust", "trust_task_file"):
        if args.no_task_trust and getattr(args, wide):
            flag = "--" + wide.replace("_", "-")
            print(f"shellrt batch: {flag} and --no-task-trust contradict each other", file=sys.stderr)
            return 2
    try:
        floor = _floor(args)
    except ValueError as exc:
        print(f"shellrt batch: {exc}", file=sys.stderr)
        return 2
    if floor.sandbox is None and not floor.allow_local and shutil.which("bwrap") is None:
        print(
            "shellrt batch: bubblewrap (bwrap) is not installed, and tasks naming no backend run on it: "
            "install it, or pass --sandbox docker (or --allow-task-local: no sandbox)",
            file=sys.stderr,
        )
    from shellrt.batch.artifacts_dir import claim_artifacts_dir
    from shellrt.batch.progress import terminal_safe

    try:  # each task checks it too; refused here once, before any task runs
        claim_artifacts_dir(args.artifacts or args.out.with_name(args.out.name + ".artifacts"))
    except OSError as exc:
        print(f"shellrt batch: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    if args.resume and not args.out.exists():
        print(f"shellrt batch: --resume: {args.out} does not exist yet; running every task", file=sys.stderr)
    if args.ray is not None:
        from importlib.util import find_spec

        if find_spec("ray") is None:  # ray itself is imported only by shellrt.batch.ray_runner
            print("shellrt batch: --ray needs Ray: pip install 'shellrt[ray]'", file=sys.stderr)
            return 2
    from shellrt.batch.results import ResultsWriteError

    try:
        code: int = anyio.run(_main, args, floor)
    except (ConnectionError, ResultsWriteError, BaseExceptionGroup) as exc:
        unwritten = _only(exc, ResultsWriteError)
        if unwritten is not None:  # a full disk under --out (round 28): said, not a traceback
            print(f"shellrt batch: {terminal_safe(str(unwritten))}", file=sys.stderr)
            return 1
        refused = _connection_error(exc)
        if refused is None:
            raise
        print(
            f"shellrt batch: could not connect to the Ray cluster at {args.ray}: {refused}", file=sys.stderr
        )
        return 2
    return code


def _noting_mode(tasks: Iterator[Task], mode: str) -> Iterator[Task]:
    """``tasks``, saying once that tool_use tasks without a mode no longer bypass permissions."""
    noted = mode == "bypassPermissions"
    for task in tasks:
        if not noted and task.uses_tools and "permission_mode" not in task.model_fields_set:
            noted = True
            print(
                f"shellrt batch: tool_use commands run in {mode} mode (calls it does not allow are denied); "
                "--permission-mode bypassPermissions (or --trust-task-file) runs them as before",
                file=sys.stderr,
            )
        yield task


_E = TypeVar("_E", bound=BaseException)


def _only(exc: BaseException, kind: type[_E]) -> _E | None:
    """The ``kind`` error ``exc`` is, or the one a task group wrapped alone; None otherwise."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, kind) else None


def _connection_error(exc: BaseException) -> ConnectionError | None:
    """The ConnectionError in ``exc`` (task groups wrap it), or None when there is other trouble."""
    if isinstance(exc, ConnectionError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(ConnectionError)
        if matched is not None and rest is None:
            return _connection_error(matched.exceptions[0])
    return None


def _floor(args: argparse.Namespace) -> TaskFloor:
    """The operator's floor from the flags (`TaskFloor`; ValueError for a bad domain)."""
    from sandbox import ResourceLimits
    from shellrt.batch import TaskFloor

    explicit = ResourceLimits(
        memory_bytes=args.memory, pids=args.pids, cpus=args.cpus, tmp_bytes=args.tmp_size
    )
    floor = TaskFloor.trusting() if args.trust_task_file else TaskFloor()
    mode = args.permission_mode or floor.permission_mode
    return TaskFloor(
        sandbox=args.sandbox,
        allow_local=floor.allow_local or args.allow_task_local,
        # --trust-workspace is the operator's own choice for every task
        allow_task_trust=floor.allow_task_trust or args.allow_task_trust or args.trust_workspace,
        allow_backend_keys=floor.allow_backend_keys or args.allow_task_backend_keys,
        allow_network=floor.allow_network or args.allow_task_network,
        allowed_domains=tuple(args.allow_domain),
        allowed_images=tuple(args.allow_image),
        permission_mode=mode,
        limits=explicit,
        allow_task_limits=floor.allow_task_limits,
        max_deadline_s=floor.max_deadline_s if args.task_deadline is None else (args.task_deadline or None),
    )


async def _main(args: argparse.Namespace, floor: TaskFloor) -> int:
    import anyio

    from shellrt.batch import (
        TaskLineError,
        TaskRefused,
        TaskResult,
        dataset_masks,
        iter_tasks,
        read_finished_ids,
        run,
        scan_task_file,
    )
    from shellrt.batch.progress import Progress, terminal_safe

    done_before = read_finished_ids(args.out) if args.resume else set()
    total = max(_count_lines(args.tasks) - len(done_before), 0)
    from shellrt.cli._stderr import unescaped

    # The line is redrawn with its own \r ESC[2K (its text is `terminal_safe`): the raw stream.
    progress = Progress(total, stream=unescaped(sys.stderr), live=False if args.quiet else None)

    def bad_line(error: TaskLineError) -> None:
        progress.bad_line()
        if progress.total:
            progress.total -= 1
        print(f"shellrt batch: skipped {terminal_safe(str(error))}", file=sys.stderr)

    def refused(task: Task, error: TaskRefused) -> None:
        progress.bad_line()
        if progress.total:
            progress.total -= 1
        print(f"shellrt batch: skipped {terminal_safe(str(error))}", file=sys.stderr)

    # Every task's workspace source, and the task file's tree: a task must not read the others'.
    data = dataset_masks(await anyio.to_thread.run_sync(scan_task_file, args.tasks), args.tasks)
    interrupted = False
    errored = 0
    tasks = iter_tasks(args.tasks, on_error=bad_line)
    if args.trust_workspace:
        tasks = (t.model_copy(update={"trust_workspace": True}) for t in tasks)
    tasks = _noting_mode(tasks, floor.permission_mode)
    batch = run(
        tasks,
        concurrency=args.concurrency,
        ray_address=args.ray,
        out=args.out,
        resume=args.resume,
        artifacts_dir=args.artifacts,
        prestart=args.prestart,
        reuse=args.docker_reuse,
        hidden_paths=(args.tasks,),  # other tasks' commands and env
        dataset_paths=data,
        floor=floor,
        on_refused=refused,
        output_budget=args.output_budget,
        ray_options={"slots_per_node": args.slots_per_node} if args.slots_per_node else None,
    )

    runner_scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:

        async def watch_signals() -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
                async for signum in signals:
                    if not interrupted:
                        interrupted = True
                        progress.finish()
                        print(
                            f"\nshellrt batch: {signal.Signals(signum).name}: stopping; tearing down running sandboxes",
                            file=sys.stderr,
                        )
                        runner_scope.cancel()
                    # Later signals are swallowed: teardown must finish, or containers leak.

        tg.start_soon(watch_signals)
        with runner_scope:
            async with batch as results:
                async for result in results:
                    result_: TaskResult = result
                    progress.add(result_)
                    if result_.status == "error":
                        errored += 1
        tg.cancel_scope.cancel()

    progress.finish()
    progress.skipped = len(batch.skipped)
    progress.pool = batch.pool_stats
    if not args.quiet:
        print(progress.summary(interrupted=interrupted), file=sys.stderr)
    if interrupted:
        return 130
    return 1 if errored or progress.bad_lines else 0
