"""Docker backend: one long-lived, hardened container per session, driven by a persistent executor.

Why this shape:

* One ``docker exec`` per command costs ~80-120 ms here; agents and harnesses
  run thousands of commands. So the container's main process (under
  docker-init) is a POSIX-sh executor (``executor.sh``) and every command is
  one short line on its control channel plus a fork inside the container.
* The control channel is the ``docker attach`` stream of that main process
  (`sandbox.docker._channel`): no path inside the container names it. The
  executor runs under its own uid (`EXECUTOR_UID`), which no command ever has,
  with only the capabilities it needs to start commands as another user;
  commands hold no capability at all (``priv.c``). So no command, root or
  not, can open, signal or trace the executor, and exit codes, kills and
  resets come only from it (docs/security.md, "The docker backend").
* Command output never travels through the control channel: the host creates
  FIFOs with random names in a private directory bind-mounted read-only into
  the container (owned by the executor's uid, mode 0700, when the host is
  root; on /dev/shm when usable, see `sandbox.docker._iobase.io_base`) and reads
  them directly (`sandbox.docker._fifo`). Consequence: the daemon must run on
  this machine (checked at start).
* Each command runs below a helper (``priv drop``) that keeps the executor's
  identity, supervises it as a child subreaper and kills whatever it left
  behind when it exits; per-call users (`ExecRequest.user`, root included)
  are resolved by the executor from the image's /etc/passwd and /etc/group.
* Nothing leaks: the container is created with ``StdinOnce`` and
  ``AutoRemove``, so when the owner's attach connection closes (``close()``,
  or the owner dies, even by SIGKILL) the executor reads EOF, exits, and the
  daemon removes the container. Owner labels (`sandbox.docker._labels`) let
  every start and ``shellrt sandbox gc`` reap what is left anyway;
  `emergency_cleanup` is the synchronous last word for signal handlers.
* Hardening by default: no network (``bridge`` is opt-in), read-only root, a
  writable workspace (copy mode: a private host copy only the container
  mounts; bind mode: the host directory itself), tmpfs /tmp, no-new-privileges,
  the default seccomp profile, a non-root command user (on a root host: a uid
  the session leases, `sandbox._uid_lease`, so no two live containers share
  per-user kernel limits, in bind mode over an idmapped workspace mount,
  `_idmap_ws`; the caller's uid for a non-root host, or in bind mode the
  workspace owner), memory (no swap), pids and cpu limits,
  docker-init as PID 1 to reap orphans.

The image needs ``/bin/sh`` plus ``env`` (``setsid`` is used when present).
Images without ``/bin/sh`` are refused at ``start()``. Bash is optional: see
`DockerBackend.shell_path`. The host needs a C compiler once (``_priv``).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import posixpath
import secrets
import select
import stat
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
import docker
import docker.errors
import requests.exceptions
from docker.types import Mount, Ulimit

from sandbox._anchoredcopy import LinkedCopyTooLargeError
from sandbox._deeptree import WorkspaceTooDeepError
from sandbox._hostcode import checked_host_code_places
from sandbox._hostmem import default_memory_ceiling
from sandbox._maskaliases import AliasFinder, stats_of
from sandbox._proxied import ContainerProxy
from sandbox._proxy import Refusal, proxy_env
from sandbox._scratch import OwnedDir
from sandbox._ucounts import session_rlimits
from sandbox._uid_lease import UidLease, lease_uid
from sandbox.base import COMMAND_ENV, Aspect, ExecRequest, ExitStatus, SandboxBackend, SandboxProcess
from sandbox.config import DockerConfig
from sandbox.confine import relative_to
from sandbox.docker import _connect
from sandbox.docker._audit import audit_uid
from sandbox.docker._bridge import firewall_bridge
from sandbox.docker._cgview import CGROUP_ROOT, build_view, check_view, view_mount
from sandbox.docker._channel import ChannelBudget, ControlChannel, ExecutorGoneError, ExecutorStalledError
from sandbox.docker._client import connect, require_local_daemon, thread, translate
from sandbox.docker._cmdcg import (
    COMMANDS_CGROUP,
    check_commands_cgroup,
    commands_mount,
    container_memory_cgroup,
    detach_commands_cgroup,
    make_commands_cgroup,
    renew_commands_cgroup,
)
from sandbox.docker._creating import Creations
from sandbox.docker._detach import detach_mount
from sandbox.docker._devnodes import READONLY_PATHS
from sandbox.docker._fifo import FifoReceiveStream, FifoSendStream, make_fifo, open_fifo
from sandbox.docker._freshio import check_io_dir, swap_io_dir
from sandbox.docker._freshtmp import renew_tmpfs
from sandbox.docker._gc import IO_PREFIX, io_base, reap_orphans, sweep_host_dirs
from sandbox.docker._hostdir import PrivateHostDir
from sandbox.docker._hostpid import host_pid, is_container_process
from sandbox.docker._idmap_ws import idmap_workspace
from sandbox.docker._imagebudget import budget_for
from sandbox.docker._ipcseq import IpcIds, ipc_id_problems, take_ipc_ids
from sandbox.docker._isolation import (
    CommandIsolation,
    hello_word,
    isolation_from_hello,
    isolation_warning,
    record_isolation,
    require_isolation,
)
from sandbox.docker._kept import changed_config, dropped_settings
from sandbox.docker._labels import session_labels
from sandbox.docker._masks import daemon_masked_paths, masked_paths_for, prefetch_host_walks
from sandbox.docker._memsplit import reserve_bytes, split_memory
from sandbox.docker._mountlinks import check_mount_points
from sandbox.docker._netcounters import NetCounters, read_counters
from sandbox.docker._nsmount import mount_into, top_mounts
from sandbox.docker._pidref import PidRef, pid_ref
from sandbox.docker._pins import Pin, bound_source, masked_ancestors, verify_pins
from sandbox.docker._priv import priv_binary
from sandbox.docker._process import DockerProcess, ExecutorSession
from sandbox.docker._procmask import check_masked, make_mask_dir, mask_lasting
from sandbox.docker._protocol import (
    EXECUTOR_PROTOCOL_VERSION,
    EXECUTOR_SHELLS,
    PID_MAX,
    Event,
    executor_script,
    parse_number,
    render_request,
)
from sandbox.docker._recycle import (
    EXECUTOR_CAPS,
    EXECUTOR_UID,
    IO_ENTRIES,
    IO_MOUNT,
    PRIV_DIR,
    OutsideView,
    verify_pristine,
)
from sandbox.docker._request import check_call_user, check_exec_size, container_cwd
from sandbox.docker._reset import (
    PRIV_MODE,
    ResetError,
    parse_reset_reply,
    parse_status,
)
from sandbox.docker._root_inode import InodeState, inode_state
from sandbox.docker._roottimes import restamp_roots
from sandbox.docker._shown import shown
from sandbox.docker._sockets import WorkspaceSockets
from sandbox.docker._startmounts import start_mounts
from sandbox.docker._tcpmem import cap_socket_memory, socket_memory_cap
from sandbox.docker._tmpslots import TMP_SLOTS, TMP_SLOTS_DIR, reserved_ids, slot_mounts
from sandbox.docker._userdb import check_user_db
from sandbox.docker._workspace import copy_in, denied_on_host, export_workspace
from sandbox.errors import (
    BackendUnavailableError,
    CwdRefusedError,
    SandboxClosedError,
    SandboxError,
    SandboxExecError,
)
from sandbox.policy import SandboxPolicy

__all__ = ["EXECUTOR_CAPS", "EXECUTOR_UID", "DockerBackend", "emergency_cleanup"]

_log = logging.getLogger("sandbox.docker")

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The executor's capabilities, as docker names them (`EXECUTOR_CAPS` is their bit mask).
_EXECUTOR_CAP_NAMES = [
    "SETUID",
    "SETGID",
    "KILL",
    "SYS_PTRACE",
    "SETPCAP",
    "DAC_OVERRIDE",
    "FOWNER",
    "CHOWN",
    "SYS_NICE",  # a command's helper sweeps at nice -20, its command at 19 (priv.c; red team round 23)
]
def _executor_argv(audit: int, admin: bool) -> list[str]:
    """The container's command: ``priv boot`` to the executor's identity, the audit login uid
    pinned to ``audit`` first (`_audit`), then the image's shell running executor.sh. ``admin``
    (root_can_administer): ``boot-admin``, which also holds the commands' memory cgroup for the
    executor, whose mount the host detaches after the hello (`_cmdcg.detach_commands_cgroup`)."""
    e = str(EXECUTOR_UID)
    # boot: the image's shell starts only on the host's go (`_GO`), once the container is set up
    verb = "boot-admin" if admin else "boot"
    shell = ["/bin/sh", f"{IO_MOUNT}/executor.sh", IO_MOUNT, PRIV_DIR, e, *(["1"] if admin else [])]
    return [f"{IO_MOUNT}/priv", verb, e, e, str(audit), "--", *shell]


#: The line ``priv boot`` waits for before it runs the image's shell (red team round 33: that shell,
#: the image's code with the executor's capabilities, had the plain bind of a bind-mode workspace
#: until the idmap, and the bridge's network until its firewall).
_GO = "G"
_DEFAULT_TMP_BYTES = 256 * 1024 * 1024
#: The executor's own tmpfs (slot locks, kernel-cwd files; `PRIV_MODE`: only the executor creates there): capped in count
#: too, its inodes being kernel memory its 1 MiB does not bound (red team round 25).
_PRIV_INODES = 4096
#: ``/dev/shm``'s mode (round 30): each command creates and opens its objects by name, none lists them.
SHM_MODE = 0o1733
#: A fork bomb must never reach the host, so a pids limit always applies.
_DEFAULT_PIDS = 2048
_START_TIMEOUT = 30.0
_COPY_USER = "65534:65534"
#: A reset (kill, wipe, verify) that takes longer than this fails: the container is not reused.
_RESET_TIMEOUT = 10.0
#: The name suffix of the never-started container that shows the daemon's default masks (`_masks`):
#: no recovery's (``-<n>`` counts them) and still the reaper's pattern.
_MASKS_PROBE = 999_999
#: Backends with a live container in this process (for `emergency_cleanup`).
_live: weakref.WeakSet[DockerBackend] = weakref.WeakSet()
#: Re-entrant: `emergency_cleanup` may run in a signal handler that interrupted a holder.
_live_lock = threading.RLock()


def emergency_cleanup() -> None:
    """Remove every container this process owns, synchronously; for signal handlers and atexit.

    Closing the attach connection alone makes the daemon remove the container
    (``StdinOnce`` + ``AutoRemove``); the forced remove makes it certain and
    immediate. Host directories go too. Safe to call more than once.
    """
    with _live_lock:
        backends = list(_live)
        _live.clear()
    for backend in backends:
        backend._emergency_teardown()


atexit.register(emergency_cleanup)


def _numeric_ids(user: str) -> tuple[int, int]:
    """``uid[:gid]`` as numbers (commands start through ``priv drop``, which takes numbers)."""
    uid_s, _, gid_s = user.partition(":")
    if uid_s.isdigit() and (not gid_s or gid_s.isdigit()):
        return int(uid_s), int(gid_s or uid_s)
    raise BackendUnavailableError(
        f"DockerConfig.user must be numeric (uid or uid:gid), not {user!r}: the host cannot resolve "
        "names of the image's users."
    )


#: Top-level directories the workspace (the command's own, writable) may not be mounted at or
#: below: the executor executes from them (PATH, the loader and its libraries), reads them
#: (``/etc/passwd``, ``ld.so.preload``, cgroup counters), or they are shellrt's own or mounts of
#: their own (red team round 9: a task's ``rm`` in ``/usr/local/bin`` ran as the executor).
_SYSTEM_TOPS = frozenset(
    {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "etc",
        "proc",
        "sys",
        "dev",
        "run",
        "tmp",
        "boot",
    }
    | {IO_MOUNT.lstrip("/"), PRIV_DIR.lstrip("/"), COMMANDS_CGROUP.lstrip("/"), TMP_SLOTS_DIR.lstrip("/")}
)


def _check_container_workspace(path: str) -> None:
    """Refuse a ``container_workspace`` that is not a plain absolute path of its own, away from what
    the executor runs and reads (`_SYSTEM_TOPS`)."""
    parts = PurePosixPath(path).parts
    plain = (
        path.startswith("/") and posixpath.normpath(path) == path and "\0" not in path and "\n" not in path
    )
    if not plain or len(parts) < 2 or parts[1] in _SYSTEM_TOPS:
        raise BackendUnavailableError(
            f"DockerConfig.container_workspace {path!r} cannot hold the workspace: it must be a normalized "
            "absolute path outside /, /bin, /sbin, /lib*, /usr, /etc, /proc, /sys, /dev, /run, /tmp, /boot "
            "and shellrt's /.shellrt-* (the command owns the workspace; the executor runs and reads files "
            "there). Use /workspace (the default) or e.g. /home/<name>, /src, /app."
        )


@dataclass(frozen=True, slots=True)
class _Hello:
    pid: int | None
    setsid: bool
    shell: str
    isolation: CommandIsolation


def _parse_hello(event: Event) -> _Hello:
    """The executor's ``H`` line, every field checked: the image's ``/bin/sh`` writes it, and the
    shell path reaches argvs and the command line Inspect's ``connection()`` gives an operator."""
    fields = event.fields
    if event.id != EXECUTOR_PROTOCOL_VERSION or len(fields) != 4:
        raise BackendUnavailableError(
            f"unexpected executor hello '{shown(event.rest[:200])}': the image's /bin/sh is not a plain "
            "POSIX shell (it wrote to the control channel); use another image"
        )
    pid = parse_number(fields[0], PID_MAX, low=2)
    isolation = isolation_from_hello(fields[3])
    if pid is None or fields[1] not in ("0", "1") or fields[2] not in EXECUTOR_SHELLS or isolation is None:
        raise BackendUnavailableError(
            f"the executor's hello names pid '{shown(fields[0][:40])}' and shell '{shown(fields[2][:200])}'; "
            f"the executor only ever reports a pid and one of {', '.join(sorted(EXECUTOR_SHELLS))}: the "
            "image's /bin/sh forged it. Use another image"
        )
    return _Hello(pid=pid, setsid=fields[1] == "1", shell=fields[2], isolation=isolation)



def _counters_of(init: PidRef) -> NetCounters | None:
    """The counters of the network namespace of the container whose init is ``init`` (read through
    its pidfd-proven ``/proc`` directory; None when the host may not read them: such a container is
    never recycled)."""
    try:
        with init.proc_dir() as base:
            return read_counters(base)
    except (OSError, BackendUnavailableError):
        return None

def _ipc_ids_of(init: PidRef) -> IpcIds | None:
    """The next SysV ids of the container whose init is ``init`` (None when the host may not take
    them, a non-root host: such a container is never recycled)."""
    try:
        return take_ipc_ids(init)
    except OSError:
        return None


class DockerBackend(SandboxBackend):
    """A hardened container per session with a persistent in-container executor.

    Public extras beyond `SandboxBackend`: `export_workspace` (copy the workspace
    back out, for ``--export DIR``), `shell_path` / `has_bash` (busybox images
    have no bash), `container_id`, `session_id`, `recoveries` (reasons the
    container had to be replaced) and, for batch recycling, `reuse_blocker`,
    `protect_executor`, `reset` and `reuse_for`.
    """

    name = "docker"
    host_view = False  # capabilities: its own root filesystem (see SandboxBackend.host_view)

    def __init__(self, config: DockerConfig, policy: SandboxPolicy) -> None:
        super().__init__(policy)
        self.config = config
        self.session_id = uuid.uuid4().hex[:12]
        self.container_id: str | None = None
        #: The container while it exists (``container_id`` stays set after close, for the record).
        self._cid: str | None = None
        #: Containers being created, which `emergency_cleanup` removes too (round 47: the masks probe,
        #: and a container between its create and its start, were left to the next start's reaper).
        self._creations = Creations()
        #: Why the container was replaced as a last resort (kill timed out, executor died, a
        #: read-denied path appeared in a bind-mounted workspace).
        self.recoveries: list[str] = []
        #: What the image spent on the channels of its containers, and why one failed: the image's
        #: for this process once its id is known (`_imagebudget`, round 38).
        self._budget = ChannelBudget()
        #: The read-denied paths the container's masks cover (`_denied_in_workspace` at its start).
        self._masked: list[tuple[str, bool]] = []
        #: (host path, container path) of the read-denied paths inside the workspace.
        self._denied_inside: list[tuple[str, str]] | None = None
        #: Bind mode: host daemons' sockets in the workspace, covered like read-denied paths (`_sockets`).
        self._sockets: WorkspaceSockets | None = None
        #: Bind mode, at the container's start: those sockets, and other names (hard links) of the
        #: read-denied files, masked like them (`sandbox._maskaliases`).
        self._extra_hidden: list[str] = []
        self._aliases = AliasFinder()
        self._write_aliases = AliasFinder()  # the other names of write-denied files (`_write_denied_binds`)
        self._client: docker.DockerClient | None = None
        self._host_dir: str | None = None
        #: The container's memory ceiling (its commands' cgroup gets it minus the executor's reserve).
        self._memory = 0
        #: Bind mode: directories above masked paths, mounted over themselves (`_pins`).
        self._pins: list[Pin] = []
        #: The other binds whose sources a command may reach (the workspace, the write-denied
        #: paths' read-only binds), as chosen: checked like the pins once the container runs.
        self._bound: list[Pin] = []
        self._io_dir: str | None = None
        self._session: ExecutorSession | None = None
        self._executor_lock = anyio.Lock()
        self._started = False
        self._closed = False
        self._shell = "/bin/sh"
        self._has_setsid = True
        #: How far commands are isolated from each other (`_isolation`; the executor's probe at start).
        self._isolation: CommandIsolation | None = None
        #: Said once per session (a replaced container repeats the probe, not the warning).
        self._isolation_warned = False
        self._user = config.user or self._default_user()
        #: Copy mode as root, no configured user: the uid this session leases (`_lease_user`).
        self._lease: UidLease | None = None
        #: Bind mode under a lease: the workspace owner the idmapped mount maps to it (`_idmap_ws`).
        self._bind_owner: tuple[int, int] | None = None
        #: The executor's pid inside the container (diagnostics, tests).
        self.executor_pid: int | None = None
        #: Successful `reset` calls: the container has served ``resets + 1`` tasks.
        self.resets = 0
        #: Why a reset failed (round 39 review11): the container is then in no known state (its
        #: processes killed, its commands' cgroup perhaps unmounted): the next command gets a new one.
        self._reset_failed: str | None = None
        #: The executor's host pid and a pidfd that tells when it is gone (resolved when first needed).
        self._executor_host: tuple[int, int] | None = None
        #: `protect_executor` verified the executor's identity from the host.
        self._protected = False
        #: Copy mode: the workspace root's inode as made, before any copy-in (`_root_inode`).
        self._workspace_inode: InodeState | None = None
        #: The network namespace's counters before the image ran (`_netcounters`; None: unreadable).
        self._net_counters: NetCounters | None = None
        #: The commands' memory cgroup's parent and limit, once it and the counter-free view of the
        #: container's cgroups are mounted (`_commands_cgroup`; None: neither, so no recycling).
        self._commands_cg: tuple[str, int] | None = None
        #: The container's tmpfs mounts (target -> docker's options): new ones at each reset (`_freshtmp`).
        self._tmpfs: dict[str, str] = {}
        #: The last SysV ids the host took in the container's IPC namespace (`_ipcseq`).
        self._ipc_ids: IpcIds | None = None
        #: Per-call users commands ran as (`ExecRequest.user`): a reset judges only the session's own.
        self._call_users: set[str] = set()
        self._owned: OwnedDir | None = None
        #: The I/O directory's owned parent (where no command writes: see `io_base`).
        self._io_owned: OwnedDir | None = None
        #: Network 'proxied' (issue 20, docs/network.md): the host proxy, listening in each container.
        self._net = (
            ContainerProxy(self.policy, f"docker-{self.session_id}")
            if self.policy.network == "proxied"
            else None
        )

    @property
    def network_refusals(self) -> list[Refusal]:
        """Every connection the proxy refused this session (network ``proxied``), oldest first."""
        return self._net.refusals if self._net is not None else []

    @property
    def network_log(self) -> Path | None:
        """The session's proxy log (JSON lines), kept after `close` when anything was refused."""
        return self._net.log_path if self._net is not None else None

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
    def command_isolation(self) -> CommandIsolation | None:
        """How far this session's commands are isolated from each other, as the executor's probe
        found at the container's start (`_isolation.CommandIsolation`; None before the start)."""
        return self._isolation

    @property
    def isolation_warning(self) -> str | None:
        """What the person running the session must know about `command_isolation` (None when full);
        `shellrt.runtime.resolve_sandbox` shows it with the session's other start warnings."""
        return None if self._isolation is None else isolation_warning(self._isolation)

    def _note_isolation(self, level: CommandIsolation) -> None:
        """Keep the probe's level (and record it for ``shellrt sandbox ls``); log a missing or partial
        one once per session."""
        self._isolation = level
        record_isolation(self._host_dir, level)
        text = isolation_warning(level)
        if text is not None and not self._isolation_warned:
            self._isolation_warned = True
            _log.warning("%s", text)

    @property
    def has_bash(self) -> bool:
        """Whether the image has bash (known after ``start()``)."""
        return self._shell.endswith("/bash")

    @property
    def user(self) -> str:
        """The ``uid[:gid]`` (or name) commands run as."""
        return self._user

    async def connection_argv(self, user: str | None = None) -> list[str]:
        """The ``docker exec`` argv of an operator's interactive shell in this container as ``user``
        (default: the session's), started through ``priv`` like every command (`_connect`)."""
        cid, pid = self._cid, self.executor_pid
        if cid is None or pid is None:
            raise SandboxClosedError("the docker sandbox is not running")
        login = user or self._user
        tables = ["", ""]  # the image's, read as a command reads them
        for i, name in enumerate(("/etc/passwd", "/etc/group")):
            with contextlib.suppress(OSError, SandboxError):
                # Bounded: under root_can_administer a root command may make it a FIFO or 1 GB.
                data = await self.read_file(name, max_bytes=1 << 20, timeout_s=10)
                tables[i] = data.decode("utf-8", "replace")
        uid, gid, home = _connect.resolve_login(login, *tables)
        admin = self.config.root_can_administer
        return _connect.connection_argv(
            container=cid,
            workspace=self.config.container_workspace,
            shell=self.shell_path,
            helper_dir=f"/proc/{pid}/fd/8" if admin else IO_MOUNT,
            executor_uid=EXECUTOR_UID,
            ids=(uid, gid),
            home=home,
            admin=admin,
            path=_PATH,
            private=self._lease is not None and (uid, gid) == self.command_ids,
            audit=audit_uid(uid),
        )

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
                return (
                    str(PurePosixPath(self.config.container_workspace) / rel)
                    if rel
                    else self.config.container_workspace
                )
        return None

    def to_host_path(self, sandbox_path: str) -> Path | None:
        """Map a container path to the host: in copy mode into the private copy (never the original).

        Normalized first: ``relative_to`` keeps ``..``, which would lead out of the workspace."""
        path = posixpath.normpath(sandbox_path)
        if path.startswith("//"):
            path = "/" + path.lstrip("/")
        try:
            rel = PurePosixPath(path).relative_to(posixpath.normpath(self.config.container_workspace))
        except ValueError:
            return None
        return Path(self._host_workspace()) / rel

    def enforces(self) -> frozenset[Aspect]:
        # read_denied: left out of the copy (copy mode) or masked by empty read-only mounts (bind mode).
        return frozenset(
            {"filesystem", "network", "memory", "pids", "cpus", "tmp", "tree_kill", "read_denied"}
        )

    def _default_user(self) -> str:
        if self.config.workspace_mode == "copy":
            # As root the private copy goes to the session's leased uid (`_lease_user`, at start;
            # nobody until then); otherwise the container runs as the (already unprivileged)
            # caller, who owns the copy.
            return _COPY_USER if os.geteuid() == 0 else f"{os.getuid()}:{os.getgid()}"
        try:
            st = os.stat(self.policy.workspace)
        except OSError:
            return _COPY_USER
        # Bind mode: the owner (a non-root host's own commands); a root host leases instead (`_lease_user`).
        return f"{st.st_uid}:{st.st_gid}"

    def _lease_user(self) -> None:
        """Root host, no configured user: commands run as a uid this session alone holds on the
        host (`sandbox._uid_lease`), so the kernel's per-user limits (inotify instances, pipe
        pages, processes) and kill/ptrace permission are not shared with any other session, nor
        with the host's root (a root-owned bind workspace used to mean uid 0; `_idmap_ws`)."""
        if self.config.user is not None or os.geteuid() != 0:
            return
        if self.config.workspace_mode == "bind":
            st = os.stat(Path(self.policy.workspace).resolve())
            self._bind_owner = (st.st_uid, st.st_gid)
        if self._lease is None:
            self._lease = lease_uid(
                self.config.uid_pool_start,
                self.config.uid_pool_size,
                widen="DockerConfig.uid_pool_size (or uid_pool_start)",
            )
        self._user = f"{self._lease.uid}:{self._lease.gid}"

    def _release_lease(self) -> None:
        """Free the session's uid: after its container and every process in it are gone."""
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()

    @property
    def idmapped_owner(self) -> tuple[int, int] | None:
        """The workspace owner shown to commands as their own uid (bind mode under a lease: the
        workspace is idmapped, every other owner appears as the overflow uid), else None. The file
        tools act on the host as root and hold themselves to what commands may there."""
        return self._bind_owner if self._lease is not None else None

    @property
    def command_ids(self) -> tuple[int, int]:
        """The numeric (uid, gid) commands run as."""
        return _numeric_ids(self._user)

    # --- lifecycle ---------------------------------------------------------------
    async def start(self) -> None:
        if self._started:
            return
        if self._closed:
            raise SandboxClosedError("this docker sandbox was closed; create a new backend")
        self._check_policy()
        require_local_daemon(self.config.docker_host)
        self._lease_user()  # after the checks: released by the teardown below from here on
        with _live_lock:  # from here, not once the container runs: its create is in the window too
            _live.add(self)
        try:
            client = await thread(lambda: connect(self.config.docker_host))
            self._client = client
            failure: Exception | None = None
            async with anyio.create_task_group() as tg:
                # Reaping leftovers is independent of this container: overlap it with the start.
                tg.start_soon(thread, lambda: reap_orphans(client, self.config.docker_host))
                tg.start_soon(thread, sweep_host_dirs)
                tg.start_soon(thread, prefetch_host_walks)  # /sys, /proc: once a process (round 48)
                try:
                    await thread(self._prepare_host_dir)
                    await self._launch()
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
        """Remove the container and the host directory. Idempotent; fast (one forced remove)."""
        if self._closed:
            return
        self._closed = True
        self._started = False
        with anyio.CancelScope(shield=True):
            await self._teardown()

    def _end_session(self, reason: str, *, killed: bool) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.end(reason, killed=killed)
        self._forget_executor_host()

    async def _teardown(self) -> None:
        self._end_session("the sandbox was closed", killed=True)
        if self._net is not None:
            await thread(self._net.close)
        with _live_lock:
            _live.discard(self)
        cid, self._cid = self._cid, None
        client = self._client
        owned = self._take_owned()
        gone = True
        if cid is not None or owned:
            gone = await thread(lambda: _remove(client, cid, *owned))
        if gone:  # else kept until this process ends: the next lessee kills what runs under it
            self._release_lease()

    def _emergency_teardown(self) -> None:
        """Synchronous teardown from `emergency_cleanup` (no event loop needed)."""
        self._closed = True
        creating = self._creations.take()  # first: no create goes on past this
        session, self._session = self._session, None
        if session is not None:
            session.channel.close()
        cid, self._cid = self._cid, None
        gone = all([_remove(self._client, ref) for ref in creating])
        if _remove(self._client, cid, *self._take_owned()) and gone:
            self._release_lease()

    def _take_owned(self) -> list[OwnedDir]:
        """The host directories to remove (forgotten here: removed once)."""
        owned = [d for d in (self._owned, self._io_owned) if d is not None]
        self._owned = self._io_owned = None
        self._host_dir = self._io_dir = None
        return owned

    def _check_policy(self) -> None:
        if self.policy.network == "host":
            raise BackendUnavailableError(
                "the docker backend does not share the host network; use network 'none' (default) or 'bridge'"
            )
        if self.policy.network == "bridge" and os.geteuid() != 0:
            raise BackendUnavailableError(
                "network 'bridge' on docker needs shellrt to run as root: it firewalls each container from the "
                "docker host and private networks inside the container's network namespace (without that, a "
                "command reaches every host service: a Ray head, a daemon's API). Run as root, or use network "
                "'proxied' (--allow-domain: also root) or --sandbox bwrap with --allow-domain"
            )
        if self.config.root_can_administer and os.geteuid() != 0:
            raise BackendUnavailableError(
                "DockerConfig.root_can_administer needs shellrt to run as root on the host (it takes the "
                "I/O directory's mount out of the container); run as root or leave it off"
            )
        if self.policy.network == "proxied" and os.geteuid() != 0:
            raise BackendUnavailableError(
                "network 'proxied' (--allow-domain) on docker needs shellrt to run as root (it makes the "
                "proxy's port inside the container's network namespace); use --sandbox bwrap, or run as root"
            )
        uid, gid = _numeric_ids(self._user)
        reserved = reserved_ids(EXECUTOR_UID)
        if uid in reserved or gid in reserved:
            raise BackendUnavailableError(
                f"uid/gid {reserved.start}-{reserved.stop - 1} are reserved for shellrt's executor and its "
                "TMPDIR slots; choose another user"
            )
        _check_container_workspace(self.config.container_workspace)
        self._check_policy_workspace(self.policy)

    @staticmethod
    def _check_policy_workspace(policy: SandboxPolicy) -> None:
        ws = Path(policy.workspace)
        if not ws.is_dir():
            raise BackendUnavailableError(
                f"workspace {ws} does not exist or is not a directory; create it or pass an existing --workspace"
            )

    def _prepare_host_dir(self) -> None:
        """The session's host directories: the I/O directory (script, helper, FIFOs; on a tmpfs when
        there is one) and the one for the workspace copy and masks (the temp dir)."""
        helper = priv_binary()
        base = io_base()  # refused before anything is made: nothing to clean up
        # Locked while we live: a later start sweeps them if we die without close() (SIGKILL).
        self._owned = PrivateHostDir(IO_PREFIX)  # refused in a writable root (round 31, `_hostdir`)
        self._host_dir = str(self._owned.path)
        self._io_owned = OwnedDir(IO_PREFIX, base)
        io_dir = os.path.join(self._io_owned.path, "io")
        os.mkdir(io_dir, 0o700)
        self._io_dir = io_dir
        script = os.path.join(io_dir, "executor.sh")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(executor_script())
        os.chmod(script, 0o644)
        fd = os.open(os.path.join(io_dir, "priv"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o755)
        with os.fdopen(fd, "wb") as fh:  # the checked bytes: no cached file is read again
            fh.write(helper)
        os.chmod(os.path.join(io_dir, "priv"), 0o755)
        if os.geteuid() == 0:
            # Only the executor may enter: commands (other uids, no capability) cannot.
            os.chown(io_dir, EXECUTOR_UID, EXECUTOR_UID)
        # Otherwise the host's own uid keeps it, and so may commands that run as that same uid:
        # they can reach the FIFOs of their sibling commands (as they can through /proc/<pid>/fd),
        # but never the control channel, which has no path.
        if self.config.workspace_mode == "copy":
            self._copy_in()

    def _denied_in_workspace(self) -> list[tuple[str, bool]]:
        """Read-denied paths the container can see: (container path, is a directory), existing ones only.

        The host file system is not in the container but for the workspace, so
        only denied paths inside it (or a denied path that contains the whole
        workspace: then the workspace itself) need hiding.
        """
        root = os.path.abspath(self.policy.workspace)
        found: list[tuple[str, bool]] = []
        for denied in self._hidden():
            path = os.path.abspath(denied)
            if root == path or root.startswith(path.rstrip("/") + "/"):
                return [(self.config.container_workspace, True)]
            target = self.to_sandbox_path(Path(path))
            if target is None:
                continue
            try:
                is_dir = stat.S_ISDIR(os.stat(path).st_mode)
            except OSError:
                continue  # nothing there to hide
            found.append((target, is_dir))
        return found

    def _hidden(self) -> list[str]:
        """What the container must not show: the read-denied paths, and in bind mode the host's
        sockets in the workspace and the other names of the denied files (found at the start)."""
        return [*map(str, self.policy.read_denied), *self._extra_hidden]

    def _bind_extras(self, ws_source: str) -> list[str]:
        """Bind mode: the host's sockets in the workspace (`_sockets`) and every other name there of
        a read-denied file: a command could ``touch .env && ln .env notes.txt`` before ``.env``
        was masked, and read at ``notes.txt`` what the operator later wrote into ``.env``."""
        self._sockets = WorkspaceSockets(ws_source)
        denied = list(self.policy.read_denied)
        found = stats_of(denied)
        roots = list(dict.fromkeys((Path(ws_source), Path(self.policy.workspace).absolute())))
        aliases = self._aliases.aliases(denied, found, roots)
        return [*self._sockets.paths(), *map(str, aliases)]

    def _read_denied_masks(self) -> list[Mount]:
        """Read-only empty file/directory mounts over every visible read-denied path (bind mode;
        copy mode leaves them out of the copy, unless the whole workspace is denied)."""
        assert self._host_dir is not None
        masks = self._denied_in_workspace()
        whole = (self.config.container_workspace, True)
        if whole in masks:
            masks = [whole]
        elif self.config.workspace_mode == "copy":
            return []
        empty_file = os.path.join(self._host_dir, "mask-file")
        empty_dir = os.path.join(self._host_dir, "mask-dir")
        if not os.path.exists(empty_file):
            os.close(os.open(empty_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
            os.mkdir(empty_dir, 0o555)
        return [
            Mount(target=target, source=empty_dir if is_dir else empty_file, type="bind", read_only=True)
            for target, is_dir in masks
        ]

    @staticmethod
    def _host_code_in(root: str) -> list[Path]:
        """The places this host process imports code from inside the bind-mounted workspace
        ``root`` (a project ``.venv``, a source tree), as paths below ``root``: bound read-only like
        write-denied paths, or a command plants a module or ``.pth`` the host runs unsandboxed
        (round 16; `sandbox._hostcode`). A workspace on the import path is refused (round 17); one
        that is (or lies below) such a place is only warned about."""
        inside = checked_host_code_places(
            [Path(root)], backend="docker", other_fix="use workspace_mode='copy'"
        )
        real = os.path.realpath(root)
        out = []
        for place in inside:
            rel = relative_to(str(place), real)
            if rel:
                out.append(Path(root) / rel)
        return out

    def _write_denied_binds(self, ws_source: str) -> list[Mount]:
        """Read-only binds of the write-denied paths in the workspace (``Edit``/``Write`` deny
        rules) onto themselves, from the workspace's source: the host directory in bind mode, the
        private copy in copy mode. Existing paths reached without a symlink only (the policy holds
        a symlink's target)."""
        root = os.path.abspath(self.policy.workspace)
        real_source = os.path.realpath(ws_source)
        binds: list[Mount] = []
        denied = list(self.policy.write_denied)
        if self.config.workspace_mode == "bind":
            denied += self._host_code_in(root)
        if denied and self.config.workspace_mode == "bind":
            # A hard link made before the rule is the same file: every other name is bound too.
            found = stats_of(denied)
            denied += self._write_aliases.aliases(denied, found, [Path(root)])
        for denied_path in denied:
            rel = relative_to(os.path.abspath(denied_path), root)
            if not rel:
                continue  # outside the workspace: not in the container, or read-only there
            source = os.path.join(real_source, rel)
            try:
                if not os.path.lexists(source) or os.path.realpath(source) != source:
                    continue
            except (OSError, ValueError):
                continue
            target = str(PurePosixPath(self.config.container_workspace) / rel)
            # dockerd resolves the source again when it mounts: what it mounted is checked then.
            self._bound.append(bound_source(source, target))
            binds.append(Mount(target=target, source=source, type="bind", read_only=True))
        return binds

    def _create_container(self) -> tuple[str, Any]:
        """Create the container, attach to its main process, start it (blocking; in a thread).

        Returns the container id and the attach socket. The image is not
        inspected beforehand: a missing one makes the create fail with 404.
        """
        client = self._client
        assert client is not None and self._io_dir is not None and self._host_dir is not None
        limits = self.policy.limits
        memory = limits.memory_bytes or default_memory_ceiling()
        self._memory = memory
        # tmpfs and SysV pages are no process's: sized to leave the executor a reserve (round 24).
        split = split_memory(memory, limits.tmp_bytes or _DEFAULT_TMP_BYTES)
        tmp_bytes = split.tmp_bytes
        cw = self.config.container_workspace
        admin = self.config.root_can_administer
        # root_can_administer: read-write (root commands' cwd files), detached once the executor holds it.
        # Where the commands' memory cgroup is mounted once the container runs (`_commands_cgroup`):
        # an empty read-only directory until then, and for good where there is none.
        cg_dir = os.path.join(self._host_dir, "commands-cgroup")
        os.makedirs(cg_dir, mode=0o755, exist_ok=True)
        mounts = [
            Mount(target=IO_MOUNT, source=self._io_dir, type="bind", read_only=not admin),
            Mount(target=COMMANDS_CGROUP, source=cg_dir, type="bind", read_only=True),
        ]
        if self.config.workspace_mode == "bind":
            ws_source = str(Path(self.policy.workspace).resolve())
            workspace = bound_source(ws_source, cw)  # as resolved: a symlink swapped in later is seen
            self._extra_hidden = self._bind_extras(ws_source)
        else:
            ws_source = os.path.join(self._host_dir, "workspace")
            workspace = bound_source(ws_source, cw)
        self._masked = self._denied_in_workspace()
        masks = self._read_denied_masks()
        self._pins = []
        self._bound = []
        if any(m["Target"] == cw for m in masks):
            mounts += masks  # the whole workspace is read-denied: an empty read-only directory instead
        else:
            self._bound.append(workspace)
            unwritable = self._write_denied_binds(ws_source)
            # A mask at the same place is mounted on top (below): what shows there is the mask.
            self._bound = [b for b in self._bound if all(m["Target"] != b.target for m in masks)]
            # No rename may carry a secret out of its mask, or a protected file out of its bind
            # (sandbox/docker/_pins.py): bind mode's masks, and the read-only binds in either mode.
            pinned = [*(self._hidden() if masks else ()), *(m["Source"] for m in unwritable)]
            if pinned:
                # A pin is a writable bind: never at or below a read-only one (docker sorts mounts by depth).
                bound = [PurePosixPath(m["Target"]) for m in unwritable]
                self._pins = [
                    pin
                    for pin in masked_ancestors(ws_source, pinned, cw)
                    if not any(
                        b == PurePosixPath(pin.target) or b in PurePosixPath(pin.target).parents
                        for b in bound
                    )
                ]
            pins = [Mount(target=pin.target, source=pin.source, type="bind") for pin in self._pins]
            # Shallowest first, a mask after a bind of the same place: a bind never covers a mask below it.
            layered = sorted([*unwritable, *masks], key=lambda m: len(PurePosixPath(m["Target"]).parts))
            mounts += [Mount(target=cw, source=ws_source, type="bind"), *pins, *layered]
        host_kwargs: dict[str, Any] = {
            "init": True,
            "auto_remove": True,
            "log_config": {"type": "none"},
            "network_mode": "bridge" if self.policy.network == "bridge" else "none",
            "read_only": not admin,  # root_can_administer: root commands edit the image (a layer of its own)
            "tmpfs": {
                # nr_inodes: a tmpfs's inodes are kernel memory its size= does not count (round 25).
                "/tmp": f"rw,nosuid,nodev,exec,size={tmp_bytes},nr_inodes={split.tmp_inodes},mode=1777",
                # Here rather than docker's shm_size, which has no inode cap. 1733 and the executor's:
                # no command (root included: it holds no capability) lists another's shared memory
                # and semaphores, whose random names were their only protection (round 30).
                "/dev/shm": (
                    f"rw,nosuid,nodev,noexec,size={split.shm_bytes},nr_inodes={split.shm_inodes},"
                    f"mode={SHM_MODE:o},uid={EXECUTOR_UID},gid={EXECUTOR_UID}"
                ),
                # Each command's own TMPDIR (round 29, `_tmpslots`).
                **slot_mounts(split.slot_bytes, split.slot_inodes, EXECUTOR_UID),
                # root_can_administer: cwd files come through fd 6 instead (executor.sh).
                **(
                    {}
                    if admin
                    else {
                        PRIV_DIR: f"rw,nosuid,nodev,noexec,size=1m,nr_inodes={_PRIV_INODES},mode={PRIV_MODE:o},uid={EXECUTOR_UID},gid={EXECUTOR_UID}"
                    }
                ),
            },
            "mounts": mounts,
            "cap_drop": ["ALL"],
            "cap_add": _EXECUTOR_CAP_NAMES,
            "security_opt": ["no-new-privileges"],
            # Asked, so neither a daemon's default nor a proxy chooses them (`_kept`, round 41): runc
            # is what the pidfd joins and host-side /proc reads assume; a private cgroup namespace
            # keeps the host's cgroup tree (a v2 daemon's `host` mode) and paths out of sight.
            "runtime": "runc",
            "cgroupns": "private",
            "pids_limit": limits.pids or _DEFAULT_PIDS,
            "sysctls": split.sysctls,
            # The host's user namespace: queue bytes and queued signals are charged to the command's
            # host uid (host root's, for user="root"), checked against these; the daemon's own are
            # that uid's whole budget. Half of each, as a non-root caller's bwrap sandboxes (round 21).
            "ulimits": [Ulimit(name=name, soft=value, hard=value) for name, _res, value in session_rlimits()],
        }
        # Always a ceiling (no swap: a hog is OOM-killed, not slowed): without one a command's heap,
        # the SysV shared memory it leaves behind or its open files' kernel memory took the host's
        # whole memory, and the host's OOM killer chose among all its processes (round 20).
        self._tmpfs = dict(host_kwargs["tmpfs"])
        host_kwargs["mem_limit"] = memory
        host_kwargs["memswap_limit"] = memory
        if limits.cpus:
            host_kwargs["nano_cpus"] = int(limits.cpus * 1e9)
        image = self.config.image
        suffix = f"-{len(self.recoveries)}" if self.recoveries else ""

        command = _executor_argv(audit_uid(self.command_ids[0]), admin)
        name = f"shellrt-{self.session_id}{suffix}"

        def discard(ref: str) -> None:
            with contextlib.suppress(docker.errors.APIError):
                client.api.remove_container(ref, force=True, v=True)

        def create() -> str:
            host_config = client.api.create_host_config(**host_kwargs)
            # /dev and /sys/fs/cgroup read-only from runc, on every host (`_devnodes.READONLY_PATHS`),
            # and the image's VOLUMEs: a writable directory on the read-only root otherwise, where a
            # root command rewrote e.g. the /etc/passwd the runner resolves users from (rounds 8, 18).
            # Not with root_can_administer, whose root is writable by design.
            volumes = (
                {} if admin else (client.api.inspect_image(image).get("Config") or {}).get("Volumes") or {}
            )
            readonly = [*READONLY_PATHS, *sorted(str(v) for v in volumes)]
            host_config["ReadonlyPaths"] = readonly
            # The daemon's own masks (a list of ours replaces them whole: round 45 asked the daemon),
            # docker 20.10's, /proc/key-users (round 42) and this host's per-CPU thermal counters.
            probe = f"shellrt-{self.session_id}-{_MASKS_PROBE}"
            try:
                with self._creations.creating(probe, discard) as probed:
                    default = daemon_masked_paths(client, image, probe, session_labels(self.session_id, "", ""), probed)
            except ValueError as exc:
                raise BackendUnavailableError(
                    f"{exc}; shellrt masks at least the daemon's own /proc and /sys paths: use a daemon "
                    "(or proxy) that reports them as docker does"
                ) from exc
            try:
                host_config["MaskedPaths"] = masked_paths_for(default)
            except ValueError as exc:  # round 48: this host's root-only /sys files, walked
                raise BackendUnavailableError(
                    f"{exc}; shellrt masks every root-only /sys file of this host: run on a host whose /sys "
                    "has few of them, or report this one"
                ) from exc
            response = client.api.create_container(
                image,
                command=command,
                entrypoint=[],
                name=name,
                labels=session_labels(
                    self.session_id,
                    str(self._io_owned.path) if self._io_owned is not None else "",
                    self._host_dir or "",
                ),
                detach=False,
                stdin_open=True,
                user="0:0",
                # Not the workspace: docker-init keeps its start cwd for good, and in bind mode that
                # is the workspace's mount from before the idmap, open to the executor (SYS_PTRACE)
                # as /proc/1/cwd (red team round 33). Commands get their cwd from each request.
                working_dir="/",
                environment={"PATH": _PATH},
                # An image's HEALTHCHECK would be a `docker exec` as container root with the
                # executor's capabilities, outside `priv drop`, cwd the workspace: never run one.
                healthcheck={"test": ["NONE"]},
                host_config=host_config,
            )
            cid = str(response["Id"])
            made(cid)  # from here `emergency_cleanup` removes it
            # Before the start (a daemon that ignores the field never runs the container); the
            # running container's pid and network need the second inspect, in `_launch`.
            created = client.api.inspect_container(cid)
            dropped = dropped_settings(host_config, created["HostConfig"], response.get("Warnings"))
            asked = {"User": "0:0", "Cmd": command, "Entrypoint": [], "WorkingDir": "/"}
            dropped += changed_config({**asked, "Healthcheck": {"Test": ["NONE"]}}, created.get("Config") or {})
            if dropped:  # a limit or an isolation setting the daemon dropped: fail closed
                with contextlib.suppress(docker.errors.APIError):
                    client.api.remove_container(cid, force=True, v=True)
                raise BackendUnavailableError(
                    "the docker daemon did not keep the container shellrt asked for: "
                    + "; ".join(dropped)
                    + ". Give the host what the setting needs (swap accounting: swapaccount=1 on the kernel "
                    "command line; the pids and cpu controllers mounted), or drop that limit from the policy; a mount, "
                    "namespace, device or Config the daemon changed needs a daemon (or proxy) that creates containers as asked"
                )
            kept = created["HostConfig"].get("ReadonlyPaths") or []
            if not set(readonly) <= set(kept):  # a daemon that ignores the field: fail closed
                with contextlib.suppress(docker.errors.APIError):
                    client.api.remove_container(cid, force=True, v=True)  # its image VOLUMEs too (round 20)
                raise BackendUnavailableError(
                    f"the docker daemon did not keep ReadonlyPaths {readonly} (it kept {kept}); "
                    "shellrt needs a daemon that honours HostConfig.ReadonlyPaths to keep /dev read-only: upgrade docker"
                )
            try:
                check_user_db(client, cid, image)  # the daemon's start would block on a FIFO for ever
                # runc makes each mount point as root through the image's links (round 33).
                points = [*host_kwargs["tmpfs"], *(str(m["Target"]) for m in mounts), *volumes]
                check_mount_points(client, cid, image, str(created.get("Image") or ""), points, cw)
            except BaseException:
                with contextlib.suppress(docker.errors.APIError):
                    client.api.remove_container(cid, force=True, v=True)  # its image VOLUMEs too (round 20)
                raise
            return cid

        with (
            translate(self.config.docker_host, f"create a container from {image!r}"),
            self._creations.creating(name, discard) as made,
        ):
            if self.config.pull == "always":
                _pull(client, image)
            try:
                cid = create()
            except docker.errors.ImageNotFound as exc:
                if self.config.pull == "never":
                    raise BackendUnavailableError(
                        f"image {image!r} is not present locally. shellrt never pulls unless asked "
                        "(DockerConfig.pull 'missing' or 'always'; --pull missing), and no registry may be "
                        f"reachable here: {_GET_IMAGE}."
                    ) from exc
                _pull(client, image)
                cid = create()
            # Handed over before the name leaves `_creations`: `emergency_cleanup` sees one or the other.
            self.container_id = self._cid = cid
        with translate(self.config.docker_host, f"start a container from {image!r}"):
            sock = client.api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            fd = _own_socket(sock)
            try:
                client.api.start(cid)
            except BaseException:
                os.close(fd)
                raise
        return cid, fd

    async def _launch(self) -> None:
        """Create and start a container and wait for its executor's hello (event-driven, no polling)."""
        cid, fd = await thread(self._create_container)
        held: list[PidRef] = []
        try:
            await self._launch_started(cid, fd, held)
        finally:
            for ref in held:
                os.close(ref.pidfd)

    async def _launch_started(self, cid: str, fd: int, held: list[PidRef]) -> None:
        """`_launch` once the container runs; ``held`` gets docker-init's pidfd (closed by the caller)."""
        channel = ControlChannel(fd, self._budget)
        client = self._client
        assert client is not None
        try:
            # Set up before anything of the image runs (`_GO`). One inspect serves every step: the
            # container's init pid and its network exist only once it runs (the create's inspect
            # saw neither), and nothing restarts it (no restart policy; if it dies, the channel sees
            # EOF and the pid's namespaces are gone with it).
            info = await thread(lambda: client.api.inspect_container(cid))
            # Before anything of the image runs: an image this process stopped believing is not
            # started again, and one that spent part of its budget goes on from there (round 38).
            self._budget = channel.budget = budget_for(str(info.get("Image") or self.config.image))
            if self._budget.failure is not None:
                raise BackendUnavailableError(
                    f"image {self.config.image!r}: {self._budget.failure} (met earlier in this process: no "
                    "container of this image is started again; fix the image, then restart the process)"
                )
            init = int(info["State"]["Pid"] or 0)
            if init > 0:  # else it already ended: the wait for the hello says why
                # Every join of its mount namespace goes through this pidfd (`_pidref`).
                ref = await thread(
                    lambda: pid_ref(init, lambda p: is_container_process(p, cid, 1), "the container's docker-init")
                )
                held.append(ref)
                await self._verify_pins(init)
                await self._commands_cgroup(init, ref)
                await self._start_mounts(ref)
                await self._idmap_workspace(ref)
                await self._firewall_bridge(cid, info)
                # Before anything of the image runs: each reset compares (`_netcounters`).
                self._net_counters = _counters_of(ref)
                self._ipc_ids = _ipc_ids_of(ref)
                # The executor's secret (`executor.sh`, `ControlChannel.expect_token`): read by it
                # right after its hello, before any request; nothing of the image but that shell
                # runs yet, and no command ever sees it.
                token = secrets.token_hex(16)
                channel.expect_token(token)
                await channel.send(_GO)
                await channel.send(f"T {token}")
        except ExecutorGoneError:
            pass  # the wait for the hello below reports the start failure
        except BaseException:
            channel.close()  # priv reads EOF and exits; the daemon removes the container
            raise
        try:
            with anyio.fail_after(_START_TIMEOUT):
                event = await channel.wait("H", EXECUTOR_PROTOCOL_VERSION)
            hello = _parse_hello(event)
            if self.config.require_command_isolation:
                require_isolation(hello.isolation, self.config.image)
        except ExecutorGoneError as exc:
            if channel.failure is not None:
                raise BackendUnavailableError(f"image {self.config.image!r}: {channel.failure}") from exc
            raise self._start_failure(channel.stderr_text) from exc
        except TimeoutError as exc:
            channel.close()
            raise BackendUnavailableError(
                f"the executor did not start in {self.config.image!r} within {_START_TIMEOUT:g}s "
                "(daemon overloaded?)"
            ) from exc
        except BaseException:
            channel.close()
            raise
        try:
            if not held or hello.pid is None:
                raise BackendUnavailableError("the container's docker-init was not found on the host")
            # After the hello: the executor opened the I/O directory as fd 8 first.
            await self._detach_io(held[0])
            # Before any command: no task reads what the lasting processes counted (`_procmask`).
            await self._mask_lasting(held[0], hello.pid)
        except BaseException:
            channel.close()  # the executor reads EOF and exits; the daemon removes the container
            raise
        self.executor_pid = hello.pid
        self._has_setsid = hello.setsid
        self._shell = hello.shell
        self._note_isolation(hello.isolation)
        self._session = ExecutorSession(channel, cid, self._kill_failed)
        net = self._net
        if net is not None:  # network 'proxied': the proxy's port in this container
            await thread(lambda: net.listen_in(init, cid))

    async def _firewall_bridge(self, cid: str, info: dict[str, Any]) -> None:
        """Network 'bridge': the outside only, never the host or a private network (`_bridge`),
        before any command runs; a container whose firewall did not load is not used. ``info``:
        the container's inspect after its start."""
        if self.policy.network != "bridge":
            return
        networks = (info.get("NetworkSettings") or {}).get("Networks") or {}
        gateway = str((networks.get("bridge") or {}).get("Gateway") or "") or None
        try:
            await thread(
                lambda: firewall_bridge(
                    int(info["State"]["Pid"]), cid, str(info.get("ResolvConfPath") or ""), gateway
                )
            )
        except OSError as exc:
            raise BackendUnavailableError(str(exc)) from exc

    async def _commands_cgroup(self, init: int, ref: PidRef) -> None:
        """Commands' memory in a cgroup of their own, the executor's reserve outside it (`_cmdcg`),
        the container's socket buffers capped (`_tcpmem`), and its cgroup tree shown to commands
        as a copy of its limits without counters (`_cgview`), before any command runs. Where the
        host has no v1 memory hierarchy or is not root: none (and no recycling: `reuse_blocker`)."""
        parent = await thread(lambda: container_memory_cgroup(init))
        if parent is None:
            return
        limit = self._memory - reserve_bytes(self._memory)
        assert self._host_dir is not None
        view = os.path.join(self._host_dir, f"cgroup-view-{len(self.recoveries)}")
        try:
            child = await thread(lambda: make_commands_cgroup(parent, limit, EXECUTOR_UID))
            # Socket buffers too (`_tcpmem`): the container's cgroup bounds the executor's and,
            # hierarchically, the commands' (whose own file the executor's uid owns).
            await thread(lambda: cap_socket_memory((parent, child), socket_memory_cap()))
            await thread(lambda: build_view(init, view))
            before = len(await thread(lambda: top_mounts(ref, CGROUP_ROOT)))
        except OSError as exc:
            raise BackendUnavailableError(
                f"could not make the commands' memory cgroup, cap the container's socket buffers in {parent} "
                f"or copy its limits: {exc}"
            ) from exc
        mounts = [commands_mount(child), view_mount(view)]
        await thread(lambda: mount_into(ref, mounts, "give the container's commands a memory cgroup of their own"))
        await thread(lambda: check_commands_cgroup(ref))
        await thread(lambda: check_view(ref, before))
        self._commands_cg = (parent, limit)

    async def _start_mounts(self, ref: PidRef) -> None:
        """A root host, before anything of the image runs (`_startmounts`): the container's ptys from
        a devpts of at most 64 (`_ptys`), not the host's pool; its own device nodes, read-only mounts
        of themselves (`_devnodes`); the daemon's init binary covered by an empty file (`_initcover`).
        A non-root host cannot join its mount namespace."""
        if os.geteuid() != 0:
            return
        assert self._host_dir is not None
        empty = os.path.join(self._host_dir, f"init-cover-{len(self.recoveries)}")
        os.close(os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444))
        await thread(lambda: start_mounts(ref, empty))

    async def _detach_io(self, ref: PidRef) -> None:
        """root_can_administer: no path in the container names the I/O directory (`_detach`), nor
        the commands' memory cgroup (`_cmdcg.detach_commands_cgroup`, round 54): a root command's
        DAC_OVERRIDE would open both."""
        if not self.config.root_can_administer:
            return
        await thread(lambda: detach_mount(ref, IO_MOUNT))
        if self._commands_cg is not None:
            await thread(lambda: detach_commands_cgroup(ref))

    async def _mask_lasting(self, ref: PidRef, executor: int) -> None:
        """A root host: docker-init's and the executor's ``/proc`` directories covered (`_procmask`).
        A non-root host cannot join the mount namespace (and recycles no container)."""
        if os.geteuid() != 0:
            return
        assert self._host_dir is not None
        mask = os.path.join(self._host_dir, f"proc-mask-{len(self.recoveries)}")
        await thread(lambda: mask_lasting(ref, make_mask_dir(mask), executor))

    async def _idmap_workspace(self, ref: PidRef) -> None:
        """Bind mode under a lease: the workspace as the leased uid sees it (`_idmap_ws`), before any
        command runs (the session is not set up yet)."""
        owner, cw = self._bind_owner, self.config.container_workspace
        if owner is None or (cw, True) in self._masked:
            return  # not leased, or the whole workspace is an empty read-only mask
        ids = self.command_ids
        await thread(lambda: idmap_workspace(ref, cw, owner, ids))

    async def _verify_pins(self, init: int) -> None:
        """The pinned directories, the workspace and the write-denied paths' binds are mounted from
        the inodes chosen (root host: it can look in; round 14: dockerd follows a symlink swapped
        into a bind source in between, as root on the host)."""
        pins = [*self._pins, *self._bound]
        if not pins or os.geteuid() != 0:
            return
        await thread(lambda: verify_pins(pins, init))

    def _start_failure(self, text: str) -> BackendUnavailableError:
        text = text.strip()
        if "exec /bin/sh failed" in text:
            return BackendUnavailableError(
                f"image {self.config.image!r} has no /bin/sh. The docker backend runs a POSIX-sh "
                "executor inside the container and needs /bin/sh and env (setsid recommended); "
                "use an image with a shell (busybox is enough)."
            )
        detail = "; ".join(line.strip() for line in text.splitlines()[-5:] if line.strip()) or "no message"
        return BackendUnavailableError(
            f"the executor did not start in {self.config.image!r} ({detail}); the image needs /bin/sh and env"
        )

    async def _ensure_session(self) -> ExecutorSession:
        if not self._started and self._session is None:
            raise SandboxClosedError("the docker sandbox is not started (call start() or use `async with`)")
        if self._closed:
            raise SandboxClosedError("the docker sandbox is closed")
        session = self._session
        appeared = self._unmasked_denied()
        if session is not None and session.alive and not appeared and self._reset_failed is None:
            return session
        async with self._executor_lock:
            dead = self._session is not None and not self._session.alive
            failure = self._budget.failure or (self._session.channel.failure if dead and self._session else None)
            if failure is not None:
                # A channel was closed for what the image's /bin/sh wrote on it (floods, forged or
                # duplicate events, requests never read), in this container, a replaced one, a
                # replacement's start or (the image's budget) another session: a new container of
                # the same image would do it again, each with a fresh start deadline (rounds 37, 38).
                raise SandboxExecError(
                    f"{failure} (no new container of {self.config.image!r} is started for this session: close it)"
                )
            if self._session is None or not self._session.alive:
                reason = (
                    (self._session.ended or self._session.channel.failure) if self._session else None
                ) or "the container's executor is gone"
                await self._replace(f"{reason} (the container died or was killed)")
            elif self._reset_failed is not None:
                # Its processes killed, its commands' cgroup perhaps unmounted: nothing runs there.
                await self._replace(f"a reset failed ({self._reset_failed[:300]}): the container is in no known state")
            elif appeared := self._unmasked_denied():
                # Masks are mounts made at the container's start: like bwrap's session sandbox,
                # the next command runs in a container whose masks cover what appeared since.
                await self._replace(
                    f"read-denied path(s) appeared in the workspace: {', '.join(appeared[:5])}"
                )
            assert self._session is not None
            return self._session

    def _unmasked_denied(self) -> list[str]:
        """Bind mode: read-denied paths inside the workspace that exist now but were not masked
        when the container started (a host program made them since), and host sockets bound there
        since (`_sockets`). Copy mode copied the workspace without them."""
        if self.config.workspace_mode != "bind":
            return []
        sockets = self._sockets.appeared() if self._sockets is not None else []
        if sockets:
            return [f"{path} (a host socket)" for path in sockets]
        if not self.policy.read_denied:
            return []
        masked = set(self._masked)
        if (self.config.container_workspace, True) in masked:
            return []
        if self._denied_inside is None:  # fixed for the backend: worked out once (~7 ms for 51 paths)
            self._denied_inside = [
                (os.path.abspath(denied), target)
                for denied in self.policy.read_denied
                if (target := self.to_sandbox_path(Path(os.path.abspath(denied)))) is not None
            ]
        appeared = []
        for path, target in self._denied_inside:
            try:
                is_dir = stat.S_ISDIR(os.stat(path).st_mode)
            except OSError:
                continue
            if (target, is_dir) not in masked:
                appeared.append(target)
        return appeared

    async def _kill_failed(self, session: ExecutorSession, reason: str) -> None:
        async with self._executor_lock:
            if self._session is session:
                await self._replace(reason)

    async def _replace(self, reason: str) -> None:
        """Last resort: remove the container (everything in it dies) and start a fresh one.

        The workspace survives in copy mode (it is a host directory); /tmp does not.
        """
        _log.warning("docker sandbox %s: replacing the container: %s", self.session_id, reason)
        self.recoveries.append(reason)
        self._end_session(reason, killed=True)
        client, cid = self._client, self._cid
        if client is None or self._closed:
            raise SandboxClosedError("the docker sandbox is closed")
        self._cid = None
        self._reset_failed = None  # that container goes; `recoveries` now bars recycling
        await thread(lambda: _remove(client, cid))
        await self._launch()

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
        """Start ``request`` under the executor; refused before anything runs when the user is
        malformed or reserved, the argv is beyond the kernel's exec limits, or (inside) the user,
        group or working directory does not exist."""
        if request.user is not None:
            check_call_user(request.user, self.config.image)
        session = await self._ensure_session()
        try:
            return await self._exec(session, request)
        except ExecutorStalledError as exc:
            # The image's shell does not read its requests: another container of it would not either.
            raise SandboxExecError(f"{exc} (starting {request.argv[0]!r})") from exc
        except ExecutorGoneError:
            # The executor went away while starting this command (container killed):
            # say so once in `recoveries`, replace the container and retry once.
            session = await self._ensure_session()
            try:
                return await self._exec(session, request)
            except ExecutorGoneError as exc:
                raise SandboxExecError(
                    f"the container's executor ended while starting {request.argv[0]!r}, twice: "
                    f"{session.ended or session.channel.failure or 'connection closed'}"
                ) from exc

    async def _exec(self, session: ExecutorSession, request: ExecRequest) -> SandboxProcess:
        io_dir = self._io_dir
        if io_dir is None:
            raise SandboxClosedError("the docker sandbox is closed")
        cwd = container_cwd(request.cwd)
        tid = secrets.token_hex(12)
        base = os.path.join(io_dir, tid)
        paths = [f"{base}.req"]
        fds: list[int] = []
        placeholders: list[int] = []

        def fifo(suffix: str, flags: int) -> int:
            path = base + suffix
            if path not in paths:
                paths.append(path)
                make_fifo(path)
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
            env = {**request.env, **COMMAND_ENV}
            if self._net is not None:
                env.update(proxy_env())
            cwd_file = None
            if request.report_cwd and self.config.root_can_administer:
                # Opened by the runner as fd 6 (and 7 to read it back); unlinked below once started.
                paths.append(f"{base}.cwd")
                cwd_fd = os.open(f"{base}.cwd", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    os.fchmod(cwd_fd, 0o666)  # written by the command's own uid through fd 6
                finally:
                    os.close(cwd_fd)
                cwd_file = "@6"
                env["SHELLRT_CWD_FILE"] = "/proc/self/fd/6"
            elif request.report_cwd:
                # In the command's own TMPDIR slot, as fd 6 (executor.sh, CWDF=@s): on the executor's
                # private tmpfs one command's 1 MiB cwd file left no room for the slot locks, and every
                # later command was refused as if all 16 slots were held (red team round 32).
                cwd_file = "@s"
                env["SHELLRT_CWD_FILE"] = "/proc/self/fd/6"
            check_exec_size(request.argv, env)
            if request.user is not None:
                self._call_users.add(request.user)
            text = render_request(
                tid,
                request.argv,
                env,
                cwd,
                cwd_file,
                self.command_ids,
                request.user,
                private_uid=self._lease is not None,
            )
            req_fd = os.open(f"{base}.req", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(req_fd, text.encode())
            finally:
                os.close(req_fd)
            flags = ("m" if request.merge_stderr else "") + ("i" if request.stdin else "") or "-"
            await session.channel.send(f"R {tid} {flags}")
            try:
                with anyio.fail_after(_START_TIMEOUT):
                    started = await session.channel.wait("SE", tid)
            except TimeoutError as exc:
                raise SandboxExecError(
                    f"the executor did not start {request.argv[0]!r} within {_START_TIMEOUT:g}s "
                    "(is the container's pids limit exhausted?)"
                ) from exc
            if started.kind == "E":
                refused = CwdRefusedError if started.rest.startswith("cwd-") else SandboxExecError
                raise refused(self._refusal(request, started.rest))
            container_pid = parse_number(started.rest, PID_MAX, low=2)
            if container_pid is None:  # a lying executor: nothing it says is believed any more
                reason = (
                    f"the container's executor reported '{shown(started.rest[:80])}' as the pid of "
                    f"{request.argv[0]!r}: not a pid (the image's /bin/sh is not a plain POSIX shell)"
                )
                session.channel.distrust(reason)
                session.end(reason, killed=False)
                raise SandboxExecError(reason)
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
        except FileNotFoundError as exc:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise SandboxExecError(
                "the sandbox's host directory is gone (removed by `shellrt sandbox gc --all` or by hand?): "
                "close this sandbox and start a new one"
            ) from exc
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
        return DockerProcess(
            session,
            tid,
            container_pid,
            FifoReceiveStream(out_fd),
            FifoReceiveStream(err_fd) if err_fd is not None else None,
            FifoSendStream(in_fd) if in_fd is not None else None,
        )

    def _refusal(self, request: ExecRequest, reason: str) -> str:
        """Words for the executor's ``E`` reasons: the command did not start, nothing ran."""
        image, cwd, user = self.config.image, request.cwd, request.user
        group = (user or "").partition(":")[2]
        texts = {
            "cwd-missing": f"working directory {cwd} does not exist in the container (image {image!r})",
            "cwd-notdir": f"working directory {cwd} is not a directory in the container (image {image!r})",
            "cwd-denied": f"working directory {cwd} cannot be entered in the container (image {image!r})",
            "cwd-link": (
                f"working directory {cwd} cannot be entered in the container: a symbolic link is on its "
                "way (it is not followed: pass the physical path; or it was swapped in after the path was "
                "checked, by a background task?)"
            ),
            "user-unknown": (
                f"user {user!r} does not exist in image {image!r} (not in its /etc/passwd); "
                "use a user the image defines or a numeric uid[:gid]"
            ),
            "group-unknown": (
                f"group {group!r} of user {user!r} does not exist in image {image!r} (not in its "
                "/etc/group); use a group the image defines or a numeric gid"
            ),
            "user-db": (
                f"user {user!r} could not be looked up: /etc/passwd or /etc/group in the container is not a "
                "regular file (a command with root_can_administer replaced it?); restore it or use a numeric "
                "uid[:gid]"
            ),
            "pids": (
                f"the container could not start a process for {request.argv[0]!r}: its pids limit (or "
                "memory) is used up, by a background task?; stop that task (TaskStop) or wait, then retry"
            ),
            "tmp-busy": (
                f"could not start {request.argv[0]!r}: every one of the container's {TMP_SLOTS} TMPDIR "
                f"slots is held by a running command (at most {TMP_SLOTS} commands run at once in a "
                "docker session, background tasks included); stop one (TaskStop) or wait for one to end, "
                "then retry"
            ),
            "user-reserved": (
                f"user {user!r} resolves in image {image!r} to a uid, gid or group in "
                f"{EXECUTOR_UID}-{EXECUTOR_UID + TMP_SLOTS}, which are reserved for shellrt's executor and its "
                "TMPDIR slots; choose another user"
            ),
        }
        text = texts.get(reason, f"could not start {request.argv[0]!r}: {shown(reason[:200])}")
        return f"{text}. Nothing was run."

    # --- recycling (batch) ---------------------------------------------------------
    def reuse_blocker(self) -> str | None:
        """Why this container can never serve another task (None: `reset` may try).

        Recycling needs copy mode (bind mode's workspace is the caller's own
        directory), a non-root command user, a container never replaced, and a
        root host side (the reset is verified from outside, through ``/proc``
        and the container's IPC namespace).
        """
        if not self._started or self._closed or self._cid is None:
            return "the container is not running"
        if self._reset_failed is not None:
            return f"a reset failed ({self._reset_failed[:300]}): close this backend"
        if self.config.workspace_mode != "copy":
            return "bind mode: the workspace is the caller's own directory"
        if self.config.root_can_administer:
            return "root_can_administer: root commands may have changed the image (a writable root)"
        if 0 in self.command_ids:
            return "runs as root"
        if self._call_users:
            users = ", ".join(sorted(self._call_users))
            return f"commands ran as per-call users ({users}): a reset judges only the session's own user"
        if os.geteuid() != 0:
            return "the host side is not root: the container cannot be inspected from outside"
        if self.recoveries:
            return "the container was replaced during the task"
        if not self._protected:
            return "the executor's identity was not verified (protect_executor did not run or failed)"
        if self._commands_cg is None:
            return (
                "the container's cgroup counters are not hidden from commands (no v1 memory hierarchy: "
                "cgroup v2?): the next task would read what this one left there"
            )
        return None

    async def protect_executor(self, timeout_s: float = _RESET_TIMEOUT) -> None:
        """Verify from the host that the executor is out of the commands' reach; `reset` requires it.

        The executor is protected from its start (its own uid, capabilities the
        commands lack: see ``executor.sh``); this checks it from outside, in
        ``/proc/<pid>/status``, and raises `ResetError` when that does not hold.
        """
        session = self._session
        if session is None or not session.alive or session.procs:
            raise ResetError("protect_executor needs a running executor and no command yet")
        try:
            with anyio.fail_after(timeout_s):
                await thread(self._check_protected)
        except TimeoutError as exc:
            raise ResetError(f"checking the executor did not finish within {timeout_s:g}s") from exc
        except OSError as exc:
            raise ResetError(f"could not check the executor: {exc}") from exc
        self._protected = True

    def _check_protected(self) -> None:
        # Read through the pidfd-proven directory: never the status of whoever took the number.
        try:
            who = parse_status(self._executor_ref().read("status"))
        except BackendUnavailableError as exc:
            raise ResetError(str(exc)) from exc
        if set(who.uids) != {EXECUTOR_UID} or who.cap_prm != EXECUTOR_CAPS:
            raise ResetError(f"the executor does not run as uid {EXECUTOR_UID} with its own capabilities")

    async def reset(self, timeout_s: float = _RESET_TIMEOUT) -> None:
        """Return the container to a pristine state for another task, or raise `ResetError`.

        The executor kills every process but docker-init and itself and empties
        /tmp, /dev/shm and /dev/mqueue; the host then empties the workspace,
        removes SysV IPC objects (in the container's IPC namespace) and decides from outside (`sandbox.docker._reset`): processes, mounts and
        files, SysV IPC objects (read in the container's IPC namespace),
        sockets, the executor's identity and environment, and ``docker diff``.
        Any doubt, error or timeout raises `ResetError`: the caller must close
        this backend, not reuse it. Handles of the previous task's processes
        are resolved as killed and go inert.
        """
        blocker = self.reuse_blocker()
        if blocker is not None:
            raise ResetError(blocker)
        try:
            await self._reset(timeout_s)
        except BaseException as exc:
            # Fail closed: whatever stopped it (an error, a timeout, a cancel), the executor may
            # have killed every process and the host unmounted the commands' cgroup already.
            self._reset_failed = str(exc) or type(exc).__name__
            raise
        self.resets += 1

    async def _reset(self, timeout_s: float) -> None:
        """`reset`'s steps; any exception leaves the backend refusing (`_reset_failed`)."""
        session = self._session
        if session is None or not session.alive:
            raise ResetError("the executor session ended")
        for proc in list(session.procs.values()):
            proc._resolve(ExitStatus(exit_code=137, signal=9))
        nonce = secrets.token_hex(12)
        try:
            with anyio.fail_after(timeout_s):
                await session.channel.send(f"Z {nonce}")
                reply = await session.channel.wait("Z", nonce)
                problems = parse_reset_reply(reply.rest)
                if problems:
                    raise ResetError("; ".join(problems))
                await thread(self._verify_pristine)
        except TimeoutError as exc:
            raise ResetError(f"the reset did not finish within {timeout_s:g}s") from exc
        except ExecutorGoneError as exc:
            raise ResetError(f"the executor session ended during the reset: {exc}") from exc
        except OSError as exc:
            raise ResetError(f"could not inspect the container: {exc}") from exc
        session.channel.drop_mail()

    def _executor_host_pid(self) -> int:
        """The executor's host pid, checked alive through a pidfd (so the number cannot be someone else's)."""
        if self._executor_host is None:
            cid, pid = self._cid, self.executor_pid
            found = host_pid(cid, pid) if cid is not None and pid is not None else None
            if found is None or cid is None or pid is None:
                raise ResetError("the executor's host process was not found")
            cpid = pid
            try:
                ref = pid_ref(found, lambda p: is_container_process(p, cid, cpid), "the executor")
            except BackendUnavailableError as exc:
                raise ResetError(str(exc)) from exc
            self._executor_host = (ref.pid, ref.pidfd)
        host, pidfd = self._executor_host
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if poller.poll(0):
            raise ResetError("the executor exited")
        return host

    def _executor_ref(self) -> PidRef:
        """The executor as a `PidRef` (joins go through its pidfd), checked alive."""
        host = self._executor_host_pid()
        assert self._executor_host is not None
        return PidRef(host, self._executor_host[1])

    def _forget_executor_host(self) -> None:
        if self._executor_host is not None:
            with contextlib.suppress(OSError):
                os.close(self._executor_host[1])
            self._executor_host = None

    def _verify_pristine(self) -> None:
        """Host side of `reset` (blocking): the verdict from outside (`sandbox.docker._recycle`)."""
        assert self.executor_pid is not None
        if self._net is not None:  # the proxy's own port is no leftover: closed while checking
            self._net.pause()
        if self._workspace_inode is None:
            raise ResetError("the workspace root's original state was not recorded")
        verify_pristine(
            OutsideView(
                executor=self._executor_ref(),
                executor_pid=self.executor_pid,
                client=self._client,
                container_id=self._cid,
            ),
            host_workspace=self._host_workspace(),
            workspace_inode=self._workspace_inode,
            container_workspace=self.config.container_workspace,
            command_user=self.command_ids,
            still_the_executor=self._executor_host_pid,
            isolation_word=hello_word(self._isolation),
            net_counters=self._net_counters,
        )
        ref = self._executor_ref()
        # No SysV id was allocated during the task: its namespace's cursor would count them (`_ipcseq`).
        try:
            ipc_ids = take_ipc_ids(ref)
        except OSError as exc:
            raise ResetError(f"could not take SysV ids in the container's IPC namespace: {exc}") from exc
        ipc_problems = ipc_id_problems(self._ipc_ids, ipc_ids)
        self._ipc_ids = ipc_ids
        if ipc_problems:
            raise ResetError("; ".join(ipc_problems))
        # The lasting processes' /proc cover is still whole (`_procmask`): the next task must not
        # read what this one made them count, whatever took a cover away meanwhile.
        try:
            check_masked(ref, self.executor_pid)
        except BackendUnavailableError as exc:
            raise ResetError(str(exc)) from exc
        # No process of the task is left: its commands' cgroup goes, counters and all (`_cmdcg`).
        assert self._commands_cg is not None  # reuse_blocker
        parent, limit = self._commands_cg
        try:
            renew_commands_cgroup(ref, parent, limit, EXECUTOR_UID, socket_memory_cap())
        except (OSError, BackendUnavailableError) as exc:
            raise ResetError(f"could not give the next task a fresh commands' cgroup: {exc}") from exc
        # Their inode counters too: a wipe leaves a tmpfs numbering on from the task's files (`_freshtmp`),
        # and the I/O directory's number against its FIFOs' counted the task's commands (`_freshio`).
        assert self._io_dir is not None
        try:
            depth = len(top_mounts(ref, IO_MOUNT))
            swap_io_dir(self._io_dir, IO_ENTRIES)
            renew_tmpfs(ref, self._tmpfs, binds=[(self._io_dir, IO_MOUNT)])  # one child for both
            check_io_dir(ref, self._io_dir, IO_MOUNT, depth)
        except BackendUnavailableError as exc:
            raise ResetError(str(exc)) from exc
        # The writable places not renewed keep the task's times unless set to the reset's (`_roottimes`).
        try:
            restamp_roots(ref)
        except (OSError, ValueError, BackendUnavailableError) as exc:
            raise ResetError(f"could not set /dev/mqueue's and /dev/pts's times: {exc}") from exc
        self._executor_host_pid()
        if self._net is not None:
            self._net.resume()

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
        await thread(lambda: self._copy_in(into_existing=True))

    # --- workspace ---------------------------------------------------------------
    def _copy_in(self, *, into_existing: bool = False) -> str:
        """Copy the host workspace into the private host directory only the container mounts.

        The first time the directory is made here and its inode's state recorded before anything
        is copied in: each reset returns it to that state (`_root_inode`)."""
        assert self._host_dir is not None
        dest = os.path.join(self._host_dir, "workspace")
        if not into_existing:
            os.mkdir(dest, 0o700)
            self._workspace_inode = inode_state(dest)
        try:
            return copy_in(
                self.policy.workspace, dest, self.policy.read_denied, self.command_ids, into_existing=True
            )
        except (
            WorkspaceTooDeepError,
            LinkedCopyTooLargeError,
            SandboxExecError,
        ) as exc:  # SandboxExecError: the alias search's bound
            raise BackendUnavailableError(str(exc)) from exc

    async def export_workspace(
        self, dest: Path, *, refuse: Callable[[str], str | None] | None = None
    ) -> None:
        """Copy the container's workspace out to ``dest`` (created if missing; files there are overwritten).

        Never written there (red team round 13): a read- or write-denied path of the policy (a
        command could create ``.env`` in its copy, where the host's secret was left out, and the
        export overwrote the host's), and any path below ``dest`` that ``refuse`` gives a reason
        for (the caller's protected files). Each is named in the `WorkspaceExportError` unless
        its content equals the host's."""
        client, cid = self._client, self._cid
        if client is None or cid is None:
            raise SandboxClosedError("the docker sandbox is not running")
        held = denied_on_host(Path(dest), self.policy.read_denied, self.policy.write_denied, refuse)
        cw = self.config.container_workspace
        await thread(lambda: export_workspace(client, cid, cw, Path(dest), held=held))


_GET_IMAGE = "build it (`docker build`, `docker import`, scripts/build-test-images.sh) or `docker load` it"


def _pull(client: docker.DockerClient, image: str) -> None:
    """Pull ``image``; a failure (most often: no registry reachable) names the image and the way out."""
    try:
        client.images.pull(image)
    except docker.errors.APIError as exc:
        raise BackendUnavailableError(
            f"could not pull image {image!r} ({exc.explanation or exc}). Is a registry reachable? "
            f"If not, {_GET_IMAGE}, and run with pull 'never' (--pull never) or 'missing'."
        ) from exc


_REMOVAL_WAIT_S = 15.0


def _gone_within(client: docker.DockerClient, cid: str, seconds: float) -> bool:
    """Wait for a removal dockerd already runs, so "removed" means gone when `_remove` returns."""
    deadline = time.monotonic() + seconds
    pause = 0.02
    while True:
        try:
            client.api.inspect_container(cid)
        except docker.errors.NotFound:
            return True
        except (docker.errors.APIError, requests.exceptions.ConnectionError):
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def _own_socket(sock: object) -> int:
    """The attach connection's descriptor, taken from the SDK's socket object: the channel's alone.

    A ``dup`` left the SDK's own descriptor open until the garbage collector found its response
    object: closing the channel then ended nothing (the executor never read EOF) and, once an image
    had filled the connection's buffers (a stderr flood), dockerd's forced removal waited on it for
    minutes and ``close()`` raised a read timeout (red team round 37). ``detach`` hands the
    descriptor over and leaves the SDK's object closed (its later collection closes nothing)."""
    raw = getattr(sock, "_sock", sock)
    detach = getattr(raw, "detach", None)
    if detach is None:  # not a socket object: the old way, closed when the SDK's object is
        fd = os.dup(raw.fileno())  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):
            sock.close()  # type: ignore[attr-defined]
        return fd
    fd = int(detach())
    with contextlib.suppress(Exception):
        sock.close()  # type: ignore[attr-defined]
    return fd


def _remove(client: docker.DockerClient | None, cid: str | None, *host_dirs: OwnedDir) -> bool:
    """Force-remove a container (one call: kills at once, drops its volumes) and host directories;
    whether the container is known gone (its processes with it)."""
    gone = True
    if cid is not None and client is not None:
        try:
            client.api.remove_container(cid, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            gone = "already in progress" in str(exc)
            if not gone:
                _log.warning("could not remove container %s: %s", cid[:12], exc)
            elif not _gone_within(client, cid, _REMOVAL_WAIT_S):
                gone = False
                _log.warning(
                    "container %s: dockerd's removal still runs after %.0f s", cid[:12], _REMOVAL_WAIT_S
                )
        except requests.exceptions.ConnectionError as exc:
            gone = False
            _log.warning("could not remove container %s (daemon gone): %s", cid[:12], exc)
        except requests.exceptions.RequestException as exc:  # a read timeout: the daemon is stuck
            gone = False
            _log.warning("could not remove container %s (the daemon did not answer): %s", cid[:12], exc)
    for host_dir in host_dirs:
        host_dir.remove()
    return gone
