"""Classifications per second on a mixed corpus, side by side with bashlex.

Run: ``python benchmarks/bench_classify.py [--seconds N]``. Prints, in one run:
- ours, cold: full ``analyze()`` (parse + plan + judge + effects), memo cache
  cleared before every call, in the build that is installed (``pip install .``
  compiles the analyser with mypyc; an editable install runs it as pure Python;
  the first line says which);
- ours, as deployed: ``analyze()`` with its memo cache (the corpus repeats, as
  an agent's commands and the runtime's repeated questions about one command do);
- tree-sitter parse only (the raw baseline under ours; plain pipelines and lists of
  simple commands skip it: ``shellrt.analysis.fastplan`` plans them directly);
- bashlex parse only (the peer, when installed; it fails on some commands, which
  are counted as failures and still timed). It is timed in passes alternating with
  the cold row, so both see the same machine load and their ratio is fair.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchmarks.scenarios.classification import CORPUS as SCENARIO_CORPUS
from shellrt.analysis import analyze
from shellrt.analysis.analyze import clear_cache
from shellrt.analysis.compiled import build_description
from shellrt.analysis.fastheredoc import plan_fast
from shellrt.analysis.parse import parse_bash


def _cold(command: str) -> object:
    """Full analysis with the memo cache emptied first: every call parses and judges."""
    clear_cache()
    return analyze(command)


#: The scenario corpus minus the commands the list below already starts with.
_SCENARIO_ONLY = [c for c in SCENARIO_CORPUS if c not in {
    "ls -la", "git status", "git log --oneline -n 20", "git diff HEAD~1 -- src/",
}]  # fmt: skip

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
    # --- the mixed corpus of benchmarks/scenarios/classification.py (awkward syntax included)
    *_SCENARIO_ONLY,
    # --- typical coding-agent commands (about one in five needs the full parser, as in practice)
    "cd /repo && python -m pytest tests/test_utils.py -x -q 2>&1 | tail -30",
    "grep -rn 'def parse' --include=*.py .",
    'python -c "import sys; print(sys.version)"',
    "sed -n '120,180p' src/models.py",
    "git diff --stat",
    "git show HEAD --stat",
    "ls -la src/ tests/",
    "find . -name '*.py' -path '*/tests/*' | head -20",
    "cat > /tmp/test_fix.py << 'EOF'\nimport os\nprint(os.getcwd())\nEOF",
    "pip install -r requirements.txt",
    'python -m pytest -q tests/ -k "parse and not slow"',
    "head -100 CHANGELOG.md",
    "rg -n 'TODO|FIXME' src/",
    "git log -p -1 -- src/app.py",
    "wc -l $(git ls-files '*.py') | tail -1",
    "echo $PATH",
    "tail -n 50 /var/log/app.log",
    "npm test -- --watch=false",
    "cargo build --release 2>&1 | tail -20",
    "which python3 && python3 --version",
    "diff -u old.txt new.txt",
    "git checkout -b fix/parser-bug",
    "mkdir -p tests/fixtures && touch tests/fixtures/__init__.py",
    "for i in 1 2 3; do python bench.py --seed $i; done",
    "export PYTHONPATH=src && python -m app",
    "python -m json.tool config.json | head -40",
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


def _paired_rates(
    first: Callable[[str], object], second: Callable[[str], object], seconds: float
) -> tuple[float, float, int]:
    """Rates of two functions measured in alternating corpus passes (``seconds`` each, about).

    Other processes on a shared machine change the speed of a core from second to
    second; alternating passes puts both under the same load, so their ratio is fair.
    Returns (first rate, second rate, failures of second per corpus pass).
    """
    spent = [0.0, 0.0]
    counts = [0, 0]
    failures = 0
    clock = time.perf_counter
    while min(spent) < seconds:
        for index, func in enumerate((first, second)):
            started = clock()
            for command in CORPUS:
                try:
                    func(command)
                except Exception:
                    if index:
                        failures += 1
            spent[index] += clock() - started
            counts[index] += len(CORPUS)
    passes = counts[1] // len(CORPUS)
    return counts[0] / spent[0], counts[1] / spent[1], round(failures / max(1, passes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    for command in CORPUS:  # warm up the per-thread parser
        analyze(command)
    try:
        import bashlex
    except ImportError:
        bashlex = None
    if bashlex is not None:
        # Cold and bashlex alternate pass by pass: the ratio compares them under the same load.
        cold, peer, per_round = _paired_rates(_cold, bashlex.parse, args.seconds)
    else:
        cold, _ = _rate(_cold, args.seconds)
    ours, _ = _rate(analyze, args.seconds)
    raw, _ = _rate(parse_bash, args.seconds)
    simple = sum(plan_fast(command) is not None for command in CORPUS)
    print(f"corpus: {len(CORPUS)} mixed commands, {args.seconds:.1f}s per measurement, one core")
    print(f"  analyser build: {build_description()}")
    print(
        f"  {simple} take the parser-free path (plain pipelines/lists, quoted here-documents), {len(CORPUS) - simple} need tree-sitter"
    )
    print(f"{'shellrt analyze() cold':<28} {cold:>12,.0f} classifications/s (no cache: parse+plan+judge)")
    print(f"{'shellrt analyze() cached':<28} {ours:>12,.0f} classifications/s (memo cache, as deployed)")
    print(f"{'tree-sitter parse only':<28} {raw:>12,.0f} parses/s   (cold = {cold / raw:.2f}x of raw parse)")
    if bashlex is None:
        print(f"{'bashlex parse only':<28} {'n/a':>12}   (pip install 'shellrt[bashlex]')")
        return
    print(
        f"{'bashlex parse only':<28} {peer:>12,.0f} parses/s   ({per_round}/{len(CORPUS)} commands fail to parse;"
        " timed in alternation with the cold row)"
    )
    print(f"ratio vs bashlex parse: cold {cold / peer:.1f}x, cached {ours / peer:.1f}x")
    for label, rate in (("cold", cold), ("cached", ours)):
        met = rate >= 20_000 and rate >= 10 * peer
        print(f"goal (>= 20,000/s and >= 10x bashlex), {label}: {'MET' if met else 'NOT MET'}")


if __name__ == "__main__":
    main()
