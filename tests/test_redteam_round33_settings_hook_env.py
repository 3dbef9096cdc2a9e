"""Red team round 33 (settings): a hook inherits a search path whose empty entry is the workspace.

The operator's shell ran ``export PYTHONPATH=$PYTHONPATH:/opt/lib`` with ``PYTHONPATH`` unset:
shellrt's environment holds ``PYTHONPATH=:/opt/lib``, whose empty entry is the working directory.
Hooks run on the host from the workspace root with that environment (only ``PATH`` was cleaned,
round 16): a sandboxed command wrote ``json.py`` at the root, and the operator's own guard hook
(``~/.shellrt/hooks/guard.py``, outside the workspace, never hashed) imported it on the host.
``LD_LIBRARY_PATH`` has the same empty entry for every library a hook's program loads.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from shellrt.permissions import build_governance

from .test_permissions_support import make_ctx

pytestmark = pytest.mark.anyio


async def test_a_module_planted_at_the_root_is_not_imported_by_the_operators_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    (home / ".shellrt" / "hooks").mkdir(parents=True)
    seen = tmp_path / "env.json"
    guard = home / ".shellrt" / "hooks" / "guard.py"
    guard.write_text(
        "import json, os, sys\n"
        f"json.dump({{k: os.environ.get(k) for k in ('PYTHONPATH', 'LD_LIBRARY_PATH', 'NODE_PATH')}}, open({str(seen)!r}, 'w'))\n"
    )
    hook = {"type": "command", "command": f"{sys.executable} {guard}"}
    (home / ".shellrt" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}))
    planted = tmp_path / "PLANTED"
    # What a sandboxed command writes at the workspace root, where hooks run.
    (ws / "json.py").write_text(f"open({str(planted)!r}, 'w').write('host code')\nfrom _json import *\n")
    monkeypatch.setenv("PYTHONPATH", ":/nonexistent/lib")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/nonexistent/lib::.")
    monkeypatch.setenv("NODE_PATH", f"{ws}/node_modules:/usr/lib/node_modules")
    gov = build_governance(ws, home=home, managed_path=tmp_path / "managed.json")
    assert gov.settings.hook_specs, gov.settings.diagnostics
    await gov.hooks.pre_tool_use("Bash", {"command": "ls"}, make_ctx(ws, tmp_path))
    assert not planted.exists(), "the hook imported the workspace's json.py on the host"
    env = json.loads(seen.read_text())
    assert env == {"PYTHONPATH": "/nonexistent/lib", "LD_LIBRARY_PATH": "/nonexistent/lib", "NODE_PATH": "/usr/lib/node_modules"}
