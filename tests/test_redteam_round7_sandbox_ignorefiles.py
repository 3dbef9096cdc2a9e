"""Red team round 7: a repository's ignore files took the host process down through Glob and Grep.

Where ripgrep does not run in the sandbox (docker, whose image is not assumed to have it; local
with read-denied paths), Glob lists and Grep searches the workspace with shellrt's own walker, on
the host. It obeys ``.gitignore``/``.ignore``/``.rgignore`` in every directory, and those files are
the command's to write:

* below the walk's root the walker read each one whole: ``truncate -s 3G sub/.gitignore`` (a
  sparse file, free on disk) made one Glob allocate 3 GB in the shellrt process (every session of
  a server), and a larger one had the kernel's OOM killer pick it;
* a few hundred thousand short rules (one 1.4 MB file) held Glob for 20 s of the host's CPU (a
  thread of the shellrt process: no deadline, not cancellable), each rule compiled and matched
  against every path; with the 16 MB bound ignore files had, minutes and gigabytes.

Each test runs the tools in a child process under a 1.5 GB address-space limit (the shellrt
process, as a server holds it) and times them; the command that plants the file runs in the
real sandbox.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._docker_support import BUSYBOX, require_docker

_ATTACK = r"""
import anyio, os, resource, sys, time
from pathlib import Path
import shellrt
from sandbox import DockerConfig

tmp, backend, plant = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
ws = tmp / "ws"
(ws / "sub").mkdir(parents=True)
(ws / "sub" / "a.py").write_text("needle\n")
sandbox = DockerConfig(image=sys.argv[4]) if backend == "docker" else "local"
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, resource.RLIM_INFINITY))

async def main() -> None:
    async with shellrt.Runtime(workspace=ws, sandbox=sandbox, mode="bypassPermissions",
                               session_dir=tmp / "s", settings_files=()) as rt:
        async def call(name, raw):
            user = await rt.run([{"type": "tool_use", "id": "r7i" + os.urandom(6).hex(), "name": name, "input": raw}])
            block = user["content"][0]
            content = block["content"]
            return block["is_error"], content if isinstance(content, str) else " ".join(c.get("text", "") for c in content)
        error, body = await call("Bash", {"command": plant})
        print("PLANTED", error, body[:200].replace("\n", " "))
        for name, raw in (("Glob", {"pattern": "**/*.py"}), ("Grep", {"pattern": "needle"})):
            start = time.monotonic()
            error, body = await call(name, raw)
            print("RESULT", name, error, round(time.monotonic() - start, 1), body[:300].replace("\n", " "))

anyio.run(main)
"""

_SPARSE = "truncate -s 3G sub/.gitignore && echo planted"
_MANY_RULES = "seq 1 200000 | sed 's/^/n/' > sub/.ignore && echo planted"


def _attack(tmp_path: Path, backend: str, plant: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _ATTACK, str(tmp_path), backend, plant, BUSYBOX],
        capture_output=True,
        text=True,
        timeout=600,
    )
    planted = [line for line in done.stdout.splitlines() if line.startswith("PLANTED")]
    assert planted and "planted" in planted[0], (done.stdout, done.stderr[-3000:])
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert len(results) == 2, (done.stdout, done.stderr[-3000:])
    return results


def _backend(name: str) -> str:
    if name == "docker":
        require_docker()
    return name


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_sparse_ignore_file_costs_the_host_nothing(tmp_path: Path, backend: str) -> None:
    """``truncate -s 3G sub/.gitignore``: Glob and Grep answer, and find the file, under 1.5 GB and
    at once (its first MiB, one line of NULs, took 4 s to compile as a glob)."""
    results = _attack(tmp_path, _backend(backend), _SPARSE)
    for line in results:
        assert "MemoryError" not in line, results
        assert " False " in line and "a.py" in line, results
        assert float(line.split()[3]) < 3.0, results


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_flood_of_ignore_rules_is_bounded(tmp_path: Path, backend: str) -> None:
    """200,000 rules in ``sub/.ignore`` (1.4 MB): each tool answers within a few seconds, with the
    hit or with an error that says what to use instead; never 20 s of the host's CPU."""
    results = _attack(tmp_path, _backend(backend), _MANY_RULES)
    for line in results:
        name, error, seconds = line.split()[1:4]
        assert float(seconds) < 8.0, results
        assert "a.py" in line or (error == "True" and "Bash" in line), results


@pytest.mark.anyio
async def test_a_listing_past_its_time_in_process_finishes_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Glob lists in a worker thread for `IN_PROCESS_LIST_S` (no interpreter start for an ordinary
    tree), then starts again in the walker's child process, which has a deadline and a memory bound:
    with no time in process at all, the child's answer is the same listing."""
    import os

    import shellrt
    from shellrt.tools import _search

    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    for name in ("a.py", "sub/b.py", "sub/c.txt"):
        (ws / name).write_text("x\n")
    (ws / ".gitignore").write_text("c.txt\n")
    monkeypatch.setattr(_search, "IN_PROCESS_LIST_S", 0.0)
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        user = await rt.run(
            [
                {
                    "type": "tool_use",
                    "id": "r7l" + os.urandom(6).hex(),
                    "name": "Glob",
                    "input": {"pattern": "**/*"},
                }
            ]
        )
    block = user["content"][0]
    body = str(block["content"])
    assert not block["is_error"], body
    assert "a.py" in body and "sub/b.py" in body and "c.txt" not in body, body
