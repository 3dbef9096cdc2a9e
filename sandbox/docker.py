"""Docker backend: one long-lived, hardened container per session, driven by a persistent executor.

Why this shape:

* One ``docker exec`` per command costs ~80-120 ms here; agents and harnesses
  run thousands of commands. So the container's main process (under
  docker-init) is a POSIX-sh executor (``_executor.sh``) and every command is
  one short line on its control FIFO plus a fork inside the container. Starting
  it costs no ``docker exec`` at all: a start is one create, one start and the
  executor's hello (see ``_docker_control``).
* Command output never travels through the control channel: the host creates
  FIFOs in a private directory bind-mounted into the container and reads them
  directly (``_docker_fifo``). Output streams at pipe speed with bounded
  memory, and several commands run at once without any multiplexing in shell.
  Consequence: the daemon must run on this machine (checked at start).
* Start-up cost is kept to the daemon's own work: one docker client per process
  and daemon, no image inspect (a missing image is the create's 404), the reap
  of leftovers overlapped with the start, no polling (only a late hello
  triggers an inspect), and ``close()`` is one forced remove.
* Hardening by default: no network (``bridge`` is opt-in), read-only root, a
  writable workspace (copy mode: a private host copy only the container mounts,
  so the user's repository is never modified, see `_copy_in`; bind mode: the
  host directory itself),
  tmpfs /tmp (exec allowed: build tools and test runners execute from /tmp;
  nosuid/nodev), all capabilities dropped, no-new-privileges, the default
  seccomp profile, a non-root user (65534 in copy mode, the workspace owner in
  bind mode), memory (no swap), pids and cpu limits, and docker-init as PID 1
  to reap orphans.
* Nothing leaks: containers carry owner labels (``_docker_labels``); ``close()``
  removes the container and its anonymous volumes; every start reaps the
  containers of dead owners on this host (concurrent starts share one reap); ``shellrt sandbox gc`` does the same
  on demand.

The docker SDK is imported only here (a layer test enforces it).

The image needs ``/bin/sh`` plus ``env`` and ``sleep`` (``setsid`` is used when
present: without it commands share the executor's process group, and the kill
path falls back to the environment marker). Images without ``/bin/sh`` are
refused at ``start()`` with `BackendUnavailableError` (docker-init cannot exec
the executor, the container exits with 127 and says so in its log). Bash is optional: see
`DockerBackend.shell_path` (busybox images have only ``sh``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets
import select
import shutil
import stat
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar
from urllib.parse import urlparse

import anyio
import anyio.to_thread
import docker
import docker.errors
import requests.exceptions
from docker.types import Mount

from sandbox._docker_control import ControlChannel, ExecutorGoneError
from sandbox._docker_fifo import FifoReceiveStream, FifoSendStream, make_fifo, open_fifo
from sandbox._docker_hostpid import host_pid
from sandbox._docker_labels import (
    LABEL_CREATED,
    LABEL_IO_DIR,
    LABEL_MANAGED,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    LABEL_SESSION,
    ReapVerdict,
    judge,
    session_labels,
)
from sandbox._docker_protocol import executor_script, parse_exit, render_request
from sandbox._docker_reset import (
    ResetError,
    empty_dir,
    inspect_container,
    leftover_processes,
    parse_reset_reply,
)
from sandbox.base import ExecRequest, ExitStatus, SandboxBackend, SandboxProcess
from sandbox.config import DockerConfig
from sandbox.confine import relative_to
from sandbox.errors import BackendUnavailableError, SandboxClosedError, SandboxExecError
from sandbox.policy import SandboxPolicy

__all__ = [
    "BackendUnavailableError",
    "DockerBackend",
    "DockerProcess",
    "ResetError",
    "SandboxInfo",
    "gc_sandboxes",
    "list_sandboxes",
]

_log = logging.getLogger("sandbox.docker")
_T = TypeVar("_T")

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: Where the host's FIFO directory appears inside the container.
_IO_MOUNT = "/.shellrt-io"
#: The executor's private directory (cwd files), on the /tmp tmpfs.
_PRIV_DIR = "/tmp/.shellrt-exec"
#: The container's main process: the executor, under docker-init (PID 1), which reaps orphans.
_EXECUTOR_ARGV = ["/bin/sh", f"{_IO_MOUNT}/executor.sh", _IO_MOUNT, _PRIV_DIR]
_DEFAULT_TMP_BYTES = 256 * 1024 * 1024
#: A fork bomb must never reach the host, so a pids limit always applies.
_DEFAULT_PIDS = 2048
_IO_PREFIX = "shellrt-docker-"
_START_TIMEOUT = 30.0
_KILL_TIMEOUT = 15.0
_COPY_USER = "65534:65534"
#: A reset (kill, wipe, verify) that takes longer than this fails: the container is not reused.
_RESET_TIMEOUT = 10.0
#: What shellrt's I/O directory may hold between tasks.
_IO_ENTRIES = frozenset({"executor.sh", "ctl.in", "ctl.out", "sh"})
#: The largest /bin/sh `protect_executor` copies (busybox is ~1 MB, dash ~130 kB).
_MAX_SHELL_BYTES = 16 * 1024 * 1024


async def _thread(fn: Callable[[], _T]) -> _T:
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=False)


# --------------------------------------------------------------------------- client
def _daemon_url(config_host: str | None) -> str | None:
    return config_host or os.environ.get("DOCKER_HOST") or None


#: One client per (process, daemon): a client costs a version round trip and a ping.
_clients: dict[tuple[int, str | None], docker.DockerClient] = {}
_clients_lock = threading.Lock()
#: Connections kept per client: enough for every thread of a busy batch run.
_POOL_SIZE = 64


def _unreachable(where: str, exc: BaseException) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"Docker daemon not reachable at {where}: {exc}. Start it (`sudo dockerd &`, or "
        "`sudo systemctl start docker`; scripts/start-dockerd.sh does both) or point "
        "DOCKER_HOST / DockerConfig.docker_host at a running daemon."
    )


def _where(config_host: str | None) -> str:
    return _daemon_url(config_host) or "the default socket (unix:///var/run/docker.sock)"


def _connect(config_host: str | None) -> docker.DockerClient:
    """This process's pinged client for the daemon, or `BackendUnavailableError` saying how to start it.

    Clients are shared (thread-safe: one connection per concurrent request) and
    made once per process and daemon; a client whose daemon went away is
    dropped by `_forget_client` so the next call connects afresh.
    """
    url = _daemon_url(config_host)
    key = (os.getpid(), url)
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            return client
        try:
            if url:
                client = docker.DockerClient(base_url=url, timeout=120, max_pool_size=_POOL_SIZE)
            else:
                client = docker.from_env(timeout=120, max_pool_size=_POOL_SIZE)
            client.ping()
        except Exception as exc:
            raise _unreachable(_where(config_host), exc) from exc
        _clients[key] = client
        return client


def _forget_client(config_host: str | None) -> None:
    """Drop the cached client (its daemon stopped answering)."""
    with _clients_lock:
        client = _clients.pop((os.getpid(), _daemon_url(config_host)), None)
    if client is not None:
        with contextlib.suppress(Exception):
            client.close()


def _require_local_daemon(config_host: str | None) -> None:
    url = _daemon_url(config_host)
    if not url:
        return
    parsed = urlparse(url)
    if parsed.scheme in ("unix", "npipe", ""):
        return
    if parsed.hostname in ("localhost", "127.0.0.1", "::1"):
        return
    raise BackendUnavailableError(
        f"the docker backend needs a daemon on this machine, not {url}: command output flows "
        "through FIFOs in a host directory bind-mounted into the container."
    )


def _write_exec_only(path: str, data: bytes) -> None:
    """Write a root-owned file the container's user may execute but not read (nor write)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o700)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, 0o711)
    finally:
        os.close(fd)


def _numeric_ids(user: str) -> tuple[int, int]:
    """``uid[:gid]`` as numbers; a user *name* cannot be resolved on the host, so it maps to 65534."""
    uid_s, _, gid_s = user.partition(":")
    if uid_s.isdigit() and (not gid_s or gid_s.isdigit()):
        return int(uid_s), int(gid_s or uid_s)
    return 65534, 65534


# --------------------------------------------------------------------------- gc
@dataclass(frozen=True, slots=True)
class SandboxInfo:
    """One shellrt container as `list_sandboxes` / `gc_sandboxes` see it."""

    id: str
    name: str
    session: str
    image: str
    status: str
    created: float
    owner_pid: str
    owner_host: str
    verdict: ReapVerdict


def _managed(client: docker.DockerClient) -> list[dict[str, Any]]:
    """Summaries of every shellrt container (one list call: no per-container inspect that could race a removal)."""
    return list(client.api.containers(all=True, filters={"label": f"{LABEL_MANAGED}=1"}))


def _info(summary: dict[str, Any], verdict: ReapVerdict) -> SandboxInfo:
    labels: dict[str, str] = summary.get("Labels") or {}
    try:
        created = float(labels.get(LABEL_CREATED, "0"))
    except ValueError:
        created = 0.0
    names = summary.get("Names") or ["?"]
    return SandboxInfo(
        id=str(summary.get("Id", "?"))[:12],
        name=str(names[0]).lstrip("/"),
        session=labels.get(LABEL_SESSION, "?"),
        image=str(summary.get("Image", "?")),
        status=str(summary.get("State", "?")),
        created=created,
        owner_pid=labels.get(LABEL_OWNER_PID, "?"),
        owner_host=labels.get(LABEL_OWNER_HOST, "?"),
        verdict=verdict,
    )


def _remove_io_dir(path: str | None) -> None:
    """Remove a session's host FIFO directory, but only one that is plainly ours."""
    if not path:
        return
    p = Path(path)
    if p.parent == Path(tempfile.gettempdir()) and p.name.startswith(_IO_PREFIX):
        shutil.rmtree(p, ignore_errors=True)


def _remove_container(client: docker.DockerClient, summary: dict[str, Any]) -> None:
    with contextlib.suppress(docker.errors.NotFound):
        client.api.remove_container(summary["Id"], v=True, force=True)
    _remove_io_dir((summary.get("Labels") or {}).get(LABEL_IO_DIR))


def _reap(
    client: docker.DockerClient,
    *,
    older_than: float | None = None,
    reap_all: bool = False,
    dry_run: bool = False,
    skip: Iterable[str] = (),
) -> list[SandboxInfo]:
    reaped: list[SandboxInfo] = []
    skipped = set(skip)
    for summary in _managed(client):
        if summary.get("Id") in skipped:
            continue
        verdict = judge(summary.get("Labels") or {}, older_than=older_than, reap_all=reap_all)
        if not verdict.reap:
            continue
        info = _info(summary, verdict)
        if not dry_run:
            try:
                _remove_container(client, summary)
            except docker.errors.APIError as exc:  # e.g. removal already in progress
                _log.debug("could not remove %s: %s", info.id, exc)
                continue
        reaped.append(info)
    return reaped


def list_sandboxes(docker_host: str | None = None) -> list[SandboxInfo]:
    """Every shellrt container on the daemon, with whether the default gc would reap it."""
    client = _connect(docker_host)
    return [_info(c, judge(c.get("Labels") or {})) for c in _managed(client)]


def gc_sandboxes(
    docker_host: str | None = None,
    *,
    older_than: float | None = None,
    reap_all: bool = False,
    dry_run: bool = False,
) -> list[SandboxInfo]:
    """Remove leftover shellrt containers (see `sandbox._docker_labels.judge`); return what was reaped."""
    client = _connect(docker_host)
    return _reap(client, older_than=older_than, reap_all=reap_all, dry_run=dry_run)


#: Daemons with a start-time reap in flight in this process (concurrent starts share it).
_reaps_running: set[tuple[int, str | None]] = set()


def _reap_orphans(client: docker.DockerClient, config_host: str | None) -> None:
    """Remove the containers of dead owners; run beside every start, never twice at once per daemon.

    A start that finds a reap already running skips its own: that reap is
    seconds old at most and catches the same orphans. Failures are logged,
    never fatal (``shellrt sandbox gc`` is the explicit way).
    """
    key = (os.getpid(), _daemon_url(config_host))
    with _clients_lock:
        if key in _reaps_running:
            return
        _reaps_running.add(key)
    try:
        reaped = _reap(client)
        if reaped:
            _log.info("reaped %d leftover shellrt container(s) of dead owners", len(reaped))
    except Exception as exc:
        _log.debug("reaping leftovers failed: %s", exc)
    finally:
        with _clients_lock:
            _reaps_running.discard(key)


class _ExecutorLost(Exception):
    """Internal: the executor session ended while a command was being started."""


# --------------------------------------------------------------------------- process
class DockerProcess(SandboxProcess):
    """A command running under the container's executor.

    ``container_pid`` is its pid inside the container (also its process group and
    session id); ``pid`` is the same process seen from the host.
    """

    def __init__(
        self,
        backend: DockerBackend,
        task_id: str,
        container_pid: int,
        stdout: FifoReceiveStream,
        stderr: FifoReceiveStream | None,
        stdin: FifoSendStream | None,
    ) -> None:
        self._backend = backend
        self.task_id = task_id
        self.container_pid = container_pid
        self.stdout = stdout
        self.stderr = stderr
        self.stdin = stdin
        self._stdin_fifo = stdin
        self._host_pid: int | None = None
        self._status: ExitStatus | None = None
        self._wait_lock = anyio.Lock()
        self._kill_lock = anyio.Lock()
        self._killed = False
        self._generation = backend._generation

    @property
    def pid(self) -> int | None:
        """Host pid of the command (the daemon is local), resolved on first use; None once gone."""
        if self._host_pid is None and self._status is None and self._backend.container_id:
            self._host_pid = host_pid(self._backend.container_id, self.container_pid)
        return self._host_pid

    @property
    def returncode(self) -> int | None:
        """Exit code once known (None while running or not yet waited for)."""
        return None if self._status is None else self._status.exit_code

    def _set_status(self, status: ExitStatus) -> None:
        if self._status is None:
            self._status = status
            if self._stdin_fifo is not None:
                self._stdin_fifo.close()

    async def wait(self) -> ExitStatus:
        async with self._wait_lock:
            if self._status is None:
                self._set_status(await self._backend._wait_exit(self))
            assert self._status is not None
            return self._status

    async def kill(self) -> None:
        async with self._kill_lock:
            if self._killed:
                return
            await self._backend._kill(self)
            self._killed = True


# --------------------------------------------------------------------------- backend
class DockerBackend(SandboxBackend):
    """A hardened container per session with a persistent in-container executor.

    Public extras beyond `SandboxBackend`: `export_workspace` (copy the workspace
    back out, for ``--export DIR``), `shell_path` / `has_bash` (busybox images
    have no bash: a supervisor wrapping commands in ``bash -c`` must use
    ``shell_path`` instead), `container_id`, `session_id` and `recoveries`
    (reasons the container had to be restarted).
    """

    name = "docker"

    def __init__(self, config: DockerConfig, policy: SandboxPolicy) -> None:
        super().__init__(policy)
        self.config = config
        self.session_id = uuid.uuid4().hex[:12]
        self.container_id: str | None = None
        #: The container while it exists (``container_id`` stays set after close, for the record).
        self._cid: str | None = None
        #: Why the container was restarted as a last resort (kill timed out, executor died).
        self.recoveries: list[str] = []
        self._client: docker.DockerClient | None = None
        self._host_dir: str | None = None
        self._io_dir: str | None = None
        self._control: ControlChannel | None = None
        self._executor_lock = anyio.Lock()
        self._ids = itertools.count(1)
        self._procs: dict[str, DockerProcess] = {}
        self._started = False
        self._closed = False
        self._shell = "/bin/sh"
        self._has_setsid = True
        self._user = config.user or self._default_user()
        self._generation = 0
        #: The executor's pid inside the container (diagnostics, tests).
        self.executor_pid: int | None = None
        #: Successful `reset` calls: the container has served ``resets + 1`` tasks.
        self.resets = 0
        #: The executor's host pid and a pidfd that tells when it is gone (resolved when first needed).
        self._executor_host: tuple[int, int] | None = None
        #: `protect_executor` succeeded: the commands cannot tamper with the executor.
        self._protected = False

    # --- description -----------------------------------------------------------
    @property
    def workspace(self) -> str:
        return self.config.container_workspace

    @property
    def shell_path(self) -> str:
        """Absolute path of the best shell in the image: bash when present, else ``/bin/sh``.

        Known after ``start()``. The supervisor's ``bash -c`` wrapper must fall
        back to this on images without bash (busybox, alpine).
        """
        return self._shell

    @property
    def has_bash(self) -> bool:
        """Whether the image has bash (known after ``start()``)."""
        return self._shell.endswith("/bash")

    @property
    def user(self) -> str:
        """The ``uid[:gid]`` (or name) commands run as."""
        return self._user

    def writable_roots(self) -> tuple[str, ...]:
        return (self.config.container_workspace, "/tmp")

    def _host_workspace(self) -> str:
        """Host directory the container's workspace is: the bind source, or the private copy."""
        if self.config.workspace_mode == "copy" and self._host_dir is not None:
            return os.path.join(self._host_dir, "workspace")
        return os.path.abspath(self.policy.workspace)

    def to_sandbox_path(self, host_path: Path) -> str | None:
        """Map a host path to the container; in copy mode both the private copy and the
        original workspace map (the latter names the same logical location)."""
        path = os.path.abspath(host_path)
        for base in dict.fromkeys((self._host_workspace(), os.path.abspath(self.policy.workspace))):
            rel = relative_to(path, base)
            if rel is not None:
                return str(PurePosixPath(self.config.container_workspace) / rel) if rel else self.config.container_workspace
        return None

    def to_host_path(self, sandbox_path: str) -> Path | None:
        """Map a container path to the host: in copy mode into the private copy (never the original)."""
        try:
            rel = PurePosixPath(sandbox_path).relative_to(self.config.container_workspace)
        except ValueError:
            return None
        return Path(self._host_workspace()) / rel

    def enforces(self) -> frozenset[str]:
        aspects = {"filesystem", "network", "memory", "pids", "cpus", "tree_kill"}
        if self.config.workspace_mode == "copy":
            aspects.add("read_denied")  # denied paths are left out of the copy
        return frozenset(aspects)

    def _default_user(self) -> str:
        if self.config.workspace_mode == "copy":
            # As root we hand the private copy to nobody; otherwise the container
            # runs as the (already unprivileged) caller, who owns the copy.
            return _COPY_USER if os.geteuid() == 0 else f"{os.getuid()}:{os.getgid()}"
        try:
            st = os.stat(self.policy.workspace)
        except OSError:
            return _COPY_USER
        return f"{st.st_uid}:{st.st_gid}"

    # --- lifecycle ---------------------------------------------------------------
    async def start(self) -> None:
        if self._started:
            return
        if self._closed:
            raise SandboxClosedError("this docker sandbox was closed; create a new backend")
        self._check_policy()
        _require_local_daemon(self.config.docker_host)
        try:
            client = await _thread(lambda: _connect(self.config.docker_host))
            self._client = client
            failure: Exception | None = None
            async with anyio.create_task_group() as tg:
                # Reaping leftovers is independent of this container: overlap it with the start.
                tg.start_soon(_thread, lambda: _reap_orphans(client, self.config.docker_host))
                try:
                    await _thread(self._create_container)
                    await self._start_executor()
                except Exception as exc:  # raised below as is, not wrapped in an exception group
                    failure = exc
            if failure is not None:
                raise failure
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._teardown()
            raise
        self._started = True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._started = False
        with anyio.CancelScope(shield=True):
            await self._teardown()

    async def _teardown(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        self._forget_executor_host()
        for proc in self._procs.values():
            proc._set_status(ExitStatus(exit_code=137, signal=9))
        self._procs.clear()
        cid, self._cid = self._cid, None
        client = self._client
        host_dir, self._host_dir = self._host_dir, None

        def remove() -> None:
            # One call: a forced remove kills the container at once (no stop timeout) and drops its volumes.
            if cid is not None and client is not None:
                try:
                    client.api.remove_container(cid, force=True, v=True)
                except docker.errors.NotFound:
                    pass
                except docker.errors.APIError as exc:
                    _log.warning("could not remove container %s: %s", cid[:12], exc)
                except requests.exceptions.ConnectionError as exc:
                    _log.warning("could not remove container %s (daemon gone): %s", cid[:12], exc)
            if host_dir is not None:
                shutil.rmtree(host_dir, ignore_errors=True)

        if cid is not None or host_dir is not None:
            await _thread(remove)

    def _check_policy(self) -> None:
        if self.policy.network == "host":
            raise BackendUnavailableError(
                "the docker backend does not share the host network; use network 'none' (default) or 'bridge'"
            )
        self._check_policy_workspace(self.policy)

    @staticmethod
    def _check_policy_workspace(policy: SandboxPolicy) -> None:
        ws = Path(policy.workspace)
        if not ws.is_dir():
            raise BackendUnavailableError(
                f"workspace {ws} does not exist or is not a directory; create it or pass an existing --workspace"
            )

    def _create_container(self) -> None:
        """Prepare the host directory, create and start the container (blocking; in a thread).

        The image is not inspected beforehand: a missing one makes the create
        fail with 404, which is when shellrt pulls (if allowed) or says how to get it.
        """
        client = self._client
        assert client is not None
        self._host_dir = tempfile.mkdtemp(prefix=_IO_PREFIX)
        io_dir = os.path.join(self._host_dir, "io")
        os.mkdir(io_dir)
        os.chmod(io_dir, 0o755)
        self._io_dir = io_dir
        script = os.path.join(io_dir, "executor.sh")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(executor_script())
        os.chmod(script, 0o644)
        for name in ("ctl.in", "ctl.out"):
            make_fifo(os.path.join(io_dir, name))

        limits = self.policy.limits
        tmp_bytes = limits.tmp_bytes or _DEFAULT_TMP_BYTES
        cw = self.config.container_workspace
        mounts = [Mount(target=_IO_MOUNT, source=io_dir, type="bind")]
        if self.config.workspace_mode == "bind":
            ws_source = str(Path(self.policy.workspace).resolve())
        else:
            ws_source = self._copy_in()
        mounts.append(Mount(target=cw, source=ws_source, type="bind"))
        host_kwargs: dict[str, Any] = {
            "init": True,
            "network_mode": "bridge" if self.policy.network == "bridge" else "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,exec,size={tmp_bytes},mode=1777"},
            "mounts": mounts,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": limits.pids or _DEFAULT_PIDS,
        }
        if limits.memory_bytes:
            host_kwargs["mem_limit"] = limits.memory_bytes
            host_kwargs["memswap_limit"] = limits.memory_bytes  # no swap: a hog is OOM-killed, not slowed
        if limits.cpus:
            host_kwargs["nano_cpus"] = int(limits.cpus * 1e9)
        image = self.config.image

        def create() -> str:
            response = client.api.create_container(
                image,
                command=_EXECUTOR_ARGV,
                entrypoint=[],
                name=f"shellrt-{self.session_id}",
                labels=session_labels(self.session_id, self._host_dir or ""),
                detach=True,
                user=self._user,
                working_dir=cw,
                environment={"PATH": _PATH},
                host_config=client.api.create_host_config(**host_kwargs),
            )
            return str(response["Id"])

        try:
            try:
                cid = create()
            except docker.errors.ImageNotFound as exc:
                if not self.config.pull:
                    raise BackendUnavailableError(
                        f"image {image!r} is not present locally. shellrt never pulls unless "
                        "DockerConfig.pull is true, and no registry may be reachable here: build it "
                        "(`docker build`, `docker import`, scripts/build-test-images.sh) or `docker load` it."
                    ) from exc
                try:
                    client.images.pull(image)
                except docker.errors.APIError as pull_exc:
                    raise BackendUnavailableError(f"could not pull image {image!r}: {pull_exc}") from pull_exc
                cid = create()
            self.container_id = self._cid = cid
            client.api.start(cid)
        except docker.errors.APIError as exc:
            verb = "start" if self._cid else "create"
            raise BackendUnavailableError(f"could not {verb} a container from {image!r}: {exc}") from exc
        except requests.exceptions.ConnectionError as exc:
            _forget_client(self.config.docker_host)
            raise _unreachable(_where(self.config.docker_host), exc) from exc

    async def _start_executor(self) -> None:
        """Wait for the hello of the executor (the container's main process) and attach the request pipe.

        Event-driven: the hello wakes us through the FIFO. Only while it is late
        does a cheap inspect check that the container still runs (an image
        without /bin/sh exits at once: docker-init cannot exec the executor).
        """
        io_dir = self._io_dir
        assert io_dir is not None
        control = ControlChannel(open_fifo(os.path.join(io_dir, "ctl.out"), os.O_RDONLY))
        try:
            hello = await self._await_hello(control)
            control.attach_writer(open_fifo(os.path.join(io_dir, "ctl.in"), os.O_WRONLY))
        except BaseException:
            control.close()
            raise
        self._adopt_hello(hello)
        self._control = control
        self._generation += 1

    def _adopt_hello(self, hello: Any) -> None:
        # hello: H 1 <pid> <setsid> <shell>  -> id="1", fields=(pid, setsid, shell)
        if len(hello.fields) >= 3:
            self.executor_pid = int(hello.fields[0]) if hello.fields[0].isdigit() else None
            self._has_setsid = hello.fields[1] == "1"
            self._shell = hello.fields[2]

    async def _await_hello(self, control: ControlChannel) -> Any:
        deadline = time.monotonic() + _START_TIMEOUT
        pause = 0.2
        gone = False
        while True:
            if not gone:
                try:
                    with anyio.move_on_after(min(pause, max(0.0, deadline - time.monotonic()))):
                        return await control.wait("H", "1")
                except ExecutorGoneError:
                    gone = True
            state = await _thread(self._container_state)
            if gone or state.get("Status") not in ("running", "created", "restarting"):
                raise await self._start_failure(state)
            if time.monotonic() >= deadline:
                raise BackendUnavailableError(
                    f"the executor did not start in {self.config.image!r} within {_START_TIMEOUT:g}s "
                    "(daemon overloaded?)"
                )
            pause = min(pause * 2, 2.0)

    def _container_state(self) -> dict[str, Any]:
        client, cid = self._client, self._cid
        if client is None or cid is None:
            return {}
        try:
            state: dict[str, Any] = client.api.inspect_container(cid).get("State") or {}
        except docker.errors.NotFound:
            return {"Status": "removed"}
        return state

    async def _start_failure(self, state: dict[str, Any]) -> BackendUnavailableError:
        client, cid = self._client, self._cid

        def logs() -> str:
            if client is None or cid is None:
                return ""
            with contextlib.suppress(Exception):
                raw = client.api.logs(cid, stdout=True, stderr=True, tail=20)
                return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            return ""

        text = (await _thread(logs)).strip()
        if "exec /bin/sh failed" in text or (state.get("ExitCode") == 127 and not text):
            return BackendUnavailableError(
                f"image {self.config.image!r} has no /bin/sh. The docker backend runs a POSIX-sh "
                "executor inside the container and needs /bin/sh, env and sleep (setsid recommended); "
                "use an image with a shell (busybox is enough)."
            )
        detail = "; ".join(line.strip() for line in text.splitlines()[-5:] if line.strip())
        detail = detail or f"container {state.get('Status', '?')}, exit code {state.get('ExitCode', '?')}"
        return BackendUnavailableError(
            f"the executor did not start in {self.config.image!r} ({detail}); the image needs "
            "/bin/sh, env and sleep"
        )

    async def _ensure_control(self) -> ControlChannel:
        if not self._started and self._control is None:
            raise SandboxClosedError("the docker sandbox is not started (call start() or use `async with`)")
        if self._closed:
            raise SandboxClosedError("the docker sandbox is closed")
        control = self._control
        if control is not None and not control.closed:
            return control
        async with self._executor_lock:
            if self._control is None or self._control.closed:
                await self._recover("the executor session ended")
            assert self._control is not None
            return self._control

    async def _recover(self, reason: str) -> None:
        """Last resort: restart the container (killing everything in it) and start a fresh executor."""
        _log.warning("docker sandbox %s: restarting container: %s", self.session_id, reason)
        self.recoveries.append(reason)
        if self._control is not None:
            self._control.close()
            self._control = None
        for proc in self._procs.values():
            proc._set_status(ExitStatus(exit_code=137, signal=9))
        self._procs.clear()
        client, cid = self._client, self._cid
        if client is None or cid is None:
            raise SandboxClosedError("the docker sandbox is closed")
        # The executor is the main process: a restart kills everything and starts a fresh one.
        await _thread(lambda: client.api.restart(cid, timeout=1))
        await self._start_executor()

    # --- recycling (batch) ---------------------------------------------------------
    def reuse_blocker(self) -> str | None:
        """Why this container can never serve another task (None: `reset` may try).

        Recycling needs copy mode (bind mode's workspace is the caller's own
        directory), a non-root user, a container never restarted, and a root
        host side (the reset is verified from outside, through ``/proc/<pid>/root``).
        """
        if not self._started or self._closed or self._cid is None:
            return "the container is not running"
        if self.config.workspace_mode != "copy":
            return "bind mode: the workspace is the caller's own directory"
        uid_s = self._user.partition(":")[0]
        if uid_s in ("0", "root"):
            return "runs as root"
        if os.geteuid() != 0:
            return "the host side is not root: the container cannot be inspected from outside"
        if self.recoveries:
            return "the container was restarted during the task"
        if not self._protected:
            return "the executor is not protected from the commands (protect_executor did not run or failed)"
        return None

    async def protect_executor(self, timeout_s: float = _RESET_TIMEOUT) -> None:
        """Make the executor immune to the commands, before any of them runs; `reset` requires it.

        The commands run as the executor's user, so they could ptrace it or
        write its ``/proc/<pid>/mem`` — and the executor outlives every reset.
        The host copies the image's own ``/bin/sh`` into the I/O directory as
        a root-owned, execute-only file and the executor re-execs through it:
        a process that executes a file it cannot read is not dumpable, so no
        command can reach into it (checked from the host: its ``/proc`` entries
        then belong to root). Raises `ResetError` when that does not hold.
        """
        control = self._control
        if control is None or control.closed or self._io_dir is None or self._procs:
            raise ResetError("protect_executor needs a running executor and no command yet")
        try:
            with anyio.fail_after(timeout_s):
                shell = await self._capture_bytes(["cat", "/bin/sh"], _MAX_SHELL_BYTES)
                path = os.path.join(self._io_dir, "sh")
                await _thread(lambda: _write_exec_only(path, shell))
                await control.send("U 1")
                hello = await control.wait("HU", "1")
                if hello.kind == "U":
                    raise ResetError("the image's /bin/sh cannot run from the I/O directory (noexec /tmp?)")
                self._adopt_hello(hello)
                await _thread(self._check_protected)
        except TimeoutError as exc:
            raise ResetError(f"protecting the executor did not finish within {timeout_s:g}s") from exc
        except (ExecutorGoneError, SandboxExecError, OSError) as exc:
            raise ResetError(f"could not protect the executor: {exc}") from exc
        self._protected = True

    def _check_protected(self) -> None:
        """The executor is not dumpable: its /proc entries belong to root, not to the commands' user."""
        host = self._executor_host_pid()
        if os.stat(f"/proc/{host}/mem").st_uid != 0:
            raise ResetError("the executor is dumpable: the commands could tamper with it")

    async def _capture_bytes(self, argv: list[str], limit: int) -> bytes:
        proc = await self.exec(ExecRequest(argv=tuple(argv), cwd="/", env={"PATH": _PATH}, merge_stderr=True))
        chunks: list[bytes] = []
        size = 0
        with contextlib.suppress(anyio.EndOfStream):
            while True:
                chunk = await proc.stdout.receive()
                size += len(chunk)
                if size > limit:
                    await proc.kill()
                    raise SandboxExecError(f"{argv!r} printed more than {limit} bytes")
                chunks.append(chunk)
        status = await proc.wait()
        if status.exit_code != 0:
            raise SandboxExecError(f"{argv!r} failed ({status.exit_code})")
        return b"".join(chunks)

    async def reset(self, timeout_s: float = _RESET_TIMEOUT) -> None:
        """Return the container to a pristine state for another task, or raise `ResetError`.

        The executor kills every process but docker-init and itself, empties
        /tmp, /dev/shm and /dev/mqueue and removes SysV IPC objects; the host
        then empties the workspace and checks from outside (`_docker_reset`)
        that no process is left, every writable place is empty or unwritable,
        and the user is not root. Any doubt, error or timeout raises
        `ResetError`: the caller must close this backend, not reuse it.
        Handles of the previous task's processes go inert.
        """
        blocker = self.reuse_blocker()
        if blocker is not None:
            raise ResetError(blocker)
        control = self._control
        if control is None or control.closed:
            raise ResetError("the executor session ended")
        self._generation += 1  # earlier process handles must never touch the next task's commands
        for proc in self._procs.values():
            proc._set_status(ExitStatus(exit_code=137, signal=9))
        self._procs.clear()
        nonce = secrets.token_hex(8)
        try:
            with anyio.fail_after(timeout_s):
                await control.send(f"Z {nonce}")
                reply = await control.wait("Z", nonce)
                problems = parse_reset_reply(reply.rest)
                if problems:
                    raise ResetError("; ".join(problems))
                await _thread(self._verify_pristine)
        except TimeoutError as exc:
            raise ResetError(f"the reset did not finish within {timeout_s:g}s") from exc
        except ExecutorGoneError as exc:
            raise ResetError(f"the executor session ended during the reset: {exc}") from exc
        except OSError as exc:
            raise ResetError(f"could not inspect the container: {exc}") from exc
        control.drop_mail()
        self.resets += 1

    def _executor_host_pid(self) -> int:
        """The executor's host pid, checked alive through a pidfd (so the number cannot be someone else's)."""
        if self._executor_host is None:
            cid, pid = self._cid, self.executor_pid
            found = host_pid(cid, pid) if cid is not None and pid is not None else None
            if found is None:
                raise ResetError("the executor's host process was not found")
            self._executor_host = (found, os.pidfd_open(found))
        host, pidfd = self._executor_host
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if poller.poll(0):
            raise ResetError("the executor exited")
        return host

    def _forget_executor_host(self) -> None:
        if self._executor_host is not None:
            with contextlib.suppress(OSError):
                os.close(self._executor_host[1])
            self._executor_host = None

    def _verify_pristine(self) -> None:
        """Host side of `reset` (blocking): wait out the reaping, empty the workspace, inspect from outside."""
        host = self._executor_host_pid()
        assert self.executor_pid is not None
        root = Path(f"/proc/{host}/root")
        deadline = time.monotonic() + 2.0
        while leftover_processes(root, self.executor_pid) and time.monotonic() < deadline:
            time.sleep(0.005)  # docker-init reaps the killed orphans
        empty_dir(self._host_workspace())
        with open(f"/proc/{host}/mountinfo", encoding="utf-8", errors="replace") as fh:
            mountinfo = fh.read()
        with open(f"/proc/{host}/status", encoding="utf-8", errors="replace") as fh:
            status = fh.read()
        problems = inspect_container(
            root,
            mountinfo=mountinfo,
            status=status,
            executor_pid=self.executor_pid,
            workspace=self.config.container_workspace.rstrip("/") or "/",
            io_mount=_IO_MOUNT,
            io_entries=_IO_ENTRIES,
            private_dir=_PRIV_DIR,
        )
        self._executor_host_pid()  # still the same process: what we read was the container's
        if os.stat(f"/proc/{host}/mem").st_uid != 0:
            problems.append("the executor became dumpable")
        if problems:
            raise ResetError("; ".join(problems))

    async def reuse_for(self, policy: SandboxPolicy) -> None:
        """After a successful `reset`: take on the next task's workspace (copied in like at start).

        ``policy`` must equal the current one but for ``workspace``: a pool
        recycles containers only between tasks with identical sandbox settings.
        """
        if policy.model_copy(update={"workspace": self.policy.workspace}) != self.policy:
            raise ValueError("a recycled container needs the same policy (only the workspace may differ)")
        if self._closed or not self._started:
            raise SandboxClosedError("the docker sandbox is closed")
        self._check_policy_workspace(policy)
        self.policy = policy
        await _thread(lambda: self._copy_in(into_existing=True))

    # --- workspace ---------------------------------------------------------------
    def _copy_in(self, *, into_existing: bool = False) -> str:
        """Copy the host workspace into a private host directory that only the container mounts.

        Why not ``put_archive`` into a volume: docker never applies an archive's
        metadata to the destination directory itself, and with every capability
        dropped nothing inside the container may chown it, so the sandbox user
        could not write at the workspace root. A private copy (under a 0700
        directory, owned by the sandbox user) keeps the host repository
        untouched just the same. Read-denied paths are left out of the copy.
        """
        assert self._host_dir is not None
        uid, gid = _numeric_ids(self._user)
        root = os.path.abspath(self.policy.workspace)
        dest = os.path.join(self._host_dir, "workspace")
        denied = {os.path.abspath(p) for p in self.policy.read_denied}

        def ignore(directory: str, names: list[str]) -> set[str]:
            base = os.path.abspath(directory)
            skip = {n for n in names if os.path.join(base, n) in denied}
            for n in names:  # FIFOs, sockets and devices are not workspace content
                try:
                    mode = os.lstat(os.path.join(base, n)).st_mode
                except OSError:
                    skip.add(n)
                    continue
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                    skip.add(n)
            return skip

        with os.scandir(root) as entries:
            empty = next(entries, None) is None
        if empty:  # the common batch case: nothing to walk
            if not into_existing:
                os.mkdir(dest)
            shutil.copystat(root, dest)
        else:
            shutil.copytree(root, dest, symlinks=True, ignore=ignore, dirs_exist_ok=into_existing)
            if into_existing:
                shutil.copystat(root, dest)
        if os.geteuid() == 0 and (uid, gid) != (0, 0):
            os.lchown(dest, uid, gid)
            for dirpath, dirnames, filenames in os.walk(dest):
                for name in (*dirnames, *filenames):
                    os.lchown(os.path.join(dirpath, name), uid, gid)
        return dest

    async def export_workspace(self, dest: Path) -> None:
        """Copy the container's workspace out to ``dest`` (created if missing; files there are overwritten).

        Extraction uses tarfile's ``data`` filter: the archive comes from an
        untrusted container, so absolute paths, ``..`` and links pointing
        outside ``dest`` are refused.
        """
        client, cid = self._client, self._cid
        if client is None or cid is None:
            raise SandboxClosedError("the docker sandbox is not running")
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        cw = self.config.container_workspace.rstrip("/")
        top = PurePosixPath(cw).name

        def fetch() -> None:
            stream, _ = client.api.get_archive(cid, cw + "/.")
            with tempfile.TemporaryFile() as spool:
                for chunk in stream:
                    spool.write(chunk)
                spool.seek(0)
                with tarfile.open(fileobj=spool, mode="r:") as tar:
                    members = []
                    for member in tar:
                        name = member.name
                        for prefix in (f"{top}/", "./"):
                            if name.startswith(prefix):
                                name = name[len(prefix) :]
                        if name in ("", ".", top):
                            continue
                        member.name = name
                        members.append(member)
                    tar.extractall(dest, members=members, filter="data")

        await _thread(fetch)

    # --- execution ---------------------------------------------------------------
    async def run_capture(self, argv: list[str], cwd: str = "/") -> str:
        """Run a short helper command and return its stdout (errors -> `SandboxExecError`)."""
        proc = await self.exec(ExecRequest(argv=tuple(argv), cwd=cwd, env={"PATH": _PATH}, merge_stderr=True))
        chunks: list[bytes] = []
        with contextlib.suppress(anyio.EndOfStream):
            while True:
                chunks.append(await proc.stdout.receive())
        status = await proc.wait()
        text = b"".join(chunks).decode("utf-8", "replace")
        if status.exit_code != 0:
            raise SandboxExecError(f"{argv[0]} failed ({status.exit_code}): {text.strip()}")
        return text

    async def exec(self, request: ExecRequest) -> SandboxProcess:
        try:
            return await self._exec(request)
        except _ExecutorLost:
            # The executor died (killed from inside, pids exhausted at the wrong
            # moment): restart the container once, report it, and retry.
            async with self._executor_lock:
                if self._control is None or self._control.closed:
                    await self._recover("the executor session ended")
            try:
                return await self._exec(request)
            except _ExecutorLost as exc:
                raise SandboxExecError(
                    f"the executor session ended while starting {request.argv[0]!r}, twice"
                ) from exc

    async def _exec(self, request: ExecRequest) -> SandboxProcess:
        control = await self._ensure_control()
        io_dir = self._io_dir
        assert io_dir is not None
        tid = str(next(self._ids))
        base = os.path.join(io_dir, tid)
        paths = [f"{base}.req", f"{base}.out"]
        fds: list[int] = []
        placeholders: list[int] = []

        def fifo(suffix: str, flags: int) -> int:
            path = base + suffix
            if path not in paths:
                paths.append(path)
            make_fifo(path) if not os.path.exists(path) else None
            fd = open_fifo(path, flags)
            fds.append(fd)
            return fd

        try:
            out_fd = fifo(".out", os.O_RDONLY)
            placeholders.append(fifo(".out", os.O_WRONLY))
            err_fd: int | None = None
            if not request.merge_stderr:
                err_fd = fifo(".err", os.O_RDONLY)
                placeholders.append(fifo(".err", os.O_WRONLY))
            in_fd: int | None = None
            if request.stdin:
                in_fd = fifo(".in", os.O_RDWR)
            env = dict(request.env)
            cwd_file = None
            if request.report_cwd:
                cwd_file = f"{_PRIV_DIR}/{tid}.cwd"
                env["SHELLRT_CWD_FILE"] = cwd_file
            req_fd = os.open(f"{base}.req", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            try:
                os.write(req_fd, render_request(tid, request.argv, env, request.cwd, cwd_file).encode())
            finally:
                os.close(req_fd)
            os.chmod(f"{base}.req", 0o644)
            flags = ("m" if request.merge_stderr else "") + ("i" if request.stdin else "") or "-"
            try:
                await control.send(f"R {tid} {flags}")
            except ExecutorGoneError as exc:
                raise _ExecutorLost from exc
            try:
                with anyio.fail_after(_START_TIMEOUT):
                    started = await control.wait("SE", tid)
            except TimeoutError as exc:
                raise SandboxExecError(
                    f"the executor did not start {request.argv[0]!r} within {_START_TIMEOUT:g}s "
                    "(is the container's pids limit exhausted?)"
                ) from exc
            except ExecutorGoneError as exc:
                raise _ExecutorLost from exc
            if started.kind == "E":
                reason = started.rest
                if reason == "cwd-missing":
                    raise SandboxExecError(f"working directory {request.cwd} does not exist in the container")
                raise SandboxExecError(f"could not start {request.argv[0]!r}: {reason}")
            container_pid = int(started.fields[0]) if started.fields else 0
            if in_fd is not None:
                # The command holds the read end now: swap our read-write end for a
                # write-only one, so writes after it exits fail (EPIPE) instead of
                # filling a pipe nobody reads.
                try:
                    writer = open_fifo(f"{base}.in", os.O_WRONLY)
                except OSError:
                    pass  # already gone: keep the read-write end; the stream closes at exit
                else:
                    os.close(in_fd)
                    fds.remove(in_fd)
                    fds.append(writer)
                    in_fd = writer
        except BaseException:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        finally:
            for path in paths:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        # The command now holds its own ends: drop the placeholders that kept EOF away.
        for fd in placeholders:
            os.close(fd)
        stdin_stream: FifoSendStream | None = None
        if in_fd is not None:
            stdin_stream = FifoSendStream(in_fd)
        proc = DockerProcess(
            self,
            tid,
            container_pid,
            FifoReceiveStream(out_fd),
            FifoReceiveStream(err_fd) if err_fd is not None else None,
            stdin_stream,
        )
        self._procs[tid] = proc
        return proc

    async def _wait_exit(self, proc: DockerProcess) -> ExitStatus:
        control = self._control
        if control is None or proc._generation != self._generation:
            return ExitStatus(exit_code=137, signal=9)
        try:
            event = await control.wait("X", proc.task_id)
        except ExecutorGoneError:
            if proc._status is not None:
                return proc._status
            return ExitStatus(exit_code=137, signal=9) if self._closed else ExitStatus(exit_code=255)
        finally:
            if proc._status is not None or control.closed:
                self._procs.pop(proc.task_id, None)
        self._procs.pop(proc.task_id, None)
        rc, oom, cwd = parse_exit(event)
        signal = rc - 128 if rc > 128 and rc < 160 else None
        return ExitStatus(exit_code=rc, signal=signal, oom_killed=oom, cwd=cwd)

    async def _kill(self, proc: DockerProcess) -> None:
        if self._closed or proc._generation != self._generation:
            return
        control = self._control
        if control is None or control.closed:
            return
        try:
            with anyio.fail_after(_KILL_TIMEOUT):
                await control.send(f"K {proc.task_id} {proc.container_pid}")
                await control.wait("K", proc.task_id)
        except (TimeoutError, ExecutorGoneError):
            async with self._executor_lock:
                if proc._generation == self._generation:
                    await self._recover(f"kill of command {proc.task_id} did not complete")
            return
        # The tree is gone; the runner's exit report follows at once.
        with anyio.move_on_after(_KILL_TIMEOUT):
            await proc.wait()
