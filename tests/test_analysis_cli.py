"""``shellrt classify`` run as a real subprocess, plus the parser wiring in-process."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from shellrt.cli import classify


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shellrt", "classify", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)


def test_register_sets_func() -> None:
    parser = argparse.ArgumentParser()
    classify.register(parser.add_subparsers())
    args = parser.parse_args(["classify", "--json", "ls"])
    assert args.func is classify.run and args.json and args.command_text == "ls"


def test_json_output() -> None:
    proc = run_cli("--json", "git status && rm -rf x")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["command"] == "git status && rm -rf x"
    assert data["read_only"] is False and data["concurrency_safe"] is False and data["destructive"] is True
    assert data["subcommands"] == ["git status", "rm -rf x"]
    assert data["parse_ok"] is True and data["reasons"]


def test_human_table() -> None:
    proc = run_cli("git log --oneline | head -5")
    assert proc.returncode == 0
    assert "read-only" in proc.stdout and "yes" in proc.stdout
    assert "git log --oneline" in proc.stdout and "head -5" in proc.stdout


def test_powershell_flag() -> None:
    data = json.loads(run_cli("--shell", "powershell", "--json", "Get-ChildItem | Remove-Item").stdout)
    assert data["shell"] == "powershell" and data["read_only"] is False


def test_jsonl_10000_lines_with_bad_lines() -> None:
    commands = ["ls -la", "git status && rm x", "echo $((1+2))", "sed -n 1p f", "cat <(id)"]
    lines = []
    expected: list[object] = []
    for i in range(10_000):
        if i % 97 == 0:
            lines.append("{not json")
            expected.append(("error", i + 1))
        elif i % 101 == 0:
            lines.append(json.dumps({"cmd": "x"}))
            expected.append(("error", i + 1))
        elif i % 13 == 0:
            lines.append(json.dumps({"command": "Get-ChildItem", "shell": "powershell"}))
            expected.append(("Get-ChildItem", True))
        else:
            command = commands[i % len(commands)]
            lines.append(json.dumps(command))
            expected.append((command, command in ("ls -la", "echo $((1+2))", "sed -n 1p f")))
    started = time.monotonic()
    proc = run_cli("--jsonl", stdin="\n".join(lines) + "\n")
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == 10_000
    for answer, want in zip(answers, expected, strict=True):
        if want[0] == "error":
            assert answer["line"] == want[1] and answer["error"]
        else:
            assert answer["command"] == want[0] and answer["read_only"] is want[1]
    assert elapsed < 60


def test_missing_command_is_a_usage_error() -> None:
    proc = run_cli()
    assert proc.returncode == 2 and "COMMAND" in proc.stderr
