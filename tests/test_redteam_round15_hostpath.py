"""Red team round 15 (follow-up): no program shellrt runs on the host is one a sandboxed command wrote.

h-rtiface15 found the class (a ``PATH`` entry inside the workspace -- an activated ``.venv/bin``,
direnv's ``bin``, ``node_modules/.bin`` -- or a relative entry lets a command plant a program the
host later runs: the hook launcher, the git of the alias check, bwrap through the Runtime) and
closed three lookups. The others stayed on ``PATH``: the git of the host-side repo queries
(``git status`` in a bwrap session ran a planted ``git`` on the host, as root, outside the
sandbox), bwrap itself for callers that build a backend directly (batch, Inspect, the Python
API), ``nsenter``/``nft`` of root's bwrap and docker's bridge, the C compiler of the zygote's
init and ripgrep. Now every backend registers the roots its commands write when it is made
(`sandbox.factory.create_backend`) and every such lookup goes through `sandbox._hostpath`.
Each test failed before (the marker was written, or the planted path came back).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import shellrt
from sandbox import BwrapConfig, SandboxPolicy
from sandbox._hostpath import register_writable, unregister_writable
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require


def _plant(directory: Path, name: str, marker: Path, then: str = "exit 1") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text(f"#!/bin/sh\n: > {marker}\n{then}\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def crossable() -> Iterator[Path]:
    """A directory every user may cross (root's bwrap runs bubblewrap as a sandbox uid, which
    must reach it: in a closed pytest directory a planted bwrap is refused for that alone)."""
    base = Path(tempfile.mkdtemp(prefix="rt15-hostpath-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def registered(tmp_path: Path) -> Iterator[Path]:
    """A workspace registered as a session's writable root, with ``bin`` first on ``PATH``."""
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    token = register_writable([ws])
    try:
        yield ws
    finally:
        unregister_writable(token)


def test_the_host_git_of_repo_queries_is_never_a_planted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(shutil.which("bwrap") is not None and shutil.which("git") is not None, "bwrap and git")
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    marker = tmp_path / "PWNED"  # outside the workspace: the sandbox cannot write it
    real_git = shutil.which("git")
    monkeypatch.setenv("PATH", f"{ws / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    plant = (
        f"mkdir -p bin && printf '#!/bin/sh\\n: > {marker}\\nexec {real_git} \"$@\"\\n' > bin/git"
        " && chmod +x bin/git"
    )

    async def session() -> list[str]:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            out = []
            for i, command in enumerate([plant, "git status", "echo done"]):
                block = {"type": "tool_use", "id": f"g{i}", "name": "Bash", "input": {"command": command}}
                result = await rt.run({"role": "assistant", "content": [block]})
                out.append(json.dumps(result["content"][0]))
            return out

    # Round 38 (trust) guards a workspace directory on the operator's PATH: the command's plant is
    # refused or reverted now. Left there before the session (as by an older shellrt), so what this
    # test is about -- shellrt's own lookups skip it -- is still exercised.
    subprocess.run(["/bin/sh", "-c", plant], cwd=ws, check=True)  # writes ws/bin/git only
    results = anyio.run(session)
    assert (ws / "bin" / "git").exists(), results  # the command did write it
    assert not marker.exists(), f"the planted git ran on the host: {results}"
    assert "done" in results[2], results


def test_a_backend_made_directly_never_starts_a_planted_bwrap(
    crossable: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What batch, Inspect and API callers do: `create_backend` with no Runtime around it."""
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    ws, out = crossable / "ws", crossable / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)  # the planted program runs as root's sandbox uid: let it leave its mark
    marker = out / "PWNED"
    _plant(ws / "bin", "bwrap", marker, then='exec /usr/bin/bwrap "$@"')
    monkeypatch.setenv("PATH", f"{ws / 'bin'}:{os.environ['PATH']}")

    async def main() -> str:
        backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                result = await sup.run("echo ran", timeout_s=60)
                assert result.output_path is not None
                return result.output_path.read_text()
        finally:
            await backend.close()

    assert "ran" in anyio.run(main)
    assert not marker.exists(), "bwrap was started from the workspace"


def test_a_bwrap_found_only_where_commands_write_is_refused(
    crossable: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = crossable / "ws"
    marker = tmp_path / "PWNED"
    _plant(ws / "bin", "bwrap-rt15", marker)  # a name only the workspace has
    monkeypatch.setenv("PATH", f"{ws / 'bin'}:{os.environ['PATH']}")

    async def main() -> None:
        config = BwrapConfig(persistent=False, bwrap_path="bwrap-rt15")
        backend = create_backend(config, SandboxPolicy(workspace=ws))
        try:
            await backend.start()
        finally:
            await backend.close()

    from sandbox.errors import BackendUnavailableError

    with pytest.raises(BackendUnavailableError, match="relative or lies where sandboxed commands write"):
        anyio.run(main)
    assert not marker.exists()


def test_ripgrep_and_the_compiler_are_never_planted_ones(
    registered: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sandbox import _static_build
    from shellrt.tools._search import ripgrep_binary

    marker = tmp_path / "PWNED"
    for name in ("rg", "cc", "gcc", "clang"):
        _plant(registered / "bin", name, marker)
    monkeypatch.setenv("PATH", f"{registered / 'bin'}:{os.environ['PATH']}")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("SHELLRT_NO_RIPGREP", raising=False)
    found_rg = ripgrep_binary()
    assert found_rg is None or not found_rg.startswith(str(registered)), found_rg
    try:
        cc = _static_build._compiler()
    except _static_build.StaticBuildError:
        cc = None  # no system compiler here: still not the planted one
    assert cc is None or not cc.startswith(str(registered)), cc
    monkeypatch.chdir(registered)
    monkeypatch.setenv("PATH", f"bin:{os.environ['PATH']}")  # a relative entry: never searched
    found_rg = ripgrep_binary()
    assert found_rg is None or not found_rg.startswith(str(registered)), found_rg
