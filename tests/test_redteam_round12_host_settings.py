"""Red team round 12: workspace settings files are read on the host, and are hostile.

``.shellrt/settings*.json``, ``.claude/settings*.json`` and ``.mcp.json`` are read by the
server before any command runs. A FIFO, a ``/dev/zero`` link or a 10 GB sparse file there
must not block or fill memory (held before: regression tests). A symlink out of the
workspace made the server read a host file the repository chose and print its keys in
the session diagnostics (``unknown key 'SECRET_…' ignored``), and that host file's
rules, hooks and MCP servers counted as the workspace's; now such a file is not read.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from shellrt.permissions.sources import load_settings

_FILES = (
    ".shellrt/settings.json",
    ".shellrt/settings.local.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".mcp.json",
)


def _load(ws: Path, tmp_path: Path, *, trust: bool = False) -> tuple[float, object]:
    start = time.monotonic()
    settings = load_settings(
        ws, home=tmp_path / "home", managed_path=tmp_path / "no-managed.json", trust_workspace=trust
    )
    return time.monotonic() - start, settings


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".claude").mkdir()
    (tmp_path / "home").mkdir()
    return ws


@pytest.mark.parametrize("rel", _FILES)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse"])
def test_hostile_special_files_neither_block_nor_fill_memory(
    tmp_path: Path, ws: Path, rel: str, kind: str
) -> None:
    """Regression (held before this round)."""
    target = ws / rel
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    else:
        with open(target, "wb") as fh:
            fh.truncate(10 << 30)
    took, settings = _load(ws, tmp_path, trust=True)
    assert took < 3, took
    assert settings.degraded  # type: ignore[attr-defined]
    assert any(str(target) in d for d in settings.diagnostics)  # type: ignore[attr-defined]


@pytest.mark.parametrize("rel", _FILES)
def test_a_symlink_out_of_the_workspace_is_not_read(tmp_path: Path, ws: Path, rel: str) -> None:
    host = tmp_path / "host-secret.json"
    host.write_text(
        json.dumps(
            {
                "SECRET_KEY_abc123": "x",
                "permissions": {"allow": ["Bash(secret-tool-xyz:*)"]},
                "mcpServers": {"evil": {"command": "secret-server-xyz"}},
            }
        )
    )
    (ws / rel).symlink_to(host)
    _, settings = _load(ws, tmp_path, trust=True)
    text = "\n".join(settings.diagnostics)  # type: ignore[attr-defined]
    assert "SECRET_KEY_abc123" not in text, text
    assert "symlink out of the workspace" in text, text
    assert settings.degraded  # type: ignore[attr-defined]
    assert "evil" not in settings.mcp_servers  # type: ignore[attr-defined]
    assert not any("secret-tool-xyz" in str(r) for r in settings.rules.effective())  # type: ignore[attr-defined]


def test_a_symlink_inside_the_workspace_still_works(tmp_path: Path, ws: Path) -> None:
    (ws / "shared").mkdir()
    (ws / "shared" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    (ws / ".shellrt" / "settings.json").symlink_to("../shared/settings.json")
    _, settings = _load(ws, tmp_path)
    assert not settings.degraded, settings.diagnostics  # type: ignore[attr-defined]
    assert any("rm" in str(r) for r in settings.rules.effective())  # type: ignore[attr-defined]
