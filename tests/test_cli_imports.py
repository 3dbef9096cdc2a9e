"""Each CLI path imports only what it needs, and starts within a budget of a bare pydantic import.

An operator scripting ``shellrt run`` per command pays the interpreter's
start-up every time (issue 22). Two guards:

* a per-command list of forbidden modules, read from ``python -X importtime``
  (``run`` needs no command analysis, no MCP, no httpx, no Ray ...; ``--help``
  imports no implementation at all);
* a start-up budget as a ratio to ``python -c 'from pydantic import BaseModel'``
  run by the same interpreter binary in the same test, interleaved, median of
  several runs of CPU time (user + sys of the child: steadier than wall time on
  a loaded 2-core machine). Both sides read bytecode from a private pycache
  (written by a warm-up run), as an installed package would. The measuring
  helpers are the start-up benchmark's (``benchmarks/scenarios/startup.py``);
* exact, load-independent guards: how many modules a command imports beyond
  the baseline's, and which pydantic validators ``run`` builds (each costs
  milliseconds; the first one also loads ``pydantic.fields`` and the plugin
  loader): none on the lean local path, only its own on the full path, which
  skips pydantic's plugin discovery.
"""

from __future__ import annotations

import json
import os
import site
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.scenarios.startup import BASELINE, PYTHON, child_env, measure

#: Heavy or unrelated subsystems no CLI path may load unless it is the one that needs it.
ALWAYS_FORBIDDEN = (
    "httpx",
    "mcp",
    "ray",
    "docker",
    "shellrt.server",
    "shellrt.batch",
    "shellrt.tools.web_fetch",
)

#: The protocol's model modules (its package ``__init__`` is a cheap lazy re-export).
PROTOCOL_MODELS = (
    "shellrt.protocol.tool",
    "shellrt.protocol.context",
    "shellrt.protocol.results",
    "shellrt.protocol.messages",
    "shellrt.protocol.permission",
)

#: A local run the lean path does not take (``--cwd``): the full path, through the async supervisor.
FULL_RUN = ("run", "--sandbox", "local", "--cwd", ".", "--", "true")

#: Listing sessions and listing permission rules: read-only views of files on disk.
SESSIONS_LS = ("sessions", "ls")
PERMISSIONS_LIST = ("permissions", "list")

#: Command line -> modules (and their submodules) it must not import.
FORBIDDEN: dict[tuple[str, ...], tuple[str, ...]] = {
    ("--help",): (
        "pydantic",
        "anyio",
        "asyncio",
        "sandbox",
        "shellrt.analysis",
        "tree_sitter",
        "shellrt.runtime",
        "shellrt.supervisor",
        "shellrt.tools",
        *PROTOCOL_MODELS,
        "importlib.metadata",
    ),
    ("run", "--help"): (
        "pydantic",
        "anyio",
        "sandbox",
        "shellrt.analysis",
        "shellrt.runtime",
        "shellrt.tools",
    ),
    ("serve", "--help"): ("pydantic", "anyio", "sandbox", "shellrt.analysis", "shellrt.runtime"),
    ("permissions", "--help"): (
        "pydantic",
        "shellrt.analysis",
        "shellrt.permissions.engine",
        *PROTOCOL_MODELS,
    ),
    # The lean local path (`shellrt.cli._local_run`): no event loop, no pydantic, no backend class.
    ("run", "--sandbox", "local", "--", "true"): (
        "pydantic",
        "pydantic_core",
        "asyncio",
        "anyio._core",
        "anyio._backends",
        "sandbox.base",
        "sandbox.config",
        "sandbox.policy",
        "sandbox.factory",
        "sandbox.local",
        "sandbox._hostproc",
        "shellrt.runtime",
        "shellrt.supervisor.supervisor",
        "shellrt.supervisor.models",
        "shellrt.supervisor.execution",
        "shellrt.supervisor.tasks",
        "shellrt.cli._signals",
        "shellrt.cli._pydantic_plugins",
        "shellrt.analysis",
        "tree_sitter",
        "shellrt.tools",
        # Of shellrt.permissions only the light path modules (`trust_paths`, `caller_home`,
        # `_own_roots`): round 45 iface5, the files a later session obeys and the refused roots.
        "shellrt.permissions.engine",
        "shellrt.permissions.rules",
        "shellrt.permissions.settings",
        "shellrt.permissions.sources",
        "shellrt.permissions.hooks",
        "shellrt.permissions.governance",
        "shellrt.permissions.trust",
        *PROTOCOL_MODELS,
        "shellrt.cli.classify",
        "shellrt.cli.serve",
        "shellrt.cli._runtime_options",
        "sandbox.bwrap",
        "sandbox.docker",
        "sandbox._proxy",
        "sandbox.confine",
    ),
    # The full path (any option the lean one does not take, here --cwd).
    FULL_RUN: (
        "shellrt.analysis",
        "tree_sitter",
        "tree_sitter_bash",
        "shellrt.tools",
        "shellrt.runtime.session",
        "shellrt.runtime.execution",
        "shellrt.runtime.orchestration",
        "shellrt.permissions.engine",
        "shellrt.permissions.hooks",
        "shellrt.permissions.governance",
        "shellrt.permissions.rules",
        "shellrt.permissions.settings",
        "shellrt.permissions.sources",
        *PROTOCOL_MODELS,
        "shellrt.cli.classify",
        "shellrt.cli.serve",
        "shellrt.cli._runtime_options",
        "sandbox.bwrap",
        "sandbox.docker",
        "sandbox._proxy",
        "sandbox.confine",  # only a command that changes directory needs it
    ),
    # The verdict is read as plain fields: no pydantic model is built, so pydantic is not imported.
    ("classify", "ls"): (
        "pydantic",
        "pydantic_core",
        "shellrt.analysis.models",
        "shellrt.analysis.powershell",
        "sandbox",
        "anyio",
        "asyncio",
        "shellrt.supervisor",
        "shellrt.runtime",
        "shellrt.permissions",
        "shellrt.tools",
        *PROTOCOL_MODELS,
        "shellrt.cli.run",
    ),
    ("classify", "--json", "ls"): ("pydantic", "shellrt.analysis.models", "shellrt.cli.run"),
    # Round 55: listing sessions reads directory names and sizes; it loaded the whole Session
    # (runtime, every tool, asyncio, pydantic) for the one function naming their directory.
    SESSIONS_LS: (
        "pydantic",
        "anyio",
        "asyncio",
        "sandbox.base",
        "shellrt.runtime",
        "shellrt.supervisor.supervisor",
        "shellrt.tools",
        "shellrt.analysis",
        "shellrt.permissions",
        *PROTOCOL_MODELS,
    ),
    # Round 55: listing the effective rules reads the settings and their hooks; it built the
    # decision engine and its gate too (and with them the command analysis), which only `check` uses.
    PERMISSIONS_LIST: (
        "shellrt.permissions.engine",
        "shellrt.permissions.gate",
        "shellrt.analysis.unread_code",
        "shellrt.cli._permissions_check",
        "shellrt.analysis.analyze",
        "shellrt.analysis.judge",
        "tree_sitter",
        "tree_sitter_bash",
        "shellrt.tools",
        "shellrt.runtime",
        "shellrt.supervisor.supervisor",
    ),
}

#: Command line -> the most its median start-up CPU time may be, as a multiple of the pydantic
#: baseline's (issue 22's goal: 1.5x). Measured on the loaded 2-core machine (`python -m
#: benchmarks --only startup`, and as instruction counts under callgrind, which load does not
#: move): ``--help`` ~0.6x, ``classify`` ~0.7x in callgrind (it was 1.44-1.47x while the analysis
#: built its pydantic model at import: ``pydantic.fields``, and ``pydantic`` itself is not
#: imported now), ``run`` on the lean local path ~0.8x (it was ~2.3x on the full path, which
#: still costs that: ``FULL_RUN``). The margins absorb load; the module lists and counts here are
#: the precise guards.
BUDGET: dict[tuple[str, ...], float] = {
    ("--help",): 0.9,
    ("classify", "ls"): 1.0,
    # 1.2 until round 35: measured 1.17x alone and 1.21-1.28x at load 12-16 with unchanged code, so
    # it failed whenever CI shared the machine; 1.35 still stays under the goal's 1.5x
    ("run", "--sandbox", "local", "--", "true"): 1.35,
}

#: Command line -> the most modules it may import beyond those of the baseline
#: (``from pydantic import BaseModel``). Counted, not timed: exact on any machine with the
#: same library versions. Both run with ``-S`` (site-packages on PYTHONPATH instead), so a
#: ``.pth`` file that imports modules at start-up cannot hide them from the count. Measured:
#: ``--help`` 30, ``classify`` 55 (the analysis and tree-sitter, no pydantic), ``run`` 78 on the lean path, 186 on the full path (asyncio
#: and anyio's asyncio backend are ~95 of those). Raise a count only for a module the command
#: really needs, and say why.
MODULE_BUDGET: dict[tuple[str, ...], int] = {
    ("--help",): 33,
    # +1 round 29: shellrt.cli._stderr (every command's standard error escapes control characters:
    # usage errors, tracebacks and warnings quote others' text; stdlib `re` only); +3 round 30: its
    # escape moved to shellrt.protocol.control_escape (with the lazy package's __init__ and _lazy),
    # shared with the MCP tools' relay of an external server's stderr (tools may not import the CLI);
    # +1 round 33: analysis.arith_flow, the cheap gate every plan's parts pass (the readers of code
    # no part shows load only when a plan passes it)
    ("classify", "ls"): 63,
    # +3 round 17, each a check every run makes: supervisor._host_obeyed (the table of files a host
    # program obeys, for the protected-files check), supervisor._watch_budget (the uid's shared
    # inotify ceiling) and supervisor._output_account (the session's output quota across reopens);
    # +1 round 18: supervisor._env_gitconfig (git config files named by $XDG_CONFIG_HOME and
    # $GIT_CONFIG_GLOBAL, guarded as git config); +1 round 25: supervisor._tree_note (every run
    # marks its writable roots for a later guarded start: one appended line, stdlib only); +1 round
    # 26: shellrt.supervisor.mark_owner (the mark names its owner process, so a killed run's mark ends);
    # +1 round 27: sandbox._namefold (the after-command check judges names as a case-folding
    # filesystem reads them; its unicodedata is imported only for a non-ASCII name); +1 round 29:
    # shellrt.cli._stderr (as classify); +3 round 30: shellrt.protocol.control_escape (as classify);
    # +1 round 35: sandbox._hostread (the settings pre-scan reads with the host's one bounded,
    # non-blocking reader, which sessions' settings loader uses too, instead of a twin of it); +1
    # round 35: sandbox._realpath (the home check's retrying realpath, shared with confine's judge);
    # +2 round 36 bwrap3: sandbox._bwrap_sched and its stdlib `resource` (as the full path: the lean
    # run's command starts without its caller's real-time policy, negative nice or rtprio/nice limits);
    # +1 round 38 trust: supervisor._operator_places (the guard's home check honours the places the
    # operator's PATH, PYTHONSTARTUP, CARGO_HOME... name; stdlib only); -12 stop 58: no `secrets`
    # (os.urandom names the files), no `logging` or `dataclasses` (and their `inspect`, `dis`,
    # `ast`, `traceback` ...: ~9 ms of CPU) and no `anyio` or `concurrent.futures` on the lean path;
    # +1 round 42 supervisor2: `atexit` (built in), which `weakref.finalize` registers with: a
    # dropped session's output account and spare spool files are cleaned up when collected; +1 round
    # 43 review23 (one definition since stop 58): supervisor._caller_home (shellrt's state and the
    # write-deny pre-scan follow the same home as the settings loader, never a relative $HOME); +5
    # round 45 iface5: supervisor.protect_roots, permissions (its lazy __init__), permissions.caller_home,
    # permissions.trust_paths (the files a later session obeys, guarded as the full path guards them)
    # and permissions._own_roots (the roots the full path refuses, refused by the same function)
    ("run", "--sandbox", "local", "--", "true"): 93,
    # +2 2026-12-03: supervisor._deadline (the quick path's loop-timer timeout) and
    # sandbox._root_links (every writable root checked for a planted symlink); +1 round 15:
    # sandbox._hostpath (a backend registers the roots its commands write, so no host program
    # shellrt runs is looked up there); +1 round 16: shellrt.cli._run_write_deny (the settings'
    # Edit/Write deny globs, loaded only when a settings file names one); +4 round 17: the three
    # of the lean path and permissions.trust_paths (the trust store and managed settings a command
    # must not forge for a later session: paths only, not the settings loader); +1 round 18: the
    # lean path's supervisor._env_gitconfig; +1 round 25: supervisor._tree_note (as the lean path);
    # +1 round 26: shellrt.supervisor.mark_owner (as the lean path); +1 round 26: shellrt.protocol.trusted (the
    # supervisor builds its CommandResult without re-running pydantic's validator: issue 22); +1
    # round 26 wave 3: runtime.session_mask (the state a Session hides is hidden from `run` too); +1
    # round 27: sandbox._namefold (as the lean path); +1 round 29: shellrt.cli._stderr (as classify);
    # +1 round 30: shellrt.protocol.control_escape (the package is imported here already); +2
    # round 31: sandbox._liveroots (a backend's roots are published to every shellrt process of the
    # uid, and theirs read) and sandbox._systemroots (no root may be or hold /tmp, /dev/shm, ...);
    # +1 round 35: sandbox._realpath (as the lean path); +1 round 35 runtime: protocol.revalidated
    # (a policy or config a caller built unvalidated is validated again before a backend takes it);
    # +2 round 36 review: sandbox._bwrap_sched and its stdlib `resource` (a local command starts
    # without its caller's real-time policy, negative nice or rtprio/nice limits: the check reads them);
    # +1 round 36 rules: sandbox._maskaliases (a masked path's other names through another mount of
    # its file system are masked too: `derive_policy` reads the mount table); +1 round 38 trust:
    # supervisor._operator_places (as the lean path); +1 round 40 hooks3: supervisor._host_pause_peers
    # (a start announces itself to other shellrt processes' hooks on its workspace and waits for one);
    # +1 round 42 perms5: permissions.caller_home (the one home `~/` rules, their masks and the
    # watched user settings mean: HOME empty or relative anchored them in different places)
    # +1 stop 58: supervisor._caller_home (permissions.caller_home re-exports its one definition)
    # +1 round 45 iface5: permissions._own_roots (the refused roots, one function for both paths)
    FULL_RUN: 220,
    # Round 55: 38 measured (244 before: the whole Session for the function naming its directory)
    SESSIONS_LS: 40,
    # Round 55: 193 measured (252 before: the decision engine, its gate and the command analysis,
    # which only `permissions check` uses); what remains is the settings loader and its hooks
    PERMISSIONS_LIST: 200,
}

#: The pydantic validators a local ``shellrt run`` on the full path may build: the policy it
#: checks, the backend's config, the exec request, the exit status and the result. Any other
#: model on its import path must be ``defer_build`` (each build costs milliseconds). The lean
#: path builds none (it does not even import pydantic: see ``FORBIDDEN``).
RUN_VALIDATORS = frozenset(
    {
        "sandbox.policy.ResourceLimits",
        "sandbox.policy.SandboxPolicy",
        "sandbox.config.LocalConfig",
        "sandbox.base.ExecRequest",
        "sandbox.base.ExitStatus",
        "shellrt.supervisor.models.CommandResult",
    }
)
RUNS = 5


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The children's environment: this checkout first, bytecode cached in a private directory,
    shellrt's state (``sessions ls`` lists it) in another."""
    return {**child_env(tmp_path_factory.mktemp("pycache")), "SHELLRT_HOME": str(tmp_path_factory.mktemp("state"))}


def _shellrt(*words: str) -> tuple[str, ...]:
    return ("-m", "shellrt", *words)


def imported_modules(args: tuple[str, ...], env: dict[str, str], cwd: Path) -> set[str]:
    """Every module the interpreter imported running ``args`` (from ``-X importtime``)."""
    proc = subprocess.run(
        [PYTHON, "-X", "importtime", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "| imported package" not in line
    }


def _loaded(forbidden: tuple[str, ...], modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))


def test_importtime_parsing_sees_the_modules_a_program_imports(env: dict[str, str], tmp_path: Path) -> None:
    modules = imported_modules(("-c", "import json, shellrt.cli"), env, tmp_path)
    assert {"json", "json.decoder", "shellrt", "shellrt.cli"} <= modules
    assert "shellrt.cli.run" not in modules


def test_a_forbidden_name_covers_its_submodules_only() -> None:
    assert _loaded(("json",), {"json", "json.decoder", "jsonschema", "simplejson"}) == [
        "json",
        "json.decoder",
    ]


@pytest.mark.parametrize("words", list(FORBIDDEN), ids=lambda w: " ".join(w))
def test_command_imports_nothing_it_does_not_need(
    words: tuple[str, ...], env: dict[str, str], tmp_path: Path
) -> None:
    modules = imported_modules(_shellrt(*words), env, tmp_path)
    assert "shellrt.cli" in modules  # the command really ran through the CLI
    loaded = _loaded(FORBIDDEN[words] + ALWAYS_FORBIDDEN, modules)
    assert not loaded, f"`shellrt {' '.join(words)}` imported {loaded}; import them where they are used"


@pytest.mark.parametrize("words", list(MODULE_BUDGET), ids=lambda w: " ".join(w))
def test_command_imports_few_modules_beyond_a_pydantic_import(
    words: tuple[str, ...], env: dict[str, str], tmp_path: Path
) -> None:
    site_free = {**env, "PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], *site.getsitepackages()])}
    baseline = imported_modules(("-S", *BASELINE), site_free, tmp_path)
    extra = imported_modules(("-S", *_shellrt(*words)), site_free, tmp_path) - baseline
    assert len(extra) <= MODULE_BUDGET[words], (
        f"`shellrt {' '.join(words)}` imports {len(extra)} modules beyond a pydantic import "
        f"(budget {MODULE_BUDGET[words]}); import the new ones where they are used: {sorted(extra)}"
    )


#: Runs the CLI in-process, then reports which validators exist and whether plugins were looked for.
_REPORT_MODELS = """
import json, sys
from pydantic import BaseModel
from shellrt.cli import main

code = main(sys.argv[2:])

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

loader = sys.modules.get("pydantic.plugin._loader")
report = {
    "code": code,
    "built": sorted({f"{m.__module__}.{m.__qualname__}" for m in subclasses(BaseModel) if m.__pydantic_complete__}),
    "plugins_looked_up": loader is not None and loader._plugins is not None,
}
with open(sys.argv[1], "w") as out:
    json.dump(report, out)
"""


def _model_report(words: tuple[str, ...], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    out = cwd / "report.json"
    proc = subprocess.run(
        [PYTHON, "-c", _REPORT_MODELS, str(out), *words],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_the_lean_run_builds_no_validator(env: dict[str, str], tmp_path: Path) -> None:
    report = _model_report(("run", "--sandbox", "local", "--", "true"), env, tmp_path)
    assert report["code"] == 0
    assert report["built"] == [], f"the lean `shellrt run` built pydantic validators: {report['built']}"


def test_the_full_run_builds_only_the_validators_it_uses(env: dict[str, str], tmp_path: Path) -> None:
    report = _model_report(FULL_RUN, env, tmp_path)
    assert report["code"] == 0
    built = set(report["built"])
    assert built <= RUN_VALIDATORS, (
        f"`shellrt run` built validators it does not use: {sorted(built - RUN_VALIDATORS)}; "
        "give those models ConfigDict(defer_build=True)"
    )
    assert {"sandbox.policy.SandboxPolicy", "shellrt.supervisor.models.CommandResult"} <= built
    assert report["plugins_looked_up"] is False, (
        "`shellrt run` walked the installed distributions for plugins"
    )


def test_run_keeps_pydantic_plugins_when_the_operator_asks(env: dict[str, str], tmp_path: Path) -> None:
    # PYDANTIC_DISABLE_PLUGINS="" is pydantic's "plugins on": the operator's choice wins over ours.
    report = _model_report(FULL_RUN, {**env, "PYDANTIC_DISABLE_PLUGINS": ""}, tmp_path)
    assert report["code"] == 0
    assert report["plugins_looked_up"] is True


@pytest.mark.parametrize("words", [("run", "--sandbox", "local"), FULL_RUN[:-2]], ids=["lean", "full"])
def test_the_pydantic_plugin_switch_does_not_reach_the_command(
    words: tuple[str, ...], env: dict[str, str], tmp_path: Path
) -> None:
    proc = subprocess.run(
        [PYTHON, "-m", "shellrt", *words, "--", "env"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "SHELLRT=1" in proc.stdout  # the command's clean base environment
    assert "PYDANTIC_DISABLE_PLUGINS" not in proc.stdout


def startup_ratios(env: dict[str, str], cwd: Path, runs: int = RUNS) -> dict[tuple[str, ...], float]:
    """Median CPU time of each budgeted command over the baseline's, runs interleaved."""
    samples: dict[tuple[str, ...], list[float]] = {
        args: [] for args in [BASELINE, *map(_shellrt_key, BUDGET)]
    }
    for args in samples:  # warm-up: writes the bytecode cache, fills the page cache
        measure(args, env, cwd)
    for _ in range(runs):
        for args in samples:
            samples[args].append(measure(args, env, cwd)[1])
    base = statistics.median(samples[BASELINE])
    return {words: statistics.median(samples[_shellrt_key(words)]) / base for words in BUDGET}


def _shellrt_key(words: tuple[str, ...]) -> tuple[str, ...]:
    return _shellrt(*words)


def test_startup_stays_within_its_budget_of_a_pydantic_import(env: dict[str, str], tmp_path: Path) -> None:
    ratios = startup_ratios(env, tmp_path)
    over = {" ".join(w): round(r, 2) for w, r in ratios.items() if r > BUDGET[w]}
    if over:  # one retry: a burst of load from another process should not fail the build
        ratios = startup_ratios(env, tmp_path)
        over = {" ".join(w): round(r, 2) for w, r in ratios.items() if r > BUDGET[w]}
    assert not over, f"start-up over budget (x pydantic import): {over}; budgets {BUDGET}"
