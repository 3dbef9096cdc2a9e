"""Red team round 26 (trusted): a command given shellrt's config directory forges the tree record.

``workspace-writes.json`` (what a guarded start compares the workspace with), its lock and the
marks note sit beside the trust store. They are not protected files (the protection reverts a
command's change after each command, which would revert other sessions' concurrent marks), so a
session given ``--writable ~/.config`` (or the directory itself) could plant ``sitecustomize.py``
and write a ``~reviewed`` entry vouching for the planted tree; the next session's operator server
imported the plant on the host (round 25 "Left"). Now the record's directory is never a
command's: masked for every sandbox whose writable root holds it, refused as a writable root.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from shellrt.permissions.tree_writes import tree_writes_path
from tests._bwrap_session import require_bwrap
from tests._governance import isolated_workspace
from tests.test_redteam_round24_trusted_treeplant import _server, _session
from tests.test_redteam_round25_trusted_unrecorded import ECHO, _plant, _shellrt


def _forge(ws: Path, marker: Path, scratch: Path) -> str:
    """A shell command writing a ``~reviewed`` tree that matches ``ws`` once ``_plant(marker)``
    ran there (its digest computed here, on a copy: it depends on names and contents only)."""
    from shellrt.permissions.hook_files import workspace_tree_digest

    shutil.copytree(ws, scratch)
    (scratch / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w')\n")
    forged = {"~reviewed": {str(ws): {"tree": workspace_tree_digest(scratch), "at": 1e12}}}
    record = shlex.quote(str(tree_writes_path()))
    return f"printf '%s' {shlex.quote(json.dumps(forged))} > {record} && echo forged"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/cfg``, holding the trust store's directory ``cfg/shellrt``."""
    isolated_workspace(tmp_path, monkeypatch)
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "cfg" / "shellrt" / "trusted.json"))
    (tmp_path / "cfg" / "shellrt").mkdir(parents=True)
    (tmp_path / "ws" / "app.py").write_text("X = 1\n")
    return tmp_path / "cfg"


@pytest.mark.parametrize("grant", ["parent", "itself"])
def test_a_run_given_the_config_directory_cannot_vouch_for_its_plant(
    config: Path, tmp_path: Path, grant: str
) -> None:
    """Failed 2 of 2 before: the run wrote the forged ``~reviewed`` and the next session's
    server imported the planted module."""
    require_bwrap()
    ws, marker = tmp_path / "ws", tmp_path / "ran-on-the-host"
    root = config if grant == "parent" else config / "shellrt"
    command = f"cd {shlex.quote(str(ws))} && {_plant(marker)}; {_forge(ws, marker, tmp_path / 'copy')}"
    done = _shellrt("run", "--sandbox", "bwrap", "--workspace", str(ws), "--writable", str(root), "--", command)
    if grant == "itself":  # refused before any command, saying what to do
        assert done.returncode != 0 and "shellrt's own" in done.stderr, done
        assert not (ws / "sitecustomize.py").exists()
        return
    assert "wrote" in done.stdout, done  # the plant is the command's to make; the record is not
    assert "forged" not in done.stdout, done
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"mcpServers": {"srv": _server(ws, "cwd")}}))
    out = _session(ws, own, tmp_path / "s2", [ECHO])
    assert not marker.exists(), "the next session's server loaded a plant the record was forged to vouch for"
    assert out[0].get("is_error"), out


def test_a_runtime_refuses_the_config_directory_as_a_writable_root(config: Path, tmp_path: Path) -> None:
    """Failed 1 of 1 before: a bwrap session whose writable root is the record's directory
    (which cannot be masked without hiding the root) wrote the record."""
    from shellrt.runtime import Runtime

    require_bwrap()
    ws = tmp_path / "ws"
    policy = SandboxPolicy(workspace=ws, writable_roots=(config / "shellrt",))

    async def main() -> str:
        async with Runtime(ws, "bwrap", policy=policy, mode="bypassPermissions", session_dir=tmp_path / "s") as rt:
            block = {"type": "tool_use", "id": "c", "name": "Bash",
                     "input": {"command": f"echo x > {shlex.quote(str(config / 'shellrt' / 'forged'))}; echo ran"}}
            return json.dumps((await rt.run({"role": "assistant", "content": [block]}))["content"])

    with pytest.raises(ValueError, match="shellrt's own"):
        anyio.run(main)
    assert not (config / "shellrt" / "forged").exists()
