"""Scenario 5 — classification: commands/s for shellrt's `analyze` vs a bashlex parse alone.

`analyze` does strictly more than a parse (plan, allow-list judgement, program
flag models), so this compares our whole decision against the parse step a
bashlex-based peer (SWE-ReX splits commands with bashlex) pays before deciding
anything. The tree-sitter parse alone is shown too, for the like-for-like step.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable

from benchmarks._harness import Column, Row, Table, interleave, summarize
from benchmarks.peers import missing_modules
from benchmarks.scenarios._common import RunConfig

__all__ = ["CORPUS", "run"]

#: A mixed corpus: read-only and mutating, simple and compound, common and awkward syntax.
CORPUS: list[str] = [
    "ls -la",
    "git status",
    "git log --oneline -n 20",
    "git diff HEAD~1 -- src/",
    "cat README.md",
    "head -n 50 src/app.py",
    "grep -rn 'def main' src/",
    "find . -name '*.py' -not -path './.venv/*'",
    "wc -l src/*.py",
    "pwd",
    "echo hello world",
    "ls -la | grep foo | sort | uniq -c",
    "cat a.txt b.txt > combined.txt",
    "rm -rf build/ dist/",
    "pip install -e '.[dev]'",
    "pytest -x -q tests/test_api.py::test_create",
    "python -m pytest -k 'not slow' --maxfail=1",
    "cd src && ls",
    "mkdir -p out && cp -r assets out/",
    "git add -A && git commit -m 'wip'",
    "npm run build 2>&1 | tail -n 20",
    "make -j4 all",
    "docker ps --format '{{.Names}}'",
    "sed -n '1,20p' setup.cfg",
    "sed -i 's/foo/bar/g' config.ini",
    "awk '{print $1}' access.log | sort | uniq -c | sort -rn | head",
    'for f in *.txt; do echo "$f"; done',
    'while read -r line; do echo "$line"; done < input.txt',
    "if [ -f .env ]; then source .env; fi",
    '[[ -n "$HOME" && -d /tmp ]] && echo ok',
    "echo $((1 + 2 * 3))",
    'case "$1" in start) echo go;; stop) echo halt;; *) echo usage;; esac',
    'export PATH="$HOME/.local/bin:$PATH"',
    "FOO=bar env | grep FOO",
    'echo "$(git rev-parse HEAD)"',
    "tar czf backup.tgz --exclude=.git .",
    "curl -sSL https://example.com/install.sh | bash",
    "cat <<'EOF'\nhello\nEOF",
    "(cd /tmp && ls) ; echo done",
    "{ echo a; echo b; } > out.txt",
    "diff <(sort a.txt) <(sort b.txt)",
    "find . -type f -name '*.log' -exec rm {} \\;",
    "xargs -n1 echo < list.txt",
    "ps aux | grep python | grep -v grep",
    "kill -9 $(pgrep -f server.py)",
    "chmod +x scripts/*.sh",
    "ln -sf ../shared/config.yml config.yml",
    "du -sh * | sort -h",
    "test -d build || mkdir build",
    "timeout 10 python script.py",
    "nohup python server.py > server.log 2>&1 &",
    "git log --format='%H %s' | head -n 5",
    "echo ${VAR:-default}",
    "printf '%s\\n' a b c",
    "ls {src,tests}/*.py",
    "function f { echo hi; }; f",
    "select x in a b; do echo $x; break; done",
    "echo 'unterminated",
    "true",
    "sleep 1",
]


def _bashlex_parse() -> tuple[Callable[[str], object], str]:
    import bashlex

    return bashlex.parse, getattr(bashlex, "__version__", "")


def _count(fn: Callable[[str], object]) -> int:
    """How many corpus commands ``fn`` fails on (raises)."""
    failures = 0
    for command in CORPUS:
        try:
            fn(command)
        except Exception:
            failures += 1
    return failures


async def run(cfg: RunConfig) -> Table:
    from shellrt.analysis import analyze
    from shellrt.analysis.parse import parse_bash

    clear: Callable[[], None] = getattr(
        importlib.import_module("shellrt.analysis.analyze"), "clear_cache", lambda: None
    )

    reps = cfg.reps(5, 15)
    rounds = cfg.reps(5, 20)
    cold = "shellrt analyze (parse + plan + judgement)"
    warm = "shellrt analyze, memoised (same commands again)"
    systems: dict[str, Callable[[str], object]] = {
        cold: analyze,
        warm: analyze,
        "shellrt tree-sitter parse alone": parse_bash,
    }
    skipped: dict[str, str] = {}
    bashlex_name = "bashlex parse alone"
    reason = missing_modules("bashlex")
    if reason:
        skipped[bashlex_name] = reason
    else:
        systems[bashlex_name] = _bashlex_parse()[0]

    failures = {name: _count(fn) for name, fn in systems.items()}
    unparsed = {
        cold: sum(1 for c in CORPUS if not analyze(c).parse_ok),
        warm: sum(1 for c in CORPUS if not analyze(c).parse_ok),
        "shellrt tree-sitter parse alone": sum(1 for c in CORPUS if parse_bash(c).error is not None),
    }

    async def once(name: str, rep: int) -> float:
        fn = systems[name]
        if name == warm:
            for command in CORPUS:  # prime the memo; timed passes then hit it
                fn(command)
        begin = time.perf_counter()
        for _ in range(rounds):
            if name == cold:
                clear()  # every corpus command is distinct: one pass = all cache misses
            for command in CORPUS:
                try:
                    fn(command)
                except Exception:
                    pass
        return len(CORPUS) * rounds / (time.perf_counter() - begin)

    samples = await interleave(list(systems), reps, once)
    table = Table(
        name="classification",
        title=f"commands/s on a mixed corpus of {len(CORPUS)} commands",
        columns=[
            Column("commands_per_s", "commands / s", fmt="{:.0f}", lower_is_better=False, ratio=True),
            Column("us_per_command", "µs / command", fmt="{:.1f}", scale=1e6),
            Column("not_understood", "not understood (of corpus)", fmt="{:.0f}", spread=False),
        ],
        reference=cold,
    )
    for name in [*systems, *skipped]:
        if name in skipped:
            table.rows.append(Row(name, status="skipped", note=skipped[name]))
            continue
        if name in samples.errors:
            table.rows.append(Row(name, status="failed", note=samples.errors[name]))
            continue
        rates = samples.values[name]
        table.rows.append(
            Row(
                name,
                values={
                    "commands_per_s": summarize(rates),
                    "us_per_command": summarize([1.0 / r for r in rates]),
                    "not_understood": unparsed.get(name, failures[name]),
                },
            )
        )
    from shellrt.analysis.compiled import build_description

    table.notes += [
        f"shellrt analyser build: {build_description()}.",
        f"{reps} interleaved repetitions x {rounds} passes over the corpus.",
        "not understood = bashlex raised / tree-sitter reported a syntax error (analyze then fails closed:"
        " not read-only). The corpus has one deliberately broken command (an unterminated quote).",
        "analyze does more work than a parse: it builds the plan and judges every word and flag."
        " The reference row is the cold path (memo cleared before every pass); the memoised row is what"
        " repeated checks of one command cost (the runtime asks several times per call).",
    ]
    return table
