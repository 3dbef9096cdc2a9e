"""Before/after in one run: `benchmarks.local_percall` on two source trees, taking turns.

``PYTHONPATH=. python3 -m benchmarks.percall_ab [--base main] [--turns 4] [--rounds 2] [--burst 30] [--git]``

The machine is shared and its load moves: figures of two runs minutes apart do not compare, so
this alternates short runs of the same measurement (the current tree's `benchmarks` package)
over ``--base``'s ``sandbox``/``shellrt`` (exported with ``git archive`` to a temporary
directory, removed afterwards) and over this tree's, and prints per path the median of each
figure over the turns. CPU ms and context switches per call are the figures that hold under
load; wall time follows the load (issue 22, item 2).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_COLUMNS = ("wall ms", "x raw", "CPU ms", "child ms", "total", "vcsw", "ivcsw", "threads", "thr vcsw")


def _export(rev: str, into: Path) -> None:
    """``rev``'s code, this tree's benchmarks (the measurement must be the same for both)."""
    archive = subprocess.run(
        ["git", "-C", str(_ROOT), "archive", rev, "sandbox", "shellrt"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    shutil.copytree(_ROOT / "benchmarks", into / "benchmarks", ignore=shutil.ignore_patterns("results"))


def _one(tree: Path, rounds: int, burst: int, only: tuple[str, ...] = ()) -> dict[str, list[float]]:
    """One `benchmarks.local_percall` run on ``tree`` (``only``: those paths besides raw)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.local_percall",
            "--rounds",
            str(rounds),
            "--burst",
            str(burst),
            *(["--only", *only] if only else []),
        ],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows: dict[str, list[float]] = {}
    for line in out.splitlines():
        if line[:1].isspace():  # the per-thread breakdown below the table
            continue
        parts = line.split()
        if len(parts) == len(_COLUMNS) + 1 and parts[0] in (
            "raw",
            "sup-warm",
            "sup-cold",
            "rt-warm",
            "rt-cold",
        ):
            rows[parts[0]] = [float(p.rstrip("x")) for p in parts[1:]]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.percall_ab", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--base", default="main", help="the git revision to compare against (default: main)")
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--git", action="store_true", help="each workspace a fresh git repository")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--burst", type=int, default=30)
    args = parser.parse_args(argv)
    if args.git:  # the children inherit it (`benchmarks.peers.ours.GIT_WORKSPACE`)
        os.environ["SHELLRT_BENCH_GIT_WORKSPACE"] = "1"
    with tempfile.TemporaryDirectory(prefix="shellrt-percall-ab-") as tmp:
        base = Path(tmp)
        _export(args.base, base)
        trees = {args.base: base, "this tree": _ROOT}
        results: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
        load0 = os.getloadavg()[0]
        for turn in range(args.turns):
            order = list(trees.items()) if turn % 2 == 0 else list(trees.items())[::-1]
            for name, tree in order:
                results[name].append(_one(tree, args.rounds, args.burst))
        load1 = os.getloadavg()[0]
    print(f"{args.turns} turns each, alternating; load {load0:.1f} at the start, {load1:.1f} at the end")
    print(f"{'path':<9} {'tree':<10} " + " ".join(f"{c:>8}" for c in _COLUMNS))
    for path in ("raw", "sup-warm", "sup-cold", "rt-warm", "rt-cold"):
        for name in trees:
            runs = [r[path] for r in results[name] if path in r]
            if not runs:
                continue
            med = [statistics.median(col) for col in zip(*runs, strict=True)]
            print(f"{path:<9} {name:<10} " + " ".join(f"{v:8.3f}" for v in med))
    return 0


if __name__ == "__main__":
    sys.exit(main())
