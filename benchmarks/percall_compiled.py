"""Direction (d) of issue 22 item 2: the per-call plumbing compiled by mypyc against the same code
interpreted, side by side in one run (round 37).

``PYTHONPATH=. python3 -m benchmarks.percall_compiled [--turns 4] [--rounds 6] [--burst 60] [--git]``

Two copies of this tree's committed code (``git archive HEAD``) in a temporary directory, with the
same source edits (`PATCHES`: behaviour-neutral rewrites mypyc needs, listed with why), one of them
with `HOT_MODULES` compiled in place (one shared library, ``opt_level=3``); then
`benchmarks.local_percall` runs on each, taking turns, and this prints per path the median CPU of
ours per call and the per-turn ratio compiled / interpreted. The build takes ~1-2 min on two cores.

What cannot be compiled as the code stands (mypy 2.4.1's mypyc), so stays interpreted here:
``shellrt/runtime/session.py`` and ``orchestration.py`` (async generators are unimplemented),
``shellrt/runtime/execution.py`` (``CallExecutor`` is subclassed by the session's interpreted
``_RecordingExecutor``: "interpreted classes cannot inherit from compiled"), ``shellrt/tools/bash.py``
(an internal mypyc error in a method of the non-native ``Bash`` class), ``sandbox/local.py``
(``break`` inside ``try``/``finally`` is unimplemented), ``shellrt/supervisor/protect.py`` (compiles
after one edit, then fails at import: ``KeyError: 'object'`` on a class-level annotation).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.percall_ab import _COLUMNS, _one

_ROOT = Path(__file__).resolve().parent.parent

#: The per-call modules compiled: the Supervisor's start, pump, spool, exit wait and result, the
#: session cgroup's hand-off and the spawn, the transcript's appends.
HOT_MODULES = (
    "shellrt/supervisor/execution.py",
    "shellrt/supervisor/supervisor.py",
    "shellrt/supervisor/spool.py",
    "shellrt/supervisor/_inflight.py",
    "shellrt/supervisor/_deadline.py",
    "shellrt/runtime/append_log.py",
    "sandbox/_hostproc.py",
    "sandbox/_session_cgroup.py",
    "sandbox/_spawn.py",
)

#: (file, pattern, replacement, count): applied to both copies, each must match exactly ``count``
#: times (or the tree moved on and this list needs updating). Why each is needed:
PATCHES: tuple[tuple[str, str, str, int], ...] = (
    # `self._thread` and `import _thread` become C names that collide with the `__thread` keyword.
    ("sandbox/_session_cgroup.py", r"^import _thread$", "import _thread as _threadmod", 1),
    ("sandbox/_session_cgroup.py", r"_thread\.allocate_lock", "_threadmod.allocate_lock", 1),
    ("sandbox/_session_cgroup.py", r"self\._thread\b", "self._spawner_thread", 5),
    # mypyc infers `None` for a name bound from a tuple holding `None` ("add an annotation").
    (
        "sandbox/_session_cgroup.py",
        r"^(\s+)joined, error = self\._outcome$",
        r"\1joined: bool = self._outcome[0]\n\1error: object = self._outcome[1]",
        1,
    ),
    ("shellrt/runtime/append_log.py", r"^(\s+)self\._end, end = None, self\._end$", r"\1end = self._end\n\1self._end = None", 1),
    # A native class has no `__weakref__`; the Runtime keeps a weak reference to its Supervisor.
    (
        "shellrt/supervisor/supervisor.py",
        r"^class Supervisor:",
        "from mypy_extensions import mypyc_attr\n\n\n@mypyc_attr(native_class=False)\nclass Supervisor:",
        1,
    ),
    # mypy narrows `self.returncode` to None across `self._reap()`; compiled, that narrowing is a
    # runtime check, and every reap failed with "None object expected; got int".
    (
        "sandbox/_spawn.py",
        r"^(\s+)finally:\n(\s+)self\._lock\.release\(\)\n(\s+)return self\.returncode$",
        r"\1finally:\n\2self._lock.release()\n\3return getattr(self, 'returncode')",
        1,
    ),
)


def _export(into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(_ROOT), "archive", "HEAD", "sandbox", "shellrt", "benchmarks"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for name, pattern, replacement, count in PATCHES:
        path = into / name
        text, n = re.subn(pattern, replacement, path.read_text(), flags=re.MULTILINE)
        if n != count:
            raise SystemExit(f"{name}: {pattern!r} matched {n} times, not {count}: update PATCHES")
        path.write_text(text)


_BUILD = """
import sys
from setuptools import setup
from mypyc.build import mypycify
mods = sys.argv[1:]
sys.argv = [sys.argv[0], "build_ext", "--inplace"]
setup(name="shellrt-hot", ext_modules=mypycify(
    ["--follow-imports=silent", *mods], opt_level="3", separate=[(mods, "shellrt_hot")]))
"""


def _compile(tree: Path) -> None:
    """Compile `HOT_MODULES` in place; fails unless each one then loads compiled."""
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, *HOT_MODULES], cwd=tree, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    names = [m.removesuffix(".py").replace("/", ".") for m in HOT_MODULES]
    check = "import importlib, sys\nfor n in sys.argv[1:]: print(importlib.import_module(n).__file__)"
    files = subprocess.run(
        [sys.executable, "-c", check, *names],
        cwd=tree,
        env=dict(os.environ, PYTHONPATH=str(tree)),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    interpreted = [f for f in files if not f.endswith(".so")]
    if interpreted:
        raise SystemExit(f"not loaded compiled: {interpreted}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.percall_compiled", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--burst", type=int, default=60)
    parser.add_argument("--git", action="store_true", help="each workspace a fresh git repository")
    args = parser.parse_args(argv)
    if args.git:  # the children inherit it (`benchmarks.peers.ours.GIT_WORKSPACE`)
        os.environ["SHELLRT_BENCH_GIT_WORKSPACE"] = "1"
    with tempfile.TemporaryDirectory(prefix="shellrt-percall-compiled-") as tmp:
        trees = {"interpreted": Path(tmp) / "interpreted", "compiled": Path(tmp) / "compiled"}
        for tree in trees.values():
            tree.mkdir()
            _export(tree)
        _compile(trees["compiled"])
        runs: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
        load0 = os.getloadavg()[0]
        for turn in range(args.turns):
            order = list(trees.items())
            for name, tree in order if turn % 2 == 0 else order[::-1]:
                runs[name].append(_one(tree, args.rounds, args.burst, only=("sup-cold", "rt-cold")))
        load1 = os.getloadavg()[0]
    print(
        f"{args.turns} turns of local_percall ({args.rounds} x {args.burst}), load {load0:.1f} -> {load1:.1f};"
        " CPU ms a call, ours + the command's = total (x raw total)"
    )
    cpu, child = _COLUMNS.index("CPU ms"), _COLUMNS.index("child ms")
    for path in ("raw", "sup-cold", "rt-cold"):
        cells = []
        for name in trees:
            rows = [r[path] for r in runs[name] if path in r]
            raws = [r["raw"] for r in runs[name]]
            ours = statistics.median(r[cpu] for r in rows)
            kid = statistics.median(r[child] for r in rows)
            base = statistics.median(r[cpu] + r[child] for r in raws)
            cells.append(f"{name} {ours:.3f} + {kid:.3f} = {ours + kid:.3f} ({(ours + kid) / base:.2f}x)")
        ratio = [
            c[path][cpu] / i[path][cpu] for c, i in zip(runs["compiled"], runs["interpreted"], strict=True)
        ]
        per_turn = ", ".join(f"{x:.3f}" for x in ratio)
        print(f"{path:<9} " + " | ".join(cells) + f" | compiled / interpreted, ours, per turn: {per_turn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
