"""The local backend: no isolation, but every command in its own session and a complete tree kill.

Use it where bubblewrap cannot run. It enforces nothing of the filesystem or
network policy (`enforces` says so, and callers warn); it still guarantees that
a timeout or close leaves nothing running (see `sandbox._proctree`), and that
nothing outlives the owner process, however it dies (see `sandbox._ownerguard`:
a cgroup and a watchdog as root; without root, a watchdog that finds processes
by their marker variable, which a process that clears its environment escapes),
and that what a command leaves behind, however it detaches, ends with it or at
the latest with the session: commands start in a per-session cgroup where the
owner has one (root, cgroup v1 ``pids``: see `sandbox._session_cgroup`), each in a
cgroup of its own below it while another runs, so what it leaves dies at its end
whatever else runs; else as children of a per-session subreaper process (see
`sandbox._reaper`), whose sweep waits for the session's next idle moment.

Environment added to each process: ``SHELLRT_RUN_ID`` (the kill marker) and,
when ``report_cwd``, ``SHELLRT_CWD_FILE``.

Pre-spawned shells (``LocalConfig.warm_shells``, one by default; see `sandbox._warm`): the next command's bash
is started when the current one ends, shaped by its request; a matching command is
handed to it, anything else starts fresh. Each command still gets a bash process of its own.
While the CPU is saturated (pressure above `WarmPool.busy_psi`), no shell is pre-started.
"""

from __future__ import annotations

from sandbox._hostproc import HostProcess, HostRunner
from sandbox._ownerguard import guard_owner, owner_marker_token
from sandbox._reaper import ReaperLostError, start_reaper, stop_reaper
from sandbox._session_cgroup import open_session_cgroup
from sandbox.base import ExecRequest, SandboxBackend, refuse_user_switch
from sandbox.config import LocalConfig
from sandbox.policy import SandboxPolicy

__all__ = ["LocalBackend"]


class LocalBackend(SandboxBackend):
    """Runs processes directly on the host, each leading its own session/process group."""

    name = "local"

    def __init__(self, config: LocalConfig | None = None, policy: SandboxPolicy | None = None) -> None:
        if policy is None:
            raise TypeError("LocalBackend needs a SandboxPolicy (at least the workspace)")
        super().__init__(policy)
        self.config = config or LocalConfig()
        self._runner = HostRunner("local", marker_token=owner_marker_token())
        self._runner.calm = True  # nothing of the caller's scheduling priority (`sandbox._bwrap_sched`)

    async def start(self) -> None:
        if not self.policy.workspace.is_dir():
            from sandbox.errors import BackendUnavailableError

            raise BackendUnavailableError(
                f"workspace {self.policy.workspace} is not a directory; create it or pass another --workspace"
            )
        guard = guard_owner()
        self._runner.start()
        runner = self._runner
        if not self.reap_orphans:
            return
        if self.session_cgroup and (runner.session_cgroup is None or not runner.session_cgroup.usable):
            await self._close_cgroup()
            runner.session_cgroup = open_session_cgroup(guard.cgroup if guard is not None else None)
        if runner.session_cgroup is None and (runner.reaper is None or runner.reaper.closed):
            await stop_reaper(runner)  # a reaper that died: its successor takes over
            runner.reaper = await start_reaper()

    #: Keep what commands leave behind from outliving them (off: only the benchmark's baseline).
    reap_orphans = True
    #: The session's first command, while the warm pool is not made yet (`exec`).
    _first_request: ExecRequest | None = None
    #: Do it with a session cgroup where the owner has a cgroup (off: always the reaper process).
    session_cgroup = True

    async def close(self) -> None:
        await self._runner.close()  # kills the warm shells too: they are open processes of the runner
        if self._runner.warm is not None:
            self._runner.warm.forget()
        await stop_reaper(self._runner)
        await self._close_cgroup()

    async def _replace_reaper(self) -> None:
        """A command killed the session's reaper: start another before the next command (round 18).

        Without it every later command of the session started as the owner's own child, and what
        it left (``setsid env -i …``) went to init and outlived the session. Idle warm shells were
        started under the dead reaper: retired, so none serves a command outside the new one.
        """
        if self._runner.warm is not None:
            self._runner.warm.retire_all()
            await self._runner.warm.reap()
        await stop_reaper(self._runner)
        self._runner.reaper = await start_reaper()

    async def _close_cgroup(self) -> None:
        """Kill what is left in the session cgroup and remove it (once)."""
        cgroup, self._runner.session_cgroup = self._runner.session_cgroup, None
        if cgroup is not None:
            import anyio

            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(cgroup.close)

    @property
    def marker_prefix(self) -> str:
        """Every process this backend starts carries ``SHELLRT_RUN_ID=<marker_prefix>…``."""
        return self._runner.marker_prefix

    async def exec(self, request: ExecRequest) -> HostProcess:
        refuse_user_switch(request, "local")
        runner = self._runner
        if runner.reaper is not None and not runner.reaper.alive():
            await self._replace_reaper()
        warm = runner.warm
        if warm is None and self.config.warm_shells:
            if self._first_request is None:
                # A one-command run (`shellrt run`) never pays for the pool, nor imports it (its
                # import budget, tests/test_cli_imports.py): it starts with the second command,
                # told the first one's shape (a warm shell needs two of a shape in a row).
                self._first_request = request
            else:
                from sandbox._warm import WarmPool

                warm = runner.warm = WarmPool(runner, self.config.warm_shells)
                warm.refill(self._first_request)
        handle = await warm.take(request) if warm is not None else None
        if handle is None:
            run = runner.new_run(request.report_cwd)
            for last in (False, True):
                runner.replace_lost_reaper = not last
                try:
                    handle = runner.spawn(
                        request.argv,
                        request,
                        marker=run.marker,
                        cwd_host_file=run.cwd_file,
                        env_extra=run.env,
                        cwd=request.cwd,
                    )
                    break
                except ReaperLostError:  # killed just before this start (its death was not seen yet)
                    await self._replace_reaper()
                finally:
                    runner.replace_lost_reaper = False
            assert handle is not None  # the second try never raises `ReaperLostError`
        if warm is not None:
            # The next command's shell starts when this one has ended (`HostProcess.wait`, `sandbox._warm`).
            handle.warm_request = request
            await warm.reap()
        return handle
