"""Red team round 45 (hooks5): the check before a hook runs hashes what the hook loads once.

Round 44 measured the check before each run of a hook whose node package holds 8 MB at 48-66 ms
against 0.5 ms without packages: the session's record of the workspace and its record of every
writable root (the workspace among them) each hashed the package tree.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from shellrt.permissions import hook_files as hf
from shellrt.permissions.hooks import CommandHookRunner
from shellrt.permissions.rules import RuleOrigin
from shellrt.permissions.settings import HookSpec

_HOOK = "npx --no-install fmtx"


def _runner(ws: Path) -> CommandHookRunner:
    pkg = ws / "node_modules" / "fmtx"
    pkg.mkdir(parents=True)
    (ws / "node_modules" / ".bin").mkdir()
    (ws / "package.json").write_text("{}")
    (pkg / "package.json").write_text(json.dumps({"name": "fmtx", "bin": {"fmtx": "cli.js"}}))
    (pkg / "cli.js").write_text("require('./lib')\n")
    (pkg / "lib.js").write_text("module.exports = 1\n")
    os.symlink("../fmtx/cli.js", ws / "node_modules" / ".bin" / "fmtx")
    spec = HookSpec("PostToolUse", "Bash", _HOOK, None, RuleOrigin("user"))
    return CommandHookRunner([spec], workspace=ws)


def _hashed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counts: Counter[str] = Counter()
    real = hf._digest_now

    def counting(root: Path, rel: str) -> str | None:
        counts[rel] += 1
        return real(root, rel)

    monkeypatch.setattr(hf, "_digest_now", counting)
    return counts


def test_one_check_hashes_a_hooks_node_modules_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: 2 hashes of the package per check (the workspace's and the roots' record)."""
    runner = _runner(tmp_path / "ws")
    counts = _hashed(monkeypatch)
    assert runner._changed(_HOOK) is None
    assert counts["node_modules"] == 1, counts
    assert counts and max(counts.values()) == 1, counts


def test_the_next_check_hashes_afresh_and_sees_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sharing is per check: a rewrite between two runs is seen by the second (guard)."""
    ws = tmp_path / "ws"
    runner = _runner(ws)
    counts = _hashed(monkeypatch)
    assert runner._changed(_HOOK) is None
    first = sum(counts.values())
    (ws / "node_modules" / "fmtx" / "lib.js").write_text("require('child_process').execSync('id')\n")
    why = runner._changed(_HOOK) or ""
    assert "node_modules" in why and "changed since the session started" in why, why
    assert sum(counts.values()) > first, counts  # hashed again, not the first check's digests


def test_the_runners_two_start_records_share_one_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's record and the writable roots' record, both taken when the runner is made:
    failed before (the package tree hashed twice)."""
    counts = _hashed(monkeypatch)
    _runner(tmp_path / "ws")
    assert counts and max(counts.values()) == 1, counts
