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
        [sys.executable, "-m", "shellrt", "permissions", *args, "--trust-workspace"],
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
            {"permissions": {"allow": ["Bash(git status:*)", "Bash(oops"], "deny": ["Read(./secrets/**)"]}},
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
    steps = [step.split(":")[0] for step in out["chain"] if not step.startswith("part:")]
    assert steps[2:4] == ["1 deny", "2 ask"]
    assert any("settings.json:5" in d and "Bash(oops" in d for d in out["diagnostics"])


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


def test_check_bad_input_in_process(tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from shellrt.cli import main

    assert main(["permissions", "check", "Bash", "not json", "--workspace", str(ws)]) == 2
    assert main(["permissions", "check", "Bash", "[1]", "--workspace", str(ws)]) == 2
    assert main(["permissions", "check", "Bash", "{}", "--workspace", str(tmp_path / "nope")]) == 2
    assert "INPUT_JSON must be a JSON object" in capsys.readouterr().err


def test_list_shows_rules_with_sources(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = run(tmp_path, "list", "--workspace", str(ws), "--allow", "Bash(ls)")
    assert proc.returncode == 0, proc.stderr
    assert "Bash(git status:*)" in proc.stdout and "project settings" in proc.stdout
    assert "Bash(ls)" in proc.stdout and "command-line flags" in proc.stdout
    assert "diagnostics:" in proc.stdout

    from shellrt.cli import main

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    assert main(["permissions", "list", "--workspace", str(ws), "--json", "--trust-workspace"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"kind": "deny", "rule": "Read(./secrets/**)"}.items() <= data["rules"][0].items()
