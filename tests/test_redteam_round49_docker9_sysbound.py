"""Red team round 49, docker9: a server's many root-only ``/sys`` files made every docker start refuse.

Round 48 masks each root-only ``/sys`` file of the host (a per-call root command is host uid 0, so
the mode is the only guard) and refused every start past 2,000 of them. A bare-metal or GPU server
has far more: each PCI function's ``resource<N>``, ``resource<N>_wc`` and ``rom`` (0600/0400),
hundreds of functions with SR-IOV; each CPU's ``crash_notes``. The docker backend was unusable
there. Now the list is bounded without refusing: past a bound, directories are masked whole, never
``/sys`` or one a container needs; and the walk's own cost is bounded in entries visited.

The trees are fakes laid out like a server's (``sys_root`` is a parameter); one real container
checks the collapsed masks on this host (a bound of 4 for its 39 root-only files).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_sh


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


_FUNCTIONS = 1_200  # PCI functions (SR-IOV VFs): 8 root-only files each, 9,600 in all
_CPUS = 400  # two root-only crash_notes files each: 800
_ROOT_ONLY = (
    "config_raw",
    "resource0",
    "resource0_wc",
    "resource1",
    "resource2",
    "resource2_wc",
    "rom",
    "reset_raw",
)


def _file(path: Path, mode: int) -> None:
    os.makedirs(path.parent, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, mode))  # umask 022 keeps these


@pytest.fixture(scope="module")
def server_sys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, set[str], set[str]]]:
    """A server's /sys: (its root, its root-only files and some readable ones, as a container names them)."""
    # On a tmpfs when there is one (like sysfs, in memory): 25,000 files take ~1 s there, 15-40 s on
    # this loaded ext4.
    shm = Path("/dev/shm")
    base = (
        Path(tempfile.mkdtemp(prefix="r49sys-", dir=shm))
        if shm.is_dir()
        else tmp_path_factory.mktemp("r49sys")
    )
    root = base / "sys"
    secret: set[str] = set()
    readable: set[str] = set()

    def add(rel: str, mode: int) -> None:
        _file(root / rel, mode)
        (secret if mode & 0o444 == 0o400 else readable).add(f"/sys/{rel}")

    for n in range(_FUNCTIONS):
        fn = f"devices/pci0000:{n // 300:02x}/0000:{n // 300:02x}:{(n % 300) // 8:02x}.{n % 8}"
        for name in _ROOT_ONLY:
            add(f"{fn}/{name}", 0o600 if name.startswith("resource") else 0o400)
        add(f"{fn}/vendor", 0o444)
    cpu = "devices/system/cpu"
    add(f"{cpu}/online", 0o444)
    add(f"{cpu}/possible", 0o444)
    for n in range(_CPUS):
        add(f"{cpu}/cpu{n}/crash_notes", 0o400)
        add(f"{cpu}/cpu{n}/crash_notes_size", 0o400)
        add(f"{cpu}/cpu{n}/topology/core_id", 0o444)
    add("devices/system/node/node0/meminfo", 0o444)
    add("devices/virtual/net/lo/address", 0o444)
    add("kernel/mm/transparent_hugepage/enabled", 0o444)
    add("bus/platform/drivers/serial8250/uevent", 0o200)  # write-only: no read to mask
    add("module/nf_conntrack/parameters/hashsize", 0o600)
    add("module/nf_conntrack/refcnt", 0o444)
    add("kernel/mm/ksm/run", 0o644)
    # DMI's raw tables and ACPI's: below /sys/firmware, which the floor masks whole (not walked).
    for n in range(50):
        add(f"firmware/dmi/entries/{n}-0/raw", 0o400)
    add("firmware/acpi/tables/DSDT", 0o400)
    (root / "fs/cgroup").mkdir(parents=True)
    try:
        yield root, secret, readable
    finally:
        shutil.rmtree(base)


def _covered(path: str, masks: list[str]) -> bool:
    return any(path == m or path.startswith(m + "/") for m in masks)


def test_a_servers_root_only_sys_files_are_all_masked_in_a_bounded_count(
    server_sys: tuple[Path, set[str], set[str]],
) -> None:
    """10,450 root-only files (PCI, CPUs, DMI): the start refused before (more than 2,000)."""
    import sandbox.docker._masks as masks

    root, secret, readable = server_sys
    asked = masks.masked_paths_for(list(masks.FLOOR), str(root), str(root / "no-proc"))
    sys_masks = [p for p in asked if p.startswith("/sys/")]
    assert len(sys_masks) <= 1024 + len(masks.FLOOR), len(sys_masks)
    left = sorted(p for p in secret if not _covered(p, asked))
    assert not left, f"{len(left)} root-only files unmasked, e.g. {left[:5]}"
    for kept in (
        "/sys/devices/system/cpu/online",
        "/sys/devices/system/cpu/cpu7/topology/core_id",
        "/sys/devices/system/node/node0/meminfo",
        "/sys/devices/virtual/net/lo/address",
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/kernel/mm/ksm/run",
        "/sys/bus/platform/drivers/serial8250/uevent",
    ):
        assert kept in readable and not _covered(kept, asked), (
            kept,
            [m for m in asked if kept.startswith(m)],
        )
    for needed in (
        "/sys",
        "/sys/devices",
        "/sys/devices/system",
        "/sys/devices/system/cpu",
        "/sys/fs/cgroup",
    ):
        assert needed not in asked, needed
    # A CPU's directory (its topology) is kept: the PCI tree's collapses were enough.
    assert not any(m.startswith("/sys/devices/system/cpu/cpu") and m.count("/") == 5 for m in asked)


def test_the_walk_visits_a_bounded_number_of_entries_and_masks_the_rest_whole(
    server_sys: tuple[Path, set[str], set[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A /sys past the walk's budget: the entries visited are bounded (a huge /sys, a slow start
    otherwise), and what was not listed is masked whole; the directories a container needs are
    walked first and stay unmasked."""
    import sandbox.docker._masks as masks
    import sandbox.docker._sysmasks as sysmasks

    root, secret, _readable = server_sys
    monkeypatch.setattr(sysmasks, "MAX_ENTRIES", 3_000)
    seen = [0]
    real_scandir = os.scandir

    class _Counted:
        def __init__(self, path: str) -> None:
            self._it = real_scandir(path)

        def __enter__(self) -> _Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self._it.close()

        def __iter__(self) -> Iterator[os.DirEntry[str]]:
            for entry in self._it:
                seen[0] += 1
                yield entry

    monkeypatch.setattr(sysmasks.os, "scandir", _Counted)
    walked = masks.host_root_only_sys(str(root) + "/")  # another key than the first test's walk
    monkeypatch.undo()
    # The budget, then the lists of /sys, /sys/devices and /sys/devices/system (few entries each).
    assert seen[0] <= 3_000 + 64, seen[0]
    asked = [*masks.FLOOR, *walked]
    left = sorted(p for p in secret if not _covered(p, asked))
    assert not left, f"{len(left)} root-only files unmasked, e.g. {left[:5]}"
    assert not _covered("/sys/devices/system/cpu/online", asked)
    assert not _covered("/sys/devices/system/cpu/cpu3/topology/core_id", asked)
    assert len(walked) <= 1024


@pytest.mark.anyio
@pytest.mark.docker
async def test_a_container_starts_with_collapsed_masks_and_reads_no_root_only_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This host's 39 root-only files under a bound of 4: directories masked whole, the container
    starts, a root command finds no root-only file and reads the masked one as nothing."""
    require_docker()
    import sandbox.docker._masks as masks
    import sandbox.docker._sysmasks as sysmasks

    files = sysmasks.walk_root_only("/sys", tuple(p for p in masks.FLOOR if p.startswith("/sys/")))
    if len(files) <= 4:
        pytest.skip(f"this host has {len(files)} root-only /sys files: nothing to collapse")
    monkeypatch.setattr(sysmasks, "MAX_MASKS", 4)
    monkeypatch.setattr(masks, "_sys_walks", {})  # the process's walk, kept: done again, bounded
    async with DockerBackend(config(), policy(tmp_path)) as backend:
        assert backend.container_id
        shown = subprocess.run(
            ["docker", "inspect", "-f", "{{json .HostConfig.MaskedPaths}}", backend.container_id],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        kept = json.loads(shown.stdout)
        named = {*masks.FLOOR, *masks.host_cpu_masks()}  # the floor's and the thermal counters
        walked = [p for p in kept if p.startswith("/sys/") and p not in named]
        assert 0 < len(walked) <= 4, walked
        script = (
            "find /sys -xdev -type f -perm -u+r ! -perm -o+r 2>/dev/null;"
            f" echo read:$(cat {files[0]} 2>/dev/null | wc -c); cat /sys/devices/system/cpu/online; echo done"
        )
        code, said = await run_sh(backend, script, user="root")
    assert code == 0 and said.rstrip().endswith("done"), said
    found = [line for line in said.splitlines() if line.startswith("/sys/")]
    assert not found, f"root-only /sys files a root command reads: {found[:5]}"
    assert "read:0" in said, said
    assert any(line[:1].isdigit() for line in said.splitlines()), f"the CPU list is hidden: {said!r}"


_AS_NOBODY = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("sysmasks", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
said = {"walked": list(mod.walk_root_only(sys.argv[2], ()))}
try:
    mod.walk_root_only(sys.argv[3], ())
except ValueError as exc:
    said["refused"] = str(exc)
print(json.dumps(said))
"""


def test_a_non_root_callers_walk_masks_what_it_may_not_list() -> None:
    """A caller that is not root cannot list a mode 0700 directory; round 48's walk skipped it, and
    the root-only file inside stayed readable to a per-call root command (host uid 0). Now it is
    masked whole; a directory a container needs that cannot be listed refuses the start."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to make the tree and setpriv to walk it as uid 65534")
    base = Path(tempfile.mkdtemp(prefix="r49nolist-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        base.chmod(0o755)
        for tree in ("a", "b"):
            _file(base / tree / "sys/devices/platform/hidden/key", 0o400)
            _file(base / tree / "sys/devices/platform/open/name", 0o444)
            _file(base / tree / "sys/devices/system/cpu/online", 0o444)
            (base / tree / "sys/devices/platform/hidden").chmod(0o700)
        (base / "b/sys/devices/system/cpu").chmod(0o700)
        module = Path(__file__).resolve().parents[1] / "sandbox/docker/_sysmasks.py"
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                sys.executable,
                "-I",
                "-c",
                _AS_NOBODY,
                str(module),
                str(base / "a/sys"),
                str(base / "b/sys"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=base,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        said = json.loads(done.stdout)
    finally:
        shutil.rmtree(base)
    assert "/sys/devices/platform/hidden" in said["walked"], said
    assert not any(p.startswith("/sys/devices/platform/open") for p in said["walked"]), said
    assert "/sys/devices/system/cpu" in said.get("refused", ""), said


def test_a_directory_others_may_not_enter_is_masked_whole(tmp_path: Path) -> None:
    """A root-owned mode 0700 directory holding a mode 0444 file: the file is root's alone (others
    cannot reach it), and a per-call root command (host uid 0, its owner) reads it. Round 48's walk
    judged regular files by their own mode only, as round 47's ``/proc`` walk had before round 48."""
    import sandbox.docker._masks as masks

    root = tmp_path / "sys"
    _file(root / "devices/platform/locked/serial", 0o444)
    _file(root / "devices/platform/open/serial", 0o444)
    _file(root / "devices/system/cpu/online", 0o444)
    (root / "devices/platform/locked").chmod(0o700)
    walked = masks.host_root_only_sys(str(root))
    assert "/sys/devices/platform/locked" in walked, walked
    assert not _covered("/sys/devices/platform/open/serial", walked), walked


def test_a_module_loaded_after_the_walk_is_masked_at_the_next_start(tmp_path: Path) -> None:
    """The walk is once a process; a module loaded after it (a command's ``socket()`` of a family
    the host has not loaded makes the kernel load one, no capability needed) brings its root-only
    parameters (``module_param(..., 0600)``, like ``nf_conntrack``'s ``hashsize`` here), which
    stayed readable to a per-call root command for the rest of the process's life."""
    import sandbox.docker._masks as masks

    root = tmp_path / "sys"
    _file(root / "module/nf_conntrack/parameters/hashsize", 0o600)
    _file(root / "devices/system/cpu/online", 0o444)
    first = masks.host_root_only_sys(str(root))
    assert first == ["/sys/module/nf_conntrack/parameters/hashsize"], first
    _file(root / "module/late_proto/parameters/secret", 0o400)  # loaded after the walk
    _file(root / "module/late_proto/parameters/open", 0o444)
    later = masks.host_root_only_sys(str(root))
    assert "/sys/module/late_proto/parameters/secret" in later, later
    assert not _covered("/sys/module/late_proto/parameters/open", later), later
    assert "/sys/module/nf_conntrack/parameters/hashsize" in later, later
