"""The bwrap session cgroup's cgroup v2 path, run for real in a VM with a unified hierarchy.

This machine and CI mount memory/pids/cpu as cgroup v1, so `sandbox._cgroup`'s
v2 code could not run here (the other limit tests cover v1). One VM boot
(tests/vm/qemu.py: Debian's kernel, cgroup2 on /sys/fs/cgroup, the host's root
read-only over 9p, and an ext4 disk image made here as the workspace of bwrap
run as root: ext4 can be idmapped, 9p cannot) runs tests/vm/guest_cgroup_v2.py,
which records what it observed; each fact is asserted here on its own. Under
CI=true a missing qemu, kernel, busybox or e2fsprogs fails the tests
(`sh scripts/install-cgroup-v2-vm.sh`).
KVM is used when the host has hardware KVM; otherwise qemu emulates (TCG,
slower), as on the PVM-based machines this project runs on.
"""

from __future__ import annotations

import compileall
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require
from tests.vm.qemu import missing_parts, run_in_vm

ROOT = Path(__file__).resolve().parent.parent
GUEST = ROOT / "tests" / "vm" / "guest_cgroup_v2.py"

#: What a session cgroup must do: as root in the root cgroup, and as an unprivileged uid
#: alone in a cgroup delegated to it (the caller moves itself into a leaf child first).
_SESSION = (
    "nothing_refused",
    "created",
    "controllers_enabled",
    "limits_written",
    "command_joins",
    "memory_hog_oom_killed",
    "fork_loop_stops_at_pids_max",
    "remove_kills_and_deletes",
    "cpu_max_throttles",
)
EXPECTED = (
    "vm.only_cgroup2_mounted",
    "root.in_root_cgroup",
    *(f"root.{name}" for name in _SESSION),
    "delegated.unprivileged",
    *(f"delegated.{name}" for name in _SESSION),
    "delegated.caller_stays_in_its_subtree",
    "delegated.callers_child_moved_along",
    # refused, with the reason, when the delegated cgroup holds another process too
    "busy.refused_with_reason",
    "busy.create_raises",
    # refused when the caller's cgroup is not writable by it
    "undelegated.refused_with_reason",
    "undelegated.create_raises",
    # a controller the parent does not hand down is refused; the ones it does work
    "pidsonly.memory_and_cpu_refused",
    "pidsonly.memory_create_raises",
    "pidsonly.failed_create_leaves_nothing",
    "pidsonly.pids_limit_works",
    # the bwrap backend itself, unprivileged in a delegated subtree, --memory/--pids
    "bwrap.backend_enforces",
    "bwrap.session_cgroup_in_delegated_subtree",
    "bwrap.command_in_session_cgroup",
    "bwrap.memory_hog_oom_killed",
    "bwrap.fork_loop_stops_at_pids_max",
    "bwrap.session_cgroup_removed_at_close",
    # the bwrap backend run by root: commands under the sandbox uid, the workspace (an ext4 disk:
    # 9p cannot be idmapped) shown to it through an idmapped mount, the session cgroup under the root
    "rootbwrap.workspace_on_ext4",
    "rootbwrap.backend_enforces",
    "rootbwrap.session_cgroup_under_root_with_limits",
    "rootbwrap.command_in_session_cgroup",
    "rootbwrap.runs_as_sandbox_uid",
    "rootbwrap.workspace_file_lands_owned_by_root",
    "rootbwrap.memory_hog_oom_killed",
    "rootbwrap.fork_loop_stops_at_pids_max",
    "rootbwrap.session_cgroup_removed_at_close",
    "host.file_made_inside_is_on_the_disk_owned_by_root",
)


def compiled_package(directory: Path) -> Path:
    """A copy of ``sandbox`` with its bytecode, for the VM's PYTHONPATH: the VM emulates the CPU,
    where compiling the package again in each process that imports it costs seconds (and the
    worktree may hold no bytecode: PYTHONDONTWRITEBYTECODE)."""
    shutil.copytree(ROOT / "sandbox", directory / "sandbox", ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(directory / "sandbox", quiet=1)
    host_built_init(directory / "host-programs")
    return directory


def host_built_init(directory: Path) -> None:
    """The bwrap sessions' C init (``sandbox/zinit.c``) built here, for the guest's program cache.

    The guest (`guest_cgroup_v2.install_host_programs`) caches it where `sandbox._static_build`
    looks, so its bwrap scenarios run the same C init a host runs, without gcc under emulation
    (one build there took ~25 s, and the root and the unprivileged scenario each made one).
    Without a compiler here the guest builds or falls back exactly as before.
    """
    from sandbox import _zinit
    from sandbox._static_build import StaticBuildError, cache_name, static_program

    directory.mkdir()
    try:
        program = static_program("zinit", _zinit._source(), opt="-O2")  # as `_zinit._build` builds it
    except (StaticBuildError, OSError):
        return
    (directory / cache_name("zinit", _zinit._source())).write_bytes(program)  # the name: the cache key


@pytest.fixture(scope="module")
def vm_facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[object]]:
    missing = missing_parts()
    require(not missing, f"cannot boot the cgroup v2 VM: {'; '.join(missing)}")
    # One more boot after a timed-out one: an emulated (TCG) guest that usually finishes in 40-90 s
    # once produced nothing for 420 s (CI90) and passed in 40 s on the same tree right after. A guest
    # that hangs twice fails, with both boots' consoles.
    hung: list[str] = []
    for _attempt in range(2):
        workdir = tmp_path_factory.mktemp("cgroup-v2-vm")
        disk = workdir / "workspace.ext4"  # the root bwrap scenario's workspace (idmappable, unlike 9p)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(disk), "16M"], check=True, capture_output=True)
        try:
            run = run_in_vm(
                GUEST,
                workdir=workdir,
                pythonpath=compiled_package(workdir / "pythonpath"),
                python=sys.executable,  # the one with pydantic and anyio, for the bwrap scenarios
                timeout=270,
                disk=disk,
            )
            break
        except subprocess.TimeoutExpired:
            console = workdir / "console.log"
            hung.append(console.read_text(errors="replace")[-1500:] if console.exists() else "")
    else:
        pytest.fail("the VM program timed out twice (270 s each); consoles:\n" + "\n---\n".join(hung))
    facts_file = workdir / "out" / "facts.json"
    assert run.exit_status == 0 and facts_file.exists(), (
        f"the VM program failed (exit {run.exit_status}, {run.seconds:.0f} s, {run.accelerator}):\n"
        f"{run.stderr[-3000:]}\n--- console ---\n{run.console[-3000:]}"
    )
    facts: dict[str, list[object]] = json.loads(facts_file.read_text())
    retried = f", after {len(hung)} timed-out boot" if hung else ""
    facts["vm.run"] = [True, f"kernel {run.kernel_release}, {run.accelerator}, {run.seconds:.1f} s{retried}"]
    # read back from the image itself, after the VM is gone: the owner ext4 recorded
    stat = subprocess.run(["debugfs", "-R", "stat /made-inside", str(disk)], capture_output=True, text=True)
    owner = re.search(r"User:\s+(\d+)", stat.stdout)
    facts["host.file_made_inside_is_on_the_disk_owned_by_root"] = [
        owner is not None and owner.group(1) == "0",
        f"debugfs: {stat.stdout[:300]!r} {stat.stderr[-300:]!r}",
    ]
    return facts


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", EXPECTED)
def test_cgroup_v2_fact(vm_facts: dict[str, list[object]], name: str) -> None:
    assert name in vm_facts, f"the VM program never checked {name}: {sorted(vm_facts)}"
    ok, detail = vm_facts[name]
    assert ok, f"{name}: {detail} ({vm_facts['vm.run'][1]})"


@pytest.mark.timeout(600)
def test_the_vm_checked_nothing_unexpected(vm_facts: dict[str, list[object]]) -> None:
    """Every fact the guest recorded is asserted above (a new check cannot go unasserted)."""
    extra = set(vm_facts) - set(EXPECTED) - {"vm.run", "vm.seconds_in_program"}
    assert not extra, f"asserted nowhere: {sorted(extra)}"
