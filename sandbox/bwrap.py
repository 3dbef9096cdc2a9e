"""The bubblewrap backend: read-only host root, writable workspace, private /tmp, own pid namespace.

Two modes (`BwrapConfig.persistent`):

* **persistent** (default): one long-lived bwrap sandbox per session runs a
  zygote (`sandbox._zygote_main`) that forks every command into fresh pid,
  mount (own /proc) and IPC namespaces with every capability dropped. The
  expensive part of a bwrap start -- the mount table, the network namespace --
  is paid once per session: a command costs ~1.5 ms instead of ~5 ms. The
  session's commands share /tmp (a private host directory bound there, so it
  survives a zygote restart), /dev/shm and loopback, as they would in a
  container: a background server is reachable from later commands. If the
  zygote cannot start (no usable Python inside, no CAP_SYS_ADMIN for the
  sandbox), the backend says so in the log and runs per command.
* **per command**: ``bwrap <flags> -- argv`` for each command: cheaper to start
  (no zygote, ~25 ms less) and costlier per command; the same session /tmp,
  but /dev/shm and loopback are each command's own.

The flags (see `BwrapBackend.bwrap_args`):

- ``--ro-bind / /``: the whole host is visible read-only; ``--bind`` re-exposes
  the workspace and every extra writable root read-write;
- the session's private tmp dir bound at /tmp (a host directory made at start,
  removed at close);
  ``--dev /dev``, ``--proc /proc``;
- read-denied paths are hidden after the binds (``--tmpfs`` over a directory,
  ``--ro-bind /dev/null`` over a file), so a denied path inside the workspace
  stays hidden. A denied path that appears (or changes kind) after the zygote
  started makes the next command start a new zygote that hides it too;
- ``--unshare-pid`` + ``--die-with-parent`` + ``--new-session``: the command's
  pid namespace dies with its init, so killing it kills every descendant,
  double-forked or not; ``--unshare-ipc``/``--unshare-uts`` always, and
  ``--unshare-net`` when ``policy.network == "none"`` (only loopback, isolated);
- ``--chdir``: the command's working directory.

The cwd report file lives in a private state dir bound at its host path. A
start that lost a race with the host's mount table is retried transparently
(see `sandbox._bwrap_retry`).
`start` probes bwrap once with the real flags and raises `BackendUnavailableError`
naming the fix when it is missing or cannot create namespaces.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import anyio

from sandbox._bwrap_retry import MAX_RETRIES, RetryingBwrapProcess, lost_mount_race
from sandbox._bwrap_zygote import Zygote, ZygoteGoneError
from sandbox._hostproc import HostProcess, HostRunner
from sandbox._scratch import OwnedDir
from sandbox.base import ExecRequest, SandboxBackend, SandboxProcess
from sandbox.config import BwrapConfig
from sandbox.errors import BackendUnavailableError, SandboxExecError
from sandbox.policy import SandboxPolicy

__all__ = ["BwrapBackend"]

_log = logging.getLogger(__name__)


_NAMESPACE_FIX = (
    "bubblewrap cannot create namespaces here. Fix: run as root, or enable unprivileged user "
    "namespaces (sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu also "
    "kernel.apparmor_restrict_unprivileged_userns=0); inside Docker run the container with "
    "--privileged or a seccomp profile that allows unshare. Or use --sandbox local (no isolation)."
)


def _zygote_tools() -> list[str] | str:
    """[python, unshare, setpriv, timeout] for the zygote, or why it cannot run.

    The zygote runs on this very Python (the host is visible inside); ``unshare``
    and ``setpriv`` come with util-linux, ``timeout`` with coreutils.
    """
    found = [shutil.which(name) for name in ("unshare", "setpriv", "timeout")]
    tools = [t for t in found if t]
    if len(tools) < len(found) or not sys.executable:
        return (
            "util-linux's unshare and setpriv and coreutils' timeout are needed (apt-get install util-linux)"
        )
    return [os.path.realpath(sys.executable), *tools]


class BwrapBackend(SandboxBackend):
    """Runs each process in fresh bubblewrap namespaces under the session's policy."""

    name = "bwrap"

    def __init__(self, config: BwrapConfig | None = None, policy: SandboxPolicy | None = None) -> None:
        if policy is None:
            raise TypeError("BwrapBackend needs a SandboxPolicy (at least the workspace)")
        super().__init__(policy)
        self.config = config or BwrapConfig()
        # No descendant polling: the pid namespace (--unshare-pid, --die-with-parent) is the tree.
        self._runner = HostRunner("bwrap", poll_descendants=False)
        self._bwrap: str | None = None
        self._zygote: Zygote | None = None
        #: Zygotes replaced while commands still ran in them: closed with the session.
        self._retired: list[Zygote] = []
        #: What the current zygote hid: a denied path that appears later needs a new zygote.
        self._hidden: tuple[str | None, ...] = ()
        self._session_tmp: Path | None = None
        self._tmp_owner: OwnedDir | None = None

    @property
    def session_tmp(self) -> Path | None:
        """Host directory backing the sandbox's /tmp (the file tools serve /tmp from it); None when stopped."""
        return self._session_tmp

    def enforces(self) -> frozenset[str]:
        aspects = {"filesystem", "read_denied", "tree_kill"}
        if self.policy.network == "none":
            aspects.add("network")
        return frozenset(aspects)

    @property
    def persistent(self) -> bool:
        """Commands run under a session zygote (False: one bwrap per command)."""
        return self._zygote is not None

    async def start(self) -> None:
        if self._bwrap is not None and not self._runner.closed:
            return
        if self.policy.network == "bridge":
            raise BackendUnavailableError(
                "the bwrap backend supports network 'none' or 'host', not 'bridge' (that is docker's)"
            )
        for root in self.policy.allowed_roots():
            if not root.is_dir():
                raise BackendUnavailableError(f"writable root {root} is not a directory; create it first")
        found = shutil.which(self.config.bwrap_path)
        if found is None:
            raise BackendUnavailableError(
                f"bubblewrap ({self.config.bwrap_path!r}) is not installed or not on PATH. "
                "Fix: apt-get install bubblewrap (dnf install bubblewrap), or use --sandbox local."
            )
        self._bwrap = found
        self._runner.start()
        # The session's /tmp: private to this sandbox, shared by its commands, gone at close.
        # 1777 inside (what programs expect of /tmp), under a 0700 parent: no other host
        # user can reach it to plant files for the sandbox's commands. (A killed owner's is
        # swept by the next start, see sandbox._scratch; the runner's prefix covers it.)
        self._tmp_owner = OwnedDir("shellrt-bwrap-tmp-")
        self._session_tmp = self._tmp_owner.path / "tmp"
        self._session_tmp.mkdir(mode=0o700)
        self._session_tmp.chmod(0o1777)
        if self.config.persistent:
            try:
                await self._start_zygote()
                return
            except ZygoteGoneError as exc:
                _log.warning("bwrap: running one sandbox per command (%s)", exc)
        await self._probe()

    async def _probe(self) -> None:
        """One bwrap start with the real flags: the clear error when namespaces are unavailable."""
        assert self._runner.state_dir is not None
        probe = [*self.bwrap_args(cwd="/", state_dir=self._runner.state_dir), "--", "true"]
        for _ in range(1 + MAX_RETRIES):  # the probe can lose the same mount race as a command
            result = await anyio.to_thread.run_sync(
                lambda: subprocess.run(
                    probe, capture_output=True, timeout=20, check=False, env={"PATH": os.defpath}
                )
            )
            if result.returncode == 0 or not lost_mount_race(result.stderr):
                break
        if result.returncode != 0:
            await self.close()
            detail = result.stderr.decode("utf-8", "replace").strip()
            raise BackendUnavailableError(f"{_NAMESPACE_FIX} (bwrap said: {detail or result.returncode})")

    def _denied_kinds(self) -> tuple[str | None, ...]:
        """Per read-denied path, what is there now: ``dir``, ``file`` or None (nothing to hide)."""
        kinds: list[str | None] = []
        for path in self.policy.read_denied:
            try:
                kinds.append("dir" if stat.S_ISDIR(os.stat(path).st_mode) else "file")
            except OSError:
                kinds.append(None)
        return tuple(kinds)

    async def _start_zygote(self) -> None:
        """Start a zygote sandbox (retrying a lost mount race); `ZygoteGoneError` when it cannot."""
        state_dir = self._runner.check_open()
        hidden = self._denied_kinds()
        # The zygote builds each command's namespaces (CAP_SYS_ADMIN) and empties its bounding
        # set (CAP_SETPCAP); the command itself runs with no capabilities at all.
        argv = self.bwrap_args(
            cwd="/",
            state_dir=state_dir,
            tmp=self._session_tmp,
            caps=("CAP_SYS_ADMIN", "CAP_SETPCAP"),
            denied=hidden,
        )
        if os.geteuid() != 0:
            argv[1:1] = ["--unshare-user"]
        tools = _zygote_tools()
        if isinstance(tools, str):
            raise ZygoteGoneError(tools)
        last: ZygoteGoneError | None = None
        for _ in range(1 + MAX_RETRIES):
            zygote = Zygote(self._runner)
            try:
                await zygote.start(argv, *tools)
            except ZygoteGoneError as exc:
                last = exc
                if not lost_mount_race(str(exc)):
                    break
                continue
            self._zygote, self._hidden = zygote, hidden
            return
        assert last is not None
        raise last

    async def close(self) -> None:
        zygotes = [*self._retired, *([self._zygote] if self._zygote is not None else [])]
        self._retired = []
        self._zygote = None
        for zygote in zygotes:
            await zygote.close()
        await self._runner.close()
        self._bwrap = None
        self._session_tmp = None
        owner, self._tmp_owner = self._tmp_owner, None
        if owner is not None:
            await anyio.to_thread.run_sync(owner.remove)

    @property
    def marker_prefix(self) -> str:
        """Every process this backend starts carries ``SHELLRT_RUN_ID=<marker_prefix>…``."""
        return self._runner.marker_prefix

    def bwrap_args(
        self,
        *,
        cwd: str,
        state_dir: Path,
        tmp: Path | None = None,
        caps: tuple[str, ...] = (),
        denied: tuple[str | None, ...] | None = None,
    ) -> list[str]:
        """The bwrap argv up to (not including) ``--``, for one sandbox starting in ``cwd``.

        ``tmp``: a host directory bound at /tmp (the session's /tmp) instead of a
        fresh tmpfs (the probe's). ``caps``: the only capabilities the sandbox's
        process keeps (the zygote's); a command keeps none -- run as root,
        bwrap would otherwise leave it every capability, CAP_SYS_ADMIN included.
        ``denied``: `_denied_kinds` as already taken (default: taken now).
        """
        assert self._bwrap is not None
        args = [
            self._bwrap,
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--cap-drop",
            "ALL",
        ]
        for cap in caps:
            args += ["--cap-add", cap]
        if self.policy.network == "none":
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        args += ["--tmpfs", "/tmp"] if tmp is None else ["--bind", str(tmp), "/tmp"]
        for root in self.policy.allowed_roots():
            args += ["--bind", str(root), str(root)]
        # After the roots, so a root that contains it (workspace = /tmp) cannot cover it.
        args += ["--bind", str(state_dir), str(state_dir)]
        kinds = self._denied_kinds() if denied is None else denied
        for path, kind in zip(self.policy.read_denied, kinds, strict=True):
            if kind == "dir":
                args += ["--tmpfs", str(path)]
            elif kind == "file":
                args += ["--ro-bind", "/dev/null", str(path)]
        args += ["--chdir", cwd]
        return args

    async def exec(self, request: ExecRequest) -> SandboxProcess:
        self._runner.check_open()
        if self._zygote is not None:
            return await self._exec_in_zygote(request)

        async def spawn() -> tuple[HostProcess, int]:
            return await self._spawn_once(request)

        first = await spawn()
        # A retry would lose stdin already written to the failed attempt: only retry without stdin.
        return RetryingBwrapProcess(spawn, first, may_retry=not request.stdin)

    async def _exec_in_zygote(self, request: ExecRequest) -> SandboxProcess:
        zygote = self._zygote
        assert zygote is not None
        if not zygote.alive or self._denied_kinds() != self._hidden:
            # Commands still running in the old zygote keep running; new ones go to a new one.
            self._retired.append(zygote)
            self._zygote = None
            try:
                await self._start_zygote()
            except ZygoteGoneError as exc:
                raise SandboxExecError(f"cannot restart the bwrap session sandbox: {exc}") from exc
            zygote = self._zygote
            assert zygote is not None
        if self._retired:  # replaced zygotes whose last command ended: end them now
            done = [z for z in self._retired if z.running == 0]
            self._retired = [z for z in self._retired if z.running > 0]
            for old in done:
                await old.close()
        run = self._runner.new_run(request.report_cwd)
        return await zygote.spawn(request, marker=run.marker, env_extra=run.env, cwd_file=run.cwd_file)

    async def _spawn_once(self, request: ExecRequest) -> tuple[HostProcess, int]:
        """One bwrap start; returns the process and the read end of its ``--json-status-fd``."""
        run = self._runner.new_run(request.report_cwd)
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        argv = [
            *self.bwrap_args(cwd=request.cwd, state_dir=run.state_dir, tmp=self._session_tmp),
            "--json-status-fd",
            str(status_w),
            "--",
            *request.argv,
        ]
        try:
            proc = await self._runner.spawn(
                argv,
                request,
                marker=run.marker,
                cwd_host_file=run.cwd_file,
                env_extra=run.env,
                cwd="/",
                pass_fds=(status_w,),
            )
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        return proc, status_r
