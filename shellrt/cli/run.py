"""``shellrt run``: the operator runs one command through the supervisor and a sandbox.

No permission prompt: it is the operator's own command. Plain mode streams
stdout/stderr live; ``--json`` prints one object instead, with stdout and
stderr kept apart (``stdout``/``stderr``, each with its size, truncation flag
and, when truncated, its file). The words after ``--`` are shell text, or with
``--no-shell`` an argv passed intact. ``--env``, ``--user`` and ``--cwd`` apply
to this one command.

Exit status: the command's own; 124 on timeout (the tree was killed); 125
when the sandbox is unavailable, could not start the command (a ``--cwd`` it
cannot enter, a ``--user`` it cannot switch to), or failed while the command ran (its container
died or was killed: ``sandbox_failure`` in the JSON, on stderr in plain mode); 74 when output was lost (``--json``: not all
of it could be saved, e.g. the disk under TMPDIR filled or the output quota
was reached; plain mode: capturing failed and shellrt killed the command) —
what and why is on stderr and in the JSON's ``output_lost``; 128+N when
shellrt itself got signal N (SIGINT 130, SIGTERM 143, SIGHUP 129): the
command's tree is killed first.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shellrt.cli._sandbox_options import (
    add_sandbox_options,
    positive_number,
    print_network_refusals,
    sandbox_from_args,
)
from shellrt.cli._status_line import StatusLine
from shellrt.cli._stdout import (
    EXIT_OUTPUT_LOST,
    EchoStalled,
    echo_until,
    report_loss,
    silence_stdout,
    terminal_output,
)

if TYPE_CHECKING:  # imported where used: ``--help`` needs no sandbox
    from collections.abc import Callable, Sequence

    from sandbox import SandboxBackend, WorkspaceExporter

__all__ = ["register"]

EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130
EXIT_UNAVAILABLE = 125
EXIT_STDOUT_CLOSED = 141

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def env_entry(text: str) -> tuple[str, str]:
    """``--env KEY=VALUE``, or ``--env KEY`` for the caller's own value of KEY."""
    name, sep, value = text.partition("=")
    if not _ENV_NAME.match(name):
        raise argparse.ArgumentTypeError(
            f"KEY=VALUE expected (KEY: letters, digits and _, not starting with a digit), got {text!r}"
        )
    if sep:
        return name, value
    if name not in os.environ:
        raise argparse.ArgumentTypeError(
            f"{name} is not set in your environment; pass --env {name}=VALUE or export {name} first"
        )
    return name, os.environ[name]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run one command in a sandbox (no permission prompt)",
        description="Run COMMAND in a fresh bash through the supervisor and a sandbox. "
        "Exit status: the command's, 124 on timeout, 125 when the sandbox is unavailable or failed "
        "(its container died or was killed), 74 when "
        "output was lost (what and why on stderr / in output_lost), 128+N on signal N.",
    )
    add_sandbox_options(parser)
    parser.add_argument(
        "--timeout", type=positive_number, default=None, metavar="SECONDS", help="kill the command after SECONDS"
    )
    parser.add_argument(
        "--background-on-timeout",
        action="store_true",
        help="on timeout, do not kill: report it and keep waiting for the command",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of streaming (stdout and stderr apart: stdout, stderr, "
        "stdout_bytes, stderr_bytes, stdout_truncated, stderr_truncated, stdout_path, stderr_path)",
    )
    group = parser.add_argument_group("the command")
    group.add_argument(
        "--env",
        type=env_entry,
        action="append",
        default=[],
        metavar="KEY[=VALUE]",
        help="set KEY for the command (repeatable); KEY alone passes your own value of KEY. "
        "The command otherwise gets only shellrt's clean base environment",
    )
    group.add_argument(
        "--user",
        default=None,
        metavar="USER",
        help="run as USER inside the sandbox (docker: a name, uid or uid:gid, root included); "
        "local and bwrap run every command as one identity and refuse it",
    )
    group.add_argument(
        "--cwd",
        default=None,
        metavar="DIR",
        help="start in DIR, a path as the sandbox sees it (relative: from the workspace root); anywhere "
        "the sandbox can see is fine, one it cannot enter is an error (exit 125)",
    )
    group.add_argument(
        "--no-shell",
        action="store_true",
        help="run the words after -- as an argv, without a shell: each word reaches the program "
        "intact (spaces, quotes, newlines, $ and * included)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    parser.set_defaults(func=main)
    global _OPTIONS
    _OPTIONS = frozenset(s for action in parser._actions for s in action.option_strings if s.startswith("--"))


#: ``run``'s long options (set by `register`): a word of the command that names one is refused.
_OPTIONS: frozenset[str] = frozenset()


def _misplaced_option(words: list[str]) -> str | None:
    """The first word after the command's first that names an option of ``run`` (exactly, with
    ``=value``, or abbreviated as argparse takes it), when no ``--`` marked where the command
    starts: written there it would be a word of the command, its limit silently dropped."""
    for word in words[1:]:
        name = word.split("=", 1)[0]
        if len(name) > 2 and name.startswith("--") and any(option.startswith(name) for option in _OPTIONS):
            return word
    return None


def main(args: argparse.Namespace) -> int:
    words = list(args.command)
    if words and words[0] == "--":
        words = words[1:]
    elif (misplaced := _misplaced_option(words)) is not None:
        # Round 27: ``shellrt run 'make deploy' --timeout 5`` ran ``make deploy --timeout 5`` unlimited.
        shown = _shown(misplaced)
        print(
            f"shellrt run: {shown} comes after the command's first word, so it is not taken as an option "
            "of shellrt run (the command would get it, and its limit would not apply); the command was "
            f"not run. Put options first and the command after --: shellrt run [options] -- COMMAND "
            f"(to pass {shown} to the command, write it after -- too)",
            file=sys.stderr,
        )
        return 2
    if not words:
        print("shellrt run: no command given (usage: shellrt run [options] -- COMMAND)", file=sys.stderr)
        return 2
    command: str | list[str] = words if args.no_shell else (words[0] if len(words) == 1 else " ".join(words))
    from shellrt.supervisor.spool import OutputQuota

    try:  # before anything starts: a bad size was a traceback after the command began (round 27)
        OutputQuota.check_env()
    except ValueError as exc:
        print(f"shellrt run: {exc}; the command was not run", file=sys.stderr)
        return 2
    from shellrt.cli import _fastrun

    if _fastrun.eligible(args):  # a plain local run: no event loop, no pydantic model (issue 22)
        return _fastrun.run_local(args, command)
    return run_full(args, command)


def run_full(args: argparse.Namespace, command: str | list[str]) -> int:
    """Any run, through the async supervisor and the backend ``--sandbox`` names."""
    import anyio

    from shellrt.cli._pydantic_plugins import skip_pydantic_plugins
    from shellrt.cli._signals import run_until_signal

    skip_pydantic_plugins()
    return anyio.run(run_until_signal, _run, args, command)


def export_refusal(dest: Path) -> Callable[[str], str | None]:
    """Why an export must hold back a path below ``dest`` (relative to it), or None: a protected
    name, or a file of a hooks directory the repository's config names (``core.hooksPath``, which
    only the disk tells; judged also under each name a link of the export gives: red team round 27)."""
    from shellrt.supervisor.protect import hooks_dir_reason, protected_reason

    def refuse(rel: str) -> str | None:
        return protected_reason(rel) or hooks_dir_reason(dest / rel)

    return refuse


async def _export(backend: WorkspaceExporter, dest: Path, code: int) -> int:
    """``--export``: the container's workspace out to ``dest``, holding back what a later program on
    the host would obey (git hooks and config, agent settings, shell start-up files: red team round
    13) unless unchanged. A refusal is reported and fails a run that otherwise succeeded."""
    from sandbox import SandboxError

    try:
        await backend.export_workspace(dest, refuse=export_refusal(dest))
    except SandboxError as exc:
        print(f"shellrt run: --export {_shown(str(dest))}: {_shown(str(exc))}", file=sys.stderr)
        return code or 1
    return code


async def _run(args: argparse.Namespace, command: str | list[str]) -> int:
    from sandbox import BackendUnavailableError, WorkspaceExporter
    from shellrt.runtime.sandbox_choice import resolve_sandbox

    config, policy = sandbox_from_args(args)
    try:
        backend, warnings = await resolve_sandbox(config, policy, one_shot=True)
    except BackendUnavailableError as exc:
        print(f"shellrt run: sandbox unavailable: {_shown(str(exc))}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except ModuleNotFoundError as exc:
        print(f"shellrt run: the {args.sandbox} backend is not installed here ({_shown(str(exc))})", file=sys.stderr)
        return EXIT_UNAVAILABLE
    for warning in warnings:
        print(f"shellrt run: warning: {_shown(warning)}", file=sys.stderr)  # may quote paths (round 25)
    from sandbox._scratch import OwnedDir

    # Locked while we live: if this process is SIGKILLed, the next sandbox start removes it.
    owned = OwnedDir("shellrt-run-")
    session_dir = owned.path
    keep_session = False
    try:
        async with backend:
            code, keep_session = await _execute(args, command, backend, session_dir, warnings)
            if args.export is not None:
                if not isinstance(backend, WorkspaceExporter):
                    print("shellrt run: --export only applies to --sandbox docker", file=sys.stderr)
                else:
                    code = await _export(backend, Path(args.export), code)
            return code
    finally:
        print_network_refusals(backend, "shellrt run")  # network 'proxied': what the proxy refused
        if keep_session:
            owned.keep()  # --json pointed at a file in it
        else:
            owned.remove()


async def _execute(
    args: argparse.Namespace,
    command: str | list[str],
    backend: SandboxBackend,
    session_dir: Path,
    warnings: Sequence[str] = (),
) -> tuple[int, bool]:
    from sandbox import SandboxExecError
    from shellrt.cli._run_write_deny import write_deny_for_backend
    from shellrt.cli._sandbox_options import workspace_from_args
    from shellrt.supervisor import ProgressEvent, Supervisor, WorkingDirectoryError

    stream = not args.json
    status = StatusLine(sys.stderr, enabled=stream and sys.stderr.isatty())

    def progress(event: ProgressEvent) -> None:
        status.update(event.elapsed_s, event.total_bytes, event.last_lines)

    stdout_closed = False
    # A terminal gets no sequence that acts on it (round 19); pipes and files get every byte.
    terminal = terminal_output()

    #: Streams whose reader took nothing by the timeout: not echoed any more (`echo_until`).
    stalled: list[str] = []

    def echo(name: str, chunk: bytes) -> None:
        nonlocal stdout_closed
        if name in stalled:
            return
        status.clear()
        target = sys.stdout.buffer if name == "stdout" else sys.stderr.buffer
        try:
            echo_until(target, chunk if terminal is None else terminal(target, chunk), deadline)
        except EchoStalled:
            stalled.append(name)
        except BrokenPipeError:
            # Our reader went away (``| head``): end like a pipeline does, without a traceback.
            stdout_closed = True
            silence_stdout()
            raise

    timeout_s = args.timeout if args.timeout is not None else math.inf
    # An echo waits for a stalled reader until the timeout, not past it (asked to wait on: for ever).
    deadline = math.inf if args.background_on_timeout else time.monotonic() + timeout_s
    # The settings' Edit/Write deny globs (round 16): a file a command makes that one names is reverted.
    write_deny = write_deny_for_backend(backend, workspace_from_args(args))
    from shellrt.permissions.trust_paths import later_session_files  # a later session obeys them (round 17)
    from shellrt.supervisor.mark_owner import owned_mark  # a killed run's mark reads as ended (round 26)

    async with Supervisor(
        backend,
        session_dir=session_dir,
        write_deny=write_deny,
        settings_files=later_session_files(),
        tree_session=owned_mark(),
    ) as sup:
        try:
            result = await sup.run(
                command,
                timeout_s=timeout_s,
                merge_stderr=False,
                background_on_timeout=args.background_on_timeout,
                on_output=echo if stream else None,
                on_progress=progress if status.enabled else None,
                env=dict(args.env) or None,
                user=args.user,
                cwd=args.cwd,
            )
        except (WorkingDirectoryError, SandboxExecError) as exc:  # unusable --cwd, refused --user, ...
            option = "--cwd" if isinstance(exc, WorkingDirectoryError) else "could not start the command"
            print(f"shellrt run: {option}: {_shown(str(exc))}", file=sys.stderr)
            return EXIT_UNAVAILABLE, False
        status.clear()
        for name in stalled:
            print(
                f"shellrt run: the reader of {name} took nothing more by the timeout; the rest was not "
                f"passed on (all of it is in {result.output_path if name == 'stdout' else result.stderr_path})",
                file=sys.stderr,
            )
        final_code = result.exit_code
        if result.backgrounded_task_id:
            if stream:
                if terminal is not None:  # the command's colours and charsets must not hide our line
                    terminal.reset()
                print(
                    f"shellrt run: timed out after {timeout_s:g}s; still running (task "
                    f"{result.backgrounded_task_id}), waiting for it",
                    file=sys.stderr,
                )
            # The live echo stays attached: the rest of the output streams as it comes.
            task = await sup.tasks.wait(result.backgrounded_task_id)
            final_code = task.exit_code
    if terminal is not None:
        terminal.report()
        # The command may have moved the cursor over the warnings printed before it and erased them
        # (its cursor moves reach the terminal, round 19): what the operator must see comes again,
        # below everything it wrote, in the colours the reset restored (round 27).
        for warning in warnings:
            print(f"shellrt run: warning (repeated below the command's output): {_shown(warning)}", file=sys.stderr)
    if stdout_closed:
        return EXIT_STDOUT_CLOSED, False
    if result.timed_out and not result.backgrounded_task_id:
        code = EXIT_TIMEOUT
        if stream:
            print(f"shellrt run: timed out after {timeout_s:g}s; the command was killed", file=sys.stderr)
    elif result.interrupted:
        code = EXIT_INTERRUPTED
    elif result.sandbox_failure:
        # The exit code is the sandbox's, not the command's: never pass it off as one.
        code = EXIT_UNAVAILABLE
        failure = _shown(result.sandbox_failure)
        print(f"shellrt run: the sandbox failed under the command: {failure}", file=sys.stderr)
    else:
        code = final_code if final_code is not None else 1
    if stream:
        for note in result.notes:  # e.g. a planted hook or rc file that was reverted (quarantine kept)
            print(f"shellrt run: {_shown(note)}", file=sys.stderr)  # they name the command's files (round 19)
        # A stalled reader's rest is only in the spools: they stay for the operator, as said above.
        return _report_loss_streaming(result, code), (session_dir / "quarantine").exists() or bool(stalled)
    if result.output_lost:
        print(f"shellrt run: output lost: {result.output_lost}", file=sys.stderr)
        code = EXIT_OUTPUT_LOST
    from shellrt.protocol._one_line import printable_json
    from shellrt.tools.bash import bash_output, format_output  # --json only: the tool's own formatting

    output = bash_output(result, None if math.isinf(timeout_s) else timeout_s).model_copy(
        update={"exit_code": final_code}
    )
    persisted = result.truncated or (session_dir / "quarantine").exists()
    report = {
        "exit_code": code,
        "command_exit_code": final_code,
        "argv": list(result.argv) if result.argv is not None else None,
        "timed_out": result.timed_out,
        "interrupted": result.interrupted,
        "signal": result.signal,
        "oom_killed": result.oom_killed,
        "sandbox_failure": result.sandbox_failure,
        "output": format_output(output, "Bash"),
        "stdout": result.stdout,
        "stderr": result.stderr,
        "stdout_bytes": result.stdout_bytes,
        "stderr_bytes": result.stderr_bytes,
        "stdout_truncated": result.stdout_truncated,
        "stderr_truncated": result.stderr_truncated,
        "stdout_path": str(result.output_path) if persisted else None,
        "stderr_path": str(result.stderr_path) if persisted and result.stderr_path else None,
        "output_path": str(result.output_path) if persisted else None,
        "total_bytes": result.total_bytes,
        "saved_bytes": result.saved_bytes,
        "output_lost": result.output_lost,
        "cwd": result.cwd,
        "duration_s": result.duration_s,
        "sandbox": backend.name,
        "backgrounded_task_id": result.backgrounded_task_id,
        "notes": list(result.notes),
    }
    try:
        # A command's U+2028 (round 35), its C1 controls and bidi overrides (round 47): \u escapes.
        print(printable_json(json.dumps(report, ensure_ascii=False)), flush=True)
    except BrokenPipeError:  # our reader went away (``| head -c 100``): end like a pipeline does
        silence_stdout()
        return EXIT_STDOUT_CLOSED, persisted
    return code, persisted


def _report_loss_streaming(result: Any, code: int) -> int:
    """Plain mode: stdout/stderr got every byte unless capturing failed; say what else happened."""
    return report_loss(result.output_lost, bool(result.capture_failed), code)


def _shown(text: str) -> str:
    """`shellrt.cli._terminal.shown`, imported only when there is something to print (the budget)."""
    from shellrt.cli._terminal import shown

    return shown(text)
