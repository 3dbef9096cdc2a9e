"""Round 16 (left-overs): every place shellrt starts a host-side process was reviewed for ``PATH``.

A child that looks a program up through the operator's ``PATH`` runs what a sandboxed command
planted in a workspace entry (``.venv/bin``, a relative entry): hooks and stdio MCP servers did
(`test_redteam_round16_left_host_path`). This walks the source of ``shellrt/`` and ``sandbox/``
for every call that starts a process and compares the call sites with the reviewed list below,
each with why its program and its child's lookups never come from such an entry. A new call
site fails here until it is reviewed (and a stale entry fails too), so the rule stays class-wide.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_STARTERS = {
    ("subprocess", "run"), ("subprocess", "Popen"), ("subprocess", "check_output"),
    ("subprocess", "check_call"), ("subprocess", "call"), ("anyio", "open_process"),
    ("anyio", "run_process"), ("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
    ("os", "execv"), ("os", "execvp"), ("os", "execve"), ("os", "execvpe"), ("os", "spawnv"),
    ("os", "posix_spawn"), ("os", "posix_spawnp"), ("os", "system"), ("os", "popen"),
}  # fmt: skip

#: file:function -> why no program of it (or of its child) is found where commands write.
REVIEWED = {
    "shellrt/cli/_local_pump.py:LocalPump.__init__": "the lean local run's command: local is no sandbox",
    "sandbox/_bwrap_shmstep.py:main": "execv of an absolute path only (bwrap from host_which); no PATH lookup",
    "shellrt/permissions/embedded.py:_git_commands": "git from host_which; the child's PATH is host_path",
    "shellrt/permissions/hookproc.py:_pid_namespace_prefix": "unshare from the system directories",
    "shellrt/permissions/hookproc.py:run_hook_process": "/bin/sh; the hook's env PATH is host_env (round 16)",
    "shellrt/permissions/hook_venvs.py:_asked": "an interpreter outside the workspace by name and real path, "
    "looked up on host_path; its env PATH is host_env with the workspace (round 47 hooks6, stop 60)",
    "shellrt/supervisor/_host_pause_watch.py:_start": "sys.executable -I -S, env PATH /usr/bin:/bin, no lookup",
    "shellrt/supervisor/protect.py:operator_hooks_paths": "git from host_which, env host_env, run in / (no repository)",
    "shellrt/tools/_gitrepo.py:_git": "git looked up on host_path, which is the child's PATH too",
    "shellrt/tools/_search.py:_run_rg": "rg from host_which, run by absolute path",
    "shellrt/tools/_search.py:_walker_process": "sys.executable, absolute",
    "shellrt/tools/mcp/_stdio.py:bounded_stdio_client": "the env's PATH is host_env (launch_env, round 16)",
    "shellrt/tools/read.py:_render_in_child": "sys.executable -I, absolute",
    "shellrt/tools/_convert_worker.py:_Worker.__init__": "sys.executable -I, absolute; cwd /; the host's own absolute sys.path",
    "shellrt/tools/read.py:_parse_pdf": "sys.executable -I, absolute",
    "shellrt/tools/task_output.py:_filtered": "sys.executable -I -S, absolute",
    "sandbox/_idmap.py:userns_fd": "sys.executable -I -S, absolute",
    "sandbox/_ucounts.py:_BudgetNamespace._make": "sys.executable -I -S, absolute; env {}, cwd /",
    "sandbox/_ucounts.py:_check_joinable": "nsenter found on os.defpath and /usr/sbin:/sbin; PATH=os.defpath for its `true`",
    "sandbox/_ownerguard.py:guard_owner": "sys.executable -S, absolute",
    "sandbox/_bwrap_shm.py:ShmCap.decide": "the budget prefix (nsenter, absolute), the starter as /proc/self/fd, then bwrap from host_which --version",
    "sandbox/_reaper.py:Reaper.__init__": "sys.executable, absolute",
    "sandbox/_spawn.py:start": "the backend's command (bwrap by absolute path; local is no sandbox)",
    "sandbox/_static_build.py:_run_cc": "the C compiler from host_which (argv[0], from _compile)",
    "sandbox/_compiler.py:check_search_dirs": "the checked compiler (argv[0], as _run_cc starts it), "
    "in the build's environment (_compiler_env: PATH = host_path()); -print-search-dirs runs nothing",
    "sandbox/_zygote_main.py:Zygote._run": "inside the sandbox (the zygote runs there)",
    "sandbox/_zygote_main.py:_start_c_server": "inside the sandbox, absolute",
    "sandbox/_zygote_main.py:Spawner.exec": "inside the sandbox, absolute",
    "sandbox/bwrap.py:_run_probe": "bwrap by absolute path, env PATH os.defpath",
    "sandbox/docker/_bridge.py:firewall_bridge": "nsenter/nft from host_which, env PATH the system dirs",
    "sandbox/docker/_detach.py:run_child": "sys.executable -I -S, absolute (detach_mount and the cgroup child call it)",
    "sandbox/docker/_idmap_ws.py:idmap_workspace": "sys.executable -I -S, absolute",
    "sandbox/docker/_pidrewind.py:rewind_pids": "nsenter from the system directories, /bin/sh absolute, "
    "env PATH the system directories (round 36 docker2)",
}


class _Starts(ast.NodeVisitor):
    """The enclosing function (``Class.method``) of every process start in one file."""

    def __init__(self, rel: str) -> None:
        self.rel, self.stack, self.found = rel, list[str](), set[str]()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and (f.value.id, f.attr) in _STARTERS
        ):
            self.found.add(f"{self.rel}:{'.'.join(self.stack)}")
        self.generic_visit(node)


def _call_sites() -> set[str]:
    found: set[str] = set()
    for top in ("shellrt", "sandbox"):
        for path in sorted((ROOT / top).rglob("*.py")):
            visitor = _Starts(path.relative_to(ROOT).as_posix())
            visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
            found |= visitor.found
    return found


def test_every_host_process_start_was_reviewed_for_path() -> None:
    sites = _call_sites()
    assert len(sites) >= 20, sites  # the walk finds them (a broken walk would pass anything)
    new = sorted(sites - REVIEWED.keys())
    assert not new, f"review these process starts for PATH lookups, then list them in REVIEWED: {new}"
    stale = sorted(REVIEWED.keys() - sites)
    assert not stale, f"no longer start a process (remove from REVIEWED): {stale}"
