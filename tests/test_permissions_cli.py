"""``shellrt permissions check`` / ``list`` as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "SHELLRT_MANAGED_SETTINGS": str(tmp_path / "managed.json"),
    }
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "permissions", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(
        json.dumps(
            {"permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(./secrets/**)", "Bash(oops"]}},
            indent=2,
        )
    )
    return ws


def test_check_explains_an_allow_with_rule_and_source(tmp_path: Path, ws: Path) -> None:
    args = ("--workspace", str(ws), "--allow", "Bash(make:*)", "--json")
    proc = run(tmp_path, "check", "Bash", '{"command": "make test"}', *args)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["behavior"], out["rule"], out["source"]) == ("allow", "Bash(make:*)", "command-line flags")
    assert [step.split(":")[0] for step in out["chain"]][2:4] == ["1 deny", "2 ask"]
    assert any("settings.json:8" in d and "Bash(oops" in d for d in out["diagnostics"])


def test_check_compound_command_is_not_allowed(tmp_path: Path, ws: Path) -> None:
    for command in ("git status && rm -rf x",):
        proc = run(
            tmp_path, "check", "Bash", json.dumps({"command": command}), "--workspace", str(ws), "--json"
        )
        out = json.loads(proc.stdout)
        assert out["behavior"] == "ask" and out["headless_behavior"] == "deny", command


def test_check_human_output_names_rule_and_file(tmp_path: Path, ws: Path) -> None:
    secret = ws / "secrets" / "key"
    proc = run(tmp_path, "check", "Read", json.dumps({"file_path": str(secret)}), "--workspace", str(ws))
    assert proc.returncode == 0, proc.stderr
    assert "decision: deny" in proc.stdout
    assert "Read(./secrets/**)" in proc.stdout and "settings.json:" in proc.stdout
    assert "chain:" in proc.stdout


def test_check_generic_tool_and_flags(tmp_path: Path, ws: Path) -> None:
    proc = run(
        tmp_path, "check", "mcp__gh__create", "{}", "--workspace", str(ws), "--deny", "mcp__gh", "--json"
    )
    out = json.loads(proc.stdout)
    assert out["behavior"] == "deny" and out["source"] == "command-line flags" and out["visible"] is False
    assert out["tool_source"].startswith("generic")
    proc = run(
        tmp_path,
        "check",
        "Bash",
        '{"command": "make"}',
        "--workspace",
        str(ws),
        "--mode",
        "bypassPermissions",
        "--json",
    )
    assert json.loads(proc.stdout)["behavior"] == "allow"


def test_check_bad_input(tmp_path: Path, ws: Path) -> None:
    assert run(tmp_path, "check", "Bash", "not json", "--workspace", str(ws)).returncode == 2
    assert run(tmp_path, "check", "Bash", "[1]", "--workspace", str(ws)).returncode == 2


def test_list_shows_rules_with_sources(tmp_path: Path, ws: Path) -> None:
    proc = run(tmp_path, "list", "--workspace", str(ws), "--allow", "Bash(ls)")
    assert proc.returncode == 0, proc.stderr
    assert "Bash(git status:*)" in proc.stdout and "project settings" in proc.stdout
    assert "Bash(ls)" in proc.stdout and "command-line flags" in proc.stdout
    assert "diagnostics:" in proc.stdout
    data = json.loads(run(tmp_path, "list", "--workspace", str(ws), "--json").stdout)
    assert {"kind": "deny", "rule": "Read(./secrets/**)"}.items() <= data["rules"][0].items()
