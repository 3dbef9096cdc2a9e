"""Shared test configuration.

Tests run on asyncio through anyio's pytest plugin (``@pytest.mark.anyio``).
`require(condition, why)` skips locally but FAILS under CI=true, so a missing
bubblewrap or Docker daemon can never turn a CI run green by skipping.

scripts/test.sh runs the suite in two lanes (``--lane``): the parallel one under
pytest-xdist (``-n``, ``--dist loadgroup``), then the tests marked ``serial`` alone,
because they count or lease machine-wide things that a test on another worker
would change meanwhile. Each file stays on one worker, so a module- or class-scoped
fixture (a VM boot, an image build, a container) is still built once. The files with
a test that runs a whole child pytest (the non-root caller's view, tests/_nonroot.py),
one marked ``slow`` (10-25 s races and big trees) or such a fixture go first, so none
of them is left to the end with the other workers idle.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import _cpu_log, _leftovers, _nonroot

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def require(condition: bool, why: str) -> None:
    """Skip the test when ``condition`` is false — or fail it when running in CI."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI but unavailable: {why}")
    pytest.skip(why)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--lane",
        choices=("all", "parallel", "serial"),
        default="all",
        help="all tests (default); 'parallel': those not marked serial (for -n); 'serial': only those",
    )


def _shares_a_wide_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a module/class-scoped fixture of this suite (not a plugin's).

    A conftest's session-scoped fixture does not count: each worker builds it once whatever goes
    where. Counted (its base id, ``tests``, is a suite's), the autouse ones here grouped every test
    with its module from round 21 on: the groups were handed out by size, so the files of one
    test came last whatever they cost (a 30-90 s non-root run among them), and no long test first."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        fixturedef.scope != "function"
        and fixturedef.baseid
        and not (fixturedef.scope == "session" and not fixturedef.baseid.endswith(".py"))
        for fixturedefs in info.name2fixturedefs.values()
        for fixturedef in fixturedefs
    )


#: What a test calls that runs a whole child pytest (tests/_nonroot.py): 10-50 s each.
_CHILD_PYTEST_CALLS = frozenset({"run_as_nobody", "shared_run"})


def _runs_a_child_pytest(item: pytest.Item) -> bool:
    code = getattr(getattr(item, "function", None), "__code__", None)
    return code is not None and not _CHILD_PYTEST_CALLS.isdisjoint(code.co_names)


def _is_long(item: pytest.Item) -> bool:
    """A child pytest run, or a test marked ``slow`` (a race, a big tree: 10-25 s each in CI)."""
    return _runs_a_child_pytest(item) or item.get_closest_marker("slow") is not None


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


#: `_named_files` of this run, worked out once.
_NAMED_FILES = pytest.StashKey["frozenset[Path] | None"]()


def _named_files(config: pytest.Config) -> frozenset[Path] | None:
    """The test files the command line names (as files or node ids); None when an argument is a
    directory or anything else, or nothing is named (then every file is collected as usual)."""
    if _NAMED_FILES not in config.stash:
        named: set[Path] = set()
        for arg in config.args:
            path = Path(config.invocation_params.dir, arg.partition("::")[0]).resolve()
            if path.suffix != ".py" or not path.is_file():
                named = set()
                break
            named.add(path)
        config.stash[_NAMED_FILES] = frozenset(named) or None
    return config.stash[_NAMED_FILES]


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A run that names its files (a non-root twin's child, tests/_nonroot.py; a developer's one file)
    passes over the other ``test_*.py`` files of their directory at once. pytest would make a Module
    node of each of the ~1,400 here (ignore patterns, ``pytest_collect_file``, a node) before matching
    the argument: ~0.3 s of CPU in each of ~140 non-root children a run."""
    if not (collection_path.name.startswith("test_") and collection_path.suffix == ".py"):
        return None
    named = _named_files(config)
    if named is None or (
        collection_path.name in {path.name for path in named} and collection_path.resolve() in named
    ):
        return None
    return True


def pytest_configure(config: pytest.Config) -> None:
    # xdist's controller hands out the groups in the order `pytest_collection_modifyitems` leaves
    # them in, not re-sorted by size (its default): that order is chosen there.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if not config.pluginmanager.has_plugin("xdist"):
        # A non-root child runs without xdist's plugin (tests/_nonroot.py): the group mark set below
        # is then a known one, not a warning in every child's output.
        config.addinivalue_line("markers", "xdist_group(name): the tests of one group run on one worker")
    # Each test's CPU seconds, only when SHELLRT_TEST_CPU_LOG names a directory (tests/_cpu_log.py).
    _cpu_log.register(config)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every file runs on one worker (`--dist loadgroup`): a module-scoped fixture is built once, and
    # the tests of rounds 21-26 were only ever run so (the session fixtures here grouped every file
    # by accident), so a test may rely on one before it in its file.
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_file(item)))
        files.setdefault(_file(item), []).append(item)
    # Root's view of the suite for the non-root runs (each collected it again: ~3 s of CPU), when
    # every file here was collected whole.
    if not any("::" in str(arg) for arg in config.args):
        _nonroot.SESSION_NODEIDS = [item.nodeid for item in items]
    # The costly files first (a long test: a child pytest, a `slow` race or tree; or a module's
    # shared set-up: a VM, a cluster, a container), then the others, each largest first: the
    # workers take them in this order, so none is left to the end with the other workers idle.
    # Sorted by xdist by size alone, the one-test files came last, a 30-90 s non-root run among them.
    costly = {
        name for name, its in files.items() if any(_is_long(i) or _shares_a_wide_fixture(i) for i in its)
    }
    rank = {name: (name not in costly, -len(its)) for name, its in files.items()}
    items.sort(key=lambda item: rank[_file(item)])  # stable: a file's tests keep their order
    lane = config.getoption("--lane")
    if lane == "all":
        return
    want_serial = lane == "serial"
    kept = [item for item in items if (item.get_closest_marker("serial") is not None) == want_serial]
    dropped = [item for item in items if (item.get_closest_marker("serial") is not None) != want_serial]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test a stale in-place build: its extension modules would shadow edited sources."""
    import shellrt.analysis  # noqa: F401  (loads the analysis modules)
    from shellrt.analysis.compiled import REBUILD_ADVICE, stale_modules

    stale = stale_modules()
    if stale:
        pytest.exit(
            f"compiled analysis modules are older than their sources: {', '.join(stale)}. {REBUILD_ADVICE}",
            returncode=2,
        )


#: Host device nodes every shell needs. A test whose command replaced one (``sed -i``,
#: a tool's atomic rename, ``rm`` + a redirect) escaped its sandbox or temp dir:
#: that test fails, and the node is put back so later tests are not blamed.
_HOST_DEVICES = {"/dev/null": (1, 3), "/dev/zero": (1, 5), "/dev/urandom": (1, 9)}


def _broken_devices() -> list[str]:
    import stat

    broken = []
    for path, (major, minor) in _HOST_DEVICES.items():
        try:
            st = os.lstat(path)
        except OSError:
            broken.append(path)
            continue
        if not stat.S_ISCHR(st.st_mode) or os.major(st.st_rdev) != major or os.minor(st.st_rdev) != minor:
            broken.append(path)
    return broken


def _restore_devices(paths: list[str]) -> None:
    import stat

    for path in paths:
        major, minor = _HOST_DEVICES[path]
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(path, 0o666)


@pytest.fixture(autouse=True)
def _host_devices_intact() -> Iterator[None]:
    """Fail the test that replaced a host device node (and restore it, when root)."""
    yield
    broken = _broken_devices()
    if broken:
        if os.geteuid() == 0:
            _restore_devices(broken)
        pytest.fail(f"this test replaced host device node(s) {broken}: something wrote outside its sandbox")


@pytest.fixture(autouse=True)
def _shellrt_logger_restored() -> Iterator[None]:
    """Put the ``shellrt`` logger back as it was: a CLI command run in-process (`escape_log_lines`)
    stops it propagating, and every later test of that worker then captured none of its warnings
    (caplog listens at the root: CI98 failed a warning test that way)."""
    import logging

    logger = logging.getLogger("shellrt")
    handlers, propagate, level = list(logger.handlers), logger.propagate, logger.level
    root_handlers = list(logging.getLogger().handlers)
    yield
    logger.handlers[:] = handlers
    logger.propagate, logger.level = propagate, level
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h not in root_handlers]:
        if type(handler) is logging.StreamHandler:  # the CLI's stderr handler, not pytest's capture
            root.removeHandler(handler)


#: This session's token and its tests' start times (tests/_leftovers.py).
_SESSION_PROCESSES = _leftovers.SessionProcesses()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _SESSION_PROCESSES.test_started(item.nodeid)


@pytest.fixture(autouse=True, scope="session")
def _no_processes_left_behind() -> Iterator[None]:
    """Fail the run when a process the session started outlives it (CI57 left a ``sleep 1000``),
    naming each with the test it started in; then kill them. Set up first, so torn down last."""
    _SESSION_PROCESSES.begin()
    yield
    try:
        left = _SESSION_PROCESSES.wait_for_none(timeout=5.0)
        if left:
            found = "\n".join(f"  {_SESSION_PROCESSES.describe(pid)}" for pid in left)
            _SESSION_PROCESSES.kill(left)
            pytest.fail(
                f"{len(left)} process(es) this test session started outlived it (killed now):\n{found}\n"
                "the test named must end what it starts (kill the process group, or wait for the product's "
                "cleanup) - or, if the product leaked them, that is a bug to report",
                pytrace=False,
            )
    finally:
        _SESSION_PROCESSES.end()


@pytest.fixture(autouse=True, scope="session")
def _rule_anchors_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Saved rules' anchors and MCP pins (round 21) go to temp stores, not ``~/.config/shellrt``: a
    test that answers "always" without its own trust store must leave nothing in the home."""
    names = {"SHELLRT_RULE_ANCHORS": "anchors.json", "SHELLRT_MCP_PINS": "mcp-pins.json"}
    before = {name: os.environ.get(name) for name in names}
    top = tmp_path_factory.mktemp("rule-anchors")
    for name, file in names.items():
        os.environ[name] = str(top / file)
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
