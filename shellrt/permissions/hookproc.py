"""Run one command hook as a real subprocess, and leave nothing behind.

Why a module of its own: this is where hooks touch the machine. The hook runs
through ``/bin/sh -c`` in a new session (its own process group), gets its JSON
on stdin, and is bounded in time and output. Whatever happens — normal exit,
timeout, cancellation of the caller — its whole process tree is killed before
we return, the way command trees are (``sandbox._proctree``): the process
group, descendants recorded while it ran (``setsid`` children leave the group),
and a sweep for the hook's own marker variable (double-forked orphans).

Those nets miss a process that leaves the group, scrubs its environment
(``setsid env -i …``) and detaches before the next poll. As root the hook
therefore runs as pid 1 of its own pid namespace (``unshare --pid --fork``):
when its shell ends, the kernel kills everything left in it. Without root (a
user namespace would change what the hook may do) the three nets are all.

If shellrt itself dies while a hook runs (SIGKILL), the watcher of `_host_pause_watch` kills the
hook's process group (as root: its pid namespace with it); a hook ran on with no deadline before.
The hook's shell waits for one line on its stdin, written once the watcher holds it (`_GATE`): a
hook whose shellrt died before that exits before the operator's command runs.

A hook starts without its caller's raised scheduling priority (a real-time policy, a negative
nice, the real-time I/O class: `sandbox._bwrap_sched.calm_prefix`, red team round 36 bwrap3):
the caller raised it for shellrt's own supervision, and a hook works on a model's input for up to
its timeout. Its umask and signal state stay the caller's: a hook is the operator's program and
writes the operator's files, as the operator's own shell would run it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from sandbox._bwrap_sched import calm_prefix
from sandbox._proctree import MARKER_VAR, ProcessTree
from shellrt.permissions.hook_env import hook_env
from shellrt.supervisor import _host_pause_watch as _watch

__all__ = ["MAX_HOOK_OUTPUT", "SYSTEM_PATH", "HookProcessResult", "run_hook_process"]

#: Bytes kept from each of stdout and stderr; the rest is read and dropped.
MAX_HOOK_OUTPUT = 1 << 20
#: After the hook's shell exits, how long its pipes may stay open (held by children) before we stop reading.
_PIPE_GRACE_S = 0.5
#: How often the hook's descendants are recorded while it runs.
_RECORD_EVERY_S = 0.05
#: Where the launcher is looked for: the system's directories, never the caller's PATH.
SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
#: Runs the hook as pid 1 of a new pid namespace: the kernel kills what is left when it ends.
_PID_NAMESPACE = ("--pid", "--fork", "--kill-child", "--")
#: Whether `unshare` into a pid namespace works here (probed once per process; None: not yet).
_pid_namespace_works: bool | None = None
#: Keys of the hooks' holds in the watcher (its own range: the pauses count from 1).
_keys = itertools.count(1 << 62)
#: Run by the hook's shell before the operator's command: one line shellrt writes on its stdin once
#: the watcher holds the hook. At the stdin's end (shellrt died before the hold: nothing would kill
#: the hook) it exits before the command runs (red team round 40 hooks3). ``read`` takes no byte past
#: the newline from a pipe, so the command reads its JSON as before.
_GATE = "IFS= read -r _ || exit 125\n"
#: What shellrt writes once the hook is held (or when no watcher could take it: it runs, as before).
_GO = b"\n"


async def _pid_namespace_prefix() -> list[str]:
    """``unshare --pid --fork --kill-child --`` when it works here (root only), else nothing."""
    global _pid_namespace_works
    # Never through PATH: an entry in the workspace (an activated .venv/bin, direnv's bin) or a
    # relative one is where sandboxed commands write, and this runs as root on the host (round 15).
    unshare = shutil.which("unshare", path=SYSTEM_PATH) if os.geteuid() == 0 else None
    if unshare is None:
        return []
    if _pid_namespace_works is None:
        try:
            # From ``/`` with the cleaned environment: shellrt's own cwd is often the workspace, and
            # an inherited ``LD_PRELOAD=./x.so`` or ``LD_LIBRARY_PATH=:`` loads from it (round 34).
            probe = await anyio.run_process(
                [unshare, *_PID_NAMESPACE, "/bin/true"], check=False, cwd="/", env=hook_env(os.environ, ())
            )
            _pid_namespace_works = probe.returncode == 0
        except OSError:
            _pid_namespace_works = False
    return [unshare, *_PID_NAMESPACE] if _pid_namespace_works else []


@dataclass(frozen=True)
class HookProcessResult:
    """What one hook process did. ``exit_code`` is None when it did not exit by itself."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    #: Set when the hook could not be started at all.
    error: str | None = None
    pid: int | None = None
    #: Its stdout was longer than `MAX_HOOK_OUTPUT` (``stdout`` holds the start only).
    stdout_cut: bool = False


async def run_hook_process(
    command: str,
    payload: bytes,
    *,
    cwd: Path | None,
    env: dict[str, str],
    timeout: float,  # noqa: ASYNC109
) -> HookProcessResult:
    """Run ``command`` with ``payload`` on stdin; kill its whole tree on exit or timeout."""
    marker = f"shellrt-hook-{uuid.uuid4().hex}"
    try:
        calm = calm_prefix(limits=True)  # from this thread, which starts the hook
    except FileNotFoundError as exc:
        return HookProcessResult(None, "", "", error=f"cannot start: {exc}")
    try:
        process = await anyio.open_process(
            [*calm, *await _pid_namespace_prefix(), "/bin/sh", "-c", _GATE + command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**env, MARKER_VAR: marker},
            start_new_session=True,
        )
    except OSError as exc:
        return HookProcessResult(None, "", "", error=f"cannot start: {exc}")
    tree = ProcessTree(process.pid, marker)
    out, err = bytearray(), bytearray()
    drained = anyio.Event()
    key = _watch.key_for(next(_keys))
    try:
        await anyio.to_thread.run_sync(_watched, key, process.pid)
        with anyio.move_on_after(timeout) as deadline:
            async with anyio.create_task_group() as tg:
                assert process.stdin is not None and process.stdout is not None and process.stderr is not None
                tg.start_soon(_feed, process.stdin, _GO + payload)
                tg.start_soon(_drain_both, process.stdout, process.stderr, out, err, drained)
                tg.start_soon(_record, tree)
                await process.wait()
                with anyio.move_on_after(_PIPE_GRACE_S):
                    await drained.wait()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            tree.kill_group()
            await anyio.to_thread.run_sync(tree.kill_all)
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await process.wait()
            _watch.drop(key)
            # A hook that exited before its stdin was fed (the watcher's hand-off runs first) leaves a
            # broken pipe for the close to raise (CI108): the output streams are closed first, then it.
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
            with contextlib.suppress(OSError):
                await process.aclose()
    timed_out = deadline.cancelled_caught
    return HookProcessResult(
        exit_code=None if timed_out else process.returncode,
        stdout=out[:MAX_HOOK_OUTPUT].decode("utf-8", "replace"),
        stderr=err[:MAX_HOOK_OUTPUT].decode("utf-8", "replace"),
        timed_out=timed_out,
        pid=process.pid,
        stdout_cut=len(out) > MAX_HOOK_OUTPUT,
    )


def _watched(key: bytes, pid: int) -> None:
    """Have the watcher (`_host_pause_watch`) kill the hook's group should shellrt die while it runs:
    it ran on after a SIGKILL of shellrt, with no deadline left (round 39). Best effort: a hook
    whose watcher cannot start still runs (its tree is killed here as before)."""
    with contextlib.suppress(OSError, _watch.WatchError):
        fd = os.pidfd_open(pid)
        try:
            _watch.hold(key, fd, group=True)
        finally:
            os.close(fd)


async def _feed(stream: ByteSendStream, payload: bytes) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(payload)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.aclose()


async def _drain_both(
    stdout: ByteReceiveStream, stderr: ByteReceiveStream, out: bytearray, err: bytearray, done: anyio.Event
) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(_drain, stdout, out)
        tg.start_soon(_drain, stderr, err)
    done.set()


async def _drain(stream: ByteReceiveStream, sink: bytearray) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        while True:
            chunk = await stream.receive()
            room = MAX_HOOK_OUTPUT + 1 - len(sink)  # one byte more: says the output was cut
            if room > 0:
                sink += chunk[:room]


async def _record(tree: ProcessTree) -> None:
    while True:
        tree.record()
        await anyio.sleep(_RECORD_EVERY_S)
