"""Run pytest as an unprivileged host user (uid 65534) from a root test: the non-root caller's view.

CI runs as root, so the bwrap suite would only ever see a root caller. Here a root
process prepares what uid 65534 needs and runs the chosen tests as that uid:

* the system interpreter (``/usr/bin/python3``): root's own (pyenv under the 0700
  ``/root``) is out of that uid's reach. It must be the same minor version, so the
  extension modules of the root's packages (pydantic_core, the in-place mypyc build
  of ``shellrt.analysis``) load there too;
* a directory on ``PYTHONPATH`` holding the third-party distributions the chosen
  tests import -- found by collecting them in a root subprocess and mapping the
  modules it loaded to their distributions, plus shellrt's own core requirements --
  hard-linked (copied where a link is impossible) from root's site-packages;
* a copy of the repository's packages, tests and config, hard-linked the same way
  (a repository under ``/root`` is unreachable too); extension modules come along;
* a home, pytest's base temp dir and a bytecode cache owned by that uid.

The prepared tree (repository, packages, bytecode cache) is shared: one per content of the
repository (`shared_run`), kept in /tmp between runs, extended with packages as runs need
them. Each run still gets its own home, temp dir and report. A fresh tree cost every wrapper
about 5 s (the child compiled every module again); the root collection runs meanwhile.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests._leftovers import SESSION_VAR

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: What of the repository the tests need (the in-place extension modules sit at its top and below).
_REPO_PARTS = ("shellrt", "sandbox", "tests", "pyproject.toml")

#: Run by root's interpreter: collect the tests, then name the distributions of what got imported.
_COLLECT = r"""
import importlib.metadata as md, json, sys
import pytest

class Count:
    items = -1
    def pytest_collection_finish(self, session):
        self.items = len(session.items)

count = Count()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[count])
import shellrt, sandbox  # noqa: E401,F401  (what a command run imports, beyond collection)
owners = md.packages_distributions()
dists = set()
for name, module in list(sys.modules.items()):
    where = str(getattr(module, "__file__", None) or "")
    if "site-packages" in where or "dist-packages" in where:
        dists.update(owners.get(name.partition(".")[0], ()))
print("NONROOT-COLLECTED " + json.dumps({"code": int(code), "items": count.items, "dists": sorted(dists)}))
"""


@dataclass
class Collected:
    """What root's collection of the chosen tests found."""

    items: int
    distributions: list[str]


def _start_collect(args: list[str]) -> subprocess.Popen[str]:
    """Root's collection of ``args`` started in a subprocess (`_finish_collect` reads it)."""
    return subprocess.Popen(
        [sys.executable, "-c", _COLLECT, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish_collect(proc: subprocess.Popen[str], args: list[str]) -> Collected:
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"collecting {args} as root took over 120 s") from None
    lines = [line for line in stdout.splitlines() if line.startswith("NONROOT-COLLECTED ")]
    if not lines:
        raise RuntimeError(f"collecting {args} as root failed:\n{stdout[-3000:]}\n{stderr[-3000:]}")
    found = json.loads(lines[-1].split(" ", 1)[1])
    if found["code"] != 0:
        raise RuntimeError(
            f"collecting {args} as root failed (pytest exit {found['code']}):\n{stdout[-3000:]}"
        )
    return Collected(found["items"], found["dists"])


#: The node ids this process's pytest session collected, before any deselection, when every file it
#: collected was collected whole (no ``file::name`` argument): set by tests/conftest.py.
SESSION_NODEIDS: list[str] | None = None


def _matches(nodeid: str, selected: str) -> bool:
    """Whether pytest would run ``nodeid`` for the argument ``selected`` (a file or a node id)."""
    if "::" not in selected:
        return nodeid.startswith(f"{selected}::")
    return nodeid == selected or nodeid.startswith((f"{selected}[", f"{selected}::"))


def count_here(args: list[str]) -> int | None:
    """What root's collection of ``args`` counts, read from this session's collection: None when
    it cannot tell (no such collection, an option other than ``--deselect``, a directory, a file
    this session did not collect: a collection error or a module-level skip is not counted here)."""
    if SESSION_NODEIDS is None:
        return None
    selected: list[str] = []
    deselected: list[str] = []
    words = iter(args)
    for arg in words:
        if arg == "--deselect":
            deselected.append(next(words, ""))
        elif arg.startswith("-") or not arg.partition("::")[0].endswith(".py"):
            return None
        else:
            selected.append(arg)
    known = {nodeid.partition("::")[0] for nodeid in SESSION_NODEIDS}
    if not selected or "" in deselected or any(arg.partition("::")[0] not in known for arg in selected):
        return None
    return sum(
        1
        for nodeid in SESSION_NODEIDS
        if any(_matches(nodeid, arg) for arg in selected) and not nodeid.startswith(tuple(deselected))
    )


def collect(args: list[str]) -> Collected:
    """Collect ``args`` (files, node ids, ``--deselect``) as root: the test count and the distributions."""
    return _finish_collect(_start_collect(args), args)


def root_view(args: list[str]) -> Collected:
    """`collect`, read from this session's collection when it can be (`count_here`)."""
    items = count_here(args)
    return collect(args) if items is None else Collected(items, loaded_distributions())


@functools.lru_cache(maxsize=1)
def _owners() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()  # about 1 s: once per process


def loaded_distributions() -> list[str]:
    """The distributions of what this process imported: in a test session (a worker collected the
    suite) about everything the tests' modules import, so the child rarely lacks one."""
    dists: set[str] = set()
    for name, module in list(sys.modules.items()):
        where = str(getattr(module, "__file__", None) or "")
        if "site-packages" in where or "dist-packages" in where:
            dists.update(_owners().get(name.partition(".")[0], ()))
    return sorted(dists)


def _requirement_names(dist: str) -> list[str]:
    """The unconditional requirements of ``dist`` (no extras, no environment markers that exclude them)."""
    names = []
    for req in importlib.metadata.requires(dist) or ():
        if "extra ==" in req:
            continue
        match = re.match(r"[A-Za-z0-9._-]+", req)
        if match:
            names.append(match.group(0))
    return names


#: Loaded by root, never linked for a child: anyio's pytest plugin imports its trio backend whenever
#: trio imports (with attrs' generated classes: ~0.1 s of each child's ~1.8 s of CPU), and the
#: suite runs on asyncio only (tests/conftest.py `anyio_backend`).
_NOT_FOR_CHILDREN = frozenset({"trio"})


def with_requirements(names: list[str], *, also: tuple[str, ...] = ("shellrt",)) -> list[str]:
    """``names`` plus the requirements of ``also`` and of every one of them, transitively (installed
    ones), but `_NOT_FOR_CHILDREN`."""
    return list(_with_requirements(tuple(sorted(set(names))), also))


@functools.lru_cache(maxsize=16)
def _with_requirements(names: tuple[str, ...], also: tuple[str, ...]) -> tuple[str, ...]:
    """`with_requirements`, once per process for a set of names: each wrapper of a worker asked it again
    for the same (0.5-1 s of metadata lookups each, round 29)."""
    wanted: set[str] = set()
    todo = [*names, *(r for dist in also for r in _requirement_names(dist))]
    while todo:
        name = todo.pop()
        try:
            canonical = importlib.metadata.distribution(name).metadata["Name"]
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional dependency this environment lacks
        if canonical in wanted or canonical in _NOT_FOR_CHILDREN:
            continue
        wanted.add(canonical)
        todo += _requirement_names(canonical)
    return tuple(sorted(wanted))


def _place(src: Path, dest: Path) -> None:
    """``dest`` as a hard link to ``src`` where others may read it; else a world-readable copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.stat().st_mode & stat.S_IROTH:
        try:
            os.link(src, dest)
            return
        except OSError:
            pass
    shutil.copy2(src, dest)
    dest.chmod(
        dest.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if dest.stat().st_mode & stat.S_IXUSR else 0)
    )


def link_distributions(names: list[str], dest: Path) -> None:
    """Every installed file of each distribution (code and ``.dist-info``: entry points, pytest plugins)."""
    for name in names:
        dist = importlib.metadata.distribution(name)
        base = Path(str(dist.locate_file("")))
        for entry in dist.files or ():
            if entry.parts[0] == ".." or "__pycache__" in entry.parts:
                continue  # scripts in bin/; bytecode goes to the run's own cache
            src = base / entry
            if src.is_file() and not (dest / entry).exists():
                _place(src, dest / entry)


def link_repo(dest: Path) -> None:
    """The repository's packages, tests and config (sources, data, extension modules), no bytecode."""
    for part in _REPO_PARTS:
        src = ROOT / part
        if src.is_file():
            _place(src, dest / part)
            continue
        for path in src.rglob("*"):
            if "__pycache__" not in path.parts and path.is_file():
                _place(path, dest / path.relative_to(ROOT))
    for extension in ROOT.glob("*.so"):  # mypyc's runtime module of an in-place build
        _place(extension, dest / extension.name)


#: Plugins a child run loads only when a source of its tests matches the pattern (a use of the plugin):
#: hypothesis's took 0.8 s of each child's 2-4 s start-up at load 20 (round 29), and no bwrap attack
#: test draws generated cases; a child never runs ``-n`` nor times code, so xdist's and
#: pytest-benchmark's plugins only cost it their import (0.2-0.4 s of its start at load 15, round 29 suite2).
#: Should a pattern miss a use, the test errs on the missing fixture or hook: a failed twin, never a pass.
_XDIST_USE = r"^\s*(?:from|import) xdist\b|\b(?:worker_id|testrun_uid|workerinput)\b|\bpytest_xdist_"
_OPTIONAL_PLUGINS = {
    "hypothesispytest": r"^\s*(?:from|import) hypothesis\b",
    "benchmark": r"^\s*(?:from|import) pytest_benchmark\b|[(,]\s*benchmark\s*[:,)=]",
    "xdist": _XDIST_USE,
    "xdist.looponfail": _XDIST_USE,
}
_TESTS_IMPORT = re.compile(r"^\s*(?:from tests(?:\.(\w+))? import ([\w, ()]+)|import tests\.(\w+))", re.M)


def _test_sources(args: list[str]) -> list[str] | None:
    """The text of each test file ``args`` names and of every ``tests`` module it imports (transitively);
    None when an argument is not a file or a node id of one (the caller then assumes every plugin is used)."""
    todo: list[Path] = []
    words = iter(args)
    for arg in words:
        if arg == "--deselect":
            next(words, None)
            continue
        if arg.startswith("-"):
            return None
        path = ROOT / arg.partition("::")[0]
        if path.suffix != ".py" or not path.is_file():
            return None
        todo.append(path)
    seen: dict[Path, str] = {}
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file() or path == Path(__file__).resolve():
            continue  # this module starts the child; its patterns above are no use of a plugin
        seen[path] = text = path.read_text(errors="replace")
        for module, names, plain in _TESTS_IMPORT.findall(text):
            if module or plain:
                todo.append(ROOT / "tests" / f"{module or plain}.py")
            else:
                todo += (ROOT / "tests" / f"{name.strip()}.py" for name in names.strip("()").split(","))
    return list(seen.values())


def plugins_unused_by(args: list[str]) -> list[str]:
    """``-p no:NAME`` for each optional plugin that no source of the selected tests uses (`_OPTIONAL_PLUGINS`)."""
    sources = _test_sources(args)
    if sources is None:
        return []
    return [
        word
        for plugin, use in _OPTIONAL_PLUGINS.items()
        if not any(re.search(use, text, re.M) for text in sources)
        for word in ("-p", f"no:{plugin}")
    ]


@dataclass
class Outcome:
    """One pytest run as the unprivileged user: its exit code, output and JUnit counts."""

    returncode: int
    output: str
    tests: int
    failures: int
    errors: int
    skipped: int


class NonRootRun:
    """A prepared directory (repo, packages, home) and pytest runs in it as uid 65534.

    ``repo``, ``site`` and ``pycache`` may be a shared tree's (`shared_run`); ``owned`` (home,
    pytest's temp dirs, reports) is always this run's own."""

    def __init__(
        self, base: Path, *, repo: Path | None = None, site: Path | None = None, pycache: Path | None = None
    ) -> None:
        self.base = base
        self.repo = repo or base / "repo"
        self.site = site or base / "site"
        self.owned = base / "owned"  # the uid's own: home, pytest's temp dirs, bytecode, reports
        self.pycache = pycache or self.owned / "pycache"
        #: The distributions the site holds, when known (a shared tree's).
        self.distributions: set[str] = set()
        for path in (self.repo, self.site):
            if not path.exists():
                path.mkdir(mode=0o755)
        self.owned.mkdir(mode=0o755)
        for path in {self.owned / "home", self.owned / "basetemp", self.owned / "reports", self.pycache}:
            if not path.exists():
                path.mkdir(mode=0o755)
                os.chown(path, NOBODY, NOBODY)

    @classmethod
    def make(cls) -> NonRootRun:
        base = Path(tempfile.mkdtemp(prefix="shellrt-nonroot-", dir="/tmp"))
        base.chmod(0o755)
        return cls(base)

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def env(self) -> dict[str, str]:
        return {
            "PATH": PATH,
            "HOME": str(self.owned / "home"),
            "LANG": "C.UTF-8",
            "CI": "true",  # a missing prerequisite fails (conftest.require), never skips
            "PYTHONPATH": f"{self.repo}{os.pathsep}{self.site}",
            "PYTHONPYCACHEPREFIX": str(self.pycache),
            # The calling session's token: what the child run leaves running is named there too.
            **{name: os.environ[name] for name in (SESSION_VAR,) if name in os.environ},
        }

    @staticmethod
    def argv_for(*argv: str) -> list[str]:
        """``argv`` run as the unprivileged user, without supplementary groups."""
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *argv]

    def argv(self, *args: str) -> list[str]:
        return self.argv_for(SYSTEM_PYTHON, *args)

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        """``code`` run by the system interpreter as the unprivileged user, in the prepared tree."""
        return subprocess.run(
            self.argv("-c", code),
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def pytest(self, args: list[str], *, timeout: float) -> Outcome:
        """pytest on ``args`` as the unprivileged user; counts from its JUnit report."""
        report = self.owned / "reports" / "junit.xml"
        proc = subprocess.run(
            self.argv(
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                *plugins_unused_by(args),
                # Their session end collects garbage five times (`gc_collect_harder`): ~0.3 s of a
                # child's ~2 s start-up and end, ~130 children a suite; nothing here reads their
                # warnings (a failure in a thread or a finaliser still fails its test's assertions).
                *("-p", "no:unraisableexception", "-p", "no:threadexception"),
                "--basetemp",
                str(self.owned / "basetemp" / "run"),
                "--junitxml",
                str(report),
                *args,
            ),
            cwd=self.repo,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        output = proc.stdout + proc.stderr
        if not report.exists():
            return Outcome(proc.returncode, output, 0, 0, 0, 0)
        suite = ET.parse(report).getroot()
        if suite.tag == "testsuites":
            suite = suite[0]
        counts = {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
        return Outcome(proc.returncode, output, **counts)


#: The shared trees: ``<prefix><root key>-<content key>`` with ``.use`` and ``.prep`` lock files.
_SHARED_PREFIX = "shellrt-nonroot-shared-"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _content_key() -> str:
    """What a shared tree holds: every repository file `link_repo` takes, by inode, size and mtime
    (an edit in place or a replaced file is a new key), and the interpreter."""
    parts = [sys.version]
    files = [ROOT / part for part in _REPO_PARTS if (ROOT / part).is_file()]
    for part in _REPO_PARTS:
        if (ROOT / part).is_dir():
            files += (p for p in (ROOT / part).rglob("*") if "__pycache__" not in p.parts and p.is_file())
    files += ROOT.glob("*.so")
    for path in sorted(files):
        st = path.stat()
        parts.append(f"{path.relative_to(ROOT)}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}")
    return _digest("\n".join(parts))


def _flock(path: Path, how: int) -> int | None:
    """``path`` opened and locked (``how``), or None when a non-blocking lock is taken elsewhere."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, how)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _remove_stale_trees(prefix: str, keep: Path) -> None:
    """This repository's trees of an older content, unless a run holds one (its ``.use`` lock)."""
    for other in Path("/tmp").glob(f"{prefix}*"):
        if other == keep or not other.is_dir():
            continue
        fd = _flock(Path(f"{other}.use"), fcntl.LOCK_EX | fcntl.LOCK_NB)
        if fd is None:
            continue
        try:
            shutil.rmtree(other, ignore_errors=True)
            for suffix in (".use", ".prep"):
                Path(f"{other}{suffix}").unlink(missing_ok=True)
        finally:
            os.close(fd)


def _prepare_shared(tree: Path, distributions: list[str]) -> set[str]:
    """Make ``tree`` (once) and link into its site what ``distributions`` adds (under ``.prep``):
    what the site holds now."""
    fd = _flock(Path(f"{tree}.prep"), fcntl.LOCK_EX)
    assert fd is not None
    try:
        ready = tree / "ready"
        if not ready.exists():
            shutil.rmtree(tree, ignore_errors=True)  # a preparation cut short
            tree.mkdir(mode=0o755)
            for name in ("repo", "site"):
                (tree / name).mkdir(mode=0o755)
            (tree / "pycache").mkdir(mode=0o755)
            os.chown(tree / "pycache", NOBODY, NOBODY)
            link_repo(tree / "repo")
            (tree / "dists.json").write_text("[]")
            ready.write_text("")
        linked = set(json.loads((tree / "dists.json").read_text()))
        wanted = [name for name in distributions if name not in linked]
        if wanted:
            link_distributions(wanted, tree / "site")
            linked |= set(wanted)
            (tree / "dists.json").write_text(json.dumps(sorted(linked)))
        return linked
    finally:
        os.close(fd)


@contextmanager
def shared_run(distributions: list[str]) -> Iterator[NonRootRun]:
    """A run in the shared tree of this repository's content, holding ``distributions`` (and what
    earlier runs linked there): the compiled bytecode of earlier runs is reused. The tree stays in
    /tmp for the next run; an older content's tree goes when no run holds it."""
    prefix = f"{_SHARED_PREFIX}{_digest(str(ROOT))}-"
    tree = Path("/tmp") / f"{prefix}{_content_key()}"
    use = _flock(Path(f"{tree}.use"), fcntl.LOCK_SH)  # before preparing: no one removes it meanwhile
    assert use is not None
    try:
        linked = _prepare_shared(tree, distributions)
        _remove_stale_trees(prefix, tree)
        # Its own part where `make` puts it: a longer temp path leaves a test's unix socket too long.
        base = Path(tempfile.mkdtemp(prefix="shellrt-nonroot-", dir="/tmp"))
        base.chmod(0o755)
        run = NonRootRun(base, repo=tree / "repo", site=tree / "site", pycache=tree / "pycache")
        run.distributions = linked
        try:
            yield run
        finally:
            run.remove()
    finally:
        os.close(use)


def run_as_nobody(
    args: list[str], *, collect_args: list[str] | None = None, timeout: float = 300
) -> tuple[Collected, Outcome]:
    """Count ``args`` as root collects them (from this session's collection when it has them all,
    `count_here`; else a root subprocess collects ``collect_args``, the same tests named from here,
    while they run) and run them as uid 65534 in the shared tree (`shared_run`). Its packages are
    those this process loaded; should root's collection name one more, the run is made again."""
    items = count_here(args)
    collecting = (
        None if items is not None else _start_collect(collect_args if collect_args is not None else args)
    )
    try:
        dists = with_requirements(loaded_distributions())
        with shared_run(dists) as run:
            outcome = run.pytest(args, timeout=timeout)
            held = run.distributions
    finally:
        if collecting is not None:
            collected = _finish_collect(collecting, args)
    if collecting is None:
        assert items is not None
        # This session collected the tests (and imported their modules): the packages it loaded.
        collected = Collected(items, loaded_distributions())
    missing = set(with_requirements(collected.distributions)) - held
    if missing:
        with shared_run(sorted(missing)) as run:
            outcome = run.pytest(args, timeout=timeout)
    return collected, outcome


def assert_all_held(collected: Collected, outcome: Outcome) -> None:
    """What every "holds for an unprivileged caller" test asserts of its run as uid 65534: it
    passed, nothing skipped (a skip is a failure here) and every test root collected ran."""
    summary = outcome.output[-6000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0, f"a test skipped as uid 65534 (a skip is a failure here):\n{summary}"
    assert outcome.tests == collected.items, (
        f"ran {outcome.tests} of {collected.items} collected as root:\n{summary}"
    )


def held_as_nobody(test_file: str, *names: str) -> None:
    """Run the tests ``names`` of ``test_file`` (its ``__file__``) as uid 65534 and assert they
    held there (`assert_all_held`): the body of every "holds for an unprivileged caller" wrapper."""
    from tests.conftest import require

    require(os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run the test directly)")
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    collected, outcome = run_as_nobody(
        [f"tests/{Path(test_file).name}::{name}" for name in names],
        collect_args=[f"{test_file}::{name}" for name in names],
    )
    assert_all_held(collected, outcome)
