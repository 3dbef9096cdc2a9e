"""Red team, round 17 (bwrap): a workspace on the host's ``PYTHONPATH`` let a command plant host code.

Round 16 left it as a warning: with ``PYTHONPATH=.`` (common in projects) and ``shellrt run``
from the project, the workspace is a ``sys.path`` entry ahead of site-packages. A command wrote
``anyio.py`` there (its to write), and the next ``shellrt run`` imported it at start-up, on the
host, unsandboxed, as the caller (this very process's lazy imports too). Such a root is now
refused at start with what to do instead; a root merely below an entry is refused only when its
first directory there is a name the host imports. Real bwrap, real CLI runs.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.errors import SandboxPolicyError
from tests.conftest import require

REPO = Path(__file__).resolve().parents[1]


def test_a_workspace_on_pythonpath_cannot_plant_what_the_next_run_imports(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    tmp_path.chmod(0o755)  # a root caller's commands run as another uid
    marker = tmp_path / "RAN-ON-HOST"
    plant = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('x'); raise ImportError('planted')"
    path = [str(ws), str(REPO), os.environ.get("PYTHONPATH")]  # uid 65534's packages are on the last
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, path))}
    env.pop("PYTHONSAFEPATH", None)
    cli = [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--workspace", str(ws), "--"]
    first = subprocess.run(
        [*cli, f"echo {base64.b64encode(plant.encode()).decode()} | base64 -d > anyio.py && echo planted"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    second = subprocess.run([*cli, "true"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert not marker.exists(), "the host imported the command's anyio.py"
    assert not (ws / "anyio.py").exists(), first.stdout
    assert first.returncode != 0 and "PYTHONPATH" in first.stderr and "Fix:" in first.stderr, first.stderr[-2000:]
    assert second.returncode != 0, second.stderr[-2000:]


@pytest.mark.parametrize(("below", "refused"), [("anyio/sub", True), ("work17/ws", False)])
def test_a_root_below_an_entry_is_refused_only_where_it_names_an_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, below: str, refused: bool
) -> None:
    """``sys.path`` holds ``tmp_path``; a root at ``tmp_path/anyio/sub`` lets a command write into
    the package directory ``anyio`` (a namespace package there, ahead of site-packages once it has
    modules), one at ``tmp_path/work17/ws`` reaches no name the host imports."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / below
    ws.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path))

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        try:
            await backend.start()
        except SandboxPolicyError as exc:
            return f"refused: {exc}"
        await backend.close()
        return "started"

    outcome = anyio.run(main)
    assert outcome.startswith("refused") == refused, outcome
    if refused:
        assert "Fix:" in outcome and str(tmp_path) in outcome, outcome
