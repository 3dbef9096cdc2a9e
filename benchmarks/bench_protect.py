"""Cost of the protected-files check (shellrt/supervisor/protect.py) per command.

    python -m benchmarks.bench_protect [--files 10000] [--dirs 1000] [--runs 40]

Builds a synthetic git repository (DIRS directories, FILES files), then prints,
side by side in one run: one check with nothing changed, one check after a file
was created (inotify tells which directories to look at; without inotify every
directory is ``lstat``-ed), and a `true` command through the supervisor (local
backend) with and without the checks (two per command: before and after),
alternating so that machine load hits both alike.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from benchmarks._harness import summarize
from sandbox import LocalConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.protect import WorkspaceGuard


def build_repo(root: Path, files: int, dirs: int) -> None:
    per_dir = max(files // dirs, 1)
    for d in range(dirs):
        directory = root / f"pkg{d // 50}" / f"mod{d}"
        directory.mkdir(parents=True, exist_ok=True)
        for f in range(per_dir):
            (directory / f"f{f}.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def bench_scans(root: Path, session: Path, runs: int, inotify: bool) -> tuple[list[float], list[float]]:
    guard = WorkspaceGuard(root, session, use_inotify=inotify)
    guard.scan(revert=False)
    time.sleep(0.3)  # let the racy window pass
    guard.scan(revert=True)
    idle, changed = [], []
    for i in range(runs):
        t0 = time.perf_counter()
        guard.scan(revert=True)
        idle.append(time.perf_counter() - t0)
        (root / "pkg3" / "mod150" / f"new{i}.py").write_text("")
        t0 = time.perf_counter()
        guard.scan(revert=True)
        changed.append(time.perf_counter() - t0)
    return idle, changed


async def bench_commands(root: Path, tmp: Path, runs: int) -> tuple[list[float], list[float]]:
    """`true` through two supervisors on the same workspace, alternating (load hits both alike)."""
    backend = create_backend(LocalConfig(), SandboxPolicy(workspace=root))
    await backend.start()
    with_check: list[float] = []
    without: list[float] = []
    try:
        async with (
            Supervisor(backend, session_dir=tmp / "s2", protect=True) as guarded,
            Supervisor(backend, session_dir=tmp / "s3", protect=False) as plain,
        ):
            await guarded.run("true", timeout_s=30)
            await plain.run("true", timeout_s=30)
            for _ in range(runs):
                for sup, out in ((guarded, with_check), (plain, without)):
                    t0 = time.perf_counter()
                    await sup.run("true", timeout_s=30)
                    out.append(time.perf_counter() - t0)
    finally:
        await backend.close()
    return with_check, without


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirs", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-protect-") as tmp:
        root = Path(tmp) / "repo"
        build_repo(root, args.files, args.dirs)
        idle, changed = bench_scans(root, Path(tmp) / "s1", args.runs, True)
        idle_full, changed_full = bench_scans(root, Path(tmp) / "s4", args.runs, False)
        with_check, without = anyio.run(bench_commands, root, Path(tmp), args.runs)
    rows = [
        ("check, nothing changed", summarize(idle)),
        ("check after creating a file", summarize(changed)),
        ("full scan (no inotify), nothing changed", summarize(idle_full)),
        ("full scan (no inotify), after a file", summarize(changed_full)),
        ("`true` via supervisor, no check", summarize(without)),
        ("`true` via supervisor, with check", summarize(with_check)),
    ]
    print(f"repo: {args.dirs} dirs, {args.files} files; median ms (q1-q3)")
    for name, stats in rows:
        print(f"  {name:40s} {stats.median * 1e3:8.2f}  ({stats.q1 * 1e3:.2f}-{stats.q3 * 1e3:.2f})")
    ratio = summarize(with_check).median / summarize(without).median
    print(f"  per-command ratio with/without the check: {ratio:.2f}x")


if __name__ == "__main__":
    main()
