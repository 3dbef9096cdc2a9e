"""Red team, round 16 (bwrap): the host process's own Python code was writable when it lay in a writable root.

shellrt runs on the host, and imports lazily (the web tool's httpx, the docker SDK, analysis
and tool modules on first use). Where it runs from a virtual environment inside the project
(``.venv``, a common set-up: ``pip install shellrt`` into the project's venv) or from a source
tree below the workspace, its interpreter's prefix and ``sys.path`` entries lie in a writable
root: a command wrote a module (or a ``.pth`` file, which every later start of that
interpreter runs), and the host -- this same process on its next lazy import, or the
operator's next run -- ran it unsandboxed, as the caller (root included). The protected-files
check knows ``~/.local``'s ``.pth`` files, not a venv's. Every directory the host loads code
from that lies inside a writable root is now bound read-only in every sandbox (and pinned, so
``mv`` cannot take it away and put a writable one at its path); the rest of the root stays
writable. Real bwrap; session and per-command.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require

_PLANT = "r16_host_planted"


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_cannot_write_where_the_host_imports_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    site = ws / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (site / "dep.py").write_text("VALUE = 1\n")
    tmp_path.chmod(0o755)  # a root caller's commands run as another uid: let it reach the workspace
    monkeypatch.syspath_prepend(str(site))  # as a host interpreter of the project's .venv has it

    direct = (
        f'echo \'import os; os.environ["R16"] = "ran"\' > {site}/{_PLANT}.py; '
        f"echo 'import {_PLANT}' > {site}/r16.pth; echo 'VALUE = 2' > {site}/dep.py; "
        f"echo mine > {ws}/notes.txt && cat {ws}/notes.txt"
    )
    renamed = f"mv {site} {site}.old; mkdir -p {site} && echo 'x = 1' > {site}/{_PLANT}.py"

    async def main() -> tuple[str, int | None]:
        backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                first = await sup.run(direct, timeout_s=60)
                await sup.run(renamed, timeout_s=60)
                return first.preview, first.exit_code
        finally:
            await backend.close()

    out, code = anyio.run(main)
    importlib.invalidate_caches()
    planted = [p.name for p in site.iterdir() if p.name != "dep.py"]
    assert planted == [], f"a command wrote where the host imports from: {planted}"
    assert (site / "dep.py").read_text() == "VALUE = 1\n"
    assert importlib.util.find_spec(_PLANT) is None
    assert not (site.parent / "site-packages.old").exists()
    # The rest of the workspace stays the command's to write.
    assert code == 0 and out.strip().endswith("mine"), out
    assert sys.path[0] == str(site)
