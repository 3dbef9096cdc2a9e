"""Red team round 16 (left-overs): ``shellrt run`` reverts a file the settings' write-deny rules name.

Round 15 made a session revert a file a command created that an ``Edit``/``Write`` deny rule
names (``Edit(**/*.pem)``: moved to quarantine after the command). ``shellrt run`` loaded no
settings, on the lean local path and the full one alike: the same command run through it kept
``new.pem``. Now both paths load the settings' write-deny globs (only when a settings file names
one: the lean path's start-up stays cheap otherwise) and hand them to the protected-files check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.cli._run_write_deny import candidate_files, may_name_write_deny
from shellrt.permissions.sources import discover_files
from tests.conftest import require
from tests.test_cli_fastrun import _FULL

ROOT = Path(__file__).resolve().parents[1]


def _home(tmp_path: Path, rules: list[str]) -> Path:
    home = tmp_path / "home"
    (home / ".shellrt").mkdir(parents=True)
    (home / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": rules}}))
    return home


@pytest.mark.parametrize(("path", "sandbox"), [("lean", "local"), ("full", "local"), ("full", "bwrap")])
def test_shellrt_run_reverts_a_file_a_deny_rule_names(tmp_path: Path, path: str, sandbox: str) -> None:
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)  # bwrap as root: the sandbox uid crosses it, as a checkout under /srv
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    (ws / ".shellrt").mkdir()  # the project's rules (an untrusted workspace's deny rules count too)
    (ws / ".shellrt" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Edit(**/*.pem)", "Write(**/.env)"]}})
    )
    # -P: ``-c`` would put the workspace (the cwd) on the host's sys.path, which bwrap refuses (round 17)
    head = ["-m", "shellrt", "run"] if path == "lean" else ["-P", "-c", _FULL]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    env["SHELLRT_TRUST_STORE"] = str(tmp_path / "trusted.json")
    done = subprocess.run(
        [
            sys.executable,
            *head,
            "--sandbox",
            sandbox,
            "--workspace",
            str(ws),
            "--",
            "echo k > new.pem; mkdir -p sub; echo s > sub/.env; echo ok > keep.txt",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ws,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (ws / "keep.txt").read_text() == "ok\n", done.stderr  # the command did run
    assert not (ws / "new.pem").exists(), f"new.pem stayed ({path}, {sandbox}): {done.stderr}"
    assert not (ws / "sub" / ".env").exists(), done.stderr
    assert "Edit(**/*.pem)" in done.stderr and "reverted" in done.stderr, done.stderr


def test_the_pre_scan_reads_every_file_that_holds_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lean path's cheap pre-scan must look where the real loader does (no drift)."""
    home = _home(tmp_path, ["Read(./x)"])
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    ws.mkdir()
    real = [
        p
        for source, p in discover_files(ws)
        if p.name != ".mcp.json" and source != "cli" or p == tmp_path / "managed.json"
    ]
    assert set(candidate_files(ws)) >= set(real), (candidate_files(ws), real)
    assert not may_name_write_deny(ws)  # a Read rule alone: settings are not loaded
    for rel in (".shellrt/settings.json", ".claude/settings.local.json"):
        (ws / rel).parent.mkdir(exist_ok=True)
        (ws / rel).write_text(json.dumps({"permissions": {"deny": [" NotebookEdit(./n.ipynb)"]}}))
        assert may_name_write_deny(ws), rel
        (ws / rel).unlink()
    (ws / ".claude" / "settings.json").write_text("{not json")  # the real loader decides (fail closed)
    assert may_name_write_deny(ws)


@pytest.mark.parametrize("path", ["lean", "full"])
def test_a_settings_file_nested_past_the_recursion_limit_is_reported_not_a_crash(tmp_path: Path, path: str) -> None:
    """A repository's ``.claude/settings.json`` of 200,000 nested lists made the pre-scan's
    ``json.loads`` raise RecursionError: `shellrt run` died with a traceback before the command."""
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_text('{"permissions": {"deny": ' + "[" * 200_000 + "]" * 200_000 + "}}")
    # -P: ``-c`` would put the workspace (the cwd) on the host's sys.path, which bwrap refuses (round 17)
    head = ["-m", "shellrt", "run"] if path == "lean" else ["-P", "-c", _FULL]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "s")}
    done = subprocess.run(
        [sys.executable, *head, "--sandbox", "local", "--workspace", str(ws), "--", "echo ran"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ws,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0 and done.stdout.strip() == "ran", done.stderr[-2000:]
    assert "nested too deeply" in done.stderr, done.stderr[-2000:]
