"""The bubblewrap backend: read-only host root, writable workspace, private /tmp, own pid namespace.

Each command runs as ``bwrap <flags> -- argv`` where the flags (see `BwrapBackend.bwrap_args`):

- ``--ro-bind / /``: the whole host is visible read-only; ``--bind`` re-exposes
  the workspace and every extra writable root read-write;
- ``--tmpfs /tmp``: a private, empty /tmp per command; ``--dev /dev``, ``--proc /proc``;
- read-denied paths are hidden after the binds (``--tmpfs`` over a directory,
  ``--ro-bind /dev/null`` over a file), so a denied path inside the workspace stays hidden;
- ``--unshare-pid`` + ``--die-with-parent`` + ``--new-session``: the command's
  pid namespace dies with its init, so killing bwrap kills every descendant,
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

import os
import shutil
import subprocess
from pathlib import Path

import anyio

from sandbox._bwrap_retry import MAX_RETRIES, TRANSIENT, RetryingBwrapProcess
from sandbox._hostproc import HostProcess, HostRunner
from sandbox.base import ExecRequest, SandboxBackend, SandboxProcess
from sandbox.config import BwrapConfig
from sandbox.errors import BackendUnavailableError
from sandbox.policy import SandboxPolicy

__all__ = ["BwrapBackend"]


_NAMESPACE_FIX = (
    "bubblewrap cannot create namespaces here. Fix: run as root, or enable unprivileged user "
    "namespaces (sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu also "
    "kernel.apparmor_restrict_unprivileged_userns=0); inside Docker run the container with "
    "--privileged or a seccomp profile that allows unshare. Or use --sandbox local (no isolation)."
)


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

    def enforces(self) -> frozenset[str]:
        aspects = {"filesystem", "read_denied", "tree_kill"}
        if self.policy.network == "none":
            aspects.add("network")
        return frozenset(aspects)

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
        assert self._runner.state_dir is not None
        probe = [*self.bwrap_args(cwd="/", state_dir=self._runner.state_dir), "--", "true"]
        for _ in range(1 + MAX_RETRIES):  # the probe can lose the same mount race as a command
            result = await anyio.to_thread.run_sync(
                lambda: subprocess.run(probe, capture_output=True, timeout=20, check=False)
            )
            if result.returncode == 0 or not any(t in result.stderr for t in TRANSIENT):
                break
        if result.returncode != 0:
            await self._runner.close()
            self._bwrap = None
            detail = result.stderr.decode("utf-8", "replace").strip()
            raise BackendUnavailableError(f"{_NAMESPACE_FIX} (bwrap said: {detail or result.returncode})")

    async def close(self) -> None:
        await self._runner.close()

    @property
    def marker_prefix(self) -> str:
        """Every process this backend starts carries ``SHELLRT_RUN_ID=<marker_prefix>…``."""
        return self._runner.marker_prefix

    def bwrap_args(self, *, cwd: str, state_dir: Path) -> list[str]:
        """The bwrap argv up to (not including) ``--``, for one command starting in ``cwd``."""
        assert self._bwrap is not None
        args = [
            self._bwrap,
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
        ]
        if self.policy.network == "none":
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for root in self.policy.allowed_roots():
            args += ["--bind", str(root), str(root)]
        # After the roots, so a root that contains it (workspace = /tmp) cannot cover it.
        args += ["--bind", str(state_dir), str(state_dir)]
        for denied in self.policy.read_denied:
            if denied.is_dir():
                args += ["--tmpfs", str(denied)]
            elif denied.exists():
                args += ["--ro-bind", "/dev/null", str(denied)]
        args += ["--chdir", cwd]
        return args

    async def exec(self, request: ExecRequest) -> SandboxProcess:
        self._runner.check_open()

        async def spawn() -> tuple[HostProcess, int]:
            return await self._spawn_once(request)

        first = await spawn()
        # A retry would lose stdin already written to the failed attempt: only retry without stdin.
        return RetryingBwrapProcess(spawn, first, may_retry=not request.stdin)

    async def _spawn_once(self, request: ExecRequest) -> tuple[HostProcess, int]:
        """One bwrap start; returns the process and the read end of its ``--json-status-fd``."""
        run = self._runner.new_run(request.report_cwd)
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        argv = [
            *self.bwrap_args(cwd=request.cwd, state_dir=run.state_dir),
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
