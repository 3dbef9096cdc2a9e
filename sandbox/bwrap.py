"""The bubblewrap backend: read-only host root, writable workspace, private /tmp, own pid namespace.

Two modes (`BwrapConfig.persistent`):

* **persistent** (default): one long-lived bwrap sandbox per session runs a
  zygote (`sandbox._zygote_main`) that runs every command in fresh pid,
  mount (own /proc) and IPC namespaces with every capability dropped, made
  ahead (`warm_pool`: inits wait ready in them; the host hands one the
  command directly, without a word to the zygote). The expensive part of a bwrap start -- the mount table,
  the network namespace -- is paid once per session. The
  session's commands share /tmp (a private host directory bound there, so it
  survives a zygote restart), /dev/shm and loopback, as they would in a
  container: a background server is reachable from later commands. If the
  zygote cannot start (no usable Python inside, no CAP_SYS_ADMIN for the
  sandbox), the backend says so in the log and runs per command (a root
  caller's commands still under the sandbox uid, see below).
* **per command**: ``bwrap <flags> -- argv`` for each command: cheaper to start
  (no zygote, ~25 ms less) and costlier per command; the same session /tmp,
  but /dev/shm and loopback are each command's own (a root caller's /dev/shm: a fresh
  directory of one capped tmpfs whose 16,384 inodes its commands share, `sandbox._shmpool`; a
  non-root caller's: a capped tmpfs of its own, mounted by the starter before bwrap,
  `sandbox._bwrap_shm`).

Least privilege, whoever runs shellrt (docs/security.md, issue 15): every
command runs with no capabilities, ``no_new_privs``, the seccomp filter of
`sandbox._seccomp` (the zygote loads it per command after building its
namespaces; per command, bwrap's ``--seccomp``), a read-only /proc/sys (and
Docker's masked /proc entries in the zygote's per-command /proc).

* Non-root caller: ``--unshare-user``; commands keep the caller's uid.
* Root caller: commands run under the session's own host uid/gid, never host
  root (a user-namespace mapping alone would keep kernel uid 0): leased for the
  session from a pool (`sandbox._uid_lease`: no other live session on the host
  has it, so the kernel's per-user limits are the session's own), or the fixed
  `BwrapConfig.sandbox_uid`/``sandbox_gid`` an operator set.
  The writable roots are shown to that uid through idmapped mounts
  (`sandbox._idmap`: their owner appears as the sandbox uid, what it creates
  lands owned by the owner) in a private mount namespace held for the
  session by a holder process; every bwrap starts in it (``nsenter
  --mount``). The zygote switches each command's uid; per command, a
  spawner (`sandbox._zygote_main.Spawner`: the sandbox uid in that
  namespace, core dumps off) starts bwrap itself as the sandbox uid with
  ``posix_spawn`` (``nsenter --setuid --setgid`` exec'd per command where the
  spawner is gone), in a user namespace as for a non-root caller, binding the
  roots and the state dir from copies the holder makes reachable for it. Parents of the roots
  that the uid cannot cross (``/root``) become 0711 skeletons showing only
  the way to the roots. Where this cannot be set up (no idmapped mounts on
  the roots' filesystem, no util-linux ``nsenter``), bwrap as root is
  refused with a pointer to docker; it never runs a command as host root.

No host IPC (`sandbox._hostsockets`): /run, the caller's XDG_RUNTIME_DIR and
every pathname socket of the host's /proc/net/unix outside the sandbox's own
directories are hidden; a socket that appears later makes the next command
start a new zygote that hides it too.

The flags (see `BwrapBackend.bwrap_args`):

- ``--ro-bind / /``: the whole host is visible read-only; ``--bind`` re-exposes
  the workspace and every extra writable root read-write;
- the session's private tmp dir bound at /tmp (a host directory made at start,
  removed at close; a root caller's is a tmpfs of ``tmp_bytes`` or
  `BwrapConfig.default_tmp_bytes`, see `sandbox._tmpcap`); every other tmpfs gets a
  small size (`sandbox._readonly.sized_tmpfs`) and a session without a ``pids`` limit
  gets `BwrapConfig.default_pids` (`sandbox._cgroup_limits`);
  ``--dev /dev``, ``--proc /proc``; /sys an allow-list (`sandbox._sysview`: cpu topology, THP,
  the session's own cgroup) and a cgroup namespace of its own (no host cgroup or interface named);
- read-denied paths are hidden after the binds (``--tmpfs`` over a directory,
  ``--ro-bind /dev/null`` over a file), so a denied path inside the workspace
  stays hidden. A denied path that appears (or changes kind) after the zygote
  started makes the next command start a new zygote that hides it too. Every
  directory between a writable root and a denied path is bound onto itself
  first: a mount point cannot be renamed or removed (EBUSY), so no command can
  move a denied file out from under its mask;
- ``--unshare-pid`` + ``--die-with-parent`` + ``--new-session``: the command's
  pid namespace dies with its init, so killing it kills every descendant,
  double-forked or not; ``--unshare-ipc``/``--unshare-uts`` always, and
  ``--unshare-net`` when ``policy.network`` is ``none`` or ``proxied`` (only loopback,
  isolated; a session's later zygotes start in its first one's, `sandbox._bwrap_netns`);
- network ``proxied`` (persistent mode only; docs/network.md): shellrt runs a
  filtering proxy (`sandbox._proxy`) on the host on a unix socket in a 0700
  directory of its own, bound read-only at /run/shellrt-proxy; the zygote's
  bridge listens on the sandbox's 127.0.0.1:3128 and forwards there; commands
  get ``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY`` (both cases) pointing at it;
- ``--chdir``: the command's working directory.

The cwd report is a FIFO the host makes in a private state dir, bound read-only at its host path
and listable by no command (`sandbox._bwrap_report`). A
start that lost a race with the host's mount table is retried transparently
(see `sandbox._bwrap_retry`).
`start` probes bwrap once with the real flags and raises `BackendUnavailableError`
naming the fix when it is missing or cannot create namespaces.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from sandbox import _bwrap_scope, _seccomp
from sandbox._account import account_files
from sandbox._budget_meet import meeting_places, met_count, place_paths, real_below
from sandbox._bwrap_env import env_args_fd, launcher_request
from sandbox._bwrap_init import PinnedBwrapProcess, SetupProbe, pin_init
from sandbox._bwrap_linkmask import mask_at, root_holders
from sandbox._bwrap_netns import SessionNet, joined, warn_once
from sandbox._bwrap_owncache import OwnMaskCache
from sandbox._bwrap_report import ReportFifos
from sandbox._bwrap_retry import MAX_RETRIES, RetryingBwrapProcess, lost_mount_race
from sandbox._bwrap_sched import RLIMIT_FLAGS, calm_prefix
from sandbox._bwrap_scope import BwrapIsolation, isolation_refusal, warn_if_unscoped
from sandbox._bwrap_shm import ShmCap
from sandbox._bwrap_starter import Starter, starter_argv
from sandbox._bwrap_tempreach import closed_to_others
from sandbox._bwrap_uidshare import commands_nofile
from sandbox._bwrap_uidshare import prlimit_flags as uidshare_flags
from sandbox._bwrap_uidshare import rlimits as uidshare_rlimits
from sandbox._bwrap_unseen import unseen
from sandbox._bwrap_zygote import Zygote, ZygoteGoneError
from sandbox._cgroup_limits import CgroupLimits
from sandbox._covered_mounts import covered_mounts
from sandbox._devtree import PTY_OPTIONS
from sandbox._frozen import frozen_args
from sandbox._hostcode import checked_host_code_places
from sandbox._hostmem import default_memory_ceiling
from sandbox._hostpath import host_path, host_which
from sandbox._hostproc import HostRunner, child_env
from sandbox._hostsockets import RUN_DIRS, IpcMasks, SocketWatch, StartMasks
from sandbox._idmap import IdmapError, idmapped_tree, userns_fd
from sandbox._maskaliases import ALIAS, AliasFinder, stats_of
from sandbox._mountcheck import REFUSED, checked_mounts, guard_argv
from sandbox._nestedroots import nested_root_args
from sandbox._oomscore import oom_prefix
from sandbox._pins import MAX_PASSED, PinFds, TooManyPins
from sandbox._proxy import BRIDGE_PORT, FilteringProxy, Refusal, proxy_env
from sandbox._reach import crosses, searchable
from sandbox._readonly import layered_args, mask_remounts, read_only_paths, sealed_tmpfs, sized_tmpfs
from sandbox._realpath import settled_realpath
from sandbox._scratch import HOLDER_BASE, OwnedDir
from sandbox._shmpool import ShmPool
from sandbox._static_build import cache_dirs
from sandbox._sysview import sys_args
from sandbox._tempholder import shared_scratch_root, temp_holder_args
from sandbox._tmpcap import (
    NONROOT_TMP_REASON,
    REPORTS_BYTES,
    REPORTS_INODES,
    REPORTS_NAME,
    SHM_POOL_NAME,
    cap_tmp,
    default_tmp_size,
    inode_cap,
    sweep_tmp_caps,
    uncap_tmp,
)
from sandbox._ucounts import BudgetError, budget_prefix, prlimit_flags, session_rlimits, session_sysctls
from sandbox._uid_lease import UidLease, lease_uid
from sandbox.base import Aspect, ExecRequest, SandboxBackend, SandboxProcess, refuse_user_switch
from sandbox.config import BwrapConfig
from sandbox.errors import BackendUnavailableError, SandboxExecError, SandboxPolicyError
from sandbox.others_places import others_places
from sandbox.policy import SandboxPolicy

__all__ = ["BwrapBackend", "private_places"]

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


#: What Docker hides of /proc.
_PROC_HIDDEN = ("kcore", "keys", "timer_list", "sched_debug", "latency_stats", "acpi", "scsi", "asound")
#: /proc entries besides ``sys`` shown read-only: ``pressure`` is the whole host's (mode 0666), and
#: a write there makes a trigger the host's PSI aggregation checks every 2 s (red team round 47).
_PROC_READ_ONLY = ("pressure",)


def _proc_masks() -> list[str]:
    """bwrap flags hiding what Docker hides of /proc (the entries present on this kernel) from a
    per-command bwrap's command.

    That command never runs as root, in its user namespace or outside (bwrap maps the
    caller's uid, or as root the sandbox uid, to itself), and keeps no capability: an
    entry only root may read (``/proc/timer_list``, ``/proc/kcore``: mode 0400 root) is
    out of its reach already and needs no mask. Each ``--ro-bind`` mask costs every
    per-command bwrap one more read and parse of its whole mount table.
    """
    args: list[str] = []
    for name in _PROC_HIDDEN:
        path = f"/proc/{name}"
        try:
            st = os.stat(path)
        except OSError:
            continue  # not on this kernel
        if _root_only(st):
            continue
        if stat.S_ISDIR(st.st_mode):
            args += ["--tmpfs", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    # Host-wide files a command could write: read-only (the session's init does the same).
    for name in _PROC_READ_ONLY:
        path = f"/proc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _root_only(st: os.stat_result) -> bool:
    """Whether only root (uid and gid 0, capabilities) may read or search what ``st`` describes."""
    return st.st_uid == 0 and st.st_gid == 0 and not st.st_mode & (stat.S_IRGRP | stat.S_IROTH)


#: bwrap flags hiding what Docker hides of /proc from a per-command bwrap's command.
_PROC_MASKS = _proc_masks()
#: linux/capability.h numbers of the capabilities a zygote keeps.
_CAP_NUMBERS = {
    "CAP_KILL": 5,
    "CAP_SETGID": 6,
    "CAP_SETUID": 7,
    "CAP_SETPCAP": 8,
    "CAP_SYS_ADMIN": 21,
    "CAP_SYS_RESOURCE": 24,
}
#: The seccomp program (``sandbox._seccomp``), built once: this machine's table only.
_MACHINE = os.uname().machine
#: ``final``: nothing loads a filter after it, so a command's nested one is refused (round 35).
_SECCOMP = _seccomp.filter_bytes(machine=_MACHINE if _MACHINE in _seccomp.MACHINES else None, final=True)


#: /dev/shm's size (docker's default). bwrap's tmpfs default is half the host's RAM, pages the OOM
#: killer cannot free, and a session's /dev/shm outlives the command that filled it (round 12).
SHM_BYTES = 64 << 20
_SHM_SIZE = ("--size", str(SHM_BYTES))
#: Where the proxy's socket directory appears inside the sandbox.
PROXY_DIR_INSIDE = "/run/shellrt-proxy"
#: Where a session's zygote puts together each command's lock view (`sandbox._zygote_main.lock_view`,
#: which keeps its own copy of the name: it imports nothing of ``sandbox``; a test pins both).
LOCK_VIEW_DIR = "/dev/.shellrt-lockview"


def _prlimit() -> str:
    """util-linux's ``prlimit`` (RLIMIT_CORE of each command; a non-root caller's rlimit shares)."""
    prlimit = shutil.which("prlimit", path=os.defpath + ":/usr/sbin:/sbin")
    if prlimit is None:
        raise SandboxExecError(
            "bwrap needs util-linux's prlimit to turn core dumps off and set a non-root caller's "
            "rlimit shares (apt-get install util-linux)"
        )
    return prlimit


def _zygote_python() -> str:
    """The interpreter the zygote runs on: this very one (the host is visible inside)."""
    if not sys.executable:
        raise ZygoteGoneError("no Python interpreter path is known (sys.executable is empty)")
    return os.path.realpath(sys.executable)


def _hidden_temp_dir() -> str | None:
    """The host's temp dir when it is not /tmp (``TMPDIR`` elsewhere): every sandbox hides it, as
    it replaces /tmp anyway. Every session keeps its private /tmp and state there, and a non-root
    caller's sessions share a uid, so a 0700 directory does not keep one session's commands out
    of another's."""
    host = os.path.realpath(tempfile.gettempdir())
    if host == "/" or host == "/tmp" or host.startswith("/tmp/"):
        return None
    return host


def _host_temp_mask() -> list[str]:
    """bwrap flags hiding `_hidden_temp_dir`; the session's own binds (its /tmp, state, writable
    roots) come after."""
    host = _hidden_temp_dir()
    return [] if host is None else ["--tmpfs", host]


def private_places() -> list[str]:
    """Host directories every bwrap sandbox fills with its own content, so that what the host has
    there is not what commands see: its ``/proc`` and ``/dev``, the run directories it empties
    (/run, /var/run, the caller's XDG_RUNTIME_DIR: no host IPC) and the host's temp dir when it
    is not /tmp (`_hidden_temp_dir`). The file tools' view (``shellrt.tools._paths``) refuses them
    as the sandbox does, from this one list; the sandbox's own mounts below them (writable roots,
    its /tmp) stay reachable."""
    places = ["/proc", "/dev", *_emptied_places()]
    return [*places, *(p for p in own_places() if p not in places)]


def _emptied_places() -> list[str]:
    """The run dirs and the hidden temp dir (`private_places` less /proc, /dev and `own_places`)."""
    places: list[str] = []
    for run in (*RUN_DIRS, os.environ.get("XDG_RUNTIME_DIR", "")):
        if run and os.path.isdir(run):
            places.append(os.path.realpath(run))
    temp = _hidden_temp_dir()
    if temp is not None:
        places.append(temp)
    return places


def own_places() -> list[str]:
    """The host directories of this package's own a command must not reach, by real path, those that
    exist: the budget holders' meeting places (`sandbox._budget_meet.meeting_places`) and the caches
    of the static programs run with more power than a command (`sandbox._static_build.cache_dirs`:
    the zygote's init; one planted there ran as the next session's init). A command runs as the
    caller's uid (a root caller's idmapped roots show root's files as its own), so a workspace of
    ``$HOME`` showed both writable (red team round 26, wave 3)."""
    places = meeting_places()
    for cache in cache_dirs():
        base = os.path.realpath(cache.parent) if cache.parent.is_absolute() else ""
        place = real_below(base, (cache.name,)) if base else None
        if place is not None and place not in places:
            places.append(place)
    return places


#: Marks one of `own_places` in `BwrapBackend._denied_kinds` (masked as a read-denied directory).
_MEET = "meet:"
#: Marks another name of a write-denied file in `BwrapBackend._denied_kinds` (bound read-only by
#: `_unwritable`; listed so a change replaces the zygote: round 38).
_UNWRITABLE = "ro:"
#: A read- or write-denied path's file identity (device, inode) in `_denied_kinds` (round 39, locks2):
#: the host replacing a denied file (an editor's atomic save, a rename away and a new file) detaches
#: or moves its mask (or read-only bind), and the new file at the denied name was readable (or
#: writable) while its kind stayed a file.
_IDENTITY = "id:"


def _not_denied(places: list[Path], denied: tuple[Path, ...] | list[Path], found: list[os.stat_result | None]) -> list[Path]:
    """Those of ``places`` (real paths) no read-denied path resolves to (those are masked already).
    Why: a ``realpath`` of every denied path each check cost ~0.4 ms a path at load 17 (200 denies:
    ~50 ms a command; round 39 review8); a place whose file is none of the denied ones' (``found``,
    their stats) cannot be one's real path, so only a place sharing an identity is resolved."""
    ids = {(st.st_dev, st.st_ino) for st in found if st is not None}
    kept: list[Path] = []
    resolved: set[Path] | None = None
    for place in places:
        try:
            st = os.stat(place)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) not in ids:
            kept.append(place)
            continue
        if resolved is None:  # missing, or the same file as a denied one: compare real paths
            resolved = {Path(os.path.realpath(path)) for path in denied}
        if place not in resolved:
            kept.append(place)
    return kept


def _own_masks(roots: tuple[Path, ...] | list[Path]) -> list[Path]:
    """Those of `own_places` a sandbox must mask as read-denied directories: each below a writable root
    (the root's bind shows it again over the run-dir masks) and each outside /tmp, the run dirs and
    the hidden temp dir; not one below another (the outer mask hides it). Not one that is or holds a
    root: it cannot be hidden without hiding the root (docs, "Left")."""
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    filled = [Path(p) for p in ("/tmp", *_emptied_places())]
    places = [Path(p) for p in own_places()]
    for root in real_roots:  # another process of the uid whose HOME or TMPDIR is the root
        for names in others_places():
            other = real_below(str(root), names)
            if other is not None and Path(other) not in places:
                places.append(Path(other))
    masks: list[Path] = []
    for place in places:
        if any(root == place or place in root.parents for root in real_roots):
            continue
        if any(other in place.parents for other in places):
            continue
        if not unseen(place, filled, real_roots):
            masks.append(place)
    return masks


def _own_mask_key(roots: tuple[Path, ...] | list[Path]) -> tuple[object, ...]:
    """The strings `_own_masks` reads (`sandbox._bwrap_owncache`): its environment, the temp dir,
    the places met, the roots. Cheap: compared before every command."""
    env = os.environ
    names = (env.get("HOME"), env.get("XDG_RUNTIME_DIR"), env.get("XDG_CACHE_HOME"))
    return (*names, tempfile.gettempdir(), met_count(), *roots)


def _own_mask_paths(roots: tuple[Path, ...] | list[Path]) -> list[str]:
    """The paths whose names `_own_masks` walks: the places, caches, other processes' places in the
    roots, the roots, /tmp and the run dirs (watched: `sandbox._placewatch`)."""
    places = [*place_paths(), *(str(cache) for cache in cache_dirs())]
    others = [str(Path(root).joinpath(*names)) for root in roots for names in others_places()]
    return [*places, *others, *(str(root) for root in roots), "/tmp", *RUN_DIRS, tempfile.gettempdir()]


#: What a command ended for a place that appeared reports (`BwrapBackend._replace_zygote`, `_end_stale_runs`).
_REPLACED_WHY = (
    "the command was ended: a path it must not reach (a read-denied path, a shellrt place or a host "
    "socket in the workspace) appeared "
    "in its sandbox's view while it ran, and the sandboxes of later commands hide it; run the command "
    "again"
)


class BwrapBackend(CgroupLimits, SandboxBackend):
    """Runs each process in fresh bubblewrap namespaces under the session's policy."""

    name = "bwrap"
    #: Inits each session zygote keeps ready in fresh namespaces (each holds one process of
    #: the session's pids limit while it waits). The zygote makes the next init once one has
    #: ended (off the command's path), and an init takes ~2-4 ms to get ready (its setsid alone
    #: waits ~1.8 ms here): with two, a third of the commands run back to back under load found
    #: their init still setting up; with three, 1 in 20 (measured, docs/performance.md).
    warm_pool = 3
    #: Each session command sees the host's read-only directories through overlays of its own
    #: (`sandbox._zygote_main.lock_view`, red team round 37): its locks and watches on host files
    #: stay off the host's inodes. Costs each init one overlay per directory (off the command's path
    #: while the pool keeps up); `BwrapConfig.lock_view` False (or this, to measure) turns it off.
    lock_view = True

    def __init__(self, config: BwrapConfig | None = None, policy: SandboxPolicy | None = None) -> None:
        if policy is None:
            raise TypeError("BwrapBackend needs a SandboxPolicy (at least the workspace)")
        super().__init__(policy)
        self.config = config or BwrapConfig()
        if not self.config.lock_view:  # the operator's choice (`BwrapConfig.lock_view`)
            self.lock_view = False
        self.default_pids = self.config.default_pids  # limits: the session's cap when the policy sets none
        memory = self.config.default_memory_bytes  # and its memory ceiling (`sandbox._hostmem`)
        self.default_memory = default_memory_ceiling() if memory == "auto" else memory
        # No descendant polling: the pid namespace (--unshare-pid, --die-with-parent) is the tree.
        # Its state dir below /tmp, which every sandbox of every process hides (round 40, tenants).
        self._runner = HostRunner("bwrap", poll_descendants=False, base=HOLDER_BASE)
        self._bwrap: str | None = None
        self._zygote: Zygote | None = None
        #: Zygotes replaced while commands still ran in them: closed with the session.
        self._retired: list[Zygote] = []
        #: One replacement at a time: side-by-side commands all see the zygote must go.
        self._replacing = anyio.Lock()
        self._condemned: Zygote | None = None  # judged stale, not yet replaced (`_zygote_stale`)
        #: It was judged stale for a place to hide (a read-denied path, a shellrt place): its
        #: running commands end with it (`_replace_zygote`, red team round 29).
        self._condemned_for_place = False
        #: One bwrap per command: each run still going, with the masks' kinds it started under.
        self._runs: list[tuple[tuple[str | None, ...], frozenset[str], RetryingBwrapProcess]] = []
        #: What the current zygote hid: a denied path or a host socket that appears later
        #: needs a new zygote.
        self._hidden: tuple[str | None, ...] = ()
        #: The session's network namespace (network ``none``/``proxied``), kept from its first
        #: zygote: every later one starts in it (`sandbox._bwrap_netns`, red team round 30).
        self._net: SessionNet | None = None
        self._aliases = AliasFinder(count_outside=True)  # a link made outside the roots since: refused
        self._write_aliases = AliasFinder()  # the other names of write-denied files (`_unwritable`)
        self._sockets: SocketWatch | None = None
        self._session_tmp: Path | None = None
        self._tmp_owner: OwnedDir | None = None
        #: Root caller: the holder of the session's private mount namespace (idmapped roots),
        #: the ``nsenter`` prefix that starts the zygote's bwrap in it (as root), the one that
        #: starts a per-command bwrap in it as the sandbox uid, and where that bwrap finds
        #: each writable root and the state dir (copies of their mounts it can reach).
        self._holder: Zygote | None = None
        self._ns_prefix: list[str] = []
        self._ns_user_prefix: list[str] = []
        self._sources: dict[Path, Path] = {}
        #: Worked out once a session, not before every bwrap (see `_ipc_masks`, `_skeleton_args`).
        self._ipc_cache: dict[tuple[Path, bool], IpcMasks] = {}
        self._skeletons: tuple[list[Path], list[str]] | None = None
        #: Root caller, one bwrap per command: the session's /dev in the holder's namespace
        #: (`_prepare_holder`; None: each bwrap builds its own).
        self._devtree: Path | None = None
        #: Root caller: the capped tmpfs whose fresh directory is each per-command bwrap's /dev/shm
        #: (`sandbox._shmpool`; None: a non-root caller's bwrap mounts its own, uncapped).
        self._shm_pool: ShmPool | None = None
        #: Root caller, one bwrap per command: the process that starts each bwrap as the sandbox
        #: uid in the holder's namespace (None: ``nsenter`` per command does it).
        self._spawner: Zygote | None = None
        #: Network ``proxied``: the host proxy and its 0700 directory (socket and session log).
        self._proxy: FilteringProxy | None = None
        self._proxy_dir: Path | None = None
        #: Where the host loads its own code from, inside a writable root: read-only (round 16).
        self._host_code: list[Path] = []
        #: Refusals of closed sessions' proxies stay readable after `close`.
        self._refusals: list[Refusal] = []
        #: Root caller, no fixed ``sandbox_uid``: the uid this session holds until `close`.
        self._lease: UidLease | None = None
        #: One bwrap per command: the sealed program that enters its cwd without following a link.
        self._starter = Starter()
        #: Non-root, one bwrap per command: whether the starter can mount its capped /dev/shm here.
        self._shm_cap = ShmCap(SHM_BYTES)
        self._shm_where: str | None = None  # its mount point, made at start
        self._pts_where: str | None = None  # and its capped devpts' (round 33)
        #: The meeting places and static caches to mask, looked at again only when they changed.
        # Through a weak reference: callbacks holding ``self`` made every backend a reference cycle,
        # alive (its roots registered in `sandbox._hostpath`) until a collection ran (round 29).
        me = weakref.ref(self)

        def roots() -> tuple[Path, ...]:
            backend = me()
            return () if backend is None else backend.policy.allowed_roots()

        self._own = OwnMaskCache(
            lambda: _own_masks(roots()),
            lambda: _own_mask_key(roots()),
            lambda: _own_mask_paths(roots()),
        )

    @property
    def sandbox_ids(self) -> tuple[int, int] | None:
        """The host (uid, gid) commands run under when shellrt runs as root: the fixed
        ``sandbox_uid`` or the session's leased uid (None: not root, or no session leased yet)."""
        if os.geteuid() != 0:
            return None
        if self.config.sandbox_uid is not None:
            uid = self.config.sandbox_uid
            return uid, self.config.sandbox_gid if self.config.sandbox_gid is not None else uid
        return (self._lease.uid, self._lease.gid) if self._lease is not None else None

    def _ids(self) -> tuple[int, int]:
        """`sandbox_ids` of a started root session."""
        ids = self.sandbox_ids
        if ids is None:
            raise SandboxExecError("bwrap as root: the session holds no sandbox uid (start it first)")
        return ids

    def _take_lease(self) -> None:
        """Root caller without a fixed ``sandbox_uid``: lease the session's own uid (`sandbox._uid_lease`)."""
        if self.config.sandbox_uid is None and self._lease is None:
            self._lease = lease_uid(
                self.config.uid_pool_start,
                self.config.uid_pool_size,
                widen="BwrapConfig.uid_pool_size (or uid_pool_start)",
            )

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
        if os.geteuid() == 0:  # a sized tmpfs on the session's /tmp (sandbox._tmpcap)
            aspects.add("tmp")
        return frozenset(aspects) | self.cgroup_enforces()  # limits: sandbox._cgroup_limits

    def unenforced_reason(self, aspect: Aspect) -> str:
        return NONROOT_TMP_REASON if aspect == "tmp" else super().unenforced_reason(aspect)

    @property
    def persistent(self) -> bool:
        """Commands run under a session zygote (False: one bwrap per command)."""
        return self._zygote is not None

    @property
    def command_isolation(self) -> BwrapIsolation | None:
        """How far this started sandbox keeps its commands from each other (`sandbox._bwrap_scope`);
        None before the start."""
        if self._bwrap is None or self._runner.closed:
            return None
        return _bwrap_scope.command_isolation(
            session=self.persistent, host_network=self._host_network(), abi=_bwrap_scope.landlock_abi()
        )

    @property
    def isolation_warning(self) -> str | None:
        """What the person running the session must know about `command_isolation` (None: nothing),
        shown with the other start warnings (`shellrt.runtime.sandbox_choice`), never to the model."""
        level = self.command_isolation
        if level is None:
            return None
        host, abi = self._host_network(), _bwrap_scope.landlock_abi()
        return _bwrap_scope.isolation_warning(level, host_network=host, abi=abi)

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
        # round 16: host code inside a root is bound read-only; round 17: a root on the import path is refused
        self._host_code = checked_host_code_places(
            self.policy.allowed_roots(),
            backend="bwrap",
            other_fix="run shellrt from an interpreter or venv outside it",
        )
        shared = shared_scratch_root(self.policy.allowed_roots())
        if shared is not None:  # round 16: every other session's private /tmp, state and proxy live there
            raise SandboxPolicyError(  # a policy refusal: `auto` must not fall back to no sandbox
                f"writable root {shared} shows the host's temp dir or /tmp, where every other sandbox "
                "session keeps its private /tmp, state and proxy socket; its commands would reach them. "
                "Fix: use a directory of its own as the workspace (e.g. mkdir /tmp/work; "
                "--workspace /tmp/work)"
            )
        holders = root_holders(self.policy.read_denied, self.policy.allowed_roots())
        if holders:  # round 29: its mask hid the workspace from every command
            raise SandboxPolicyError(
                f"read-denied path {holders[0]} is or contains a writable root; masking it would hide the "
                "workspace from every command. Fix: deny the files or directories inside it instead, "
                "or choose a workspace outside it"
            )
        proxied = self.policy.network == "proxied"
        if proxied and not self.config.persistent:
            raise BackendUnavailableError(
                "network 'proxied' needs the bwrap session sandbox (persistent mode); "
                "one bwrap per command cannot host the proxy bridge. Fix: drop the per-command setting, "
                "or use --network none"
            )
        program = self._seccomp_program()
        if not program or len(program) % 8:  # fail closed: no command runs without its filter
            raise BackendUnavailableError(
                "bwrap: the seccomp program is empty or malformed; refusing to run commands without it"
            )
        found = host_which(self.config.bwrap_path)
        if found is None:
            planted = shutil.which(self.config.bwrap_path)
            if planted is not None:  # only where commands write, or on a relative PATH entry
                raise BackendUnavailableError(
                    f"bubblewrap ({self.config.bwrap_path!r}) was found only at {planted}, on a PATH entry "
                    "that is relative or lies where sandboxed commands write; shellrt does not run a "
                    f"program from there on the host. Fix: install bubblewrap in a system directory "
                    f"({host_path()}), or name its absolute path (BwrapConfig.bwrap_path)."
                )
            raise BackendUnavailableError(
                f"bubblewrap ({self.config.bwrap_path!r}) is not installed or not on PATH. "
                "Fix: apt-get install bubblewrap (dnf install bubblewrap), or use --sandbox local."
            )
        if self._switches_uid() and not _reachable(found, self.sandbox_ids):
            raise BackendUnavailableError(
                "bwrap as root runs each command's bubblewrap as an unprivileged sandbox uid, "
                f"and the sandbox uid cannot run {found} (it, or a directory "
                "above it, is closed to other users). Fix: use the system's bubblewrap (/usr/bin/bwrap) "
                "or make its directory crossable by everyone"
            )
        self.cgroup_open()  # limits: the session cgroup, before any process starts
        self._bwrap = found
        self._runner.start()
        # The session's /tmp: private to this sandbox, shared by its commands, gone at close.
        # 1777 inside (what programs expect of /tmp), under a 0700 parent: no other host
        # user can reach it to plant files for the sandbox's commands. (A killed owner's is
        # swept by the next start, see sandbox._scratch; the runner's prefix covers it.)
        if self._switches_uid():
            await anyio.to_thread.run_sync(sweep_tmp_caps)  # a killed owner's sized /tmp (sandbox._tmpcap)
        self._tmp_owner = OwnedDir("shellrt-bwrap-tmp-", HOLDER_BASE)
        self._session_tmp = self._tmp_owner.path / "tmp"
        self._session_tmp.mkdir(mode=0o700)
        self._session_tmp.chmod(0o1777)
        as_root = self._switches_uid()
        # Each cwd report a FIFO the host makes and alone reads (round 42, bwrap5), in a directory
        # every command sees read-only and cannot list: the sandbox uid's (root caller) is not the
        # host's, hence 0622.
        self._runner.report_fifos = ReportFifos(0o622 if as_root else 0o600)
        try:
            tmp_cap = self.policy.limits.tmp_bytes or default_tmp_size(
                self.config.default_tmp_bytes, self.memory_ceiling
            )
            if as_root and tmp_cap is not None:  # before the holder: its namespace copies the mount
                cap_tmp(self._session_tmp, tmp_cap)
            if not as_root:  # the mount point of a non-root command's capped /dev/shm (sandbox._bwrap_shm)
                shm_mount = self._tmp_owner.path / "shm"
                shm_mount.mkdir(mode=0o700)
                self._shm_where = str(shm_mount)
                pts_mount = self._tmp_owner.path / "pts"
                pts_mount.mkdir(mode=0o700)
                self._pts_where = str(pts_mount)
            if as_root:  # one bwrap per command's /dev/shm (a zygote's fallback too): before the holder
                self._shm_pool = ShmPool(
                    self._tmp_owner.path / SHM_POOL_NAME, SHM_BYTES, inode_cap(SHM_BYTES)
                )
            if proxied:
                await anyio.to_thread.run_sync(self._start_proxy)
            if as_root:
                await anyio.to_thread.run_sync(self._take_lease)
                await anyio.to_thread.run_sync(self._report_dir, tmp_cap is not None)
                await self._start_holder()
            else:  # the budget namespace made now, off the event loop (once per process)
                self._user_report_dir()
                await anyio.to_thread.run_sync(self._budget_prefix)
            if self.config.persistent:
                if self.config.require_command_isolation:  # round 30: before the zygote, not after
                    abi, host = _bwrap_scope.landlock_abi(), self._host_network()
                    level = _bwrap_scope.command_isolation(session=True, host_network=host, abi=abi)
                    refusal = isolation_refusal(level, host_network=host, abi=abi)
                    if refusal is not None:
                        raise refusal
                await self._start_zygote()
                return
        except ZygoteGoneError as exc:
            if proxied:  # no per-command fallback: it could not host the bridge
                await self.close()
                raise BackendUnavailableError(
                    f"network 'proxied': the bwrap session sandbox did not start ({exc}); "
                    "use --network none, or fix the cause above"
                ) from exc
            # Per command, a root caller's commands still run as the sandbox uid (the spawner, or nsenter --setuid).
            _log.warning("bwrap: running one sandbox per command (%s)", exc)
        except BaseException:
            await self.close()
            raise
        if as_root:
            closed = closed_to_others(self._tmp_owner.path.parent, self.sandbox_ids)  # round 28, 49
            if closed is not None:
                await self.close()
                raise BackendUnavailableError(closed)
            await anyio.to_thread.run_sync(self._prepare_holder)
        # Root caller: the spawner starts while the probe runs (a Python start, off the wait).
        async with anyio.create_task_group() as tg:
            if as_root:
                tg.start_soon(self._start_spawner)
            unusable = await self._probe()
        if unusable is not None:
            await self.close()
            raise unusable

    def _report_dir(self, sized: bool) -> None:
        """Where a root caller's cwd reports lie: FIFOs the host makes (`sandbox._bwrap_report`),
        0711 and root's, so the sandbox uid may only cross it (and the state directory is bound
        read-only: it writes nowhere there; round 42 bwrap5 -- 1733 before, and a command filled the
        sized reports tmpfs so that no later report was made). ``sized`` (the session's /tmp is
        capped): on a small tmpfs of their own still (red team round 25: the state directory lies in
        the host's temp dir). Before the holder: its namespace copies the mount."""
        state_dir = self._runner.check_open()
        state_dir.chmod(0o711)
        if not sized:
            return
        reports = state_dir / REPORTS_NAME
        reports.mkdir(mode=0o700)
        cap_tmp(reports, REPORTS_BYTES, inodes=REPORTS_INODES)
        reports.chmod(0o711)
        self._runner.report_dir = reports

    def _user_report_dir(self) -> None:
        """Where a non-root caller's cwd reports lie: a directory its commands (its uid) may cross
        but not list or watch (0300: no read right for the owner either; the host knows each name),
        bound read-only with the state directory, so no command makes it listable again (chmod:
        EROFS). Round 41 left it listable: a background task rewrote later commands' reports."""
        reports = self._runner.check_open() / REPORTS_NAME
        reports.mkdir(mode=0o700)
        reports.chmod(0o300)
        self._runner.report_dir = reports

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

    def _prepare_holder(self) -> None:
        """Root caller, one bwrap per command: the session's /dev made once in the holder's namespace
        (`sandbox._devtree`), after taking off the mounts every bwrap covers anyway
        (`sandbox._covered_mounts`): each bwrap then binds one /dev instead of building one,
        and copies and parses a shorter mount table. Where this fails, each bwrap builds its
        own /dev as before (``--dev``) and the reason goes to the log."""
        pid = self._holder.host_pid if self._holder is not None else None
        if pid is None or not self._ns_prefix:
            return
        try:
            mountinfo = Path(f"/proc/{pid}/mountinfo").read_text()
        except OSError:
            return
        needed = [*self._reach_paths(), *self._sources.values()]
        if self._session_tmp is not None:
            needed.append(self._session_tmp)
        if self._shm_pool is not None:
            needed.append(self._shm_pool.path)
        target = self._devtree_target()
        script = Path(__file__).with_name("_devtree.py")
        argv = [*self._ns_prefix, sys.executable, "-I", "-S", str(script), str(target)]
        try:
            result = _run_probe([*argv, *covered_mounts(mountinfo, needed)])
        except (OSError, subprocess.SubprocessError) as exc:  # a timeout included
            _log.warning("bwrap: each command builds its own /dev (%s)", exc)
            return
        if result.returncode == 0:
            self._devtree = target
        else:
            _log.warning(
                "bwrap: each command builds its own /dev (%s)",
                result.stderr.decode("utf-8", "replace").strip() or result.returncode,
            )

    def _devtree_target(self) -> Path:
        """Where the session's /dev is made: in the holder's 0711 skeleton of the owner dir."""
        assert self._tmp_owner is not None
        return self._tmp_owner.path / "dev"

    async def _probe(self) -> BackendUnavailableError | None:
        """One bwrap start with the real flags: the clear error when namespaces are unavailable."""
        assert self._runner.state_dir is not None
        state_dir = self._runner.state_dir
        masks = StartMasks()  # the same masks each attempt, less those whose socket is gone
        retries = 0
        while True:  # the probe can lose the same races as a command
            probe = [*self.bwrap_args(cwd="/", state_dir=state_dir, masks=masks), "--", "true"]
            result = await anyio.to_thread.run_sync(_run_probe, probe)
            if result.returncode == 0:
                break
            if masks.drop_vanished() or masks.rebound(result.stderr):
                continue  # fewer masks each time, or a socket bound again: bounded (sandbox._hostsockets)
            retries += 1
            if retries > MAX_RETRIES or not lost_mount_race(result.stderr):
                break
        if result.returncode == 0:
            return None
        detail = result.stderr.decode("utf-8", "replace").strip()
        return BackendUnavailableError(f"{_NAMESPACE_FIX} (bwrap said: {detail or result.returncode})")

    def _no_core_prefix(self) -> list[str]:
        """``prlimit`` setting RLIMIT_CORE to 1 (soft and hard; `sandbox._seccomp.CORE_LIMIT`: the kernel
        runs a ``core_pattern`` pipe handler at any other value) for a per-command bwrap and its command."""
        prlimit = _prlimit()
        limit = _seccomp.CORE_LIMIT
        # A non-root caller's per-uid budgets: the command may hold only its share (`sandbox._ucounts`).
        # Nor more than its share of the uid's descriptors in flight and locked shared memory
        # (`sandbox._bwrap_uidshare`, round 47).
        shares = [*prlimit_flags(), *uidshare_flags()] if os.geteuid() != 0 else []
        # Nor the caller's scheduling priority (`sandbox._bwrap_sched`, round 36).
        return [*self._calm_prefix(), prlimit, f"--core={limit}:{limit}", *RLIMIT_FLAGS, *shares, "--"]

    @staticmethod
    def _calm_prefix() -> list[str]:
        """`sandbox._bwrap_sched.calm_prefix` for a process started from this thread: a zygote, a
        spawner or one bwrap start without the caller's real-time policy or negative nice (which
        also kept a real-time caller's zygote out of a CPU-limited session cgroup). Empty for an
        ordinary caller."""
        try:  # and at the highest OOM score, whatever the caller's (`sandbox._oomscore`, round 36)
            return [*calm_prefix(), *oom_prefix()]
        except FileNotFoundError as exc:
            raise SandboxExecError(str(exc)) from exc

    def _budget_prefix(self) -> list[str]:
        """A non-root caller: ``nsenter`` into the process's budget namespace before bwrap
        (`sandbox._ucounts.budget_prefix`: every sandbox of the uid in this process shares one
        half of its inotify, fanotify, queue and signal budgets). Empty for root."""
        try:
            return budget_prefix()
        except BudgetError as exc:
            raise SandboxExecError(f"bwrap: {exc}") from exc

    def _switches_uid(self) -> bool:
        """Run as root: commands run under the sandbox uid (idmapped roots, a holder mount namespace)."""
        return os.geteuid() == 0

    def _seccomp_program(self) -> bytes:
        """The seccomp program every command runs under (`sandbox._seccomp`)."""
        return _SECCOMP

    def _host_masks(
        self, state_dir: Path, *, as_user: bool, zygote: bool, masks: StartMasks | None = None
    ) -> list[str]:
        """bwrap flags hiding the host's /proc/sys writes, Docker's /proc entries and host IPC sockets."""
        args: list[str] = []
        if not zygote:
            # bwrap leaves /proc/sys writable with --unshare-net: read-only (the host's view of
            # it), and the /proc entries Docker hides hidden. Not in the zygote's sandbox: its
            # commands get their own /proc, which a user namespace refuses to mount while
            # anything covers part of this one ("too revealing").
            args += ["--ro-bind", "/proc/sys", "/proc/sys", *_PROC_MASKS]
        # No host IPC: /run, the caller's runtime dir and every other host socket hidden.
        ipc = self._ipc_masks(state_dir, as_user=as_user)
        return args + (ipc.args() if masks is None else masks.args(ipc))

    def _ipc_masks(self, state_dir: Path, *, as_user: bool) -> IpcMasks:
        """The host-socket flags of this session's sandboxes, worked out again only when the host's
        sockets changed (`IpcMasks`): one bwrap per command asks before every command."""
        masks = self._ipc_cache.get((state_dir, as_user))
        if masks is None:
            masks = IpcMasks(
                (*self.policy.allowed_roots(), state_dir),
                reachable_only=as_user,
                reach_ids=self.sandbox_ids if as_user else None,
                cover=() if self._host_network() else self.policy.allowed_roots(),
                mountinfo=self._mountinfo(),
            )
            self._ipc_cache[state_dir, as_user] = masks
        return masks

    def _skeleton_args(self) -> tuple[list[Path], list[str]]:
        """Root caller, per command: the `_skeletons` on the way to `_reach_paths` and the bwrap
        flags making them, worked out once a session (a stat of every parent before every command
        otherwise). A parent closed later makes bwrap fail, never shows more."""
        if self._skeletons is None:
            paths = self._reach_paths()
            points = _skeletons(paths, self.sandbox_ids)
            args: list[str] = []
            for point in points:
                args += ["--perms", "0711", "--tmpfs", str(point)]
                # bwrap would give the parents it makes their host modes (0700): crossable instead.
                inner = {q for p in paths if point in p.parents for q in p.parents if point in q.parents}
                for parent in sorted(inner, key=lambda q: len(q.parts)):
                    args += ["--perms", "0711", "--dir", str(parent)]
            self._skeletons = points, args
        return self._skeletons

    def _denied_kinds(self) -> tuple[str | None, ...]:
        """Per read-denied path, what is there now: ``dir``, ``file`` or None (nothing to hide);
        then the other names of those files in the writable roots, hidden as files too
        (`sandbox._maskaliases`: hard links a command made before the mask existed); then the budget
        meeting places and static caches to hide as directories (`_own_masks`): a change replaces the zygote.
        Each read- and write-denied file's identity too (round 39, locks2): a file the host replaced at
        a denied name is a change (its mask or read-only bind went with the old file, or away)."""
        found = stats_of(self.policy.read_denied)
        kinds: list[str | None] = [
            None if st is None else "dir" if stat.S_ISDIR(st.st_mode) else "file" for st in found
        ]
        aliases = self._aliases.aliases(  # a non-root caller's bwrap sees later host mounts (round 37)
            self.policy.read_denied, found, self.policy.allowed_roots(), live_mounts=not self._switches_uid()
        )
        meeting = _not_denied(self._own.masks(), self.policy.read_denied, found)
        protected = stats_of(self.policy.write_denied)
        unwritable = self._unwritable(protected)[len(self.policy.write_denied) :]
        return (
            *kinds,
            *(f"{_IDENTITY}{st.st_dev}:{st.st_ino}" for st in found if st is not None),
            *(f"{_IDENTITY}w{st.st_dev}:{st.st_ino}" for st in protected if st is not None),
            *(f"{ALIAS}{path}" for path in aliases),
            *(f"{_MEET}{path}" for path in meeting),
            *(f"{_UNWRITABLE}{path}" for path in unwritable),
        )

    def _unwritable(self, found: list[os.stat_result | None] | None = None) -> list[Path]:
        """The write-denied paths (``Edit``/``Write`` deny rules) and every other name in the writable
        roots of the files they hold: a hard link made before the rule (an earlier session) is the
        same file, and writing it there wrote the denied one (red team, round 11); a non-root
        caller's: another mount's name made after the start too (round 38, as for read denies).
        ``found``: their ``stats_of`` when the caller has it (`_denied_kinds`: one stat each)."""
        denied = list(self.policy.write_denied)
        if not denied:
            return []
        found = stats_of(denied) if found is None else found
        live = not self._switches_uid()
        return [*denied, *self._write_aliases.aliases(denied, found, self.policy.allowed_roots(), live_mounts=live)]

    def _denied_paths(self, kinds: tuple[str | None, ...]) -> list[tuple[Path, str | None]]:
        """(path, kind) of each mask that `_denied_kinds` worked out."""
        paths = [*zip(self.policy.read_denied, kinds, strict=False)]
        extra = [k for k in kinds[len(self.policy.read_denied) :] if k is not None]
        # a hard link is a file; another mount's name of a denied directory a directory (round 37)
        aliased = [k[len(ALIAS) :] for k in extra if k.startswith(ALIAS)]
        paths += [(Path(p), "dir" if os.path.isdir(p) else "file") for p in aliased]
        return paths + [(Path(k[len(_MEET) :]), "dir") for k in extra if k.startswith(_MEET)]

    async def _start_zygote(self) -> None:
        """Start a zygote sandbox (retrying a lost mount race); `ZygoteGoneError` when it cannot."""
        state_dir = self._runner.check_open()
        hidden = self._denied_kinds()
        cover = () if self._host_network() else self.policy.allowed_roots()  # host sockets there too
        # Only sockets its commands could reach retire it (sandbox._sockreach): not those below
        # the places it shows its own content at, in the namespace its bwrap starts in.
        sockets = SocketWatch(
            (*self.policy.allowed_roots(), state_dir),
            cover,
            hidden=("/tmp", *private_places()),
            mountinfo=self._mountinfo(),
            uid=self._ids()[0] if self._switches_uid() else None,  # commands run as it, capless
        )
        try:
            self._zygote = await self._new_zygote(state_dir, hidden, sockets.namespaces)
        except BaseException:
            sockets.close()
            raise
        self._keep_net(self._zygote)
        if self._sockets is not None:
            self._sockets.close()  # the replaced zygote's (its netlink socket)
        self._hidden, self._sockets = hidden, sockets

    def _keep_net(self, zygote: Zygote) -> None:
        """A session's first zygote: keep its network namespace (and bridge listener) for the next."""
        held = zygote.take_held()
        if self._net is not None or not held:
            for fd in held:  # a later zygote's bridge listener: the one already kept
                os.close(fd)
            return
        budget = [w for w in self._budget_prefix() if w.startswith("--user=")]
        if not self._switches_uid() and not budget:
            for fd in held:
                os.close(fd)
            warn_once("no budget user namespace to join it from")
            return
        owner_parent = budget[0][len("--user=") :] if budget else None
        self._net = SessionNet.adopt(held, bridge=self._proxy is not None, owner_parent=owner_parent)

    def _net_config(self, net: SessionNet | None) -> dict[str, object]:
        """The zygote's network configuration: ``netns`` (the session's first sends its namespace
        to the host) and, network ``proxied``, ``bridge`` (serving ``net``'s listener, if kept)."""
        config: dict[str, object] = {"netns": net is None and not self._host_network()}
        if self._proxy is not None:
            bridge: dict[str, object] = {"port": BRIDGE_PORT, "socket": f"{PROXY_DIR_INSIDE}/proxy.sock"}
            if net is not None and net.listener is not None:
                bridge["fd"] = net.listener
            config["bridge"] = bridge
        return config

    def _joined_prefix(self, argv: list[str], budget: list[str], net: SessionNet) -> tuple[list[str], list[str]]:
        """(``argv``, ``budget``) with the ``nsenter`` in front of the zygote's bwrap entering ``net``
        too: a root caller's holder prefix, a non-root caller's budget prefix."""
        if self._ns_prefix:
            entered = joined(self._ns_prefix, net)
            assert entered is not None and argv[: len(self._ns_prefix)] == self._ns_prefix
            return [*entered, *argv[len(self._ns_prefix) :]], budget
        entered = joined(budget, net)
        assert entered is not None  # `_keep_net` kept none without a budget namespace
        return argv, entered

    def _mountinfo(self) -> str:
        """The mount table of the namespace every bwrap of the session starts in (a root
        caller's: the holder's)."""
        holder = self._holder.host_pid if self._holder is not None else None
        return f"/proc/{holder}/mountinfo" if holder is not None else "/proc/self/mountinfo"

    def _host_network(self) -> bool:
        """The host's network namespace: a command's own sockets are listed with the host's."""
        return self.policy.network not in ("none", "proxied")

    def _sockets_hidden(self) -> bool:
        """Whether every host socket now listening was there when the zygote hid them."""
        return self._sockets is not None and self._sockets.nothing_new()

    async def _new_zygote(
        self,
        state_dir: Path,
        hidden: tuple[str | None, ...],
        namespaces: tuple[bytes, bytes] | None = None,
    ) -> Zygote:
        """A started zygote (retrying a lost mount race); `ZygoteGoneError` when it cannot start.

        It builds each command's namespaces (CAP_SYS_ADMIN), empties its bounding set
        (CAP_SETPCAP) and, run as root, switches it to the sandbox uid (CAP_SETUID,
        CAP_SETGID) and must still be able to kill its init (CAP_KILL: another uid by
        then); the command itself runs with no capabilities at all.
        """
        as_root = self._switches_uid()
        caps = (
            "CAP_SYS_ADMIN",
            "CAP_SETPCAP",
            *(("CAP_SETUID", "CAP_SETGID", "CAP_KILL") if as_root else ()),
            # Non-root: the session's own ceilings on the caller's per-uid budgets (`sandbox._ucounts`).
            *(() if as_root else ("CAP_SYS_RESOURCE",)),
        )
        config: dict[str, object] = {
            "seccomp": self._seccomp_program(),
            "setup": [],
            "caps": [_CAP_NUMBERS[c] for c in caps],
            "pool": self.warm_pool,
            "eagain": self.pids_exhausted_message(),  # limits: what a command that cannot start is told
            "tmpfs": {"/dev/shm": (SHM_BYTES, inode_cap(SHM_BYTES))},  # round 25: bwrap's has no nr_inodes
            "devpts": PTY_OPTIONS,  # round 33: bwrap's has no max= (the host's pty pool is shared)
            # Round 37 (locks): each command's own overlay over the host's read-only directories, so
            # its locks on host files it can read stay off the host's inodes.
            "lockview": self.lock_view,
            # Round 29 (bwrapabs): each command scoped for abstract sockets too, but under `network:
            # host`, which promises the host's abstract sockets (docs/security.md).
            "scope_abstract": not self._host_network(),
        }
        warn_if_unscoped()
        if not as_root:
            config["sysctls"] = session_sysctls()
            budgets = [*session_rlimits(), *uidshare_rlimits(zygote=True)]
            config["rlimits"] = [(res, value) for _name, res, value in budgets]
            # its inits' and so its commands' (the zygote sends above their in-flight count: round 48)
            config["nofile"] = commands_nofile()
        net = self._net  # the session's network namespace: this zygote starts in it
        if as_root:
            uid, gid = self._ids()
            config.update(uid=uid, gid=gid, setup=self._skeleton_steps())
        python = _zygote_python()
        # the same masks each attempt, less those whose socket is gone; from the listing the
        # zygote's `SocketWatch` was made from (``namespaces``: one listing a start)
        masks = StartMasks(namespaces=namespaces)
        retries = 0
        while True:
            pins = PinFds(self._pin_root())
            try:
                argv = self.bwrap_args(
                    cwd="/",
                    state_dir=state_dir,
                    tmp=self._session_tmp,
                    caps=caps,
                    denied=hidden,
                    zygote=True,
                    masks=masks,
                    pin_fds=pins,
                    joined_net=net is not None,
                )
                if os.geteuid() != 0:
                    argv[1:1] = ["--unshare-user"]
                zygote = Zygote(self._runner)
                # limits: the zygote joins the session cgroup
                # Non-root: the zygote's user namespace a child of the budget namespace, made
                # under the rlimit shares (the kernel checks the shared count against those).
                limits = [] if as_root else [*prlimit_flags(), *uidshare_flags(zygote=True)]
                shares = [_prlimit(), *limits, "--"] if limits else []
                budget = self._budget_prefix()
                if net is not None:
                    argv, budget = self._joined_prefix(argv, budget, net)
                config.update(self._net_config(net))
                passed = (*pins.fds, *([net.listener] if net is not None and net.listener is not None else []))
                start = [*self._calm_prefix(), *self.cgroup_argv([*shares, *budget, *argv])]
                await zygote.start(start, python, config, passed)
                await self._check_mounts(zygote, argv)
            except ZygoteGoneError as exc:
                said = str(exc).encode("utf-8", "replace")
                if net is not None and b"nsenter:" in said:  # refused here: a new namespace, as before
                    warn_once(f"nsenter refused to enter it: {exc}")
                    net.close()
                    self._net = net = None  # the next try's namespace is the session's from now on
                    continue
                if masks.drop_vanished() or masks.rebound(said):
                    continue  # fewer masks each time, or a socket bound again: bounded (sandbox._hostsockets)
                retries += 1
                if retries > MAX_RETRIES or not (lost_mount_race(said) or REFUSED.encode() in said):
                    raise
                continue
            finally:
                pins.close()
            return zygote

    async def _check_mounts(self, zygote: Zygote, argv: list[str]) -> None:
        """Once per zygote, before any command: `_mount_guard` in an init of it (each command's
        init copies the zygote's mounts, made once: what holds for one holds for all). Raises
        `ZygoteGoneError` (the zygote closed) when a mount went astray."""
        guard = self._mount_guard(argv)
        if not guard:
            return
        request = ExecRequest(argv=(*guard, "true"), cwd="/", merge_stderr=True)
        run = self._runner.new_run(False)
        probe = await zygote.spawn(request, marker=run.marker, env_extra={}, cwd_file=None)
        said = b"".join([chunk async for chunk in probe.stdout])[-4096:]  # a line, on refusal
        status = await probe.wait()
        if status.exit_code != 0:
            await zygote.close()
            raise ZygoteGoneError(
                said.decode("utf-8", "replace").strip() or f"{REFUSED} (exit {status.exit_code})"
            )

    def _mount_guard(self, bwrap_argv: list[str]) -> list[str]:
        """The argv put before a command's that refuses to run it when a mount of ``bwrap_argv``
        below a writable root landed elsewhere (`sandbox._mountcheck`: a swapped directory)."""
        assert self._bwrap is not None
        start = bwrap_argv.index(self._bwrap)  # after nsenter's or prlimit's own ``--``
        return guard_argv(checked_mounts(bwrap_argv[start:], self.policy.allowed_roots()))

    def _pin_root(self) -> str:
        """Where a pin's source path is walked from (`sandbox._pins`): the holder's namespace (root
        caller: the idmapped roots are mounted there, and every bwrap starts there), else ``/``."""
        return f"/proc/{self._holder.host_pid}/root" if self._holder is not None else "/"

    def _skeleton_steps(self) -> list[tuple[object, ...]]:
        """Zygote set-up steps (root caller) that make `_skeletons` inside its sandbox.

        Done by the zygote once it runs, not by bwrap: its own interpreter may live
        under such a parent (/root/.pyenv). What the sandbox shows below a skeleton
        (the roots with their masks, the state dir) is saved first and put back on it.
        """
        paths = self._reach_paths()
        points = _skeletons(paths, self.sandbox_ids)
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
        nsenter = host_which("nsenter")
        if nsenter is None:
            raise BackendUnavailableError(
                f"bwrap as root needs util-linux's nsenter (apt-get install util-linux). {_AS_ROOT_FIX}"
            )
        uid, gid = self._ids()
        state_dir, tmp, owner = self._runner.check_open(), self._session_tmp, self._tmp_owner
        assert tmp is not None and owner is not None
        kept = [str(tmp), *([str(self._shm_pool.path)] if self._shm_pool is not None else [])]
        # A root or the state dir under /tmp is bound inside the session /tmp, where bwrap
        # would make its parents 0700 (and a per-command bwrap, run as the sandbox uid, could
        # not make them at all): made here first, crossable (not listable) by anyone.
        for path in (*self.policy.allowed_roots(), state_dir):
            if Path("/tmp") in path.parents:
                inner = tmp
                for part in path.relative_to("/tmp").parts:
                    inner = inner / part
                    inner.mkdir(mode=0o711, exist_ok=True)
                    inner.chmod(0o711)  # whatever the caller's umask (027: not crossable)
        # A per-command bwrap runs as the sandbox uid, which cannot cross the 0700 parents of
        # what it binds (/root, the session tmp's owner dir). In the holder's namespace only,
        # that owner dir becomes a 0711 skeleton holding the session tmp and a copy of each
        # root's (idmapped) mount and of the state dir that the uid cannot reach where it is:
        # the sources it binds from. What it reaches (every parent crossable) it binds in place:
        # every bwrap copies and lists each mount of this namespace, so each one costs per command.
        reach = self._reach_paths()
        sources = {
            path: owner.path / "src" / str(i)
            for i, path in enumerate(reach)
            if not _reachable(str(path.parent), self.sandbox_ids)
        }
        # Only a zygote binds the roots from their own paths: one bwrap per command needs
        # an unreachable root's idmapped mount at its source only.
        in_place = self.config.persistent
        steps: list[tuple[object, ...]] = []
        attach_late: list[tuple[object, ...]] = []
        fds: list[int] = []
        userns: dict[tuple[int, int], int] = {}
        holder = Zygote(self._runner)
        try:
            for root in self.policy.allowed_roots():
                st = root.stat()
                if (st.st_uid, st.st_gid) not in userns:
                    userns[st.st_uid, st.st_gid] = userns_fd(st.st_uid, st.st_gid, uid, gid)
                fds.append(idmapped_tree(root, userns[st.st_uid, st.st_gid]))
                if root in sources and not in_place:
                    attach_late.append(("attach", fds[-1], str(sources[root])))
                else:
                    steps.append(("attach", fds[-1], str(root)))
            # The sandbox uid's own account line (sandbox._account): bound before the skeleton
            # hides the directory the copies are in.
            steps += [("copy", str(copy), str(host)) for copy, host in account_files(owner.path, uid, gid)]
            steps += [
                *(("save", path) for path in kept),
                ("skeleton", str(owner.path), [*kept, *map(str, sources.values())]),
                *(("restore", path) for path in kept),
                *attach_late,
                *(
                    ("copy", str(path), str(source))
                    for path, source in sources.items()
                    if in_place or path not in self.policy.allowed_roots()
                ),
            ]
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
        mount_ns = f"--mount=/proc/{holder.host_pid}/ns/mnt"
        self._ns_prefix = [nsenter, mount_ns, "--"]
        # nsenter switches to the sandbox uid (and drops the supplementary groups) before it
        # execs bwrap, which then builds a user namespace as for a non-root caller: no
        # setpriv exec in between, no capability left to the command.
        self._ns_user_prefix = [nsenter, mount_ns, f"--setuid={uid}", f"--setgid={gid}", "--"]
        self._sources = sources

    async def close(self) -> None:
        zygotes = [*self._retired, *([self._zygote] if self._zygote is not None else [])]
        self._retired = []
        self._zygote = None
        for zygote in zygotes:
            await zygote.close()
        sockets, self._sockets = self._sockets, None
        if sockets is not None:
            sockets.close()
        net, self._net = self._net, None
        if net is not None:  # after every zygote: the namespace goes with the last process in it
            net.close()
        for helper in (self._spawner, self._holder):  # the spawner's bwraps die with it
            if helper is not None:
                await helper.close()
        self._spawner = self._holder = None
        self._ns_prefix, self._ns_user_prefix, self._sources = [], [], {}
        for ipc in self._ipc_cache.values():
            ipc.close()
        self._ipc_cache, self._skeletons, self._devtree = {}, None, None
        proxy, self._proxy = self._proxy, None
        if proxy is not None:  # after the sandboxes: nothing is left to connect through it
            await anyio.to_thread.run_sync(proxy.close)
            self._refusals = list(proxy.refusals)
            if not self._refusals and self._proxy_dir is not None:  # nothing to keep: no litter in /tmp
                shutil.rmtree(self._proxy_dir, ignore_errors=True)
                self._proxy_dir = None
        reports = self._runner.report_dir
        await self._runner.close()  # its processes killed, then its state directory removed
        if reports is not None:  # the mount point stays (EBUSY) until it is detached
            await anyio.to_thread.run_sync(_release_reports, reports)
        await anyio.to_thread.run_sync(self.cgroup_close)  # limits: remove the session cgroup
        lease, self._lease = self._lease, None
        if lease is not None:  # last: every process that ran under the uid is gone
            lease.release()
        self._bwrap = None
        self._starter.close()  # after every bwrap that was passed a copy
        self._own.close()
        self._session_tmp = None
        owner, self._tmp_owner = self._tmp_owner, None
        if owner is not None:
            pool, self._shm_pool = self._shm_pool, None

            def release() -> None:
                uncap_tmp(owner.path / "tmp")  # every sandbox that bound it is gone
                if pool is not None:
                    pool.close()
                owner.remove()

            await anyio.to_thread.run_sync(release)

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
        spawned: bool = False,
        masks: StartMasks | None = None,
        pin_fds: PinFds | None = None,
        shm: Path | None = None,
        pts: Path | None = None,
        joined_net: bool = False,
    ) -> list[str]:
        """The bwrap argv up to (not including) ``--``, for one sandbox starting in ``cwd``.

        ``tmp``: a host directory bound at /tmp (the session's /tmp) instead of a
        fresh tmpfs (the probe's). ``caps``: the only capabilities the sandbox's
        process keeps (the zygote's); a command keeps none -- run as root,
        bwrap would otherwise leave it every capability, CAP_SYS_ADMIN included.
        ``denied``: `_denied_kinds` as already taken (default: taken now).
        ``seccomp_fd``: where bwrap reads the command's seccomp program (``--seccomp``).
        ``zygote``: the zygote's sandbox (it makes the skeletons and /proc masks itself).
        ``spawned``: started by the spawner, already the sandbox uid in the holder's namespace
        (root caller, per command): no ``nsenter`` in front.
        ``masks``: the host-socket masks of this start across its attempts (default: listed now).
        ``pin_fds``: where the pinned directories' fds go (`sandbox._pins`: bound from an fd, never
        by a path a running command can swap for a symlink); None (the probe, which runs no
        command while none runs): bound by path.
        ``shm``: per command, bound at /dev/shm instead of bwrap's uncapped tmpfs: a root caller's
        own directory of the capped pool (`sandbox._shmpool`), a non-root caller's tmpfs that the
        starter mounted before bwrap (`sandbox._bwrap_shm`). ``pts``: the devpts of at most
        `sandbox._devtree.PTY_MAX` ptys it mounted too, bound over bwrap's at /dev/pts.
        ``joined_net``: a zygote started in the session's network namespace (`sandbox._bwrap_netns`):
        no ``--unshare-net``.
        """
        assert self._bwrap is not None
        as_user = bool(self._ns_user_prefix) and not zygote  # root, per command: as the sandbox uid
        prefix = self._ns_user_prefix if as_user else self._ns_prefix
        args = [
            *(() if spawned else prefix),
            self._bwrap,
            *(("--unshare-user",) if as_user else ()),
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup",  # /proc/self/cgroup names no host cgroup (round 17)
            "--cap-drop",
            "ALL",
        ]
        for cap in caps:
            args += ["--cap-add", cap]
        if self.policy.network in ("none", "proxied") and not joined_net:
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/"]
        # /dev/shm: the command's own directory of the capped pool (root, per command) or the
        # starter's capped tmpfs (non-root, per command: `sandbox._bwrap_shm`), else bwrap's tmpfs,
        # which takes no inode cap (a zygote mounts a capped one below).
        shm_args = ["--perms", "1777", *_SHM_SIZE, "--tmpfs", "/dev/shm"]
        if shm is not None and not zygote:
            shm_args = ["--bind", str(shm), "/dev/shm"]
        if as_user and self._devtree is not None:  # the session's /dev (sandbox._devtree), one bind
            args += ["--dev-bind", str(self._devtree), "/dev", *shm_args]
        else:  # bwrap's own /dev; ``pts``: a capped devpts over its uncapped one (round 33)
            args += ["--dev", "/dev", *([] if zygote else shm_args)]
            if pts is not None and not zygote:
                args += ["--dev-bind", str(pts), "/dev/pts"]
        args += ["--proc", "/proc"]
        args += sys_args(self._cgroup.points if self._cgroup is not None else ())  # `sandbox._sysview`
        # Only what the sandbox shows is masked: a path below its own /tmp (or another place it fills)
        # and outside the binds needs none, and its mount point failed to be made (`sandbox._bwrap_unseen`).
        filled = [Path("/tmp"), *map(Path, _emptied_places())]
        bound = [*self.policy.allowed_roots(), state_dir]
        # A link on the way: masked where it leads (`sandbox._bwrap_linkmask`).
        denied_paths = [
            (where, kind)
            for path, kind in self._denied_paths(self._denied_kinds() if denied is None else denied)
            if (where := mask_at(path, kind, bound)) is not None and not unseen(where, filled, bound)
        ]
        # A denied path missing now, outside the roots: its nearest directory frozen (`sandbox._frozen`),
        # before every mask and cover, which then apply on top.
        args += frozen_args(
            [path for path, kind in denied_paths if kind is None],
            keep=[*self.policy.allowed_roots(), state_dir, *([self._proxy_dir] if self._proxy_dir else [])],
            writable=self.policy.allowed_roots(),
            reachable=(lambda p: _reachable(str(p), self.sandbox_ids)) if as_user else (lambda _p: True),
        )
        if zygote:  # bwrap's /dev/shm is root's 0755 here: POSIX shm/semaphores (multiprocessing) failed
            args += ["--perms", "1777", *_SHM_SIZE, "--tmpfs", "/dev/shm"]
            if self.lock_view:  # where the zygote puts each command's lock view together (round 37)
                args += ["--perms", "0755", "--dir", LOCK_VIEW_DIR]
        args += self._host_masks(state_dir, as_user=as_user, zygote=zygote, masks=masks)
        if self._proxy_dir is not None and self._proxy is not None:  # after the /run mask
            args += ["--ro-bind", str(self._proxy_dir), PROXY_DIR_INSIDE]
        args += _host_temp_mask()
        args += ["--tmpfs", "/tmp"] if tmp is None else ["--bind", str(tmp), "/tmp"]
        if as_user:  # root, per command: see _skeletons
            args += self._skeleton_args()[1]
        sources = self._sources if as_user else {}
        for root in self.policy.allowed_roots():
            args += ["--bind", str(sources.get(root, root)), str(root)]
        args += nested_root_args(self.policy.allowed_roots(), sources)  # round 11: no renamed way in
        # The temp dir holding /tmp and the state dir, out of reach when a root shows it (round 11).
        args += temp_holder_args(
            self.policy.allowed_roots(), tmp, (lambda p: _reachable(p, self.sandbox_ids)) if as_user else lambda _p: True
        )
        # After the roots, so a root that contains it (workspace = /tmp) cannot cover it.
        # Read-only: the cwd reports are FIFOs the host made there (`sandbox._bwrap_report`).
        args += ["--ro-bind", str(sources.get(state_dir, state_dir)), str(state_dir)]
        reach = [*self._reach_paths(), *self._skeleton_args()[0]] if as_user and denied_paths else []
        masked = [
            path
            for path, _kind in denied_paths
            if not as_user or _maskable(path, reach, self.sandbox_ids)  # else unreachable: nothing to hide
        ]
        shown = read_only_paths(
            [
                path
                for path in (*self.policy.read_only, *self._unwritable(), *self._host_code)
                if not unseen(path, filled, bound)
            ],
            self._reach_paths() if as_user else None,
            lambda path, inside: _maskable(path, inside, self.sandbox_ids),
        )
        # Every directory between a writable root and a masked path is a mount point of itself:
        # renaming or removing a mount point fails (EBUSY), so no command can move a masked
        # file out from under its mask, here or (the rename reaching the host) for a later session.
        # Host sockets in the writable roots (`IpcMasks.inside`): pinned the same way, and covered
        # after every bind there. The host's table keeps the path a socket was bound at.
        # Not those below a directory masked whole (the holder's in a meeting place): the mask hides
        # them, and a cover made there would show their names in it.
        dirs = [path for path, kind in denied_paths if kind == "dir" and path in masked]
        sockets = _not_below(self._ipc_masks(state_dir, as_user=as_user).inside(), dirs)
        pins = [*masked, *shown, *map(Path, sockets[2::3])]
        for root, directory in _pinned_dirs(pins, self.policy.allowed_roots()):
            source = sources.get(root, root) / directory.relative_to(root)
            args += (
                ["--bind", str(source), str(directory)]
                if pin_fds is None
                else pin_fds.bind(source, directory)
            )
        # Masks and read-only binds, each below every bind that covers it (`layered_args`).
        hide = [(path, kind) for path, kind in denied_paths if path in masked and kind in ("dir", "file")]
        args += layered_args(hide, shown, self.policy.allowed_roots(), sources)
        args += sockets
        args += mask_remounts(hide)  # after every mount below a mask: an empty, read-only directory
        if not (as_user and self._devtree is not None):  # bwrap's own /dev, an unsized tmpfs the command's
            args += ["--remount-ro", "/dev"]  # (a non-root caller's) to fill; last, every mount below it made
        args += ["--chdir", cwd]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        # No tmpfs of half the host's RAM for a command to fill; none writable but /tmp and /dev/shm.
        return sealed_tmpfs(sized_tmpfs(args))

    async def exec(self, request: ExecRequest) -> SandboxProcess:
        refuse_user_switch(request, "bwrap")
        self._runner.check_open()
        if self._zygote is not None:
            return self.cgroup_watch(await self._exec_in_zygote(request))  # limits: OOM reporting

        # Round 29: a command started under other masks (a read-denied path, a shellrt place or a
        # host socket in a writable root appeared since) ends now, as a replaced zygote's do.
        kinds, (sockets, listed) = self._denied_kinds(), self._covered_sockets()
        await self._end_stale_runs(kinds, sockets)
        masks = StartMasks(listed)  # a retry drops the masks whose socket is gone (sandbox._hostsockets)
        if not self._starter.decided:  # built on first use: off the event loop
            await anyio.to_thread.run_sync(self._starter.fd)
        if not self._shm_cap.decided and not self._ns_user_prefix:  # non-root: tried once, off the loop
            assert self._bwrap is not None  # started
            program = [self._bwrap, "--version"]  # absolute (`host_which`): what the wrapper execs
            await anyio.to_thread.run_sync(
                self._shm_cap.decide,
                self._starter.fd(),
                self._shm_where,
                self._pts_where,
                self._budget_prefix(),
                program,
            )

        # The first attempt masks the kinds just recorded for the run (one stat pass, not two); a
        # retry after a lost mount race looks again (a kind that changed meanwhile then differs from
        # the record, and the next start ends the run: the safe side).
        first_kinds: list[tuple[str | None, ...]] = [kinds]

        async def spawn() -> tuple[SandboxProcess, int]:
            return await self._spawn_once(request, masks, first_kinds.pop() if first_kinds else None)

        first = await spawn()
        # stdin written to a failed attempt is written again to the next (up to REPLAY_MAX).
        retrying = RetryingBwrapProcess(
            spawn, first, may_retry=True, drop_vanished=masks.drop_vanished, rebound=masks.rebound
        )
        self._runs.append((kinds, sockets, retrying))
        return self.cgroup_watch(retrying)

    def _covered_sockets(self) -> tuple[frozenset[str], list[str]]:
        """One bwrap per command: the host sockets in the writable roots its masks cover now (none
        with the host's network, where a command's own are listed too), and the masks of that
        listing, for the start to use (one listing a command: round 39, sockets)."""
        ipc = self._ipc_masks(self._runner.check_open(), as_user=bool(self._ns_user_prefix))
        listed = ipc.args()  # the listing as of now (worked out again only when the host's sockets changed)
        return frozenset(ipc.inside()[2::3]), listed

    async def _end_stale_runs(self, kinds: tuple[str | None, ...], sockets: frozenset[str]) -> None:
        """End the per-command runs still going whose masks were worked out for other ``kinds``
        or before one of ``sockets`` listened (one gone since ends none)."""
        runs, self._runs = self._runs, []
        for started, covered, run in runs:
            if run.finished:
                continue
            if started != kinds or not sockets <= covered:
                await run.end_for(_REPLACED_WHY)
            else:
                self._runs.append((started, covered, run))

    async def _exec_in_zygote(self, request: ExecRequest) -> SandboxProcess:
        zygote = self._zygote
        assert zygote is not None
        if self._zygote_stale(zygote):
            zygote = await self._replace_zygote(zygote)
        if self._retired:  # replaced zygotes whose last command ended: end them now
            done = [z for z in self._retired if z.running == 0]
            self._retired = [z for z in self._retired if z.running > 0]
            for old in done:
                await old.close()
        run = self._runner.new_run(request.report_cwd)
        env = {**proxy_env(), **run.env} if self._proxy is not None else run.env
        try:
            return await zygote.spawn(request, marker=run.marker, env_extra=env, cwd_file=run.cwd_file)
        except BaseException:  # no command: its report FIFO goes now (round 43, review20)
            self._runner.drop_report(run.cwd_file)
            raise

    def _zygote_stale(self, zygote: Zygote) -> bool:
        """Whether ``zygote`` must be replaced before its next command. Once judged so it stays so
        (the socket watch reports a change once): a command started beside the one replacing it
        must not run in it meanwhile, where the new socket is not masked."""
        if zygote is self._condemned:
            return True
        place = self._denied_kinds() != self._hidden
        if not zygote.alive or place:
            self._condemned, self._condemned_for_place = zygote, place
            return True
        if not self._sockets_hidden():  # ends its commands for a host socket in a root only
            found = self._sockets is not None and self._sockets.new_in_cover
            self._condemned, self._condemned_for_place = zygote, found
            return True
        return False

    async def _replace_zygote(self, stale: Zygote) -> Zygote:
        """A zygote for the current policy in place of ``stale``. Commands still running in the old
        one keep running; new ones go to the new one, and its warm pool (inits made for the old
        policy) is dropped. Under a lock: side-by-side commands all found the zygote stale, and
        each retired it (two tasks reading its socket: BusyResourceError) and started its own.
        Not judged again inside (the socket watch reports a change once): whoever finds ``stale``
        already replaced uses the replacement."""
        async with self._replacing:
            zygote = self._zygote
            if zygote is not None and zygote is not stale and zygote.alive:
                return zygote  # another command replaced it meanwhile
            if self._condemned_for_place:  # round 30: a retired zygote's commands run under older
                retired, self._retired = self._retired, []  # masks still, which hide it no more
                for old in retired:
                    await old.end_for(_REPLACED_WHY)
            if zygote is not None and zygote.alive and zygote.running and self._condemned_for_place:
                # Replaced for a place its commands' namespaces do not hide (a read-denied path, a
                # shellrt place, a host socket in a writable root made since): they end now, not when
                # they like. Not for a new host socket elsewhere: any host process makes those, and
                # every background task would die with each.
                await zygote.end_for(_REPLACED_WHY)
                self._zygote = None
            elif zygote is not None:
                await zygote.retire()
                self._retired.append(zygote)
                self._zygote = None
            try:
                await self._start_zygote()
            except ZygoteGoneError as exc:
                limit = self.pids_exhausted_message()
                why = f" ({limit})" if limit and "temporarily unavailable" in str(exc) else ""
                raise SandboxExecError(f"cannot restart the bwrap session sandbox: {exc}{why}") from exc
            assert self._zygote is not None
            return self._zygote

    async def _spawn_once(
        self, request: ExecRequest, masks: StartMasks, denied: tuple[str | None, ...] | None
    ) -> tuple[SandboxProcess, int]:
        """One bwrap start (masking ``denied``, the `_denied_kinds` of now when None); returns the
        process and the read end of its ``--json-status-fd``."""
        spawner = self._spawner
        if spawner is not None and spawner.alive:
            try:
                return await self._spawn_by_spawner(spawner, request, masks, denied)
            except TooManyPins:
                pass  # more pins than one message carries: nsenter passes any number
        run = self._runner.new_run(request.report_cwd)
        env = run.env
        if self._ns_user_prefix and not _reachable(request.env.get("HOME", "/"), self.sandbox_ids):
            env = {**env, "HOME": "/tmp"}  # root's home is not the sandbox user's
        shm, release = self._command_shm()

        async def start(seccomp_r: int, status_w: int) -> SandboxProcess:
            env_fd = env_args_fd(child_env(request, env, run.marker))  # the launchers never see it
            pins = PinFds(self._pin_root())
            starter = self._starter.fd()  # passed at its own number (``pass_fds``)
            capped = (
                self._shm_cap.argv(starter, self._shm_where, self._pts_where)
                if shm is None and not self._ns_user_prefix
                else []
            )
            try:
                sandbox = self.bwrap_args(
                    cwd=request.cwd,
                    state_dir=run.state_dir,
                    tmp=self._session_tmp,
                    seccomp_fd=seccomp_r,
                    masks=masks,
                    pin_fds=pins,
                    shm=Path(self._shm_where) if capped and self._shm_where else shm,
                    pts=Path(self._pts_where) if capped and self._pts_where else None,
                    denied=denied,
                )
                argv = [
                    *sandbox,
                    "--args",
                    str(env_fd),
                    "--json-status-fd",
                    str(status_w),
                    "--",
                    *starter_argv(starter, request.cwd),  # walks to the cwd, no link followed
                    *self._mount_guard(sandbox),
                    *request.argv,
                ]
                return self._runner.spawn(
                    # No core dumps (RLIMIT_CORE 1:1: a command must not feed the host's core_pattern
                    # handler); limits: joins the session cgroup.
                    [*self._no_core_prefix(), *self.cgroup_argv([*self._budget_prefix(), *capped, *argv])],
                    launcher_request(request),
                    marker=run.marker,
                    cwd_host_file=run.cwd_file,
                    env_extra={},
                    cwd="/",
                    pass_fds=(
                        status_w,
                        seccomp_r,
                        env_fd,
                        *pins.fds,
                        *([] if starter is None else [starter]),
                    ),
                )
            finally:
                os.close(env_fd)
                pins.close()

        try:
            return await self._with_seccomp_and_status(start, release)
        except BaseException:  # no command (or one killed and waited for): no report FIFO kept
            self._runner.drop_report(run.cwd_file)
            raise

    def _command_shm(self) -> tuple[Path | None, Callable[[], None] | None]:
        """Root caller, per command: a fresh directory of the capped pool for the command's /dev/shm
        and what removes it (`sandbox._shmpool`); (None, None) for a non-root caller."""
        pool = self._shm_pool
        if pool is None or not self._ns_user_prefix:
            return None, None
        made = pool.make()
        return made, lambda: pool.release(made)

    async def _with_seccomp_and_status(
        self, start: Callable[[int, int], Awaitable[SandboxProcess]], on_end: Callable[[], None] | None = None
    ) -> tuple[SandboxProcess, int]:
        """``start(seccomp_r, status_w)`` given a pipe holding the seccomp program and bwrap's
        ``--json-status-fd`` pipe; returns its process and the status pipe's read end. Our
        copies of the ends bwrap inherits are closed once it started, or failed to. ``on_end``
        runs once the sandbox is gone (`PinnedBwrapProcess`), or here when it did not start."""
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        seccomp_r, seccomp_w = os.pipe2(os.O_CLOEXEC)
        # Our own copy of the program's read end: shows when bwrap has read it (past its set-up).
        probe = SetupProbe(os.dup(seccomp_r))
        try:
            proc = await start(seccomp_r, status_w)
        except BaseException:
            os.close(status_r)
            os.close(seccomp_w)
            probe.close()
            if on_end is not None:
                on_end()
            raise
        finally:
            os.close(status_w)
            os.close(seccomp_r)
        # bwrap's init is pinned before the command can run: the sandbox reads its seccomp program
        # before it starts the command, and gets it only now (`sandbox._bwrap_init`, round 15).
        try:
            pin, early = await pin_init(status_r)
            ready = pin.pinned
            if ready:
                with contextlib.suppress(BrokenPipeError):
                    os.write(seccomp_w, self._seccomp_program())  # < 4 KiB: fits in the pipe
                    probe.written = True
        except BaseException:
            with anyio.CancelScope(shield=True):
                await proc.kill()
            os.close(status_r)
            probe.close()
            if on_end is not None:  # unpinned: no program was written, so no command ran
                on_end()
            raise
        finally:
            os.close(seccomp_w)  # unpinned: no program, so the sandbox fails before the command
        return PinnedBwrapProcess(proc, pin, early, probe, on_end), status_r

    async def _spawn_by_spawner(
        self, spawner: Zygote, request: ExecRequest, masks: StartMasks, denied: tuple[str | None, ...] | None
    ) -> tuple[SandboxProcess, int]:
        """`_spawn_once` for a root caller: the spawner starts bwrap (no ``prlimit``, no ``nsenter``).

        Its seccomp program and json status fds become bwrap's fds 3 and 4.
        """
        run = self._runner.new_run(request.report_cwd)
        pins = PinFds(
            self._pin_root(), first=6, limit=MAX_PASSED - 1
        )  # after stdio and fds 3-5; the starter last
        starter = self._starter.fd()
        shm, release = self._command_shm()
        try:
            sandbox = self.bwrap_args(
                cwd=request.cwd,
                state_dir=run.state_dir,
                tmp=self._session_tmp,
                seccomp_fd=3,
                spawned=True,
                masks=masks,
                pin_fds=pins,
                shm=shm,
                denied=denied,
            )
            argv = [
                *sandbox,
                "--json-status-fd",
                "4",
                "--args",
                "5",
                "--",
                *starter_argv(None if starter is None else 6 + len(pins.fds), request.cwd),
                *self._mount_guard(sandbox),
                *request.argv,
            ]
        except BaseException:
            pins.close()
            if release is not None:
                release()
            self._runner.drop_report(run.cwd_file)
            raise
        env = run.env
        if not _reachable(request.env.get("HOME", "/"), self.sandbox_ids):
            env = {**env, "HOME": "/tmp"}  # root's home is not the sandbox user's

        async def start(seccomp_r: int, status_w: int) -> SandboxProcess:
            env_fd = env_args_fd(child_env(request, env, run.marker))  # the launchers never see it
            try:
                return await spawner.spawn_program(
                    launcher_request(request),
                    argv,  # limits: in the session cgroup already, as the spawner is
                    marker=run.marker,
                    env_extra={},
                    cwd_file=run.cwd_file,
                    extra_fds=(
                        seccomp_r,
                        status_w,
                        env_fd,
                        *pins.fds,
                        *([] if starter is None else [starter]),
                    ),
                )
            finally:
                os.close(env_fd)

        try:
            return await self._with_seccomp_and_status(start, release)
        except BaseException:  # no command (or one killed and waited for): no report FIFO kept
            self._runner.drop_report(run.cwd_file)
            raise
        finally:
            pins.close()

    async def _start_spawner(self) -> None:
        """Root caller: the spawner of per-command bwraps (`sandbox._zygote_main.Spawner`).

        Started as root in the holder's namespace and the session cgroup (which every
        bwrap it starts inherits: the sandbox uid could not join it), it becomes the
        sandbox uid itself before it says ready. Where it cannot start, ``nsenter`` per
        command stays.
        """
        spawner = Zygote(self._runner)
        uid, gid = self._ids()
        config: dict[str, object] = {
            "spawner": True,
            "uid": uid,
            "gid": gid,
            "eagain": self.pids_exhausted_message(),  # limits: what a command that cannot start is told
        }
        try:
            # limits: the spawner joins the session cgroup
            start = [*self._calm_prefix(), *self.cgroup_argv(self._ns_prefix[:-1])]
            await spawner.start(start, sys.executable, config)
        except SandboxExecError as exc:  # ZygoteGoneError included
            _log.warning("bwrap: starting each command with nsenter (%s)", exc)
            return
        self._spawner = spawner


def _run_probe(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, timeout=20, check=False, env={"PATH": os.defpath})


def _reachable(path: str, ids: tuple[int, int] | None = None) -> bool:
    """Whether any user may enter ``path`` (it and every parent searchable by others); with ``ids``
    (a uid and gid), whether that one may: its owner's, group's or an ACL entry's search bit, read
    as the kernel does (`sandbox._reach`, the reading the policy compile uses: round 47)."""
    return crosses(path, ids)


def _maskable(path: Path, inside: list[Path], ids: tuple[int, int] | None = None) -> bool:
    """Whether a bwrap run as the sandbox uid (root caller, per command) can reach ``path`` to mask it.

    Inside the writable roots, the state dir and the skeletons on their way (``inside``)
    it can (they are its own there); elsewhere only where it may cross every parent: as
    "others", or as the owner or group where ``ids`` (the sandbox uid and gid) are those (round
    43: a fixed uid's own 0700 directory was "unreachable", unmasked, and read), or as an ACL
    entry grants it (round 47: a 0700 directory whose ACL opened it to the uid was left unmasked
    and read; one an ACL closed stopped the command's bwrap) -- and what it cannot reach, the
    command cannot read either.
    """
    if any(path == p or p in path.parents for p in inside):
        return True
    return _reachable(str(path.parent), ids)


def _pinned_dirs(masked: list[Path], roots: tuple[Path, ...] | list[Path]) -> list[tuple[Path, Path]]:
    """(writable root, directory) for each existing directory between a root and a masked path.

    Shallowest first (each bind goes over its parent's). The masked path itself is
    a mount already when it exists; a path that does not exist yet pins its existing
    ancestors and leaves nothing behind in the root. A symlink ends a lexical way;
    the resolved path's own ancestors are pinned as well.
    """
    pinned: dict[Path, Path] = {}
    # A symlink on the way (``ws/link/secret``) is masked where it leads: pin that way too.
    for path in {*masked, *filter(None, map(_resolved, masked))}:
        holders = [r for r in roots if r in path.parents]
        if not holders:
            continue  # outside the writable roots: read-only, nothing there can be renamed
        root = max(holders, key=lambda r: len(r.parts))
        for directory in reversed(path.parents):
            if directory == root or root not in directory.parents:
                continue
            try:
                if not stat.S_ISDIR(os.lstat(directory).st_mode):
                    break
            except OSError:
                break
            pinned.setdefault(directory, root)
    return sorted(((r, d) for d, r in pinned.items()), key=lambda rd: len(rd[1].parts))


def _not_below(covers: list[str], dirs: list[Path]) -> list[str]:
    """``covers`` (``--ro-bind /dev/null PATH`` triples) less those of a path below one of ``dirs``."""
    kept: list[str] = []
    for i in range(0, len(covers) - 2, 3):
        path = Path(covers[i + 2])
        if not any(d in path.parents for d in dirs):
            kept += covers[i : i + 3]
    return kept


def _resolved(path: Path) -> Path | None:
    """``path`` with its symlinks resolved; None when that keeps failing (a command renaming a
    directory on its way between a ``lstat`` and a ``readlink`` makes ``realpath`` raise
    ``EINVAL``: read again, `settled_realpath`)."""
    real = settled_realpath(str(path))
    return None if real is None else Path(real)


def _skeletons(paths: list[Path], ids: tuple[int, int] | None = None) -> list[Path]:
    """The parents the sandbox uid could not cross on its way to ``paths``: each becomes a skeleton.

    A workspace under ``/root`` (0700) is out of an unprivileged uid's reach. The
    highest such parent becomes an empty tmpfs (0711) holding only the way to the
    paths below it: what else it held was unreachable to that uid anyway. Parents
    under /tmp are left out: inside they live in the session /tmp, made crossable there.
    ``ids``: the sandbox uid and gid, judged as `_reachable` does, ACLs included (round 47).
    """
    points: list[Path] = []
    for path in paths:
        if Path("/tmp") in path.parents:
            continue
        for parent in reversed(path.parents):
            if not searchable(parent, ids):
                points.append(parent)
                break
    return sorted({p for p in points if not any(q != p and q in p.parents for q in points)})


def _release_reports(reports: Path) -> None:
    """Detach the sized report directory and remove what is left of the state directory."""
    from sandbox._scratch import remove_tree

    uncap_tmp(reports)  # a non-root caller's reports are no mount: nothing to detach
    remove_tree(reports.parent)
