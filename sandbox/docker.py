"""Docker backend: one long-lived, hardened container per session, driven by a persistent executor.

Why this shape:

* One ``docker exec`` per command costs ~80-120 ms here; agents and harnesses
  run thousands of commands. So one exec session per container starts a POSIX-sh
  executor (``_executor.sh``) and every command after that is one short line on
  its socket plus a fork inside the container.
* Command output never travels through that socket: the host creates FIFOs in
  a private directory bind-mounted into the container and reads them directly
  (``_docker_fifo``). Output streams at pipe speed with bounded memory, and
  several commands run at once without any multiplexing in shell. Consequence:
  the daemon must run on this machine (checked at start).
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
  containers of dead owners on this host; ``shellrt sandbox gc`` does the same
  on demand.

The docker SDK is imported only here (a layer test enforces it).

The image needs ``/bin/sh`` plus ``env`` and ``sleep`` (``setsid`` is used when
present: without it commands share the executor's process group, and the kill
path falls back to the environment marker). Images without ``/bin/sh`` are
refused at ``start()`` with `BackendUnavailableError`. Bash is optional: see
`DockerBackend.shell_path` (busybox images have only ``sh``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import socket
import stat
import tarfile
import tempfile
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
from sandbox.base import ExecRequest, ExitStatus, SandboxBackend, SandboxProcess
from sandbox.config import DockerConfig
from sandbox.errors import BackendUnavailableError, SandboxClosedError, SandboxExecError
from sandbox.policy import SandboxPolicy

__all__ = [
    "BackendUnavailableError",
    "DockerBackend",
    "DockerProcess",
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
#: The container's main process: docker-init (PID 1) runs this and reaps orphans.
_KEEPER = "trap 'exit 0' TERM INT; while :; do sleep 86400 & wait $!; done"
_DEFAULT_TMP_BYTES = 256 * 1024 * 1024
#: A fork bomb must never reach the host, so a pids limit always applies.
_DEFAULT_PIDS = 2048
_IO_PREFIX = "shellrt-docker-"
_START_TIMEOUT = 30.0
_KILL_TIMEOUT = 15.0
_COPY_USER = "65534:65534"


async def _thread(fn: Callable[[], _T]) -> _T:
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=False)


# --------------------------------------------------------------------------- client
def _daemon_url(config_host: str | None) -> str | None:
    return config_host or os.environ.get("DOCKER_HOST") or None


def _connect(config_host: str | None) -> docker.DockerClient:
    """A pinged client, or `BackendUnavailableError` saying how to start the daemon."""
    url = _daemon_url(config_host)
    where = url or "the default socket (unix:///var/run/docker.sock)"
    try:
        client = docker.DockerClient(base_url=url, timeout=120) if url else docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:
        raise BackendUnavailableError(
            f"Docker daemon not reachable at {where}: {exc}. Start it (`sudo dockerd &`, or "
            "`sudo systemctl start docker`; scripts/start-dockerd.sh does both) or point "
            "DOCKER_HOST / DockerConfig.docker_host at a running daemon."
        ) from exc
    return client


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
    try:
        return [_info(c, judge(c.get("Labels") or {})) for c in _managed(client)]
    finally:
        client.close()


def gc_sandboxes(
    docker_host: str | None = None,
    *,
    older_than: float | None = None,
    reap_all: bool = False,
    dry_run: bool = False,
) -> list[SandboxInfo]:
    """Remove leftover shellrt containers (see `sandbox._docker_labels.judge`); return what was reaped."""
    client = _connect(docker_host)
    try:
        return _reap(client, older_than=older_than, reap_all=reap_all, dry_run=dry_run)
    finally:
        client.close()


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
        #: Why the container was restarted as a last resort (kill timed out, executor died).
        self.recoveries: list[str] = []
        self._client: docker.DockerClient | None = None
        self._container: Any = None
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
            if path == base or path.startswith(base.rstrip("/") + "/"):
                rel = os.path.relpath(path, base)
                return (
                    str(PurePosixPath(self.config.container_workspace) / rel)
                    if rel != "."
                    else (self.config.container_workspace)
                )
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
        try:
            await _thread(self._create_container)
            await self._start_executor()
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
        for proc in self._procs.values():
            proc._set_status(ExitStatus(exit_code=137, signal=9))
        self._procs.clear()
        container, self._container = self._container, None
        client, self._client = self._client, None

        def remove() -> None:
            if container is not None:
                try:
                    container.remove(force=True, v=True)
                except docker.errors.NotFound:
                    pass
                except docker.errors.APIError as exc:
                    _log.warning("could not remove container %s: %s", container.short_id, exc)
            if client is not None:
                client.close()

        await _thread(remove)
        if self._host_dir is not None:
            shutil.rmtree(self._host_dir, ignore_errors=True)
            self._host_dir = None

    def _check_policy(self) -> None:
        if self.policy.network == "host":
            raise BackendUnavailableError(
                "the docker backend does not share the host network; use network 'none' (default) or 'bridge'"
            )
        ws = Path(self.policy.workspace)
        if not ws.is_dir():
            raise BackendUnavailableError(
                f"workspace {ws} does not exist or is not a directory; create it or pass an existing --workspace"
            )

    def _create_container(self) -> None:
        """Connect, reap orphans, check the image, create and start the container (blocking; in a thread)."""
        _require_local_daemon(self.config.docker_host)
        client = _connect(self.config.docker_host)
        self._client = client
        reaped = _reap(client)
        if reaped:
            _log.info("reaped %d leftover shellrt container(s) of dead owners", len(reaped))
        image = self.config.image
        try:
            client.images.get(image)
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

        self._host_dir = tempfile.mkdtemp(prefix=_IO_PREFIX)
        io_dir = os.path.join(self._host_dir, "io")
        os.mkdir(io_dir)
        os.chmod(io_dir, 0o755)
        self._io_dir = io_dir
        script = os.path.join(io_dir, "executor.sh")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(executor_script())
        os.chmod(script, 0o644)

        limits = self.policy.limits
        tmp_bytes = limits.tmp_bytes or _DEFAULT_TMP_BYTES
        cw = self.config.container_workspace
        mounts = [Mount(target=_IO_MOUNT, source=io_dir, type="bind")]
        if self.config.workspace_mode == "bind":
            ws_source = str(Path(self.policy.workspace).resolve())
        else:
            ws_source = self._copy_in()
        mounts.append(Mount(target=cw, source=ws_source, type="bind"))
        kwargs: dict[str, Any] = {
            "command": ["/bin/sh", "-c", _KEEPER],
            "entrypoint": [],
            "name": f"shellrt-{self.session_id}",
            "labels": session_labels(self.session_id, self._host_dir),
            "detach": True,
            "init": True,
            "user": self._user,
            "working_dir": cw,
            "network_mode": "bridge" if self.policy.network == "bridge" else "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,exec,size={tmp_bytes},mode=1777"},
            "mounts": mounts,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": limits.pids or _DEFAULT_PIDS,
            "environment": {"PATH": _PATH},
        }
        if limits.memory_bytes:
            kwargs["mem_limit"] = limits.memory_bytes
            kwargs["memswap_limit"] = limits.memory_bytes  # no swap: a hog is OOM-killed, not slowed
        if limits.cpus:
            kwargs["nano_cpus"] = int(limits.cpus * 1e9)
        try:
            container = client.containers.create(image, **kwargs)
        except docker.errors.APIError as exc:
            raise BackendUnavailableError(f"could not create a container from {image!r}: {exc}") from exc
        self._container = container
        self.container_id = container.id
        self._check_shell(container)
        try:
            container.start()
        except docker.errors.APIError as exc:
            raise BackendUnavailableError(f"could not start a container from {image!r}: {exc}") from exc

    def _check_shell(self, container: Any) -> None:
        try:
            stream, _stat = container.get_archive("/bin/sh")
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        except docker.errors.NotFound as exc:
            raise BackendUnavailableError(
                f"image {self.config.image!r} has no /bin/sh. The docker backend runs a POSIX-sh "
                "executor inside the container and needs /bin/sh, env and sleep (setsid recommended); "
                "use an image with a shell (busybox is enough)."
            ) from exc

    async def _start_executor(self) -> None:
        """Start the executor through one attached ``docker exec`` and wait for its hello."""
        container = self._container
        client = self._client
        assert container is not None and client is not None and self._io_dir is not None

        def open_session() -> socket.socket:
            exec_id = client.api.exec_create(
                container.id,
                ["/bin/sh", f"{_IO_MOUNT}/executor.sh", _IO_MOUNT, _PRIV_DIR],
                stdin=True,
                stdout=True,
                stderr=True,
                user=self._user,
                environment={"PATH": _PATH},
                workdir="/",
            )["Id"]
            raw = client.api.exec_start(exec_id, socket=True)
            sock: socket.socket = getattr(raw, "_sock", raw)
            return sock

        try:
            sock = await _thread(open_session)
        except docker.errors.APIError as exc:
            raise BackendUnavailableError(
                f"could not start the executor in {self.config.image!r}: {exc}"
            ) from exc
        control = ControlChannel(sock)
        try:
            with anyio.fail_after(_START_TIMEOUT):
                await control.send("P 0")
                hello = await control.wait("H", "1")
        except (TimeoutError, ExecutorGoneError) as exc:
            control.close()
            detail = "; ".join(control.stderr_tail) or str(exc) or "no answer"
            raise BackendUnavailableError(
                f"the executor did not start in {self.config.image!r} ({detail}); the image needs "
                "/bin/sh, env and sleep"
            ) from exc
        # hello: H 1 <pid> <setsid> <shell>  -> id="1", fields=(pid, setsid, shell)
        if len(hello.fields) >= 3:
            self.executor_pid = int(hello.fields[0]) if hello.fields[0].isdigit() else None
            self._has_setsid = hello.fields[1] == "1"
            self._shell = hello.fields[2]
        self._control = control
        self._generation += 1

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
        container = self._container
        if container is None:
            raise SandboxClosedError("the docker sandbox is closed")
        await _thread(lambda: container.restart(timeout=1))
        await self._start_executor()

    # --- workspace ---------------------------------------------------------------
    def _copy_in(self) -> str:
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

        shutil.copytree(root, dest, symlinks=True, ignore=ignore)
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
        container = self._container
        if container is None:
            raise SandboxClosedError("the docker sandbox is not running")
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        cw = self.config.container_workspace.rstrip("/")
        top = PurePosixPath(cw).name

        def fetch() -> None:
            stream, _ = container.get_archive(cw + "/.")
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
