"""Red team round 43 (review22): the memory the host process may use was read from its own cgroup only.

Round 42 (net2) bounds the proxies' connections by a quarter of `sandbox._hostmem.usable_memory`:
the host's memory, or its cgroup's limit when lower. But the limit is often on an ancestor: shellrt
itself moves its process into a leaf child of its cgroup to enable controllers for its session
cgroups (`sandbox._cgroup._vacate`, cgroup v2), a systemd service runs in a scope under a limited
slice, and a cgroup v1 container sees its own cgroup as the mount's root while /proc/self/cgroup
names a path under it that does not exist there. Each read "no limit" and took the host's memory
(24 GB here): the connection bound was the fd one, and a 384 MiB process was OOM-killed as before
round 42. Now every ancestor's limit counts (the kernel enforces each).

The real attack needs root (a parent memory cgroup with a limit, an unlimited child the probe runs
in); the other cases are a fake hierarchy read through the module's seams.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from sandbox import _hostmem

_ROOT = Path(__file__).resolve().parents[1]
_LIMIT = 384 << 20
_PROBE = (
    "from sandbox._hostmem import usable_memory\n"
    "from sandbox._fdbudget import FdBudget\n"
    "print(usable_memory(), FdBudget(soft_limit=1 << 20)._limits()[1])\n"
)


@contextmanager
def _nested_cgroup(limit: int) -> Iterator[Path]:
    """A memory cgroup (v1 or v2) of ``limit`` bytes with an unlimited child; the child's path."""
    name = f"shellrt-r43-review22-{os.getpid()}"
    v1 = Path("/sys/fs/cgroup/memory")
    if v1.is_dir():
        parent, knob = v1 / name, "memory.limit_in_bytes"
    else:
        parent, knob = Path("/sys/fs/cgroup") / name, "memory.max"
    child = parent / "leaf"
    try:
        parent.mkdir()
        (parent / knob).write_text(str(limit))
        if knob == "memory.max":
            (parent / "cgroup.subtree_control").write_text("+memory")
        child.mkdir()
    except OSError as exc:
        for d in (child, parent):
            with suppress(OSError):
                d.rmdir()
        message = f"cannot make a nested memory cgroup at {parent} ({exc}): run as root on a host with one"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield child
    finally:
        for d in (child, parent):
            with suppress(OSError):
                d.rmdir()


def test_a_limit_on_the_parent_cgroup_bounds_the_proxies_memory() -> None:
    with _nested_cgroup(_LIMIT) as leaf:
        done = subprocess.run(
            ["sh", "-c", f'echo $$ > {leaf}/cgroup.procs && exec "$0" -c "$1"', sys.executable, _PROBE],
            cwd=_ROOT, env={**os.environ, "PYTHONPATH": str(_ROOT)}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    usable, ceiling = map(int, done.stdout.split())
    assert usable <= _LIMIT, f"read {usable >> 20} MiB usable in a cgroup whose parent allows {_LIMIT >> 20} MiB"
    assert ceiling <= _LIMIT // 4 // (640 * 1024), ceiling


def _fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup: str, knobs: dict[str, str]) -> None:
    tmp_path.mkdir(exist_ok=True)
    proc = tmp_path / "cgroup"
    proc.write_text(cgroup)
    root = tmp_path / "sys"
    for where, text in knobs.items():
        (root / where).parent.mkdir(parents=True, exist_ok=True)
        (root / where).write_text(text)
    monkeypatch.setattr(_hostmem, "_PROC_CGROUP", proc)
    monkeypatch.setattr(_hostmem, "_CGROUP_ROOT", root)


def test_v2_a_leaf_moved_into_by_shellrt_keeps_its_parents_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(tmp_path, monkeypatch, "0::/system.slice/app.service/shellrt-leaf\n", {
        "system.slice/memory.max": "max",
        "system.slice/app.service/memory.max": str(_LIMIT),
        "system.slice/app.service/shellrt-leaf/memory.max": "max",
    })  # fmt: skip
    assert _hostmem._own_cgroup_limit() == _LIMIT


def test_v1_container_whose_path_is_not_under_its_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(tmp_path, monkeypatch, "4:memory:/docker/0123abcd\n1:cpu:/docker/0123abcd\n", {
        "memory/memory.limit_in_bytes": str(_LIMIT),
    })  # fmt: skip
    assert _hostmem._own_cgroup_limit() == _LIMIT


def test_the_lowest_limit_on_the_way_wins_and_none_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(tmp_path, monkeypatch, "0::/a/b/c\n", {
        "a/memory.max": str(2 * _LIMIT),
        "a/b/c/memory.max": str(_LIMIT),
        "memory.max": str(_LIMIT // 2),  # the mount's root (a container's own cgroup, as v1 mounts it)
    })  # fmt: skip
    assert _hostmem._own_cgroup_limit() == _LIMIT // 2
    _fake(tmp_path / "two", monkeypatch, "0::/../x\n", {"x/memory.max": "max"})
    (tmp_path / "two" / "memory.max").write_text("4096")  # outside the mount: a '..' never reaches it
    assert _hostmem._own_cgroup_limit() is None
