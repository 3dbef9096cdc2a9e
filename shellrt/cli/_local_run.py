"""The lean ``shellrt run --sandbox local`` (plain mode): no event loop, no pydantic model.

`shellrt.cli._fastrun.eligible` decides when it runs.

What a local run does is the same on both paths, from the same modules where
they are plain code:

- the owner guard (`sandbox._ownerguard`: a cgroup as root, and a watchdog) and
  the once-per-process sweep of what killed runs left behind (`sandbox._scratch`);
- the private session dir (``shellrt-run-*``, locked while we live), the command's
  clean base environment plus ``--env`` (`shellrt.supervisor.env`), the bash
  wrapper (`shellrt.supervisor.shells`), a fresh session and run marker per
  command, stdout/stderr streamed live and spooled under the output quota
  (`shellrt.supervisor.spool`), the tree killed at a timeout (124) or a signal
  (128+N), and every process carrying the backend's marker killed at the end;
  what the command left behind however it detached (``setsid env -i`` double
  forks) is adopted by this process, a subreaper for the run, and killed at its
  end (`sandbox._subreaper`; the full path has a reaper per session, `sandbox._reaper`);
- the protected-files check before and after the command (`shellrt.supervisor.protect`),
  with the in-flight record that lets the next session revert a plant if we die.

The one difference: the command gets no ``SHELLRT_CWD_FILE`` (plain mode never
reports the final cwd, so the wrapper has nowhere to write it).
``tests/test_cli_fastrun.py`` runs both paths side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox._ownerguard import guard_owner, owner_marker_token
from sandbox._proctree import COMMAND_ENV, kill_marked, pids_with_marker
from sandbox._scratch import OwnedDir, sweep_known_orphans, sweep_orphans
from sandbox._subreaper import own_subreaper
from shellrt.cli._local_guard import LocalGuard
from shellrt.cli._local_pump import LocalPump, StartError
from shellrt.cli._run_write_deny import write_deny_for_run
from shellrt.cli._sandbox_options import run_roots
from shellrt.cli._status_line import StatusLine
from shellrt.cli._stdout import EchoStalled, echo_until, report_loss, silence_stdout, terminal_output
from shellrt.supervisor.env import base_env, command_env
from shellrt.supervisor.shells import shell_launch
from shellrt.supervisor.spool import OutputQuota, OutputSpool, SpoolFiles

if TYPE_CHECKING:
    from shellrt.cli._tty_filter import TerminalOutput

__all__ = ["run"]

EXIT_TIMEOUT = 124
EXIT_UNAVAILABLE = 125
EXIT_STDOUT_CLOSED = 141

_HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run(args: argparse.Namespace, command: str | list[str]) -> int:
    """Run ``command`` (shell text, or an argv with ``--no-shell``) on the local backend; the exit status."""
    # The roots the full path's `sandbox_from_args` takes, refused alike (round 45: one function).
    workspace, writable = run_roots(args)
    received: list[int] = []
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    #: Set while the protected-files check only reads (its baseline walk): a signal ends it at once.
    interruptible = [False]

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        if interruptible[0]:
            interruptible[0] = False
            raise _Interrupted

    @contextlib.contextmanager
    def reading() -> Iterator[None]:
        interruptible[0] = True
        try:
            if received:  # a signal before the walk began
                raise _Interrupted
            yield
        finally:
            interruptible[0] = False

    previous = {s: signal.signal(s, on_signal) for s in _HANDLED_SIGNALS}
    previous_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    try:
        try:
            code = _run(
                args, command, workspace, writable, wake_r, lambda: received[0] if received else None, reading
            )
        except _Interrupted:  # cut short before the command started; everything was cleaned up
            code = 1
        # A signal during the teardown still ends the run as one (as `shellrt.cli._signals`).
        return 128 + received[0] if received else code
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        os.close(wake_r)
        os.close(wake_w)


def _run(
    args: argparse.Namespace,
    command: str | list[str],
    workspace: Path,
    writable: tuple[Path, ...],
    wake_r: int,
    signalled: Callable[[], int | None],
    reading: Callable[[], AbstractContextManager[object]],
) -> int:
    guard_owner()
    sweep_orphans("shellrt-local-")  # what killed local runs of any process left behind
    sweep_known_orphans()  # `shellrt run` spools and batch dirs of killed processes
    marker_prefix = f"local-{owner_marker_token()}{os.urandom(6).hex()}-"
    # Locked while we live: if this process is SIGKILLed, the next sandbox start removes it.
    owned = OwnedDir("shellrt-run-")
    session_dir = owned.path
    keep = False
    stalled: list[str] = []  # streams whose reader took nothing by the timeout (`_echo`)
    try:
        # The settings' Edit/Write deny globs: only read when a settings file names one.
        deny = write_deny_for_run(workspace, keeps_content=True)
        guard = LocalGuard(workspace, session_dir, writable, deny)
        from shellrt.supervisor._tree_note import note_roots
        from shellrt.supervisor.mark_owner import owned_mark

        roots, mark = [workspace, *writable], owned_mark()  # names its owner: read as ended once it died
        note_roots(roots, mark, opening=True)  # unhashed: a later guarded start compares the tree (round 25)
        try:
            with own_subreaper():  # the command's orphans come to us, and die before we go on
                code = _execute(
                    args,
                    command,
                    workspace,
                    session_dir,
                    f"{marker_prefix}1",
                    guard,
                    wake_r,
                    signalled,
                    stalled,
                    reading,
                )
        finally:
            guard.final()
            note_roots(roots, mark, opening=False)
            _sweep_marker(marker_prefix)
        keep = (session_dir / "quarantine").exists() or bool(stalled)  # a stalled reader's rest is there
        return code
    finally:
        if keep:
            owned.keep()  # the quarantined plants stay for the operator
        else:
            owned.remove()


class _Interrupted(BaseException):
    """A signal arrived while the protected-files check walked the roots before the command.

    A `BaseException`, as ``KeyboardInterrupt``: the walk (`WorkspaceGuard.scan`) catches every
    ``Exception`` so as never to break a command over the check, and swallowed this one (red team
    round 46, review24): the half-walked tree became the accepted baseline and went on into the
    in-flight record, where a shellrt killed next left it for the next run, whose recovery then
    moved the operator's own hooks the walk had not reached to quarantine. Raised past the walk,
    no baseline is taken and no record is written."""


def _sweep_marker(prefix: str) -> None:
    """Kill every process still carrying this backend's marker (as the local backend's close)."""
    for _ in range(3):
        pids = pids_with_marker(prefix, prefix=True)
        if not pids:
            return
        kill_marked(pids, lambda marker: marker.startswith(prefix))  # pidfds: never a reused pid


def _echo(
    name: str, status: StatusLine, terminal: TerminalOutput | None, deadline: float, stalled: list[str]
) -> Callable[[bytes], None]:
    """Writes a chunk through to our ``name`` stream (stdout/stderr) at once, the status line erased
    first; on a terminal without the sequences that act on it (`TerminalOutput`, round 19). A reader
    that takes nothing by ``deadline`` (the timeout) is given nothing more (`echo_until`, round 42)."""

    def write(chunk: bytes) -> None:
        if name in stalled:
            return
        status.clear()
        target = sys.stdout.buffer if name == "stdout" else sys.stderr.buffer
        try:
            echo_until(target, chunk if terminal is None else terminal(target, chunk), deadline)
        except EchoStalled:
            stalled.append(name)

    return write


def _execute(
    args: argparse.Namespace,
    command: str | list[str],
    workspace: Path,
    session_dir: Path,
    marker: str,
    guard: LocalGuard,
    wake_r: int,
    signalled: Callable[[], int | None],
    stalled: list[str],
    reading: Callable[[], AbstractContextManager[object]],
) -> int:
    received = signalled()
    if received is not None:
        return 128 + received
    shell_dir = session_dir / "shell"
    shell_dir.mkdir()
    quota = OutputQuota.from_env()
    env = {**command_env(base_env(), dict(args.env)), **COMMAND_ENV}  # as every backend's `child_env`
    if isinstance(command, list):
        argv = tuple(command)
    else:  # the text in the environment, out of every local user's ps (`shell_launch`)
        argv, text_env = shell_launch(command, "bash")
        env.update(text_env)
    guard.before(reading)
    received = signalled()
    if received is not None:  # a signal during the check (round 45: the command was started after it)
        return 128 + received
    status = StatusLine(sys.stderr)
    # Spooled like a supervisor's command, minus the spare files (one command needs none).
    files = SpoolFiles(shell_dir, f"cmd-{os.urandom(3).hex()}", spares=0)
    name = files.take()
    terminal = terminal_output()
    timeout_s = args.timeout if args.timeout is not None else math.inf
    deadline = time.monotonic() + timeout_s  # `stalled`: the streams whose reader it gave up on
    echo_out = _echo("stdout", status, terminal, deadline, stalled)
    echo_err = _echo("stderr", status, terminal, deadline, stalled)
    out = OutputSpool(shell_dir / f"{name}.out", on_chunk=echo_out, files=files, quota=quota)
    err = OutputSpool(shell_dir / f"{name}.err", on_chunk=echo_err, files=files, quota=quota)
    try:
        pump = LocalPump(argv, env=env, cwd=str(workspace), marker=marker, out=out, err=err)
    except StartError as exc:
        out.close()
        err.close()
        from shellrt.cli._terminal import shown

        print(f"shellrt run: could not start the command: {shown(str(exc))}", file=sys.stderr)
        return EXIT_UNAVAILABLE

    def progress(elapsed_s: float) -> None:
        status.update(elapsed_s, pump.total_bytes, out.last_lines())

    result = pump.run(
        timeout_s=timeout_s,
        wakeup_fd=wake_r,
        signalled=signalled,
        on_progress=progress if status.enabled else None,
    )
    status.clear()
    if terminal is not None:
        terminal.report()
    for stream in stalled:
        print(
            f"shellrt run: the reader of {stream} took nothing more by the timeout; the rest was not "
            f"passed on (all of it is in {out.path if stream == 'stdout' else err.path})",
            file=sys.stderr,
        )
    if result.received_signal is not None:
        return 128 + result.received_signal
    notes = [*result.notes, *guard.after()]
    if result.output_closed:
        silence_stdout()
        return EXIT_STDOUT_CLOSED
    if result.timed_out:
        print(f"shellrt run: timed out after {timeout_s:g}s; the command was killed", file=sys.stderr)
        code = EXIT_TIMEOUT
    else:
        code = result.exit_code if result.exit_code is not None else 1
    if notes:
        from shellrt.cli._terminal import shown  # only when there are notes: the lean path stays lean

        for note in notes:  # e.g. a planted hook or rc file that was reverted (quarantine kept)
            print(f"shellrt run: {shown(note)}", file=sys.stderr)  # they name the command's files
    return _report_loss(out, err, result.capture_error, code)


def _report_loss(out: OutputSpool, err: OutputSpool, capture_error: str | None, code: int) -> int:
    """Plain mode: stdout/stderr got every byte unless capturing failed; say what else happened."""
    parts = [
        spool.loss_report(label)
        for label, spool in (("output", out), ("stderr", err))
        if not spool.complete_in_memory
    ]
    lost = " ".join(p for p in (*parts, capture_error) if p)
    return report_loss(lost, capture_error is not None, code)
