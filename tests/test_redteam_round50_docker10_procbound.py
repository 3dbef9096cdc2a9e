"""Red team round 50, docker10: the ``/proc`` walk (round 48) had no entry bound and its masks none.

A per-call root command is host uid 0 with no capability: a ``/proc`` file guarded by its mode alone
(0400/0600) is open to it, so each start masks this host's root-only ``/proc`` entries, walked once a
process. Round 49 bounded the ``/sys`` walk (40,000 entries, 1,024 masks) and left ``/proc``'s: it
``lstat``-ed every entry outside the processes' directories and gave one mask per root-only entry.
``/proc/irq/<N>`` grows with a server's interrupts (thousands with many NICs' queues), an old
kernel's ``/proc/sys/kernel/sched_domain/cpu<N>/domain<M>/`` with its CPUs: the walk's cost and the
container's mount count (one mount per mask, made by runc at each create) grew with the host.

Now: at most `_masks.MAX_PROC_ENTRIES` entries visited, ``/proc/sys`` first; a directory not listed
when the budget runs out is masked whole at its shallowest ancestor outside the sysctl directories
programs read (``/proc/irq/17`` -> ``/proc/irq``); at most `_masks.MAX_PROC_MASKS` masks. Every
root-only file stays under a mask; ``/proc/sys``, ``kernel``, ``vm`` and ``fs`` are never masked.

The tree is a fake laid out like a large server's ``/proc`` (``proc_root`` is a parameter).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend, _masks
from sandbox.docker._sysmasks import is_under
from tests._docker_support import config, policy, require_docker, run_sh

_IRQS = 3_000  # interrupts, each with a root-only file (as a driver's 0400 entry would be)
_CPUS = 400  # an old kernel's sched_domain tree: one directory a CPU, one root-only file in it
_BUDGET = 1_000  # entries the walk may visit here (the module's own bound is 20,000)
_KEPT = ("sys", "sys/kernel", "sys/kernel/random", "sys/vm", "sys/fs")


def _file(path: Path, mode: int) -> None:
    os.makedirs(path.parent, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, mode))
    os.chmod(path, mode)


@pytest.fixture(scope="module")
def server_proc() -> Iterator[tuple[Path, set[str]]]:
    """A server's /proc outside the processes: its root and its root-only files (as a container names them)."""
    base = Path(tempfile.mkdtemp(prefix="r50-docker10-proc-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    root = base / "proc"
    secret: set[str] = set()
    try:
        for name, mode in (("cpuinfo", 0o444), ("uptime", 0o444)):
            _file(root / name, mode)
        for rel, mode in (
            ("sys/kernel/pid_max", 0o644),
            ("sys/kernel/ngroups_max", 0o444),
            ("sys/kernel/cad_pid", 0o600),
            ("sys/kernel/random/boot_id", 0o444),
            ("sys/vm/overcommit_memory", 0o644),
            ("sys/vm/stat_refresh", 0o600),
            ("sys/fs/file-max", 0o644),
            ("sys/fs/pipe-keep", 0o600),
        ):
            _file(root / rel, mode)
            if mode == 0o600:
                secret.add(f"/proc/{rel}")
        for cpu in range(_CPUS):
            domain = f"sys/kernel/sched_domain/cpu{cpu}/domain0"
            _file(root / domain / "flags", 0o644)
            _file(root / domain / "cost", 0o600)
            secret.add(f"/proc/{domain}/cost")
        for irq in range(_IRQS):
            _file(root / "irq" / str(irq) / "smp_affinity", 0o644)
            _file(root / "irq" / str(irq) / "spurious", 0o444)
            _file(root / "irq" / str(irq) / "counters", 0o400)
            secret.add(f"/proc/irq/{irq}/counters")
        _file(root / "zzz" / "late", 0o600)  # walked last, well past the budget
        secret.add("/proc/zzz/late")
        yield root, secret
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_proc_walk_visits_a_bounded_number_of_entries_and_masks_every_root_only_file(
    server_proc: tuple[Path, set[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, secret = server_proc
    # raising=False: the unfixed tree has no bound to lower (it walks every entry: the attack).
    monkeypatch.setattr(_masks, "MAX_PROC_ENTRIES", _BUDGET, raising=False)
    bound = getattr(_masks, "MAX_PROC_MASKS", 256)
    stats: list[str] = []
    real_lstat = os.lstat

    def counting(path: str | os.PathLike[str], *args: object, **kwargs: object) -> os.stat_result:
        if str(path).startswith(str(root)):
            stats.append(str(path))
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", counting)
    masks = _masks.host_root_only(str(root))
    monkeypatch.setattr(os, "lstat", real_lstat)

    # The entries of the directories always listed (the sysctls programs read) come on top of the budget.
    kept = sum(len(os.listdir(root / rel)) for rel in ("", *_KEPT))
    assert len(stats) <= _BUDGET + kept, f"the /proc walk visited {len(stats)} entries (bound {_BUDGET} + {kept})"
    assert len(masks) <= bound, f"{len(masks)} /proc masks, more than {bound}"
    unmasked = sorted(p for p in secret if not is_under(p, masks))
    assert not unmasked, f"root-only /proc files left readable: {unmasked[:5]}"
    for needed in ("/proc/sys", "/proc/sys/kernel", "/proc/sys/vm", "/proc/sys/fs"):
        assert not any(needed == m or needed.startswith(m + "/") for m in masks), (needed, masks)
    for readable in ("/proc/sys/kernel/pid_max", "/proc/sys/kernel/random/boot_id", "/proc/sys/vm/overcommit_memory"):
        assert not is_under(readable, masks), (readable, masks)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.docker
@pytest.mark.anyio
async def test_a_container_starts_with_the_proc_walk_past_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This host's real /proc walked under a budget of one entry: every directory outside the
    sysctls programs read is masked whole (``/proc/irq`` reads as empty), the container starts, and
    ``pid_max``, ``overcommit_memory`` and ``boot_id`` still read. Before: no budget, ``/proc/irq``
    listed."""
    require_docker()
    monkeypatch.setattr(_masks, "MAX_PROC_ENTRIES", 1, raising=False)
    monkeypatch.setattr(_masks, "_proc_walks", {})  # walked again at this start, under the budget
    async with DockerBackend(config(), policy(tmp_path)) as backend:
        rc, out = await run_sh(
            backend,
            "ls -A /proc/irq | wc -l; cat /proc/sys/kernel/pid_max /proc/sys/vm/overcommit_memory "
            "/proc/sys/kernel/random/boot_id >/dev/null && echo sysctls-read",
        )
    assert rc == 0, out
    lines = out.split()
    assert lines[0] == "0", f"/proc/irq lists entries past the walk's budget: {out!r}"
    assert "sysctls-read" in lines, out


def test_a_top_level_proc_directory_others_may_list_but_not_enter_is_masked(tmp_path: Path) -> None:
    """Round 47 judged a top-level ``/proc`` entry by its read bit for others alone: a mode 0554
    directory passed, and the walk below judged its 0444 file readable, though only its owner (root,
    so a per-call root command) can reach it. Round 49's rule for ``/sys``, now ``/proc``'s top too."""
    root = tmp_path / "proc"
    _file(root / "locked" / "value", 0o444)
    _file(root / "open" / "value", 0o444)
    (root / "locked").chmod(0o554)
    masks = _masks.host_root_only(str(root))
    assert is_under("/proc/locked/value", masks), masks
    assert not is_under("/proc/open/value", masks), masks
