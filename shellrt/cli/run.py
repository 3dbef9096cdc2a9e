"""``shellrt run``: the operator runs one command through the supervisor and a sandbox.

No permission prompt: it is the operator's own command. Plain mode streams
stdout/stderr live and exits with the command's exit code (124 on timeout,
130 when interrupted); ``--json`` prints one object instead.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from sandbox import BackendUnavailableError, SandboxBackend
from shellrt.cli._sandbox_options import add_sandbox_options, sandbox_from_args
from shellrt.cli._status_line import StatusLine

__all__ = ["register"]

EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130
EXIT_UNAVAILABLE = 125


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run one command in a sandbox (no permission prompt)",
        description="Run COMMAND in a fresh bash through the supervisor and a sandbox. "
        "Exit status: the command's, 124 on timeout, 125 when the sandbox is unavailable.",
    )
    add_sandbox_options(parser)
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS", help="kill the command after SECONDS"
    )
    parser.add_argument(
        "--background-on-timeout",
        action="store_true",
        help="on timeout, do not kill: report it and keep waiting for the command",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    words = list(args.command)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        print("shellrt run: no command given (usage: shellrt run [options] -- COMMAND)", file=sys.stderr)
        return 2
    command = words[0] if len(words) == 1 else " ".join(words)
    return anyio.run(_run, args, command)


async def _run(args: argparse.Namespace, command: str) -> int:
    from shellrt.runtime import resolve_sandbox

    config, policy = sandbox_from_args(args)
    try:
        backend, warnings = await resolve_sandbox(config, policy, one_shot=True)
    except BackendUnavailableError as exc:
        print(f"shellrt run: sandbox unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except ModuleNotFoundError as exc:
        print(f"shellrt run: the {args.sandbox} backend is not installed here ({exc})", file=sys.stderr)
        return EXIT_UNAVAILABLE
    for warning in warnings:
        print(f"shellrt run: warning: {warning}", file=sys.stderr)
    session_dir = Path(tempfile.mkdtemp(prefix="shellrt-run-"))
    keep_session = False
    try:
        async with backend:
            code, keep_session = await _execute(args, command, backend, session_dir)
            if args.export is not None:
                export = getattr(backend, "export_workspace", None)
                if export is None:
                    print("shellrt run: --export only applies to --sandbox docker", file=sys.stderr)
                else:
                    await export(Path(args.export))
            return code
    finally:
        if not keep_session:
            shutil.rmtree(session_dir, ignore_errors=True)


async def _execute(
    args: argparse.Namespace, command: str, backend: SandboxBackend, session_dir: Path
) -> tuple[int, bool]:
    from shellrt.supervisor import ProgressEvent, Supervisor
    from shellrt.tools.bash import bash_output, format_output

    stream = not args.json
    status = StatusLine(sys.stderr, enabled=stream and sys.stderr.isatty())

    def progress(event: ProgressEvent) -> None:
        status.update(event.elapsed_s, event.total_bytes, event.last_lines)

    def echo(name: str, chunk: bytes) -> None:
        status.clear()
        target = sys.stdout.buffer if name == "stdout" else sys.stderr.buffer
        target.write(chunk)
        target.flush()

    timeout_s = args.timeout if args.timeout is not None else math.inf
    async with Supervisor(backend, session_dir=session_dir) as sup:
        result = await sup.run(
            command,
            timeout_s=timeout_s,
            merge_stderr=not stream,
            background_on_timeout=args.background_on_timeout,
            on_output=echo if stream else None,
            on_progress=progress if status.enabled else None,
        )
        status.clear()
        final_code = result.exit_code
        if result.backgrounded_task_id:
            if stream:
                print(
                    f"shellrt run: timed out after {timeout_s:g}s; still running (task "
                    f"{result.backgrounded_task_id}), waiting for it",
                    file=sys.stderr,
                )
            # The live echo stays attached: the rest of the output streams as it comes.
            task = await sup.tasks.wait(result.backgrounded_task_id)
            final_code = task.exit_code
    if result.timed_out and not result.backgrounded_task_id:
        code = EXIT_TIMEOUT
        if stream:
            print(f"shellrt run: timed out after {timeout_s:g}s; the command was killed", file=sys.stderr)
    elif result.interrupted:
        code = EXIT_INTERRUPTED
    else:
        code = final_code if final_code is not None else 1
    if stream:
        return code, False
    output = bash_output(result, None if math.isinf(timeout_s) else timeout_s).model_copy(
        update={"exit_code": final_code}
    )
    persisted = result.truncated
    report = {
        "exit_code": code,
        "command_exit_code": final_code,
        "timed_out": result.timed_out,
        "interrupted": result.interrupted,
        "signal": result.signal,
        "output": format_output(output, "Bash"),
        "oom_killed": result.oom_killed,
        "output_path": str(result.output_path) if persisted else None,
        "total_bytes": result.total_bytes,
        "cwd": result.cwd,
        "duration_s": result.duration_s,
        "sandbox": backend.name,
        "backgrounded_task_id": result.backgrounded_task_id,
    }
    print(json.dumps(report, ensure_ascii=False))
    return code, persisted
