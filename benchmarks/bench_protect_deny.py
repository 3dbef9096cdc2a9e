"""Cost of the write-deny globs in the protected-files check (left-overs, round 15).

    python -m benchmarks.bench_protect_deny [--files 10000] [--dirs 1000] [--runs 40]

The same synthetic git repository as `benchmarks.bench_protect` (DIRS directories,
FILES ``*.py`` files, one ``*.pem`` per 100 files), checked by two guards side by
side: one without write-deny rules, one with ``Edit(**/*.pem)``, ``Write(**/.env)``
and ``Edit(./pkg0/**)``. Prints the first (baseline) check, a check with nothing
changed, and a check after a file was created (inotify), alternating per run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks._harness import summarize
from benchmarks.bench_protect import build_repo
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.ruleset import RuleSet
from shellrt.runtime.write_deny_globs import WriteDenyGlobs
from shellrt.supervisor.protect import WorkspaceGuard

RULES = ("Edit(**/*.pem)", "Write(**/.env)", "Edit(./pkg0/**)")
#: Snapshot the matches (the local backend); ``--confined``: by signature (bwrap, docker).
CONTENT = True


def _guard(root: Path, session: Path, rules: bool, texts: tuple[str, ...] = RULES) -> WorkspaceGuard:
    deny = None
    if rules:
        origin = RuleOrigin("cli", root=root)
        deny = WriteDenyGlobs(RuleSet([parse_rule(r, "deny", origin) for r in texts]), keeps_content=CONTENT)
    return WorkspaceGuard(root, session, write_deny=deny)


def bench(root: Path, tmp: Path, runs: int, texts: tuple[str, ...] = RULES) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    guards = {}
    for rules in (False, True):
        t0 = time.perf_counter()
        guards[rules] = _guard(root, tmp / f"s{int(rules)}", rules, texts)
        guards[rules].scan(revert=False)
        out[f"baseline, rules={rules}"] = [time.perf_counter() - t0]
    time.sleep(0.3)  # let the racy window pass
    for guard in guards.values():
        guard.scan(revert=True)
    for i in range(runs):
        for rules, guard in guards.items():
            t0 = time.perf_counter()
            guard.scan(revert=True)
            out.setdefault(f"nothing changed, rules={rules}", []).append(time.perf_counter() - t0)
            (root / "pkg3" / "mod150" / f"new{i}-{int(rules)}.txt").write_text("")
            t0 = time.perf_counter()
            guard.scan(revert=True)
            out.setdefault(f"after a file, rules={rules}", []).append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirs", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rule", action="append", help="a deny rule instead of the three above")
    parser.add_argument("--confined", action="store_true", help="as bwrap/docker: no snapshots")
    args = parser.parse_args()
    global CONTENT
    CONTENT = not args.confined
    with tempfile.TemporaryDirectory(prefix="bench-protect-deny-") as tmp:
        root = Path(tmp) / "repo"
        build_repo(root, args.files, args.dirs)
        for n, path in enumerate(sorted(root.glob("pkg*/mod*"))):
            if n % 10 == 0:
                (path / "key.pem").write_text("k\n")
        results = bench(root, Path(tmp), args.runs, tuple(args.rule or RULES))
    print(f"repo: {args.dirs} dirs, {args.files} files; median ms (q1-q3)")
    for name, samples in results.items():
        stats = summarize(samples)
        print(f"  {name:32s} {stats.median * 1e3:8.2f}  ({stats.q1 * 1e3:.2f}-{stats.q3 * 1e3:.2f})")


if __name__ == "__main__":
    main()
