"""Red team round 33 (settings): settings files a hostile repository makes unreadable.

1. ``shellrt run``'s pre-scan of the settings files (does one name an ``Edit``/``Write`` deny
   rule?) opened them with a plain ``open()``. A workspace's ``.claude/settings.json`` that is a
   FIFO (a command's ``mkfifo``), or a committed symlink to one or to ``/dev/tty``, blocked the
   event loop in ``open()`` for ever: ``timeout 20 shellrt run …`` was still there after ten
   minutes (SIGTERM and Ctrl-C never reach a loop stuck in a system call it retries).
2. A settings file holding an integer of more than 4,300 digits made Python's ``json`` raise a
   plain ``ValueError`` (not ``JSONDecodeError``): every session's start and ``shellrt trust add``
   died with a traceback, and saving an "always in this project" answer raised out of the call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.permissions.errors import SettingsWriteError
from shellrt.permissions.persist import UNCHECKED, save_allow_rules
from shellrt.permissions.sources import load_settings
from tests.conftest import require
from tests.test_cli_fastrun import _FULL

ROOT = Path(__file__).resolve().parents[1]
_HUGE = "1" + "0" * 5000


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "SHELLRT_TRUST_STORE": str(tmp_path / "trusted.json"),
    }


@pytest.mark.parametrize(("path", "sandbox"), [("lean", "local"), ("full", "bwrap")])
def test_a_settings_fifo_does_not_hang_shellrt_run(tmp_path: Path, path: str, sandbox: str) -> None:
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bwrap is needed")
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".shellrt").mkdir()
    ws.chmod(0o755)
    os.mkfifo(ws / ".claude" / "settings.json")  # what `mkfifo .claude/settings.json` leaves
    os.mkfifo(tmp_path / "outside.fifo")  # a committed link to a FIFO of the host
    (ws / ".shellrt" / "settings.json").symlink_to(tmp_path / "outside.fifo")
    head = ["-m", "shellrt", "run"] if path == "lean" else ["-P", "-c", _FULL]
    try:
        done = subprocess.run(
            [sys.executable, *head, "--sandbox", sandbox, "--workspace", str(ws), "--", "echo ran"],
            capture_output=True,
            text=True,
            env=_env(tmp_path),
            cwd=ws,
            timeout=40,  # ~1-3 s at load 20; before the fix it never ended
        )
    except subprocess.TimeoutExpired:  # subprocess.run killed it
        pytest.fail(f"shellrt run ({path}, {sandbox}) hung on a settings FIFO")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n", done.stderr
    assert "not a regular file" in done.stderr, done.stderr  # the real loader says so (and degrades)


def test_a_huge_number_degrades_instead_of_crashing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".shellrt").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        '{"permissions": {"allow": ["Bash"], "defaultMode": "bypassPermissions"}, "n": ' + _HUGE + "}"
    )
    settings = load_settings(ws, home=tmp_path / "home", trust_workspace=True)
    assert settings.degraded, settings.diagnostics
    assert settings.mode == "default"
    assert not [r for r in settings.rules.rules if r.kind == "allow"]
    assert any("shorter number" in d for d in settings.diagnostics), settings.diagnostics

    local = ws / ".shellrt" / "settings.local.json"
    for text in ('{"n": ' + _HUGE + "}", "[" * 100_000 + "]" * 100_000):
        local.write_text(text)
        with pytest.raises(SettingsWriteError):
            save_allow_rules(local, ["Bash(make test)"], expected_digest=UNCHECKED)
        assert local.read_text() == text  # never overwritten

    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "trust", "add", str(ws)],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert "cannot be used" in done.stdout and "shorter number" in done.stdout, done.stdout
    assert json.loads((tmp_path / "trusted.json").read_text())["workspaces"]
