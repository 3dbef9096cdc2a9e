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
  sandbox), the backend says so in the log and runs per command (a root
  caller's commands still under the sandbox uid, see below).
* **per command**: ``bwrap <flags> -- argv`` for each command: cheaper to start
  (no zygote, ~25 ms less) and costlier per command; the same session /tmp,
  but /dev/shm and loopback are each command's own.

Least privilege, whoever runs shellrt (docs/security.md, issue 15): every
command runs with no capabilities, ``no_new_privs``, the seccomp filter of
`sandbox._seccomp` (the zygote loads it per command after building its
namespaces; per command, bwrap's ``--seccomp``), a read-only /proc/sys (and
Docker's masked /proc entries in the zygote's per-command /proc).

* Non-root caller: ``--unshare-user``; commands keep the caller's uid.
* Root caller: commands run under `BwrapConfig.sandbox_uid`/``sandbox_gid``,
  never host root (a user-namespace mapping alone would keep kernel uid 0).
  The writable roots are shown to that uid through idmapped mounts
  (`sandbox._idmap`: their owner appears as the sandbox uid, what it creates
  lands owned by the owner) in a private mount namespace held for the
  session by a holder process; every bwrap starts in it (``nsenter
  --mount``). The zygote switches each command's uid; per command,
  ``setpriv`` does. Parents of the roots that the uid cannot cross
  (``/root``) become 0711 skeletons showing only the way to the roots.
  Where this cannot be set up (no idmapped mounts on the roots' filesystem,
  no util-linux ``nsenter``/``setpriv``), bwrap as root is refused with a
  pointer to docker; it never runs a command as host root.

No host IPC (`sandbox._hostsockets`): /run, the caller's XDG_RUNTIME_DIR and
every pathname socket of the host's /proc/net/unix outside the sandbox's own
directories are hidden; a socket that appears later makes the next command
start a new zygote that hides it too.

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
  ``--unshare-net`` when ``policy.network`` is ``none`` or ``proxied`` (only loopback,
  isolated);
- network ``proxied`` (persistent mode only; docs/network.md): shellrt runs a
  filtering proxy (`sandbox._proxy`) on the host on a unix socket in a 0700
  directory of its own, bound read-only at /run/shellrt-proxy; the zygote's
  bridge listens on the sandbox's 127.0.0.1:3128 and forwards there; commands
  get ``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY`` (both cases) pointing at it;
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
import tempfile
from pathlib import Path

import anyio

from sandbox import _seccomp
from sandbox._bwrap_retry import MAX_RETRIES, RetryingBwrapProcess, lost_mount_race
from sandbox._bwrap_zygote import Zygote, ZygoteGoneError
from sandbox._cgroup_limits import CgroupLimits
from sandbox._hostproc import HostProcess, HostRunner
from sandbox._hostsockets import ipc_mask_args, outside_sockets
from sandbox._idmap import IdmapError, idmapped_tree, userns_fd
from sandbox._proxy import BRIDGE_PORT, FilteringProxy, Refusal, proxy_env
from sandbox._scratch import OwnedDir
from sandbox.base import Aspect, ExecRequest, SandboxBackend, SandboxProcess, refuse_user_switch
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


_AS_ROOT_FIX = (
    "Fix: run shellrt as a non-root user, or use --sandbox docker (a container with its own root), "
    "or put the workspace on a filesystem that supports idmapped mounts (ext4, xfs, btrfs, tmpfs) "
    "on Linux >= 5.12."
)


def _proc_masks() -> list[str]:
    args: list[str] = []
    for name in ("kcore", "keys", "timer_list", "sched_debug", "latency_stats", "acpi", "scsi", "asound"):
        path = f"/proc/{name}"
        if os.path.isdir(path):
            args += ["--tmpfs", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


#: bwrap flags hiding what Docker hides of /proc (those present on this kernel).
_PROC_MASKS = _proc_masks()
#: linux/capability.h numbers of the capabilities a zygote keeps.
_CAP_NUMBERS = {"CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_SYS_ADMIN": 21}
#: The seccomp program (``sandbox._seccomp``), built once.
_SECCOMP = _seccomp.filter_bytes()


#: Where the proxy's socket directory appears inside the sandbox.
PROXY_DIR_INSIDE = "/run/shellrt-proxy"


def _zygote_python() -> str:
    """The interpreter the zygote runs on: this very one (the host is visible inside)."""
    if not sys.executable:
        raise ZygoteGoneError("no Python interpreter path is known (sys.executable is empty)")
    return os.path.realpath(sys.executable)


class BwrapBackend(CgroupLimits, SandboxBackend):
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
        #: What the current zygote hid: a denied path or a host socket that appears later
        #: needs a new zygote.
        self._hidden: tuple[str | None, ...] = ()
        self._sockets: frozenset[str] = frozenset()
        self._session_tmp: Path | None = None
        self._tmp_owner: OwnedDir | None = None
        #: Root caller: the holder of the session's private mount namespace (idmapped roots),
        #: the ``nsenter`` prefix that starts bwrap in it, and the command prefix (``setpriv``).
        self._holder: Zygote | None = None
        self._ns_prefix: list[str] = []
        self._setpriv: list[str] = []
        #: Network ``proxied``: the host proxy and its 0700 directory (socket and session log).
        self._proxy: FilteringProxy | None = None
        self._proxy_dir: Path | None = None
        #: Refusals of closed sessions' proxies stay readable after `close`.
        self._refusals: list[Refusal] = []

    @property
    def network_refusals(self) -> list[Refusal]:
        """Every connection the proxy refused this session (network ``proxied``), oldest first."""
        proxy = self._proxy
        return list(proxy.refusals) if proxy is not None else list(self._refusals)

    @property
    def network_log(self) -> Path | None:
        """The session's proxy log (JSON lines, one per refusal); kept after `close` when it has any."""
        return self._proxy_dir / "network.log" if self._proxy_dir is not None else None

    @property
    def session_tmp(self) -> Path | None:
        """Host directory backing the sandbox's /tmp (the file tools serve /tmp from it); None when stopped."""
        return self._session_tmp

    def enforces(self) -> frozenset[Aspect]:
        aspects: set[Aspect] = {"filesystem", "read_denied", "tree_kill"}
        if self.policy.network in ("none", "proxied"):
            aspects.add("network")
        return frozenset(aspects) | self.cgroup_enforces()  # limits: sandbox._cgroup_limits

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
        proxied = self.policy.network == "proxied"
        if proxied and not self.config.persistent:
            raise BackendUnavailableError(
                "network 'proxied' needs the bwrap session sandbox (persistent mode); "
                "one bwrap per command cannot host the proxy bridge. Fix: drop the per-command setting, "
                "or use --network none"
            )
        found = shutil.which(self.config.bwrap_path)
        if found is None:
            raise BackendUnavailableError(
                f"bubblewrap ({self.config.bwrap_path!r}) is not installed or not on PATH. "
                "Fix: apt-get install bubblewrap (dnf install bubblewrap), or use --sandbox local."
            )
        self.cgroup_open()  # limits: the session cgroup, before any process starts
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
        as_root = os.geteuid() == 0
        try:
            if proxied:
                await anyio.to_thread.run_sync(self._start_proxy)
            if as_root:
                # The sandbox uid writes its cwd reports here; 1733: it can add files, not list or remove.
                self._runner.check_open().chmod(0o1733)
                await self._start_holder()
            if self.config.persistent:
                await self._start_zygote()
                return
        except ZygoteGoneError as exc:
            if proxied:  # no per-command fallback: it could not host the bridge
                await self.close()
                raise BackendUnavailableError(
                    f"network 'proxied': the bwrap session sandbox did not start ({exc}); "
                    "use --network none, or fix the cause above"
                ) from exc
            # Per command, a root caller's commands still run as the sandbox uid (setpriv).
            _log.warning("bwrap: running one sandbox per command (%s)", exc)
        except BaseException:
            await self.close()
            raise
        await self._probe()

    def _start_proxy(self) -> None:
        """The session's filtering proxy on the host (network ``proxied``)."""
        # 0700, ours; in the host's /tmp whatever TMPDIR says: never the workspace, and hidden
        # from every sandbox (their /tmp is their own) but through the bind we make.
        self._proxy_dir = Path(tempfile.mkdtemp(prefix="shellrt-proxy-", dir="/tmp"))
        self._proxy = FilteringProxy(
            self._proxy_dir / "proxy.sock",
            allowed=self.policy.allowed_domains,
            denied=self.policy.denied_domains,
            log_path=self._proxy_dir / "network.log",
            sandbox=self._runner.marker_prefix,
        )
        self._proxy.start()

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
        sockets = self._outside_sockets()
        self._zygote = await self._new_zygote(state_dir, hidden)
        self._hidden, self._sockets = hidden, sockets

    def _outside_sockets(self) -> frozenset[str]:
        return outside_sockets((*self.policy.allowed_roots(), self._runner.check_open()))

    def _sockets_hidden(self) -> bool:
        """Whether every host socket now listening was there when the zygote hid them."""
        return self._outside_sockets() <= self._sockets

    async def _new_zygote(self, state_dir: Path, hidden: tuple[str | None, ...]) -> Zygote:
        """A started zygote (retrying a lost mount race); `ZygoteGoneError` when it cannot start.

        It builds each command's namespaces (CAP_SYS_ADMIN), empties its bounding set
        (CAP_SETPCAP) and, run as root, switches it to the sandbox uid (CAP_SETUID,
        CAP_SETGID) and must still be able to kill it there (CAP_KILL: the init it
        kills runs as the sandbox uid); the command itself runs with no capabilities at all.
        """
        as_root = os.geteuid() == 0
        caps = (
            "CAP_SYS_ADMIN",
            "CAP_SETPCAP",
            *(("CAP_SETUID", "CAP_SETGID", "CAP_KILL") if as_root else ()),
        )
        argv = self.bwrap_args(
            cwd="/",
            state_dir=state_dir,
            tmp=self._session_tmp,
            caps=caps,
            denied=hidden,
            zygote=True,
        )
        if not as_root:
            argv[1:1] = ["--unshare-user"]
        config: dict[str, object] = {
            "seccomp": _SECCOMP,
            "setup": [],
            "caps": [_CAP_NUMBERS[c] for c in caps],
        }
        if self._proxy is not None:
            config["bridge"] = {"port": BRIDGE_PORT, "socket": f"{PROXY_DIR_INSIDE}/proxy.sock"}
        if as_root:
            config.update(
                uid=self.config.sandbox_uid, gid=self.config.sandbox_gid, setup=self._skeleton_steps()
            )
        python = _zygote_python()
        last: ZygoteGoneError | None = None
        for _ in range(1 + MAX_RETRIES):
            zygote = Zygote(self._runner)
            try:
                # limits: the zygote joins the session cgroup
                await zygote.start(self.cgroup_argv(argv), python, config)
            except ZygoteGoneError as exc:
                last = exc
                if not lost_mount_race(str(exc)):
                    break
                continue
            return zygote
        assert last is not None
        raise last

    def _skeleton_steps(self) -> list[tuple[object, ...]]:
        """Zygote set-up steps (root caller) that make `_skeletons` inside its sandbox.

        Done by the zygote once it runs, not by bwrap: its own interpreter may live
        under such a parent (/root/.pyenv). What the sandbox shows below a skeleton
        (the roots with their masks, the state dir) is saved first and put back on it.
        """
        paths = self._reach_paths()
        points = _skeletons(paths)
        below = [str(p) for p in paths if any(q in p.parents for q in points)]
        return [
            *(("save", p) for p in below),
            *(("skeleton", str(q), [p for p in below if Path(p).is_relative_to(q)]) for q in points),
            *(("restore", p) for p in below),
        ]

    def _reach_paths(self) -> list[Path]:
        """What the sandbox uid must reach: the writable roots and the state dir."""
        return [*self.policy.allowed_roots(), self._runner.check_open()]

    async def _start_holder(self) -> None:
        """Root caller: the session's private mount namespace, where the writable roots are idmapped.

        A holder process (``sandbox._zygote_main`` in holder mode, on the host) makes
        it; every bwrap of the session starts in it through ``nsenter --mount``, so the
        idmapped mounts never appear in the host's mount table. Raises
        `BackendUnavailableError` when that cannot be arranged here.
        """
        tools = {name: shutil.which(name) for name in ("nsenter", "setpriv")}
        missing = [name for name, path in tools.items() if path is None]
        if missing:
            raise BackendUnavailableError(
                f"bwrap as root needs util-linux's {' and '.join(missing)} (apt-get install util-linux). "
                + _AS_ROOT_FIX
            )
        uid, gid = self.config.sandbox_uid, self.config.sandbox_gid
        state_dir, tmp = self._runner.check_open(), self._session_tmp
        assert tmp is not None
        # A root or the state dir under /tmp is bound inside the session /tmp, where bwrap
        # would make its parents 0700: made here first, crossable (not listable) by anyone.
        for path in (*self.policy.allowed_roots(), state_dir):
            if Path("/tmp") in path.parents:
                inner = tmp
                for part in path.relative_to("/tmp").parts[:-1]:
                    inner = inner / part
                    inner.mkdir(mode=0o711, exist_ok=True)
        steps: list[tuple[object, ...]] = []
        fds: list[int] = []
        userns: dict[tuple[int, int], int] = {}
        holder = Zygote(self._runner)
        try:
            for root in self.policy.allowed_roots():
                st = root.stat()
                if (st.st_uid, st.st_gid) not in userns:
                    userns[st.st_uid, st.st_gid] = userns_fd(st.st_uid, st.st_gid, uid, gid)
                fds.append(idmapped_tree(root, userns[st.st_uid, st.st_gid]))
                steps.append(("attach", fds[-1], str(root)))
            # On the host: this very interpreter.
            await holder.start([], sys.executable, {"hold": True, "setup": steps}, tuple(fds))
        except IdmapError as exc:
            raise BackendUnavailableError(
                f"bwrap as root runs commands under an unprivileged uid, which needs the writable roots "
                f"shown through idmapped mounts: {exc}. {_AS_ROOT_FIX}"
            ) from exc
        except SandboxExecError as exc:
            raise BackendUnavailableError(
                f"bwrap as root: cannot prepare the session's mount namespace: {exc}. {_AS_ROOT_FIX}"
            ) from exc
        finally:
            for fd in (*fds, *userns.values()):
                os.close(fd)
        self._holder = holder
        self._ns_prefix = [str(tools["nsenter"]), f"--mount=/proc/{holder.host_pid}/ns/mnt", "--"]
        self._setpriv = [
            str(tools["setpriv"]),
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--bounding-set=-all",
            "--inh-caps=-all",
            "--ambient-caps=-all",
            "--no-new-privs",
            "--",
        ]

    async def close(self) -> None:
        zygotes = [*self._retired, *([self._zygote] if self._zygote is not None else [])]
        self._retired = []
        self._zygote = None
        for zygote in zygotes:
            await zygote.close()
        holder, self._holder = self._holder, None
        if holder is not None:
            await holder.close()
        self._ns_prefix, self._setpriv = [], []
        proxy, self._proxy = self._proxy, None
        if proxy is not None:  # after the sandboxes: nothing is left to connect through it
            await anyio.to_thread.run_sync(proxy.close)
            self._refusals = list(proxy.refusals)
            if not self._refusals and self._proxy_dir is not None:  # nothing to keep: no litter in /tmp
                shutil.rmtree(self._proxy_dir, ignore_errors=True)
                self._proxy_dir = None
        await self._runner.close()
        await anyio.to_thread.run_sync(self.cgroup_close)  # limits: remove the session cgroup
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
        seccomp_fd: int | None = None,
        zygote: bool = False,
    ) -> list[str]:
        """The bwrap argv up to (not including) ``--``, for one sandbox starting in ``cwd``.

        ``tmp``: a host directory bound at /tmp (the session's /tmp) instead of a
        fresh tmpfs (the probe's). ``caps``: the only capabilities the sandbox's
        process keeps (the zygote's); a command keeps none -- run as root,
        bwrap would otherwise leave it every capability, CAP_SYS_ADMIN included.
        ``denied``: `_denied_kinds` as already taken (default: taken now).
        ``seccomp_fd``: where bwrap reads the command's seccomp program (``--seccomp``).
        ``zygote``: the zygote's sandbox (it makes the skeletons and /proc masks itself).
        """
        assert self._bwrap is not None
        args = [
            *self._ns_prefix,
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
        if self.policy.network in ("none", "proxied"):
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if not zygote:
            # bwrap leaves /proc/sys writable with --unshare-net: read-only (the host's view of
            # it), and the /proc entries Docker hides hidden. Not in the zygote's sandbox: its
            # commands get their own /proc, which a user namespace refuses to mount while
            # anything covers part of this one ("too revealing").
            args += ["--ro-bind", "/proc/sys", "/proc/sys", *_PROC_MASKS]
        # No host IPC: /run, the caller's runtime dir and every other host socket hidden.
        args += ipc_mask_args((*self.policy.allowed_roots(), state_dir))
        if self._proxy_dir is not None and self._proxy is not None:  # after the /run mask
            args += ["--ro-bind", str(self._proxy_dir), PROXY_DIR_INSIDE]
        args += ["--tmpfs", "/tmp"] if tmp is None else ["--bind", str(tmp), "/tmp"]
        if self._setpriv and not zygote:  # root, per command: see _skeletons
            paths = self._reach_paths()
            for point in _skeletons(paths):
                args += ["--perms", "0711", "--tmpfs", str(point)]
                # bwrap would give the parents it makes their host modes (0700): crossable instead.
                inner = {q for p in paths if point in p.parents for q in p.parents if point in q.parents}
                for parent in sorted(inner, key=lambda q: len(q.parts)):
                    args += ["--perms", "0711", "--dir", str(parent)]
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
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        return args

    async def exec(self, request: ExecRequest) -> SandboxProcess:
        refuse_user_switch(request, "bwrap")
        self._runner.check_open()
        if self._zygote is not None:
            return self.cgroup_watch(await self._exec_in_zygote(request))  # limits: OOM reporting

        async def spawn() -> tuple[HostProcess, int]:
            return await self._spawn_once(request)

        first = await spawn()
        # A retry would lose stdin already written to the failed attempt: only retry without stdin.
        return self.cgroup_watch(RetryingBwrapProcess(spawn, first, may_retry=not request.stdin))

    async def _exec_in_zygote(self, request: ExecRequest) -> SandboxProcess:
        zygote = self._zygote
        assert zygote is not None
        if not zygote.alive or self._denied_kinds() != self._hidden or not self._sockets_hidden():
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
        env = {**proxy_env(), **run.env} if self._proxy is not None else run.env
        return await zygote.spawn(request, marker=run.marker, env_extra=env, cwd_file=run.cwd_file)

    async def _spawn_once(self, request: ExecRequest) -> tuple[HostProcess, int]:
        """One bwrap start; returns the process and the read end of its ``--json-status-fd``."""
        run = self._runner.new_run(request.report_cwd)
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        seccomp_r, seccomp_w = os.pipe2(os.O_CLOEXEC)
        os.write(seccomp_w, _SECCOMP)  # < 4 KiB: fits in the pipe
        os.close(seccomp_w)
        # As root, setpriv switches to the sandbox uid and drops what it needed for that
        # (and bwrap's --chdir, done as root, may need to enter a 0700 workspace the idmap
        # shows as the sandbox uid's).
        caps = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH") if self._setpriv else ()
        argv = [
            *self.bwrap_args(
                cwd=request.cwd,
                state_dir=run.state_dir,
                tmp=self._session_tmp,
                caps=caps,
                seccomp_fd=seccomp_r,
            ),
            "--json-status-fd",
            str(status_w),
            "--",
            *self._setpriv,
            *request.argv,
        ]
        env = run.env
        if self._setpriv and not _reachable(request.env.get("HOME", "/")):
            env = {**env, "HOME": "/tmp"}  # root's home is not the sandbox user's
        try:
            proc = await self._runner.spawn(
                self.cgroup_argv(argv),  # limits: joins the session cgroup
                request,
                marker=run.marker,
                cwd_host_file=run.cwd_file,
                env_extra=env,
                cwd="/",
                pass_fds=(status_w, seccomp_r),
            )
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
            os.close(seccomp_r)
        return proc, status_r


def _reachable(path: str) -> bool:
    """Whether any user may enter ``path`` (it and every parent searchable by others)."""
    try:
        return all(os.stat(p).st_mode & stat.S_IXOTH for p in (path, *map(str, Path(path).parents)))
    except OSError:
        return False


def _skeletons(paths: list[Path]) -> list[Path]:
    """The parents the sandbox uid could not cross on its way to ``paths``: each becomes a skeleton.

    A workspace under ``/root`` (0700) is out of an unprivileged uid's reach. The
    highest such parent becomes an empty tmpfs (0711) holding only the way to the
    paths below it: what else it held was unreachable to that uid anyway. Parents
    under /tmp are left out: inside they live in the session /tmp, made crossable there.
    """
    points: list[Path] = []
    for path in paths:
        if Path("/tmp") in path.parents:
            continue
        for parent in reversed(path.parents):
            try:
                closed = not os.stat(parent).st_mode & stat.S_IXOTH
            except OSError:
                closed = False
            if closed:
                points.append(parent)
                break
    return sorted({p for p in points if not any(q != p and q in p.parents for q in points)})
