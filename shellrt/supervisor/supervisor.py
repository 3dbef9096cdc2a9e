"""The session's process supervisor: fresh shell per command, cwd, env, timeouts, background tasks.

Everything a command needs is decided here, above any sandbox: the shell
wrapper and its argv (`shells`), the clean environment (`env`), the working
directory (`cwd`), and the spooling of output (`spool`). The backend only
starts and kills processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import shlex
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio

from sandbox import ExecRequest, ExitStatus, SandboxBackend
from sandbox.errors import CwdRefusedError
from shellrt.protocol.trusted import trusted
from shellrt.supervisor._cwd_probe import ENTRY_HEAD_BYTES, probe_cwd, unenterable
from shellrt.supervisor._deadline import KillingDeadline
from shellrt.supervisor._spawner import Spawner
from shellrt.supervisor.cwd import CwdTracker
from shellrt.supervisor.env import base_env, command_env
from shellrt.supervisor.errors import SupervisorClosedError, SupervisorError, WorkingDirectoryError
from shellrt.supervisor.execution import Execution, asyncio_loop
from shellrt.supervisor.models import OOM_NOTE, BackgroundTask, CommandResult, ProgressEvent
from shellrt.supervisor.protect import WriteDeny
from shellrt.supervisor.protect_roots import RootGuards
from shellrt.supervisor.shells import Shell, shell_launch
from shellrt.supervisor.spool import OutputQuota, OutputSpool, SpoolFiles
from shellrt.supervisor.tasks import TaskManager

if TYPE_CHECKING:
    from shellrt.supervisor._host_pause import HostQuiet
    from shellrt.supervisor._host_pause_peers import Entry, Presence, Reach

__all__ = ["OutputCallback", "ProgressCallback", "Supervisor"]

#: The live sessions of this process by thread: a hook of one pauses those whose writable roots
#: overlap its own (`Reach`) and holds their starts, through one `HostQuiet` shared by the thread (a
#: second session's task re-planted under another's hook: round 38; keyed by the exact workspace, one
#: on its parent, or with it as a writable root, ran on: round 38 review3). Per thread: a pause's
#: events belong to one event loop. One pause for the thread: a process two hooks' sessions share
#: is continued only when the last hook ends (each pause skips what another stopped).
_NEIGHBOURS: dict[int, weakref.WeakSet[Supervisor]] = {}
_QUIETS: weakref.WeakValueDictionary[int, HostQuiet] = weakref.WeakValueDictionary()
#: The hooks holding a pause now, of every thread: token -> (thread key, reach). A start of another
#: thread's session on an overlapping workspace waits for them: `busy_elsewhere` looked once, and a
#: session idle then started a command that ran for the whole hook (round 39 review8). A start
#: checks them and counts itself (`_entering`) under `_HOLDS_LOCK`, a hook registers under it then
#: reads the counts: either the hook sees the start, or the start sees the hook.
_HOOKS: dict[int, tuple[int, Reach]] = {}
_HOLDS_LOCK = threading.Lock()
_HOOK_TOKENS = itertools.count(1)
#: How often a start waiting on another thread's hook looks again (it has no event of that loop).
_HOOK_POLL_S = 0.01

ProgressCallback = Callable[[ProgressEvent], None]
#: Receives ``("stdout" | "stderr", chunk)`` as output arrives (e.g. to echo it live).
OutputCallback = Callable[[str, bytes], None]

#: How often a session that runs anything checks that its peers' entry is still listed.
_RELIST_S = 1.0

#: How often a waiting foreground command checks its abort event.
_ABORT_POLL_S = 0.05


class Supervisor:
    """Runs commands of one session through a started sandbox backend.

    The supervisor does not own the backend: close it yourself after
    `close` (which kills every command and task still running).
    """

    def __init__(
        self,
        backend: SandboxBackend,
        *,
        session_dir: Path,
        preview_bytes: int = 16_384,
        progress_interval_s: float = 0.5,
        protect: bool = True,
        quota: OutputQuota | None = None,
        settings_files: Sequence[Path] = (),
        command_in_argv: bool | None = None,
        write_deny: WriteDeny | None = None,
        tree_session: str | None = None,
    ) -> None:
        self.backend = backend
        #: This session's name in the workspace-writes record's marks (`shellrt.permissions.tree_marks`):
        #: every session that runs commands marks its writable roots, unhashed (round 25).
        self.tree_session = tree_session or secrets.token_hex(8)
        self._marked: tuple[str, ...] = ()
        #: A command's text in its shell's argv, where every local user's ``ps`` reads it (default:
        #: hidden in the environment; ``SHELLRT_COMMAND_IN_ARGV=1`` turns it on; see `shell_launch`).
        self.command_in_argv = (
            command_in_argv
            if command_in_argv is not None
            else os.environ.get("SHELLRT_COMMAND_IN_ARGV") == "1"
        )
        #: Output bytes saved per command / per session (default: `OutputQuota.from_env`).
        self.quota = quota if quota is not None else OutputQuota.from_env()
        self.session_dir = Path(session_dir)
        self._shell_dir = self.session_dir / "shell"
        self._task_dir = self.session_dir / "tasks"
        self._shell_dir.mkdir(parents=True, exist_ok=True)
        self._task_dir.mkdir(parents=True, exist_ok=True)
        # The session quota counts on disk: it holds across reopen and processes (round 17).
        self._account = self.quota.attach_session(self.session_dir)
        self._preview_bytes = preview_bytes
        self._progress_interval_s = progress_interval_s
        self._host_like = backend.host_view
        self._base_env = base_env() if self._host_like else base_env({})
        if not self._host_like:
            self._base_env.pop("HOME", None)
        self._cwd = CwdTracker(backend)
        self._spawner = Spawner()
        self._live: set[Execution] = set()
        #: Shared by overlapping hooks (`quiet_for_host`) of every session of its thread; made at
        #: the first hook (`_QUIETS` holds it while one of them keeps it).
        self._host_quiet: HostQuiet | None = None
        #: Where it is registered among `_NEIGHBOURS` (at its first start or hook, in its event loop).
        self._neighbours_key: int | None = None
        #: Where its commands may write (`_reach`), made when a hook first needs it.
        self._reach_cache: Reach | None = None
        #: Starts whose backend ``exec`` has not returned yet: `close` waits for them (see `_start`).
        #: A count, and an event only once `close` waits (an event per start: ~1.4 us hot a command).
        self._starting = 0
        self._started: anyio.Event | None = None
        #: Starts past the hooks' gate whose execution is not yet live (`_HOOKS`).
        self._entering = 0
        #: Its entry among other shellrt processes' (`_host_pause_peers`) while it runs anything.
        self._presence: Presence | None = None
        #: The timer of `_watch_listing` (None: not watching).
        self._relist: asyncio.TimerHandle | None = None
        # 48 bits: session directories outlive Supervisors, and 24 met within a few thousand (round 42).
        self._session_tag = secrets.token_hex(6)
        # One empty file shared by every empty result; checked before each link where a command
        # reaches the session directory (local: one wrote into it, round 49).
        self._spool_files = SpoolFiles(
            self._shell_dir,
            f"cmd-{self._session_tag}",
            check_empty="filesystem" not in backend.enforces(),
        )
        self.tasks = TaskManager()
        self._closed = False
        # Nothing planted for later unsandboxed programs (hooks, rc files, settings): see protect.py.
        # ``write_deny``: the session's write-deny globs, one more thing a command may not leave.
        self._guard = (
            RootGuards.for_backend(backend, self.session_dir, settings_files, write_deny) if protect else None
        )

    # --- properties ------------------------------------------------------------
    @property
    def cwd(self) -> str:
        """The session's current directory (sandbox path); starts at the workspace root."""
        return self._cwd.cwd

    def set_cwd(self, path: str) -> None:
        """Adopt ``path`` (sandbox path) as the session cwd when it is inside the allowed roots.

        The runtime applies cwd changes in tool_use order after a parallel batch
        through this, whatever order the commands finished in.
        """
        self._cwd.set(path)

    @property
    def base_env(self) -> dict[str, str]:
        """A copy of the documented base environment (see `shellrt.supervisor.env`)."""
        return dict(self._base_env)

    # --- lifecycle ---------------------------------------------------------------
    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._spawner.task_group = self._tg
        from shellrt.supervisor._tree_note import note_roots

        self._marked = tuple(str(r) for r in self.backend.policy.allowed_roots())
        note_roots(self._marked, self.tree_session, opening=True)  # a few syscalls: no thread
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.close()
        finally:
            self._spawner.task_group = None
            await self._tg.__aexit__(exc_type, exc, tb)

    async def close(self) -> None:
        """Kill every running command and background task (their whole trees). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            try:
                # A command still starting is in neither list below; its start kills it (`_start`).
                await self._starts_done()  # no start begins once closed: the count only falls now
                await self.tasks.close()
                async with anyio.create_task_group() as tg:
                    for execution in list(self._live):
                        tg.start_soon(execution.kill)
            finally:
                # Only now out of the hooks' reach: its tasks ran under another session's hook while
                # they were being killed (round 38 review3).
                self._leave_neighbours()
                if self._relist is not None:
                    self._relist.cancel()
                    self._relist = None
                if self._presence is not None:
                    self._presence.close()
            await anyio.to_thread.run_sync(self._spool_files.close)
            if self._guard is not None:
                await self._guard.final()
            if self._marked:  # every write made: a guarded start compares the tree from now on
                from shellrt.supervisor._tree_note import note_roots

                note_roots(self._marked, self.tree_session, opening=False)
            if self._account is not None:
                self.quota.detach()
                self._account.close()

    # --- running -------------------------------------------------------------------
    async def run(
        self,
        command: str | Sequence[str],
        *,
        timeout_s: float,
        env: dict[str, str] | None = None,
        shell: Shell = "bash",
        stdin: bytes | None = None,
        background_on_timeout: bool = False,
        background_cap: int | None = None,
        merge_stderr: bool = True,
        on_progress: ProgressCallback | None = None,
        on_output: OutputCallback | None = None,
        track_cwd: bool = True,
        abort: anyio.Event | None = None,
        description: str = "",
        cwd: str | None = None,
        session_cwd: str | None = None,
        user: str | None = None,
    ) -> CommandResult:
        """Run ``command`` and wait for it (at most ``timeout_s``).

        ``command``: a string runs in a fresh ``shell``; a sequence of strings is
        an argv started directly — no shell, every word passed intact, no cwd
        tracking (it cannot ``cd``).

        On timeout the whole tree is killed — or, with ``background_on_timeout``,
        the command keeps running as a background task whose id the result
        carries; not while ``background_cap`` tasks already run (then it is killed and a note
        says why: a model's short timeouts would otherwise hold any number of tasks). Setting
        ``abort`` kills the tree and returns ``interrupted``; cancelling the caller's scope kills
        the tree too, then propagates.

        Where it starts: ``cwd`` (an API caller's choice) is honoured anywhere the
        sandbox can see — relative to the workspace root when relative — and
        raises `WorkingDirectoryError` when it cannot be used; it is a one-off
        (the session's tracked cwd does not follow a ``cd`` there). ``session_cwd``
        (the model-facing tools pass their call's context snapshot, so calls of
        one parallel batch all start where the batch began) is lenient instead:
        outside the allowed roots or vanished, the command runs at the workspace
        root and the result's ``cwd_note`` says so. Neither: the tracked cwd.

        ``user``: run as this user inside the sandbox (docker); backends that
        cannot switch identities raise `sandbox.UnsupportedRequestError`.
        ``env`` is laid over the base environment. ``merge_stderr=False`` keeps
        stdout and stderr apart in the result (harnesses); merged is what a
        model reads.
        """
        argv = _argv_of(command, shell)
        start_cwd, start_note = await self._start_dir(cwd, session_cwd, env, user)
        # An argv cannot cd; an explicit cwd is a one-off that leaves the session's cwd alone.
        track_cwd = track_cwd and argv is None and cwd is None
        if self._guard is not None:
            await self._guard.before(self._busy())
        label = _label(command)
        execution = await self._start(
            command,
            env=env,
            shell=shell,
            stdin=stdin,
            merge_stderr=merge_stderr,
            report_cwd=track_cwd,
            cwd=start_cwd,
            user=user,
            spool_dir=self._shell_dir,
            name=self._spool_files.take(),
            on_output=on_output,
            detach=False,
            files=self._spool_files,
            movable=background_on_timeout,
        )
        timed_out = interrupted = False
        loop = None if background_on_timeout else asyncio_loop()
        try:
            if loop is not None:
                # The timeout as a loop timer that kills the tree (no cancel scope, see
                # `KillingDeadline`); a command still running after the pump window waits on
                # under a scope for what is left, as every command did before.
                quick = KillingDeadline(loop, execution, timeout_s)
                finished = False
                try:
                    finished = await execution.run_inline()
                finally:
                    quick.disarm()
                    if not finished:
                        self._spawner.spawn(execution.pump)
                if quick.fired:
                    timed_out = True
                    await quick.killed()
                elif not finished:
                    with anyio.move_on_after(quick.left()) as deadline:
                        interrupted = await self._wait_foreground(execution, on_progress, abort)
                    timed_out = deadline.cancelled_caught
            else:
                timed_out, interrupted = await self._run_scoped(execution, timeout_s, on_progress, abort)
        except BaseException:
            await execution.kill()
            self._live.discard(execution)
            self._settle_peer()  # nothing of it runs: other processes' hooks need not wait (round 42)
            raise
        cap_note = None
        if timed_out and background_on_timeout and background_cap is not None:
            running = self.tasks.running_count()
            if running >= background_cap:
                background_on_timeout = False
                cap_note = (
                    f"Not moved to the background: {running} background tasks already run in this session, "
                    f"the most at once (SHELLRT_MAX_BACKGROUND_TASKS={background_cap}); the command was killed. "
                    "Stop a task you no longer need with TaskStop, or run it with a longer timeout."
                )
        if timed_out and background_on_timeout:
            # Readers of a task's output open its file while it runs: give it its own now.
            execution.out.materialize()
            if execution.err is not None:
                execution.err.materialize()
            task_id = self.tasks.add(
                label,
                description or "moved to background on timeout",
                execution,
                read_offset=execution.out.saved_bytes,
            )
            execution.when_finished(self._task_ended(execution))
            self._live.discard(execution)
            return await self._guarded(
                self._result(
                    label,
                    argv,
                    execution,
                    start_cwd,
                    start_note,
                    track_cwd=False,
                    timed_out=True,
                    backgrounded_task_id=task_id,
                )
            )
        if timed_out or interrupted:
            await execution.kill()
        elif execution.killed_by_us:  # the session closed under it
            interrupted = True
        self._live.discard(execution)
        if cwd is None and start_cwd != self._cwd.workspace and not (timed_out or interrupted):
            why = await unenterable(
                self.backend,
                start_cwd,
                execution.status,
                execution.out.head(ENTRY_HEAD_BYTES)
                + (execution.err.head(ENTRY_HEAD_BYTES) if execution.err else b""),
                env=command_env(self._base_env, env),
                user=user,
            )
            if why is not None:
                start_note = self._cwd.unenterable(start_cwd, why)
        result = self._result(
            label,
            argv,
            execution,
            start_cwd,
            start_note,
            track_cwd=track_cwd,
            timed_out=timed_out,
            interrupted=interrupted,
        )
        if cap_note is not None:
            result = result.model_copy(update={"notes": (*result.notes, cap_note)})
        return await self._guarded(result)

    async def start_background(
        self,
        command: str | Sequence[str],
        *,
        env: dict[str, str] | None = None,
        shell: Shell = "bash",
        description: str = "",
        cwd: str | None = None,
        session_cwd: str | None = None,
        user: str | None = None,
        merge_stderr: bool = True,
    ) -> BackgroundTask:
        """Start ``command`` (a shell string or an argv) as a background task and return at once.

        ``cwd``, ``session_cwd``, ``user`` and ``env`` as in `run`. Output is
        stdout+stderr interleaved unless ``merge_stderr`` is False (then stderr
        goes to the task's ``stderr_path``; task reads return stdout only).
        """
        _argv_of(command, shell)
        start_cwd, _ = await self._start_dir(cwd, session_cwd, env, user)
        if self._guard is not None:
            await self._guard.before(self._busy(), background=True)
        task_id = self._fresh_task_id()
        execution = await self._start(
            command,
            env=env,
            shell=shell,
            stdin=None,
            merge_stderr=merge_stderr,
            report_cwd=False,
            cwd=start_cwd,
            user=user,
            spool_dir=self._task_dir,
            name=task_id,
            on_output=None,
        )
        self._live.discard(execution)
        self.tasks.add(_label(command), description, execution, task_id=task_id)
        execution.when_finished(self._task_ended(execution))
        return self.tasks.get(task_id)

    async def sweep_protected(self) -> None:
        """Revert plants before shellrt runs a program of its own on the host (a hook): a
        background task's plant would otherwise wait for the next command's check (protect.py)."""
        if self._guard is not None:
            await self._guard.sweep(self._busy())

    @contextlib.asynccontextmanager
    async def quiet_for_host(self) -> AsyncIterator[str | None]:
        """While shellrt runs a program of its own on the host (a hook): the session's running
        commands and background tasks stopped, then the protected files swept (a task looping
        over ``.git/config`` planted again between the sweep and the hook's ``git``: red team
        round 37). Yields why they could not all be stopped (None: all still)."""
        from shellrt.supervisor._host_pause import HostQuiet, busy_elsewhere, pause_running  # only with hooks
        from shellrt.supervisor._host_pause_peers import hook_among_peers

        peer_hook: Entry | None = None

        key = self._neighbours()
        quiet = self._host_quiet = self._host_quiet or _QUIETS.get(key) or HostQuiet()
        _QUIETS[key] = quiet
        reach = self._reach()
        sessions = [
            sup
            for sup in _NEIGHBOURS.get(key, ())
            if sup is self or reach.overlaps(sup._reach())  # one closing: what still runs (none once closed)
        ]
        quiet.holders += 1  # before any await: an overlapping hook's end must not continue the tree
        quiet.reaches.append(reach)
        token = next(_HOOK_TOKENS)
        with _HOLDS_LOCK:  # before `busy_elsewhere` reads their starts: other threads' wait now
            _HOOKS[token] = (key, reach)
        try:
            # New starts wait for the hooks' end (`_start`); one under way now is waited for, so its
            # process is among those paused (it was none of them, and ran under the hook: round 38).
            for sup in sessions:
                await sup._starts_done()
            running = [e for sup in sessions for e in sup._running()]
            failure = await anyio.to_thread.run_sync(pause_running, quiet, running) if running else None
            failure = failure or busy_elsewhere(_NEIGHBOURS, key, reach)  # not paused: refused (round 39)
            if failure is None:  # other shellrt processes: announced, then looked for (round 40)
                peer_hook, failure = await anyio.to_thread.run_sync(hook_among_peers, reach)
            await self.sweep_protected()
            yield failure
        finally:
            if peer_hook is not None:
                peer_hook.withdraw()
            with _HOLDS_LOCK:
                del _HOOKS[token]
            quiet.reaches.remove(reach)
            quiet.leave()

    def host_paused(self) -> int:
        """How many processes the pause for this thread's hooks holds now (0: none, or no hook)."""
        quiet = self._host_quiet
        return 0 if quiet is None else sum(len(paused.fds) for paused in quiet.paused)

    def _neighbours(self) -> int:
        """This session's key among `_NEIGHBOURS`, registered at the first call (from its event
        loop's thread: sessions of other loops never share a pause's events)."""
        if self._neighbours_key is None:
            self._neighbours_key = threading.get_ident()
            _NEIGHBOURS.setdefault(self._neighbours_key, weakref.WeakSet()).add(self)
        return self._neighbours_key

    def _leave_neighbours(self) -> None:
        if (key := self._neighbours_key) is not None and (neighbours := _NEIGHBOURS.get(key)) is not None:
            neighbours.discard(self)
            if not neighbours:
                del _NEIGHBOURS[key]

    def _reach(self) -> Reach:
        """Where this session's commands may write (host paths), for the sessions a hook pauses."""
        if self._reach_cache is None:
            from shellrt.supervisor._host_pause_peers import Reach  # with peers' entries (not the pause's)

            roots = self.backend.policy.allowed_roots()  # every backend has one (`__aenter__` reads it too)
            self._reach_cache = Reach.of(roots) if roots else Reach((f"session {id(self)}",))
        return self._reach_cache

    def _running(self) -> list[Execution]:
        """The running commands and background tasks (what a hook's pause stops)."""
        return list(self._live) + [
            e for t in self.tasks.list() if (e := self.tasks.execution(t.id)) is not None and not e.done.is_set()
        ]

    async def _starts_done(self) -> None:
        """Return once no backend ``exec`` is under way (`close`, `quiet_for_host`: one event, shared)."""
        while self._starting:
            if self._started is None or self._started.is_set():
                self._started = anyio.Event()
            await self._started.wait()

    def accept_protected(self, path: Path) -> None:
        """Keep ``path`` as it is: shellrt or the operator (not a command) wrote it (protect.py)."""
        if self._guard is not None:
            self._guard.accept_file(path)

    # --- internals -------------------------------------------------------------
    async def _start_dir(
        self, cwd: str | None, session_cwd: str | None, env: dict[str, str] | None, user: str | None
    ) -> tuple[str, str | None]:
        """Where a command starts, and a note when the session's cwd had to fall back (see `run`)."""
        if cwd is None:
            return self._cwd.start_dir(session_cwd)
        if session_cwd is not None:
            raise ValueError(
                "pass `cwd` (explicit, strict) or `session_cwd` (the session's, lenient), not both"
            )
        path, ask_sandbox = self._cwd.explicit(cwd)
        if ask_sandbox:
            await probe_cwd(self.backend, path, env=command_env(self._base_env, env), user=user)
        return path, None

    def _task_ended(self, execution: Execution) -> Callable[[], None]:
        """A background task's end: its entry among peers' settles, and its spools let go of what
        the files hold (a session keeps every task it ran: round 42)."""

        def ended() -> None:
            self._settle_peer()
            execution.out.release_memory()
            if execution.err is not None:
                execution.err.release_memory()

        return ended

    def _fresh_task_id(self) -> str:
        """A task id whose spool names are free: an earlier task of the session directory (a
        reopened session, another process on it) keeps its output (round 42)."""
        for _ in range(64):
            task_id = self.tasks.new_id()
            if not any(os.path.lexists(self._task_dir / f"{task_id}.{end}") for end in ("out", "err")):
                return task_id
        raise SupervisorError(f"no free task id in {self._task_dir}; remove old task outputs there")

    def _busy(self) -> bool:
        return bool(self._live) or self.tasks.any_running()

    def _settle_peer(self) -> None:
        """Let its entry among other processes' (`_host_pause_peers`) go once nothing runs."""
        if self._presence is not None and self._presence.held and not self._entering and not self._busy():
            self._presence.leave()

    async def _guarded(self, result: CommandResult) -> CommandResult:
        """Revert what the command planted (protect.py) and tell the model in the result's notes."""
        self._settle_peer()
        if self._guard is None:
            return result
        notes = await self._guard.after(self._busy())
        return result.model_copy(update={"notes": (*result.notes, *notes)}) if notes else result

    async def _start(
        self,
        command: str | Sequence[str],
        *,
        env: dict[str, str] | None,
        shell: Shell,
        stdin: bytes | None,
        merge_stderr: bool,
        report_cwd: bool,
        cwd: str,
        user: str | None,
        spool_dir: Path,
        name: str,
        on_output: OutputCallback | None,
        detach: bool = True,
        files: SpoolFiles | None = None,
        movable: bool = False,
    ) -> Execution:
        if self._closed:
            raise SupervisorClosedError("the shell session is closed; start a new session")
        # Images without bash (busybox) expose their POSIX shell; the wrapper is POSIX sh.
        posix_shell = self.backend.shell_path
        argv = _argv_of(command, shell)
        text_env: dict[str, str] = {}
        if argv is None:
            argv, text_env = shell_launch(
                str(command),
                shell,
                check_host=self._host_like,
                posix_shell=posix_shell,
                # A foreground command whose cwd nobody reads (proved by the analysis, or not
                # tracked by the caller) gets the cheaper trap without the report.
                report_cwd=report_cwd or detach,
                text_in_argv=self.command_in_argv,
            )
        request = ExecRequest(
            argv=argv,
            cwd=cwd,
            env=command_env(self._base_env, env, text_env),
            stdin=stdin is not None,
            merge_stderr=merge_stderr,
            report_cwd=report_cwd,
            user=user,
        )
        key = self._neighbours()
        while True:
            quiet = self._host_quiet or (_QUIETS.get(key) if _QUIETS else None)
            if quiet is not None and quiet.holders:
                # A hook runs on the host with the session paused (or another session whose roots
                # overlap this one's): a command starting now would run under it (a call judged
                # concurrency-safe beside the hook's call: round 38).
                await quiet.ended_for(self._reach())
                if self._closed:
                    raise SupervisorClosedError("the shell session is closed; start a new session")
            if self._enter_start(key):
                break
            await anyio.sleep(_HOOK_POLL_S)  # a hook of another thread: not paused from there
            if self._closed:
                raise SupervisorClosedError("the shell session is closed; start a new session")
        try:
            return await self._start_entered(
                request,
                cwd,
                spool_dir,
                name,
                on_output,
                detach,
                files,
                stdin=stdin,
                merge_stderr=merge_stderr,
                checked=detach or movable,
            )
        finally:
            self._entering -= 1
            self._settle_peer()  # a start that failed leaves nothing running

    def _enter_start(self, key: int) -> bool:
        """Count a start past the hooks' gate, unless a hook of another thread (`_HOOKS`) or of
        another shellrt process (`_host_pause_peers`) whose session's roots overlap this one's
        holds its pause (False: wait)."""
        with _HOLDS_LOCK:
            if _HOOKS and any(k != key and self._reach().overlaps(r) for k, r in _HOOKS.values()):
                return False
            if self._presence is None:
                from shellrt.supervisor._host_pause_peers import Presence

                self._presence = Presence()
            if not self._presence.held:
                if not self._entered_among_peers(self._presence):
                    return False
                self._watch_listing()
            self._entering += 1
            return True

    def _watch_listing(self) -> None:
        """While its entry is held, look each `_RELIST_S` that it is still listed (`Presence.relist`):
        removed under a long command, no hook of another process saw the session (round 42)."""
        loop = asyncio_loop()
        if loop is not None and self._relist is None:
            self._relist = loop.call_later(_RELIST_S, _relist_tick, weakref.ref(self))

    def _entered_among_peers(self, presence: Presence) -> bool:
        """`Presence.enter`, refused with a `SupervisorError` when this process cannot announce the
        start or look for other processes' hooks: run, it was unseen by them (red team round 41)."""
        from shellrt.supervisor._host_pause_peers import PeersError

        try:
            return presence.enter(self.backend.policy.allowed_roots(), self._reach)
        except PeersError as exc:
            raise SupervisorError(
                "the command was not run: shellrt could not tell other shellrt processes on this "
                f"workspace that it runs ({exc}), so a hook of theirs could run beside it; free file "
                "descriptors (close some, or raise `ulimit -n`) or space where the registry lives, "
                "then run it again"
            ) from exc

    async def _start_entered(
        self,
        request: ExecRequest,
        cwd: str,
        spool_dir: Path,
        name: str,
        on_output: OutputCallback | None,
        detach: bool,
        files: SpoolFiles | None,
        *,
        stdin: bytes | None,
        merge_stderr: bool,
        checked: bool,
    ) -> Execution:
        """The start itself, counted in `_entering` until its execution is live. ``checked``: a task's
        output (or a command's that may become one), read by name later: hashed as written."""
        # Spawn first: the spools are set up while the child execs and runs (the
        # pipe holds its first output meanwhile), which keeps them off the latency path.
        self._starting += 1
        try:
            try:
                process = await self.backend.exec(request)
            except CwdRefusedError as exc:
                # Docker's runner refuses a cwd it cannot enter as it was judged (gone, or a link
                # planted or swapped in since: red team round 26); the session's own cwd goes back
                # to the root, or every later command would be refused there.
                if cwd != self._cwd.cwd or cwd == self._cwd.workspace:
                    raise
                raise WorkingDirectoryError(self._cwd.unenterable(cwd, str(exc))) from exc
            if self._closed:
                # `close` ran while the backend started it: no kill pass of close knew of it, and
                # it ran on wherever the backend outlives the session (round 17).
                with anyio.CancelScope(shield=True):
                    await process.kill()
                raise SupervisorClosedError(
                    "the shell session closed while the command started; start a new session"
                )
        finally:
            self._starting -= 1
            if not self._starting and self._started is not None:
                self._started.set()
        try:
            out = OutputSpool(
                spool_dir / f"{name}.out",
                head_bytes=self._preview_bytes,
                tail_bytes=self._preview_bytes,
                on_chunk=(lambda b: on_output("stdout", b)) if on_output else None,
                files=files,
                quota=self.quota,
                checked=checked,
            )
            err = None
            if not merge_stderr:
                err = OutputSpool(
                    spool_dir / f"{name}.err",
                    head_bytes=self._preview_bytes,
                    tail_bytes=self._preview_bytes,
                    on_chunk=(lambda b: on_output("stderr", b)) if on_output else None,
                    files=files,
                    quota=self.quota,
                    checked=checked,
                )
        except BaseException:
            await process.kill()
            raise
        execution = Execution(process, out, err, stdin_data=stdin)
        # Every execution, not only a background task's: a foreground command moved to the
        # background on its timeout kept the entry locked after its end (red team round 42).
        execution.when_finished(self._settle_peer)
        self._live.add(execution)
        if detach:
            self._spawner.spawn(execution.pump)
        return execution

    async def _run_scoped(
        self,
        execution: Execution,
        timeout_s: float,
        on_progress: ProgressCallback | None,
        abort: anyio.Event | None,
    ) -> tuple[bool, bool]:
        """The wait under one cancel scope for the whole timeout: (timed out, interrupted). For a
        command that moves to the background on timeout (it must not be killed) and other backends."""
        interrupted = False
        with anyio.move_on_after(timeout_s) as deadline:
            # Hot path: pump in this task (no helper task, no extra wake-up); a command
            # still running after a few ms (or a cancel) continues in a detached pump.
            finished = False
            try:
                finished = await execution.run_inline()
            finally:
                if not finished:
                    self._spawner.spawn(execution.pump)
            if not finished:
                interrupted = await self._wait_foreground(execution, on_progress, abort)
        return deadline.cancelled_caught, interrupted

    async def _wait_foreground(
        self, execution: Execution, on_progress: ProgressCallback | None, abort: anyio.Event | None
    ) -> bool:
        """Wait for the execution; True when ``abort`` fired first.

        No helper tasks: the waiting task itself wakes every ``_ABORT_POLL_S``
        (when an abort event is given) or every progress interval, so a fast
        command costs one wait and nothing else.
        """
        if on_progress is None and abort is None:
            await execution.done.wait()
            return False
        step = (
            min(self._progress_interval_s, _ABORT_POLL_S) if abort is not None else self._progress_interval_s
        )
        next_progress = execution.started + self._progress_interval_s
        while not execution.done.is_set():
            with anyio.move_on_after(step):
                await execution.done.wait()
            if execution.done.is_set():
                break
            if abort is not None and abort.is_set():
                return True
            now = time.monotonic()
            if on_progress is not None and now >= next_progress:
                next_progress = now + self._progress_interval_s
                on_progress(
                    ProgressEvent(
                        elapsed_s=round(execution.elapsed_s, 3),
                        total_bytes=execution.total_bytes,
                        last_lines=execution.out.last_lines(),
                    )
                )
        return False

    def _result(
        self,
        command: str,
        argv: tuple[str, ...] | None,
        execution: Execution,
        start_cwd: str,
        start_note: str | None,
        *,
        track_cwd: bool,
        timed_out: bool = False,
        interrupted: bool = False,
        backgrounded_task_id: str | None = None,
    ) -> CommandResult:
        status = execution.status
        cwd_changed, cwd_note = False, start_note
        if track_cwd and status is not None and not backgrounded_task_id:
            changed, note = self._cwd.adopt(status.cwd, start_cwd)
            cwd_changed = changed or start_note is not None
            cwd_note = note or start_note
        elif start_note is not None:
            cwd_changed = True
        preview, out_truncated = execution.out.preview()
        stderr_text: str | None = None
        err_truncated = False
        if execution.err is not None:
            stderr_text, err_truncated = execution.err.preview()
        # Every field, in field order: our own typed values, not validated again (`trusted`).
        return trusted(
            CommandResult,
            {
                "command": command,
                "argv": argv,
                "exit_code": _exit_code(
                    status, timed_out=timed_out, backgrounded=backgrounded_task_id is not None
                ),
                "signal": None if status is None else status.signal,
                "timed_out": timed_out,
                "interrupted": interrupted,
                "oom_killed": bool(status and status.oom_killed),
                "backgrounded_task_id": backgrounded_task_id,
                "output_path": execution.out.path,
                "stderr_path": execution.err.path if execution.err else None,
                "total_bytes": execution.total_bytes,
                "preview": preview,
                "truncated": out_truncated or err_truncated,
                "stdout": preview if execution.err is not None else None,
                "stderr": stderr_text,
                "stdout_bytes": execution.out.total_bytes,
                "stderr_bytes": execution.err.total_bytes if execution.err else 0,
                "stdout_truncated": out_truncated,
                "stderr_truncated": err_truncated,
                "cwd": self._cwd.cwd,
                "cwd_changed": cwd_changed,
                "cwd_note": cwd_note,
                "duration_s": round(
                    execution.elapsed_s if execution.ended else time.monotonic() - execution.started, 6
                ),
                "notes": (*execution.notes, *((OOM_NOTE,) if status and status.oom_killed else ())),
                "output_lost": execution.loss_report(previews_complete_ok=True),
                "capture_failed": execution.capture_error is not None,
                "saved_bytes": execution.out.saved_bytes
                + (execution.err.saved_bytes if execution.err else 0),
                "sandbox_failure": None if status is None else status.sandbox_failure,
            },
        )


def _relist_tick(ref: weakref.ref[Supervisor]) -> None:
    """`Supervisor._watch_listing`'s timer: relist while held, else stop (a dropped session stops)."""
    sup = ref()
    if sup is None:
        return
    sup._relist = None
    presence = sup._presence
    if presence is not None and presence.held and not sup._closed:
        presence.relist()
        sup._watch_listing()


def _exit_code(status: ExitStatus | None, *, timed_out: bool, backgrounded: bool) -> int | None:
    """The command's exit code; never a clean 0 next to a timeout (its shell had exited, but
    processes it started ran on until the timeout killed them): None then, like "unknown"."""
    if backgrounded or status is None:
        return None
    if timed_out and status.exit_code == 0:
        return None
    return status.exit_code


def _argv_of(command: str | Sequence[str], shell: Shell) -> tuple[str, ...] | None:
    """The argv of a command given as a sequence (None for shell text); refuses what cannot run."""
    if isinstance(command, str):
        return None
    argv = tuple(command)
    if not argv:
        raise ValueError("an argv needs at least the program to run; pass e.g. ['ls', '-l']")
    for word in argv:
        if not isinstance(word, str) or "\0" in word:
            raise ValueError(f"argv words must be strings without NUL bytes; got {word!r}")
    if shell != "bash":
        raise ValueError(f"an argv runs without a shell; shell={shell!r} only applies to command text")
    return argv


def _label(command: str | Sequence[str]) -> str:
    """How a command is shown in results and task lists: its text, or its argv shell-quoted."""
    return command if isinstance(command, str) else shlex.join(command)
