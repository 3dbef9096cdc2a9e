"""Red team round 49 (hostread): host children that inherited shellrt's working directory and environment.

Round 34 cleaned the start-up variables of host ripgrep, host git and hooks (`hook_env`): an
operator's ``LD_PRELOAD=./preload.so`` or ``LD_LIBRARY_PATH=:/opt/lib`` (an empty entry is the
working directory) loads a library from the directory a host child starts in. Read's PDF and
notebook children and TaskOutput's filter child were not among them: they started in shellrt's own
working directory -- the workspace, for ``cd repo && shellrt serve`` -- with the environment whole.
A library a sandboxed command left at the workspace root then ran on the host, as the operator,
the next time the agent read a PDF or filtered a task's output.

The behaviour test plants such a library and runs each child; the pin walks every host process
start of ``shellrt/`` and ``sandbox/`` for an explicit ``cwd=`` (the class: no host child inherits
the working directory, whatever it holds).
"""

from __future__ import annotations

import ast
import functools
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]

_PLANT = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
    int fd = open(MARK, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) { write(fd, "loaded\n", 7); close(fd); }
}
"""


def _children() -> list[tuple[str, Callable[[], object]]]:
    """Each child, run on input it answers without error (its answer is checked: a child that no
    longer starts must not pass as one that loaded nothing)."""
    from shellrt.supervisor.models import TaskOutputChunk
    from shellrt.tools import read, task_output

    chunk = TaskOutputChunk.model_construct(text="a\nb\n", new_bytes=4)  # only its text is filtered

    def pdf() -> object:
        try:
            read._parse_pdf(b"%PDF-1.4\n%%EOF\n", "x.pdf", (1, 1))
        except Exception as exc:  # the child ran pypdf, which found no document
            return "startxref" in str(exc)
        return False

    def notebook() -> object:
        return read._render_in_child(b'{"cells": [], "nbformat": 4}', "x.ipynb").text.startswith("Notebook x.ipynb")

    def filtered() -> object:
        return anyio.run(task_output._filtered, chunk, "a").text == "a\n"

    return [("Read's PDF child", pdf), ("Read's notebook child", notebook), ("TaskOutput's filter child", filtered)]


def test_the_tools_host_children_load_nothing_from_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: 3 of 3 children loaded the planted library (shellrt's cwd the workspace)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    require(cc is not None, "needs a C compiler")
    assert cc is not None
    ws = tmp_path / "ws"
    ws.mkdir()
    source = tmp_path / "plant.c"
    source.write_text(_PLANT)
    mark = tmp_path / "LOADED"
    # What a sandboxed command could leave in the workspace: a library under a relative name.
    subprocess.run(
        [cc, "-shared", "-fPIC", f'-DMARK="{mark}"', "-o", str(ws / "preload.so"), str(source)], check=True
    )
    loaded_by: list[str] = []
    monkeypatch.chdir(ws)  # shellrt started from the repository
    monkeypatch.setenv("LD_LIBRARY_PATH", ":/nonexistent-lib")  # the operator's: an empty entry is the cwd
    for name, run in _children():
        monkeypatch.setenv("LD_PRELOAD", "./preload.so")  # the operator's, relative: resolved from the cwd
        try:
            assert run() is True, f"{name} gave no answer"
        finally:
            monkeypatch.delenv("LD_PRELOAD")
        if mark.exists():
            loaded_by.append(name)
            mark.unlink()
    assert not loaded_by, f"a library the workspace holds ran on the host in: {sorted(loaded_by)}"


_STARTERS = {
    ("subprocess", "run"), ("subprocess", "Popen"), ("subprocess", "check_output"),
    ("subprocess", "check_call"), ("subprocess", "call"), ("anyio", "open_process"),
    ("anyio", "run_process"), ("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
}  # fmt: skip

#: file:function -> why that start may take its working directory from the caller (it is given one
#: on purpose, or the process is no host child at all).
_CWD_REVIEWED = {
    "sandbox/_reaper.py:Reaper.__init__": "env {}: no variable resolves from the cwd; python -I -S",
    "sandbox/bwrap.py:_run_probe": "env PATH=os.defpath only, bwrap by absolute path",
    "sandbox/docker/_bridge.py:firewall_bridge": "env PATH (system dirs) and LC_ALL only; nsenter/nft absolute",
    "sandbox/docker/_pidrewind.py:rewind_pids": "env PATH (system dirs) only; nsenter absolute",
}


@functools.cache
def _starts() -> dict[str, list[int]]:
    """file:function -> lines of its process starts that pass no ``cwd=`` keyword."""
    found: dict[str, list[int]] = {}
    for base in ("shellrt", "sandbox"):
        for path in sorted((ROOT / base).rglob("*.py")):
            text = path.read_text()
            if not any(f"{module}." in text for module in ("subprocess", "anyio", "asyncio")):
                continue  # parsing every file costs ~10 s under load; none of these can start one
            tree = ast.parse(text, str(path))
            rel = path.relative_to(ROOT).as_posix()
            for owner, node in _calls(tree):
                func = node.func
                if not (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and (func.value.id, func.attr) in _STARTERS
                ):
                    continue
                if any(k.arg == "cwd" for k in node.keywords):
                    continue
                found.setdefault(f"{rel}:{owner}", []).append(node.lineno)
    return found


def _calls(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    out: list[tuple[str, ast.Call]] = []

    def walk(node: ast.AST, owner: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(child, [*owner, child.name])
            else:
                if isinstance(child, ast.Call):
                    out.append((".".join(owner), child))
                walk(child, owner)

    walk(tree, [])
    return out


def test_every_host_process_start_names_its_working_directory() -> None:
    """Failed before (the three children above, and the sandbox's own helpers started from the
    caller's cwd). A new start without ``cwd=`` fails here until it names one or is reviewed."""
    unnamed = {k: v for k, v in _starts().items() if k not in _CWD_REVIEWED}
    assert not unnamed, f"host process starts inheriting shellrt's working directory (pass cwd=): {unnamed}"
    stale = sorted(k for k in _CWD_REVIEWED if k not in _starts())
    assert not stale, f"reviewed entries that no longer start a process without cwd=: {stale}"


def test_the_pin_sees_a_start_without_cwd() -> None:
    """The pin's own control: a start without ``cwd=`` is found, one with it is not."""
    tree = ast.parse(
        "import subprocess\ndef f():\n    subprocess.run(['x'])\n    subprocess.run(['y'], cwd='/')\n"
    )
    lines = [
        n.lineno for _, n in _calls(tree) if not any(k.arg == "cwd" for k in n.keywords)
        and isinstance(n.func, ast.Attribute) and n.func.attr == "run"
    ]  # fmt: skip
    assert lines == [3]
