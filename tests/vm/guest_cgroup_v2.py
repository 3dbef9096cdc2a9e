"""Runs INSIDE the cgroup-v2 VM (tests/vm/qemu.py) as root: exercises `sandbox._cgroup`'s v2 path for real.

``python guest_cgroup_v2.py OUT`` (the host test's interpreter) runs each scenario
in a forked child placed in the cgroup and under the uid the scenario is about,
and writes every observed fact to ``OUT/facts.json`` as ``{name: [ok, detail]}``;
tests/test_cgroup_v2_vm.py asserts each one on the host. The `_cgroup` scenarios
load ``sandbox/_cgroup.py`` by path, afresh in each child (`cgroup_unavailable_reasons`
is probed once per module); the bwrap ones use the package, imported once before
the forks.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

#: Where the package under test is: the VM's PYTHONPATH (the host test compiles a copy there).
ROOT = Path(os.environ.get("PYTHONPATH") or Path(__file__).resolve().parents[2])
CGROUP = Path("/sys/fs/cgroup")
USER = 4242  # an unprivileged uid to delegate a subtree to
CONTROLLERS = ("memory", "pids", "cpu")
#: Isolated and without site-packages: each start is several times faster (the VM emulates the CPU).
PYTHON = (sys.executable, "-I", "-S")
Facts = dict[str, tuple[bool, str]]


@dataclass(frozen=True)
class Limits:
    """Duck-typed `sandbox.policy.ResourceLimits` (the fields `SessionCgroup.create` reads)."""

    memory_bytes: int | None = None
    pids: int | None = None
    cpus: float | None = None


def load_cgroup() -> ModuleType:
    """A fresh `sandbox._cgroup` (its own probe cache), from the package main imported: the
    world-readable copy, which the unprivileged scenarios can read too."""
    import sandbox

    path = Path(sandbox.__file__ or "").with_name("_cgroup.py")
    spec = importlib.util.spec_from_file_location("cgroup_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


_last = [time.monotonic()]


def fact(facts: Facts, name: str, ok: bool, detail: object = "") -> None:
    """Record one observation, with the seconds it took since the previous one (emulation is slow)."""
    now = time.monotonic()
    facts[name] = (bool(ok), f"{detail} [{now - _last[0]:.1f} s]")
    _last[0] = now


def run_in(group: Any, argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``argv`` started through the session cgroup's join prefix, as the session's commands are."""
    return subprocess.run(
        [*group.enter_argv(), *argv], capture_output=True, text=True, timeout=timeout, check=False
    )


HOG = "b = bytearray(256 * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')"
#: Forks until the kernel refuses; the children hold no pipe of ours and leave when this process ends.
FORK_LOOP = """
import os
hold, release = os.pipe()
n = 0
try:
    while n < 200:
        if os.fork() == 0:
            os.close(release)
            os.closerange(0, 3)
            os.read(hold, 1)
            os._exit(0)
        n += 1
except OSError as exc:
    print(n, exc.errno)
else:
    print(n, 0)
"""
#: A dash busy loop, stopped after a second: starts in a blink even under emulation.
SPIN = ["timeout", "1", "/bin/sh", "-c", "while :; do :; done"]


def check_session(facts: Facts, prefix: str, cg: ModuleType, parent: Path) -> None:
    """Make a session cgroup with all three limits under ``parent`` and check each one holds."""
    reasons = cg.cgroup_unavailable_reasons()
    fact(facts, f"{prefix}.nothing_refused", reasons == {}, reasons)
    try:
        # cpus=2 here (more than a single-threaded command uses: the Python workloads below are slow
        # to start under emulation); the 0.1 CPU throttling is checked in a session of its own.
        group = cg.SessionCgroup.create(Limits(memory_bytes=64 * 2**20, pids=24, cpus=2))
    except OSError as exc:
        fact(facts, f"{prefix}.created", False, f"{type(exc).__name__}: {exc}")
        return
    try:
        dirs = [d for d, _ in group.dirs]
        where = dirs[0] if dirs else None
        fact(
            facts,
            f"{prefix}.created",
            len(dirs) == 1 and where is not None and where.parent == parent and group.dirs[0][1] == 2,
            group.dirs,
        )
        if where is None:
            return
        subtree = (parent / "cgroup.subtree_control").read_text().split()
        fact(facts, f"{prefix}.controllers_enabled", all(c in subtree for c in CONTROLLERS), subtree)
        values = {n: (where / n).read_text().strip() for n in ("memory.max", "pids.max", "cpu.max")}
        swap = where / "memory.swap.max"
        values["memory.swap.max"] = swap.read_text().strip() if swap.exists() else "(absent)"
        fact(
            facts,
            f"{prefix}.limits_written",
            values["memory.max"] == str(64 * 2**20)
            and values["pids.max"] == "24"
            and values["cpu.max"] == "200000 100000"
            and values["memory.swap.max"] in ("0", "(absent)"),
            values,
        )
        joined = run_in(group, ["cat", "/proc/self/cgroup"])
        expected = "0::/" + str(where.relative_to(CGROUP))
        fact(facts, f"{prefix}.command_joins", joined.stdout.strip() == expected, (joined.stdout, expected))

        hog = run_in(group, [*PYTHON, "-c", HOG])
        kills = group.oom_kills()
        fact(
            facts,
            f"{prefix}.memory_hog_oom_killed",
            hog.returncode == -signal.SIGKILL and "survived" not in hog.stdout and kills >= 1,
            f"rc={hog.returncode} oom_kills={kills} stdout={hog.stdout!r} stderr={hog.stderr[-200:]!r}",
        )

        forks = run_in(group, [*PYTHON, "-c", FORK_LOOP])
        events = (where / "pids.events").read_text().split()
        started, error = (forks.stdout.split() + ["?", "?"])[:2]
        fact(
            facts,
            f"{prefix}.fork_loop_stops_at_pids_max",
            started.isdigit() and int(started) < 24 and error == "11" and events[-1] != "0",
            f"forked={started} errno={error} pids.events={events} stderr={forks.stderr[-200:]!r}",
        )
        time.sleep(0.1)

        leftover = subprocess.Popen([*group.enter_argv(), "sleep", "1000"])
        # Removed only once it has joined (the join script writes its pid, then execs sleep): a
        # fixed 0.5 s was not enough in a loaded CI's emulated VM, where the join then found the
        # group gone and refused to run the command (exit 125: right, but not what is tested).
        procs = where / "cgroup.procs"
        for _ in range(600):
            if str(leftover.pid) in procs.read_text().split() or leftover.poll() is not None:
                break
            time.sleep(0.1)
        group.remove()
        try:
            code = leftover.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        fact(
            facts,
            f"{prefix}.remove_kills_and_deletes",
            code == -signal.SIGKILL and not where.exists() and group.dirs == [],
            f"leftover exit={code} exists={where.exists()}",
        )
    finally:
        group.remove()
    check_cpu(facts, prefix, cg)


def check_cpu(facts: Facts, prefix: str, cg: ModuleType) -> None:
    """A 0.1 CPU session: a busy loop is throttled (cpu.max written, cpu.stat counts throttled periods)."""
    group = cg.SessionCgroup.create(Limits(cpus=0.1))
    try:
        where = group.dirs[0][0]
        cpu_max = (where / "cpu.max").read_text().strip()
        spin = run_in(group, SPIN)
        stat = dict(line.split() for line in (where / "cpu.stat").read_text().splitlines())
        fact(
            facts,
            f"{prefix}.cpu_max_throttles",
            cpu_max == "10000 100000" and spin.returncode == 124 and int(stat.get("nr_throttled", "0")) > 0,
            f"cpu.max={cpu_max} rc={spin.returncode} cpu.stat={stat}",
        )
    finally:
        group.remove()


def scenario_root(facts: Facts) -> None:
    """shellrt as root in the root cgroup (no systemd: the VM's pid 1 is a shell)."""
    cg = load_cgroup()
    own = Path("/proc/self/cgroup").read_text().strip()
    fact(facts, "root.in_root_cgroup", own == "0::/", own)
    check_session(facts, "root", cg, CGROUP)


def scenario_delegated(facts: Facts) -> None:
    """An unprivileged uid in a cgroup delegated to it (chowned, controllers available), with a child
    it started earlier (an MCP server, say) in the same cgroup."""
    cg = load_cgroup()
    fact(facts, "delegated.unprivileged", os.geteuid() == USER, os.geteuid())
    own = Path("/proc/self/cgroup").read_text().strip()
    child = subprocess.Popen(["sleep", "1000"])
    try:
        check_session(facts, "delegated", cg, CGROUP / "delegated")
        after = Path("/proc/self/cgroup").read_text().strip()
        fact(facts, "delegated.caller_stays_in_its_subtree", after == f"{own}/shellrt.leaf", (own, after))
        moved = Path(f"/proc/{child.pid}/cgroup").read_text().strip()
        fact(facts, "delegated.callers_child_moved_along", moved == after, (moved, after))
    finally:
        child.kill()
        child.wait()


def scenario_busy(facts: Facts) -> None:
    """A delegated cgroup that holds another process besides the caller: v2 cannot enable controllers."""
    cg = load_cgroup()
    reasons = cg.cgroup_unavailable_reasons()
    fact(
        facts,
        "busy.refused_with_reason",
        set(reasons) == {"memory", "pids", "cpus"} and all("other processes" in r for r in reasons.values()),
        reasons,
    )
    try:
        group = cg.SessionCgroup.create(Limits(memory_bytes=64 * 2**20))
    except cg.CgroupUnavailableError as exc:
        fact(facts, "busy.create_raises", "other processes" in str(exc), exc)
    else:
        group.remove()
        fact(facts, "busy.create_raises", False, "a session cgroup was made")


def scenario_not_delegated(facts: Facts) -> None:
    """An unprivileged uid in a root-owned cgroup: nothing it may write."""
    cg = load_cgroup()
    reasons = cg.cgroup_unavailable_reasons()
    fact(
        facts,
        "undelegated.refused_with_reason",
        set(reasons) == {"memory", "pids", "cpus"}
        and all(f"not writable by uid {USER}" in r for r in reasons.values()),
        reasons,
    )
    try:
        group = cg.SessionCgroup.create(Limits(pids=10))
    except cg.CgroupUnavailableError as exc:
        fact(facts, "undelegated.create_raises", True, exc)
    else:
        group.remove()
        fact(facts, "undelegated.create_raises", False, "a session cgroup was made")


def scenario_pids_only(facts: Facts) -> None:
    """Root in a cgroup whose parent hands down only the pids controller."""
    cg = load_cgroup()
    reasons = cg.cgroup_unavailable_reasons()
    fact(
        facts,
        "pidsonly.memory_and_cpu_refused",
        set(reasons) == {"memory", "cpus"}
        and "memory controller is not delegated" in reasons["memory"]
        and "cpu controller is not delegated" in reasons["cpus"],
        reasons,
    )
    try:
        group = cg.SessionCgroup.create(Limits(memory_bytes=64 * 2**20, pids=10))
    except cg.CgroupUnavailableError as exc:
        fact(facts, "pidsonly.memory_create_raises", "memory" in str(exc), exc)
    else:
        group.remove()
        fact(facts, "pidsonly.memory_create_raises", False, "a session cgroup was made")
    leftovers = [p.name for p in (CGROUP / "pidsonly").rglob("shellrt-*")]
    fact(facts, "pidsonly.failed_create_leaves_nothing", leftovers == [], leftovers)
    try:
        group = cg.SessionCgroup.create(Limits(pids=10))
    except OSError as exc:
        fact(facts, "pidsonly.pids_limit_works", False, exc)
        return
    forks = run_in(group, [*PYTHON, "-c", FORK_LOOP])
    group.remove()
    started = (forks.stdout.split() or ["?"])[0]
    fact(
        facts,
        "pidsonly.pids_limit_works",
        started.isdigit() and int(started) < 10,
        f"rc={forks.returncode} stdout={forks.stdout!r} stderr={forks.stderr[-300:]!r}",
    )


async def _bwrap_session(workspace: Path) -> Facts:
    """A bwrap session with --memory/--pids limits, through the real backend (zygote and all)."""
    from sandbox import BwrapConfig, ExecRequest, ResourceLimits, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from sandbox.factory import create_backend

    facts: Facts = {}
    policy = SandboxPolicy(workspace=workspace, limits=ResourceLimits(memory_bytes=64 << 20, pids=24))
    backend = create_backend(BwrapConfig(persistent=True), policy)
    fact(facts, "bwrap.backend_enforces", isinstance(backend, BwrapBackend), type(backend).__name__)

    async def run(*argv: str) -> tuple[str, Any]:
        proc = await backend.exec(ExecRequest(argv=argv, cwd=str(workspace), merge_stderr=True))
        chunks = []
        async for chunk in proc.stdout:
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace"), await proc.wait()

    async with backend:
        group = backend._cgroup  # type: ignore[attr-defined]
        where = group.dirs[0][0] if group is not None and group.dirs else Path("/nonexistent")
        fact(facts, "bwrap.session_cgroup_in_delegated_subtree", where.parent == CGROUP / "bwrap", where)
        seen, _ = await run("cat", "/proc/self/cgroup")
        # its cgroup namespace's root is the session cgroup (round 17): elsewhere it reads "/.."
        fact(facts, "bwrap.command_in_session_cgroup", seen.strip() == "0::/" and where.is_dir(), seen)
        output, status = await run("python3", "-I", "-S", "-c", HOG)
        fact(
            facts,
            "bwrap.memory_hog_oom_killed",
            status.oom_killed and "survived" not in output,
            (status, output),
        )
        output, status = await run("python3", "-I", "-S", "-c", FORK_LOOP)
        started = (output.split() or ["?"])[0]
        fact(
            facts,
            "bwrap.fork_loop_stops_at_pids_max",
            started.isdigit() and int(started) < 24 and " 11" in output,
            (status, output),
        )
    fact(facts, "bwrap.session_cgroup_removed_at_close", not where.exists(), where)
    return facts


def scenario_bwrap(facts: Facts) -> None:
    """The bwrap backend itself, run by an unprivileged uid alone in a delegated cgroup (as root, its
    workspace must be idmappable, which 9p and 6.1's tmpfs are not: `scenario_root_bwrap`)."""
    import anyio

    workspace = Path("/dev/shm/bwrap-workspace")
    workspace.mkdir()
    facts |= anyio.run(_bwrap_session, workspace)


#: Where main mounts the ext4 disk (/dev/vda) the host made: a workspace that can be idmapped.
EXT4_WORKSPACE = Path("/dev/shm/ext4-workspace")
#: Where a new file lands, and who runs it: its uid, capabilities and user namespace's uid map.
WHOAMI = "echo made >made-inside; stat -c %u made-inside; id -u; grep ^CapEff /proc/self/status; cat /proc/self/uid_map"


def kernel_uid(uid: int, uid_map: list[str]) -> int | None:
    """``uid`` as the host kernel knows it, through the lines of a /proc/PID/uid_map."""
    for line in uid_map:
        inside, outside, count = map(int, line.split())
        if inside <= uid < inside + count:
            return outside + uid - inside
    return None


async def _root_bwrap_session(workspace: Path) -> Facts:
    """Root's bwrap session: commands under the sandbox uid, the workspace idmapped, limits in a
    session cgroup directly under the root cgroup."""
    from sandbox import BwrapConfig, ExecRequest, ResourceLimits, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from sandbox.factory import create_backend

    facts: Facts = {}
    config = BwrapConfig(persistent=True)
    limits = ResourceLimits(memory_bytes=64 << 20, pids=24, cpus=2)
    backend = create_backend(config, SandboxPolicy(workspace=workspace, limits=limits))
    fact(facts, "rootbwrap.backend_enforces", isinstance(backend, BwrapBackend), type(backend).__name__)

    async def run(*argv: str) -> tuple[str, Any]:
        proc = await backend.exec(ExecRequest(argv=argv, cwd=str(workspace), merge_stderr=True))
        chunks = []
        async for chunk in proc.stdout:
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace"), await proc.wait()

    async with backend:
        uid = backend.sandbox_ids[0] if backend.sandbox_ids is not None else None
        group = backend._cgroup  # type: ignore[attr-defined]
        where = group.dirs[0][0] if group is not None and group.dirs else Path("/nonexistent")
        values = {n: (where / n).read_text().strip() for n in ("memory.max", "pids.max", "cpu.max")}
        fact(
            facts,
            "rootbwrap.session_cgroup_under_root_with_limits",
            where.parent == CGROUP
            and values == {"memory.max": str(64 << 20), "pids.max": "24", "cpu.max": "200000 100000"},
            (where, values),
        )
        seen, _ = await run("cat", "/proc/self/cgroup")
        # its cgroup namespace's root is the session cgroup (round 17): elsewhere it reads "/.."
        fact(facts, "rootbwrap.command_in_session_cgroup", seen.strip() == "0::/" and where.is_dir(), seen)
        output, status = await run("sh", "-c", WHOAMI)
        lines = output.splitlines()
        inside, inner_uid, caps = (lines + ["", "", ""])[:3]
        host_uid = kernel_uid(int(inner_uid), lines[3:]) if inner_uid.isdigit() else None
        fact(
            facts,
            "rootbwrap.runs_as_sandbox_uid",
            status.exit_code == 0 and host_uid == uid and caps.split() == ["CapEff:", "0" * 16],
            (status, output),
        )
        made = workspace / "made-inside"
        on_disk = made.stat().st_uid if made.exists() else None
        fact(
            facts,
            "rootbwrap.workspace_file_lands_owned_by_root",
            on_disk == 0 and inside.strip() == str(uid),
            f"owner on the ext4 disk={on_disk}, seen inside={inside}",
        )
        output, status = await run("python3", "-I", "-S", "-c", HOG)
        fact(
            facts,
            "rootbwrap.memory_hog_oom_killed",
            status.exit_code == 137 and status.oom_killed and "survived" not in output,
            (status, output[-300:]),
        )
        output, status = await run("python3", "-I", "-S", "-c", FORK_LOOP)
        started = (output.split() or ["?"])[0]
        fact(
            facts,
            "rootbwrap.fork_loop_stops_at_pids_max",
            started.isdigit() and int(started) < 24 and " 11" in output,
            (status, output[-300:]),
        )
    fact(facts, "rootbwrap.session_cgroup_removed_at_close", not where.exists(), where)
    return facts


def scenario_root_bwrap(facts: Facts) -> None:
    """The bwrap backend run by root in the root cgroup, its workspace on ext4 (idmapped)."""
    import anyio

    mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    kind = next((m[2] for m in mounts if m[1] == str(EXT4_WORKSPACE)), None)
    fact(facts, "rootbwrap.workspace_on_ext4", kind == "ext4" and os.geteuid() == 0, (kind, os.geteuid()))
    facts |= anyio.run(_root_bwrap_session, EXT4_WORKSPACE)


SCENARIOS: dict[str, Callable[[Facts], None]] = {
    "root": scenario_root,
    "delegated": scenario_delegated,
    "busy": scenario_busy,
    "undelegated": scenario_not_delegated,
    "pidsonly": scenario_pids_only,
    "bwrap": scenario_bwrap,
    "rootbwrap": scenario_root_bwrap,
}


def make_cgroup(path: Path, *, owner: int | None = None, enable: tuple[str, ...] = ()) -> Path:
    path.mkdir()
    if enable:
        (path / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in enable))
    if owner is not None:  # what systemd's Delegate=yes does: the directory and its delegation files
        for name in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
            os.chown(path / name, owner, owner)
    return path


def world_readable_copy() -> Path:
    """The package under test, copied where an unprivileged uid can read it (the bwrap backend's
    zygote, run as that uid, imports it); returns the directory to put on the path."""
    copy = Path("/dev/shm/shellrt-cgroup-v2")
    copy.mkdir()
    shutil.copytree(ROOT / "sandbox", copy / "sandbox")  # with __pycache__: compiling is slow here
    return copy


def expose_interpreter() -> None:
    """Make this interpreter (the host test's: it has pydantic and anyio) runnable by USER.

    A pyenv interpreter or a venv may live under /root (mode 0700): /root is masked by a
    tmpfs in this VM, with only the trees the interpreter needs bound back in, at their paths.
    """
    python = Path(sys.executable)
    home = Path("/root")
    trees = sorted(
        {home / p.relative_to(home).parts[0] for p in (python, python.resolve()) if p.is_relative_to(home)}
    )
    if trees:
        kept = Path("/dev/shm/root-trees")
        for tree in trees:
            (kept / tree.name).mkdir(parents=True)
            subprocess.run(["mount", "--bind", str(tree), str(kept / tree.name)], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", str(home)], check=True)
        for tree in trees:
            tree.mkdir()
            subprocess.run(["mount", "--bind", str(kept / tree.name), str(tree)], check=True)


def _set_dumpable() -> None:
    import ctypes

    pr_set_dumpable = 4
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 1)")


def spawn(name: str, cgroup: Path, uid: int | None = None) -> Facts:
    """Run scenario ``name`` in a forked child that joins ``cgroup`` (and drops to ``uid``) first.

    Forked, not a fresh interpreter: under emulation each start and each import of the
    package costs seconds. Isolation holds: every scenario loads `sandbox._cgroup` anew
    (`load_cgroup`), and this parent never probes the cgroup through the package it preloaded.
    """
    results, report = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, whatever happens
        code = 1  # its report could not be written
        try:
            os.close(results)
            found: Facts = {}
            try:
                signal.alarm(240)
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))
                if uid is not None:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                    # A process that dropped root is made non-dumpable by the kernel; a service doing so
                    # must become dumpable again to run non-root sandboxes, which enter the process's
                    # budget namespace by its /proc path (`sandbox._ucounts`, round 21; the start refuses
                    # otherwise, saying so). An unprivileged caller started as that uid already is.
                    _set_dumpable()
                _last[0] = time.monotonic()
                SCENARIOS[name](found)
            except BaseException:
                found[f"{name}.scenario_ran"] = (False, traceback.format_exc()[-1500:])
            with os.fdopen(report, "w") as stream:
                json.dump(found, stream)
            code = 0
        finally:
            os._exit(code)
    os.close(report)
    with os.fdopen(results) as stream:
        text = stream.read()
    _, status = os.waitpid(pid, 0)
    try:
        facts: Facts = {k: (bool(v[0]), str(v[1])) for k, v in json.loads(text).items()}
    except ValueError:
        facts = {}
    if status != 0:
        alarm = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM
        facts[f"{name}.scenario_ran"] = (
            False,
            f"wait status {status}{' (its 240 s alarm)' if alarm else ''}",
        )
    return facts


def install_host_programs() -> None:
    """Cache the programs the host test built (`tests.test_cgroup_v2_vm.host_built_init`: the bwrap
    sessions' C init) where `sandbox._static_build` finds them: a directory only root wrote.

    gcc under emulation took ~25 s per build, and each scenario process built its own.
    """
    built = ROOT / "host-programs"
    cache = Path("/dev/shm/.vm-cache")
    (cache / "shellrt").mkdir(parents=True, mode=0o700)
    os.environ["XDG_CACHE_HOME"] = str(cache)
    from sandbox._static_build import StaticBuildError, store

    for program in sorted(built.iterdir()) if built.is_dir() else []:
        try:  # vouched for here: with its MAC under this uid's keyring secret (round 28)
            store(cache / "shellrt" / program.name, program.read_bytes())
        except (StaticBuildError, OSError):
            return


def preload() -> str:
    """What the bwrap scenarios import, imported once here so that each forked child has it, and
    the bwrap session init loaded (each child inherits it); returns which init that is."""
    import anyio  # noqa: F401

    import sandbox.bwrap  # noqa: F401
    import sandbox.factory  # noqa: F401
    from sandbox._zinit import init_kind

    return init_kind()


def writable_tmp(out: Path) -> None:
    """A writable /tmp, as a booted host has (shellrt keeps its holders there whatever TMPDIR says,
    round 40; this VM's /tmp is the host root's, read-only), with ``out`` (the host's 9p directory
    below the old /tmp, where the facts and the exit status go) bound back at its path."""
    old = Path("/dev/shm/.vm/old-tmp")
    old.mkdir()
    subprocess.run(["mount", "--rbind", "/tmp", str(old)], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp"], check=True)
    if out.is_relative_to("/tmp"):
        out.mkdir(parents=True)
        subprocess.run(["mount", "--rbind", str(old / out.relative_to("/tmp")), str(out)], check=True)


def main(out: Path) -> None:
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    started = time.monotonic()
    expose_interpreter()
    copy = world_readable_copy()
    sys.path.insert(0, str(copy))
    os.environ["PYTHONPATH"] = str(copy)
    install_host_programs()
    init = preload()
    facts: Facts = {}
    setup = time.monotonic() - started
    facts |= spawn("root", CGROUP)
    # A cgroup delegated to USER (controllers available to it through the root's subtree_control).
    (CGROUP / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
    delegated = make_cgroup(CGROUP / "delegated", owner=USER)
    facts |= spawn("delegated", delegated, USER)
    busy = make_cgroup(CGROUP / "busy", owner=USER)
    sitter = subprocess.Popen(["sleep", "1000"], preexec_fn=lambda: (busy / "cgroup.procs").write_text("0"))
    try:
        facts |= spawn("busy", busy, USER)
    finally:
        sitter.kill()
        sitter.wait()
    facts |= spawn("undelegated", make_cgroup(CGROUP / "plain"), USER)
    pids_only = make_cgroup(CGROUP / "pidsonly", enable=("pids",))
    facts |= spawn("pidsonly", make_cgroup(pids_only / "caller"))
    writable_tmp(out)
    facts |= spawn("bwrap", make_cgroup(CGROUP / "bwrap", owner=USER), USER)
    EXT4_WORKSPACE.mkdir()
    mounted = subprocess.run(["mount", "-t", "ext4", "/dev/vda", str(EXT4_WORKSPACE)], capture_output=True)
    if mounted.returncode != 0:
        fact(facts, "rootbwrap.workspace_on_ext4", False, mounted.stderr.decode(errors="replace"))
    else:
        # a booted system's /run is its own tmpfs (the uid leases live there); this VM's is the host's, read-only
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run"], check=True)
        facts |= spawn("rootbwrap", CGROUP)
    mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    cgroup_mounts = [(m[1], m[2]) for m in mounts if m[2] in ("cgroup", "cgroup2")]
    fact(facts, "vm.only_cgroup2_mounted", cgroup_mounts == [("/sys/fs/cgroup", "cgroup2")], cgroup_mounts)
    total = time.monotonic() - started
    facts["vm.seconds_in_program"] = (
        True,
        f"{total:.1f} (booted in {uptime:.1f} s; setup and imports {setup:.1f} s; bwrap session init: {init})",
    )
    (out / "facts.json").write_text(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
