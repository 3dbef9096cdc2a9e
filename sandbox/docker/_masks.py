"""The ``/proc`` and ``/sys`` paths a container masks: never fewer than the daemon's own (round 45).

``HostConfig.MaskedPaths`` replaces the daemon's whole default list. Round 42 (docker5) asked for
an explicit list (docker 20.10's, ``/proc/key-users`` and two that newer moby masks, copied from
reading), and so on any daemon that masks more than that list names, shellrt's containers masked
less than the daemon's own: moby 28 masks ``/sys/devices/system/cpu/cpu<N>/thermal_throttle`` for
every possible CPU that has one (GHSA-6fw5-f8r9-fgfm: thermal interrupt counts, a side channel
across tenants), computed per host, which no fixed list can name, and a later daemon may add more.

So the daemon is asked: one container created (never started) with no ``MaskedPaths`` shows the
daemon's default in its ``HostConfig`` (moby fills it at create); shellrt asks for that list, its
own floor (`FLOOR`) and this host's per-CPU ``thermal_throttle`` directories (`host_cpu_masks`:
a 20.10 daemon predates them). The answer is kept per daemon (the URL shellrt reached it by and its whole ``GET /version``
answer: build, components, kernel, OS, arch; round 46) for the life of the process.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import threading
from collections.abc import Callable
from typing import Any

import docker
import docker.errors

from sandbox.docker._sysmasks import closed_to_others, collapse, is_under, root_only_file, walk_root_only

__all__ = [
    "FLOOR",
    "ROOT_ONLY_PROC",
    "daemon_masked_paths",
    "host_cpu_masks",
    "host_root_only",
    "host_root_only_sys",
    "masked_paths_for",
    "possible_cpus",
    "prefetch_host_walks",
]

#: docker's own masked ``/proc`` and ``/sys`` paths (moby ``oci/defaults.go``, 19.03 to 20.10):
#: ``sched_debug`` lists the host's every process, ``kcore`` its memory layout.
_DOCKER_2010 = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
)

#: ``/proc`` files of mode 0400 on the kernels read (6.x): the host's memory and allocator state.
ROOT_ONLY_PROC = (
    "/proc/kpagecgroup",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/pagetypeinfo",
    "/proc/slabinfo",
    "/proc/vmallocinfo",
)

#: What every container masks whatever the daemon says: docker 20.10's, moby 25+'s fixed
#: additions (``/proc/interrupts``: the host's interrupt counts, GHSA-6fw5-f8r9-fgfm;
#: ``/sys/devices/virtual/powercap``: RAPL energy counters a uid-0 command reads,
#: GHSA-jq35-85cj-fj4p) and ``/proc/key-users`` (round 42, docker5: without ``userns-remap`` a
#: container shares the host's user namespace, where it lists every host user's key count and
#: quota use). runc skips a path the kernel lacks.
FLOOR = (
    *_DOCKER_2010,
    "/proc/interrupts",
    "/proc/key-users",
    "/sys/devices/virtual/powercap",
    # Round 47 (docker7): every process's OFD locks on the host, each with a file's device, inode
    # and a byte range its taker chose (the kernel hides only locks with an owner pid outside the
    # reader's PID namespace, and an OFD lock has none): a channel between tenants.
    "/proc/locks",
    # Round 47: root-only by mode alone, so a per-call root command (host uid 0, no capability, no
    # user namespace) read them: every physical page's flags, map count and memory cgroup, the
    # kernel's slabs, free pages and vmalloc areas. `host_root_only` adds what this host has more.
    *ROOT_ONLY_PROC,
    # Round 47: the sysfs trees under /sys/kernel with root-only files (found walking 6.18's):
    # every slab cache's counters and debug statistics, and DAMON's admin tree (a monitored host
    # pid, its address ranges, tenants' cgroup paths). Named: a walk of /sys costs ~0.5 s a start.
    "/sys/kernel/mm/damon",
    "/sys/kernel/slab",
    # Round 48 (docker8): a *read* of ``hot_add`` (0400, no capability check) makes a zram block
    # device on the host, one a read, for the host's uptime. Named as well as walked
    # (`host_root_only_sys`): the walk is once a process, and zram may be loaded after it.
    "/sys/class/zram-control",
)

#: A path a mask may name: below /proc or /sys, no ``.`` or ``..`` step, no empty one.
_PLACE = re.compile(r"/(?:proc|sys)(?:/(?!\.\.?(?:/|$))[^/\0]+)+")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
#: More CPUs than any ``possible`` list names: a malformed file must not make a huge list.
_MAX_CPUS = 1 << 14

_lock = threading.Lock()
_known: dict[tuple[str, str], tuple[str, ...]] = {}


def possible_cpus(sys_root: str = "/sys") -> list[int]:
    """The CPU numbers of ``<sys_root>/devices/system/cpu/possible`` (``0-3,8``) and of every
    ``cpu<N>`` directory there (the union: one unreadable source leaves the other)."""
    base = os.path.join(sys_root, "devices/system/cpu")
    cpus: set[int] = set()
    with contextlib.suppress(OSError, UnicodeDecodeError), open(os.path.join(base, "possible"), encoding="ascii") as fh:
        for part in fh.read().strip().split(","):
            match = _RANGE.fullmatch(part.strip())
            if match is None:
                continue
            first = int(match[1])
            last = int(match[2]) if match[2] else first
            cpus.update(range(first, min(last, first + _MAX_CPUS) + 1))
    with contextlib.suppress(OSError):
        cpus.update(int(name[3:]) for name in os.listdir(base) if re.fullmatch(r"cpu[0-9]+", name))
    return sorted(c for c in cpus if c < _MAX_CPUS)


def host_cpu_masks(sys_root: str = "/sys") -> list[str]:
    """``/sys/devices/system/cpu/cpu<N>/thermal_throttle`` for each possible CPU of this host that
    has one (moby 28's rule), as the container names it."""
    found = []
    for cpu in possible_cpus(sys_root):
        rel = f"devices/system/cpu/cpu{cpu}/thermal_throttle"
        if os.path.lexists(os.path.join(sys_root, rel)):
            found.append(f"/sys/{rel}")
    return found


_sys_walks: dict[str, tuple[str, ...]] = {}
#: The module names ``/sys/module`` held at the walk or the last start (`host_root_only_sys`).
_sys_modules: dict[str, frozenset[str]] = {}
_proc_walks: dict[str, tuple[str, ...]] = {}
_sys_walk_lock = threading.Lock()

#: Top-level ``/proc`` names a walk does not enter: the reader's own (links), and the network
#: namespace's tree, which is the container's own (``/proc/sys/net`` too: `_PER_NETNS`).
_PROC_NOT_WALKED = frozenset({"self", "thread-self", "net", "mounts"})
_PER_NETNS = "/proc/sys/net"


#: Entries the ``/proc`` walk visits (this host: ~500 outside the processes' directories, ~15 ms;
#: ``/proc/irq/<N>`` grows with a server's interrupts, an old kernel's
#: ``/proc/sys/kernel/sched_domain`` with its CPUs). Past it each directory not listed yet is masked
#: whole, at its shallowest ancestor outside `_PROC_KEEPS` (round 50, docker10).
MAX_PROC_ENTRIES = 20_000
#: Masks the ``/proc`` walk gives at most; past it every mask is raised to that same ancestor.
MAX_PROC_MASKS = 256
#: ``/proc`` directories no mask hides whole, always listed (their subdirectories may be masked):
#: the sysctls programs read (``pid_max``, ``ngroups_max``, ``overcommit_memory``, ``file-max``;
#: ``random/uuid`` and ``boot_id``: libuuid, systemd's tools).
_PROC_KEEPS = frozenset({"/proc/sys", "/proc/sys/kernel", "/proc/sys/kernel/random", "/proc/sys/vm", "/proc/sys/fs"})


def _root_only_mode(mode: int, top: bool) -> bool:
    """A ``/proc`` entry a per-call root command reads and others do not: at the top level anything
    but a link without a read bit for others (round 47), or a directory others may list but not
    enter (round 50: its files are root's alone, whatever their modes); below it `_sysmasks`' rules
    (one copy): a regular file its owner reads and others do not, or a directory others may not
    list or enter."""
    if top:
        return not stat.S_ISLNK(mode) and (not mode & stat.S_IROTH or closed_to_others(mode))
    return closed_to_others(mode) or root_only_file(mode)


def _proc_whole(inside: str) -> str:
    """The mask hiding ``inside`` when it is not listed: its shallowest ancestor (or itself)
    outside `_PROC_KEEPS` (``/proc/irq/17`` -> ``/proc/irq``)."""
    parts = inside.split("/")
    for end in range(3, len(parts) + 1):
        place = "/".join(parts[:end])
        if place not in _PROC_KEEPS:
            return place
    return inside


def _outermost(paths: list[str]) -> tuple[str, ...]:
    """``paths`` without those below another of them, each once, sorted."""
    given = set(paths)
    return tuple(sorted(p for p in given if not any(a in given for a in _ancestors(p))))


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:end]) for end in range(3, len(parts))]


def _walk_proc(proc_root: str, top: list[str], max_entries: int | None = None) -> tuple[str, ...]:
    """The root-only entries below ``top``'s directories (round 48), as the container names them:
    at most `MAX_PROC_ENTRIES` entries visited (``max_entries``), ``/proc/sys`` first; past that, or
    where a listing fails, a directory is masked whole (`_proc_whole`); at most `MAX_PROC_MASKS`
    masks, or each raised to `_proc_whole`'s place (`ValueError` if still more: the start refuses)."""
    budget = MAX_PROC_ENTRIES if max_entries is None else max_entries
    found: list[str] = []
    visited = 0
    stack: list[str] = []
    for name in top:
        if name in _PROC_NOT_WALKED or _PLACE.fullmatch(f"/proc/{name}") is None:
            continue
        visited += 1
        with contextlib.suppress(FileNotFoundError):
            try:
                is_dir = stat.S_ISDIR(os.lstat(os.path.join(proc_root, name)).st_mode)
            except OSError:  # cannot tell what it is: masked
                found.append(f"/proc/{name}")
                continue
            if is_dir:
                stack.append(name)
    stack.sort(key=lambda n: n == "sys")  # ``sys`` popped first: past the budget the rest is masked
    while stack:
        rel = stack.pop()
        inside = f"/proc/{rel}"
        if inside == _PER_NETNS:
            continue
        kept = inside in _PROC_KEEPS
        if visited >= budget and not kept:
            found.append(_proc_whole(inside))  # not listed: masked whole, what it holds unread
            continue
        try:
            names = sorted(os.listdir(os.path.join(proc_root, rel)))
        except FileNotFoundError:  # a process's or an IRQ's directory gone meanwhile
            continue
        except OSError:  # not ours to list: masked whole (round 48 passed it over)
            found.append(inside)
            continue
        marks = (len(found), len(stack))
        for name in names:
            if visited >= budget and not kept:  # ran out inside it: what it holds, masked whole
                del found[marks[0] :], stack[marks[1] :]
                found.append(_proc_whole(inside))
                break
            visited += 1
            sub = f"{rel}/{name}"
            try:
                mode = os.lstat(os.path.join(proc_root, sub)).st_mode
            except FileNotFoundError:
                continue
            except OSError:  # cannot tell its mode: masked
                found.append(f"/proc/{sub}")
                continue
            if _root_only_mode(mode, top=False):
                found.append(f"/proc/{sub}")
            elif stat.S_ISDIR(mode):
                stack.append(sub)
    masks = _outermost(found)
    if len(masks) > MAX_PROC_MASKS:
        masks = _outermost([_proc_whole(p) for p in masks])
    if len(masks) > MAX_PROC_MASKS:
        raise ValueError(f"{len(masks)} root-only /proc directories of this host, more than {MAX_PROC_MASKS}")
    return masks


def host_root_only(proc_root: str = "/proc") -> list[str]:
    """Each ``/proc`` entry of this host outside the processes' directories that a per-call root
    command (host uid 0, no capability: the mode is the only guard) reads and others do not, as the
    container names it: the top level at each call (round 47: ``kpageflags``, ``slabinfo``...), and
    below it (round 48: ``/proc/sys/vm/stat_refresh``, whose read runs work on every host CPU,
    ``/proc/sys/fs``'s and ``kernel``'s root-only values, ``/proc/tty/driver``) walked once a
    process (~15-70 ms here; sysctls come with the kernel and its modules). ``/proc/sys/net`` and
    ``/proc/net`` are the container's own network namespace's, not walked."""
    try:
        top = sorted(name for name in os.listdir(proc_root) if not name.isdigit())
    except OSError:
        return []
    found = []
    for name in top:
        with contextlib.suppress(OSError):
            if _PLACE.fullmatch(f"/proc/{name}") and _root_only_mode(os.lstat(os.path.join(proc_root, name)).st_mode, top=True):
                found.append(f"/proc/{name}")
    with _sys_walk_lock:
        deep = _proc_walks.get(proc_root)
        if deep is None:
            deep = _proc_walks[proc_root] = _walk_proc(proc_root, [n for n in top if f"/proc/{n}" not in found])
    return [*found, *deep]


def host_root_only_sys(sys_root: str = "/sys") -> list[str]:
    """Each regular file below this host's ``/sys`` that others may not read (round 48: its mode
    is its only guard against a per-call root command, host uid 0; a read of zram's ``hot_add``
    makes a host block device), as the container names it; trees `FLOOR` masks whole are not
    walked. Walked once a process (~0.1-0.3 s here, 9,000 entries), then kept: what a later driver
    adds that way is masked by the next process, but for a module loaded since, whose directory
    is walked at the next start (round 49, docker9: one listing of ``/sys/module`` a start). At most
    `_sysmasks.MAX_MASKS` paths, directories masked whole past that or past the walk's
    `_sysmasks.MAX_ENTRIES` (a large server's PCI functions); `ValueError` only when nothing but
    ``/sys`` or a directory a container needs could hold them."""
    skip = tuple(p for p in FLOOR if p.startswith("/sys/"))
    with _sys_walk_lock:  # a second caller waits for the walk under way (`prefetch_host_walks`)
        kept = _sys_walks.get(sys_root)
        modules = _module_names(sys_root)  # before the walk: one loaded during it is walked again
        if kept is None:
            kept = collapse(walk_root_only(sys_root, skip))
        else:  # round 49: a module loaded since (a command's socket() can make the host load one)
            known = _sys_modules.get(sys_root, frozenset())
            added = [
                path
                for name in sorted(modules - known)
                if not is_under(f"/sys/module/{name}", kept)
                for path in walk_root_only(sys_root, skip, under=f"/sys/module/{name}")
            ]
            if added:
                kept = collapse([*kept, *added])
        _sys_walks[sys_root], _sys_modules[sys_root] = kept, modules
    return list(kept)


def _module_names(sys_root: str) -> frozenset[str]:
    """The names in ``<sys_root>/module`` (one listing, ~200 names: each start's whole cost)."""
    try:
        return frozenset(os.listdir(os.path.join(sys_root, "module")))
    except OSError:
        return frozenset()


def prefetch_host_walks() -> None:
    """`host_root_only_sys` and `host_root_only` of this host, for a start to overlap their walks
    (once a process) with its other work; a failure is left for the create's own call to raise."""
    with contextlib.suppress(ValueError):
        host_root_only_sys()
    host_root_only()


def masked_paths_for(
    daemon_default: list[str] | tuple[str, ...], sys_root: str = "/sys", proc_root: str = "/proc"
) -> list[str]:
    """What shellrt asks to mask: the daemon's default, then `FLOOR`, this host's per-CPU thermal
    directories, its root-only ``/proc`` entries and its root-only ``/sys`` files outside those
    (each once, the daemon's order kept)."""
    asked = [*daemon_default, *FLOOR, *host_cpu_masks(sys_root), *host_root_only(proc_root)]
    files = [p for p in host_root_only_sys(sys_root) if not is_under(p, asked)]
    return list(dict.fromkeys([*asked, *files]))


def daemon_masked_paths(
    client: docker.DockerClient,
    image: str,
    name: str,
    labels: dict[str, str],
    created: Callable[[str], None] | None = None,
) -> list[str]:
    """The daemon's own default ``MaskedPaths`` (a string list; `ValueError` when its answer is not
    one), learnt once per daemon: a container of ``image`` created with none, read, removed. It is
    never started; ``name`` and ``labels`` are a session's, so the reaper removes it if this process
    dies before it does; ``created`` gets its id the moment the daemon answers (round 47: the
    owner's signal handler removes it then, `_creating`), and may raise to stop here."""
    # The daemon's whole `/version` answer (its build, components, kernel, OS, arch) beside the URL:
    # moby 28 computes part of the default per host, and one URL may reach another host's daemon of
    # the same build (round 46, review27: the key was the URL, version and commit alone).
    version = client.api.version()
    key = (str(client.api.base_url), json.dumps(version, sort_keys=True, default=str))
    with _lock:
        if key in _known:
            return list(_known[key])
    response = client.api.create_container(
        image,
        command=["true"],
        entrypoint=[],
        name=name,
        labels=labels,
        network_disabled=True,
        host_config=client.api.create_host_config(network_mode="none", auto_remove=False),
    )
    cid = str(response["Id"])
    try:
        if created is not None:
            created(cid)
        host: Any = (client.api.inspect_container(cid).get("HostConfig") or {}).get("MaskedPaths")
    finally:
        with contextlib.suppress(docker.errors.APIError):
            client.api.remove_container(cid, force=True, v=True)
    if not isinstance(host, list) or not all(isinstance(p, str) and _PLACE.fullmatch(p) for p in host):
        raise ValueError(f"the daemon's default MaskedPaths is not a list of /proc and /sys paths: {host!r:.300}")
    with _lock:
        _known[key] = tuple(host)
    return list(host)
