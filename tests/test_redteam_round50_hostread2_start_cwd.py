"""Red team round 50 (hostread2): which working directory every host process start names.

Round 49 pinned that every ``subprocess``/``anyio``/``asyncio`` start of ``shellrt/`` and ``sandbox/``
passes a ``cwd=`` keyword -- any value: ``cwd=workspace`` with the operator's environment whole
passed it, and so did a start written ``from subprocess import Popen`` / ``import subprocess as sp``
(not seen at all), or one whose keywords come from ``**kwargs``. A host child started in a directory
a command writes resolves the operator's relative ``LD_PRELOAD`` and empty ``LD_LIBRARY_PATH``/
``PATH`` entries there. This pin accepts only ``cwd="/"``; every other start (a variable cwd, none,
or keywords it cannot see) is listed with where it runs and what cleans its environment, and a new
one fails here until it is reviewed (a stale entry fails too).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_MODULES = {
    "subprocess": {"run", "Popen", "check_output", "check_call", "call", "getoutput", "getstatusoutput"},
    "anyio": {"open_process", "run_process"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "os": {"system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe", "spawnv"},
}

#: A file that can start a process names a starter's module or a starter no other module has
#: (an alias is imported under the module's own name): parsing every file costs ~10 s under load.
_MAY_START = re.compile(r"subprocess|open_process|run_process|posix_spawn|\bos\.(?:system|popen|exec|spawn)|from os import")

#: file:function -> where that start runs and why its environment resolves nothing from there.
REVIEWED = {
    # Started in a directory commands may write, on purpose; environment cleaned for it.
    "shellrt/tools/_gitrepo.py:_git": "the repository (git must); env hook_env(..., [cwd]): no relative, "
    "empty or in-root entry of PATH/LD_*/search variables",
    "shellrt/tools/_search.py:_run_rg": "the searched directory (or /proc/self/fd/N of it); env _host_child_env",
    "shellrt/permissions/hookproc.py:run_hook_process": "the session's cwd (hooks expect it); env hook_env",
    "shellrt/tools/mcp/_stdio.py:bounded_stdio_client": "launch_cwd: the server's configured cwd, never "
    "inside a writable root (server_cwd); env the SDK's minimal one plus launch_env (host_env PATH)",
    # Private directories of their own.
    "sandbox/_compiler.py:check_search_dirs": "the build's private TemporaryDirectory; env _compiler_env",
    "sandbox/_static_build.py:_run_cc": "the build's private TemporaryDirectory; env _compiler_env",
    # The command itself, not a host child of ours.
    "shellrt/cli/_local_pump.py:LocalPump.__init__": "the lean local run's command: local is no sandbox",
    "sandbox/_spawn.py:start": "the backend's command: bwrap's runner passes cwd='/', local is no sandbox",
    "sandbox/_zygote_main.py:Zygote._run": "inside the sandbox (the zygote runs there)",
    "sandbox/_zygote_main.py:_start_c_server": "inside the sandbox",
    "sandbox/_zygote_main.py:Spawner.exec": "inside the sandbox",
    "sandbox/_bwrap_shmstep.py:main": "execv: replaces a step already started in /",
    # No cwd named: the caller's, with an environment that resolves nothing from it (round 49).
    "sandbox/_reaper.py:Reaper.__init__": "env {REAPER_VAR} only; python -I -S, absolute",
    "sandbox/bwrap.py:_run_probe": "env PATH=os.defpath only, bwrap by absolute path",
    "sandbox/docker/_bridge.py:firewall_bridge": "env PATH (system dirs) and LC_ALL only; nsenter/nft absolute",
    "sandbox/docker/_pidrewind.py:rewind_pids": "env PATH (system dirs) only; nsenter absolute",
}


def _aliases(tree: ast.Module) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """``(module alias -> module, bare name -> (module, function))`` from the file's imports."""
    modules = {m: m for m in _MODULES}
    names: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in _MODULES:
                    modules[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module in _MODULES and node.level == 0:
            for a in node.names:
                if a.name in _MODULES[node.module]:
                    names[a.asname or a.name] = (node.module, a.name)
    return modules, names


def _starts_in(tree: ast.Module, rel: str) -> dict[str, list[str]]:
    """file:function -> how each of its process starts names its cwd (only those not ``cwd="/"``)."""
    modules, names = _aliases(tree)
    found: dict[str, list[str]] = {}

    def walk(node: ast.AST, owner: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(child, [*owner, child.name])
                continue
            if isinstance(child, ast.Call) and _is_start(child.func, modules, names):
                cwd = next((k.value for k in child.keywords if k.arg == "cwd"), None)
                splat = any(k.arg is None for k in child.keywords)
                if splat or not (isinstance(cwd, ast.Constant) and cwd.value == "/"):
                    how = "**keywords" if splat else ("no cwd" if cwd is None else ast.unparse(cwd))
                    found.setdefault(f"{rel}:{'.'.join(owner)}", []).append(f"line {child.lineno}: {how}")
            walk(child, owner)

    walk(tree, [])
    return found


def _is_start(func: ast.expr, modules: dict[str, str], names: dict[str, tuple[str, str]]) -> bool:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module = modules.get(func.value.id)
        return module is not None and func.attr in _MODULES[module]
    return isinstance(func, ast.Name) and func.id in names


@functools.cache
def _starts() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for base in ("shellrt", "sandbox"):
        for path in sorted((ROOT / base).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if not _MAY_START.search(text):
                continue
            found.update(_starts_in(ast.parse(text, str(path)), path.relative_to(ROOT).as_posix()))
    return found


def test_every_host_process_start_runs_in_root_or_is_reviewed() -> None:
    """Round 49's pin accepted any ``cwd=`` value and missed aliased starts; this one lists the
    starts that run anywhere but ``/`` (16 at this round, each reviewed above)."""
    starts = _starts()
    assert len(starts) >= 10, starts  # the walk finds them (a broken walk would pass anything)
    new = {k: v for k, v in starts.items() if k not in REVIEWED}
    assert not new, (
        f"host process starts not in '/' (pass cwd='/', or review where they run and list them): {new}"
    )
    stale = sorted(REVIEWED.keys() - starts.keys())
    assert not stale, f"reviewed entries that no longer start a process outside '/': {stale}"


def test_the_pin_sees_every_spelling_of_a_start() -> None:
    """The pin's control (round 49's saw only the first two lines, and passed the first)."""
    tree = ast.parse(
        "import subprocess\nimport subprocess as sp\nfrom subprocess import Popen as P\nimport os\n"
        "def f(ws, kw):\n"
        "    subprocess.run(['a'], cwd=ws)\n"  # 6: a variable cwd
        "    subprocess.run(['b'])\n"  # 7: none
        "    subprocess.run(['c'], cwd='/')\n"  # accepted
        "    sp.check_output(['d'], cwd='/tmp')\n"  # 9: aliased module
        "    P(['e'], cwd=ws)\n"  # 10: aliased name
        "    os.posix_spawn('/bin/f', ['f'], {})\n"  # 11
        "    subprocess.Popen(['g'], **kw)\n"  # 12: keywords unseen
        "    subprocess.Popen(['h'], cwd='/', **kw)\n"  # 13: may override nothing, but unseen
    )
    lines = [int(s.split()[1].rstrip(":")) for s in _starts_in(tree, "x.py")["x.py:f"]]
    assert lines == [6, 7, 9, 10, 11, 12, 13]
