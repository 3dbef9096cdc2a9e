"""Classifications per second on a mixed corpus, side by side with bashlex.

Run: ``python benchmarks/bench_classify.py [--seconds N]``. Prints, in one run:
- ours, cold: full ``analyze()`` (parse + plan + judge + effects), memo cache
  cleared before every call;
- ours, as deployed: ``analyze()`` with its memo cache (the corpus repeats, as
  an agent's commands and the runtime's repeated questions about one command do);
- tree-sitter parse only (the raw baseline under ours);
- bashlex parse only (the peer, when installed; it fails on some commands, which
  are counted as failures and still timed).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from shellrt.analysis import analyze
from shellrt.analysis.analyze import clear_cache
from shellrt.analysis.parse import parse_bash


def _cold(command: str) -> object:
    """Full analysis with the memo cache emptied first: every call parses and judges."""
    clear_cache()
    return analyze(command)

CORPUS = [
    "ls -la",
    "git status",
    "git log --oneline -n 20",
    "git diff HEAD~1 -- src/",
    "grep -rn 'foo' src/ --include='*.py'",
    "find . -type f -name '*.py' | wc -l",
    "cat README.md | head -50",
    "sort f | uniq -c | sort -rn | head",
    "cd src && git status",
    "echo $((1+2))",
    "[[ -f setup.py ]] && echo yes",
    "sed -n '1,20p' f",
    "ps aux | grep python",
    "rm -rf build dist",
    "git status && rm -rf x",
    'echo "$(rm x)"',
    "python -m pytest -x tests/",
    "npm install && npm run build",
    "for f in *.txt; do wc -l $f; done",
    "curl -s https://example.com | jq '.items[] | .name'",
    "timeout 5 bash -c 'sleep 1; ls'",
    "tar czf out.tgz src/ 2>/dev/null || echo failed",
    "git -c core.fsmonitor='touch x' status",
    "cat <<EOF > config.yml\nkey: value\nEOF",
]


def _rate(func: Callable[[str], object], seconds: float) -> tuple[float, int]:
    count = 0
    failures = 0
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        for command in CORPUS:
            try:
                func(command)
            except Exception:
                failures += 1
            count += 1
    return count / (time.perf_counter() - started), failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    for command in CORPUS:  # warm up the per-thread parser
        analyze(command)
    cold, _ = _rate(_cold, args.seconds)
    ours, _ = _rate(analyze, args.seconds)
    raw, _ = _rate(parse_bash, args.seconds)
    print(f"corpus: {len(CORPUS)} mixed commands, {args.seconds:.1f}s per measurement, one core")
    print(f"{'shellrt analyze() cold':<28} {cold:>12,.0f} classifications/s (no cache: parse+plan+judge)")
    print(f"{'shellrt analyze() cached':<28} {ours:>12,.0f} classifications/s (memo cache, as deployed)")
    print(f"{'tree-sitter parse only':<28} {raw:>12,.0f} parses/s   (cold = {cold / raw:.2f}x of raw parse)")
    try:
        import bashlex
    except ImportError:
        print(f"{'bashlex parse only':<28} {'n/a':>12}   (pip install 'shellrt[bashlex]')")
        return
    peer, failures = _rate(bashlex.parse, args.seconds)
    per_round = failures / max(1, round(peer * args.seconds / len(CORPUS)))
    print(f"{'bashlex parse only':<28} {peer:>12,.0f} parses/s   ({per_round:.0f}/{len(CORPUS)} commands fail to parse)")
    print(f"ratio vs bashlex parse: cold {cold / peer:.1f}x, cached {ours / peer:.1f}x")
    for label, rate in (("cold", cold), ("cached", ours)):
        met = rate >= 20_000 and rate >= 10 * peer
        print(f"goal (>= 20,000/s and >= 10x bashlex), {label}: {'MET' if met else 'NOT MET'}")


if __name__ == "__main__":
    main()
