"""Red team round 16 (follow-up of the bwrap section): host code in a docker bind-mounted workspace.

Round 16 (bwrap) found that where shellrt runs from a virtual environment or source tree inside
the workspace, a command wrote a module or a ``.pth`` file the host then ran, unsandboxed, and
bound those directories read-only for bwrap commands (`sandbox/_hostcode.py`). Docker's bind
mode mounts the same host directory read-write into the container: a container command planted
there too (``r16.pth`` appeared in the host's site-packages). Now the places the host imports
from inside a bind-mounted workspace are bound read-only onto themselves, like write-denied
paths. Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_PLANT = "r16_docker_planted"


@pytest.mark.parametrize("user", [None, "root"], ids=["leased", "root-in-container"])
async def test_a_container_command_cannot_write_where_the_host_imports_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user: str | None
) -> None:
    require_docker()
    ws = tmp_path / "ws"
    site = ws / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (site / "dep.py").write_text("VALUE = 1\n")
    tmp_path.chmod(0o755)
    monkeypatch.syspath_prepend(str(site))  # as a host interpreter of the project's .venv has it
    inside = "/workspace/.venv/lib/python3/site-packages"
    command = (
        f"echo 'import os' > {inside}/{_PLANT}.py; echo 'import {_PLANT}' > {inside}/r16.pth; "
        f"echo 'VALUE = 2' > {inside}/dep.py; echo mine > /workspace/notes.txt && cat /workspace/notes.txt"
    )
    async with DockerBackend(config(BUSYBOX, workspace_mode="bind"), policy(ws)) as backend:
        code, out = await run_sh(backend, command, user=user)
    importlib.invalidate_caches()
    planted = sorted(p.name for p in site.iterdir() if p.name != "dep.py")
    assert planted == [], f"a container command wrote where the host imports from: {planted}; {out}"
    assert (site / "dep.py").read_text() == "VALUE = 1\n"
    assert importlib.util.find_spec(_PLANT) is None
    if user is None:  # the leased uid keeps the rest of the workspace (root in the container maps to none)
        assert code == 0 and out.strip().endswith("mine"), out


async def test_renaming_a_parent_does_not_put_a_writable_directory_at_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    ws = tmp_path / "ws"
    site = ws / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    tmp_path.chmod(0o755)
    monkeypatch.syspath_prepend(str(site))
    inside = "/workspace/.venv/lib/python3/site-packages"
    command = (
        "mv /workspace/.venv /workspace/.venv.old; mv /workspace/.venv/lib /workspace/.venv/lib.old; "
        f"mkdir -p {inside}; echo 'import os' > {inside}/{_PLANT}.py; echo done"
    )
    async with DockerBackend(config(BUSYBOX, workspace_mode="bind"), policy(ws)) as backend:
        _, out = await run_sh(backend, command)
    importlib.invalidate_caches()
    assert "Resource busy" in out or "busy" in out.lower(), out
    assert site.is_dir() and not (site / f"{_PLANT}.py").exists(), out
    assert not (ws / ".venv.old").exists() and not (ws / ".venv" / "lib.old").exists(), out
