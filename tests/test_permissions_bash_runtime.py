"""Governance of Bash end to end: a real Runtime, the real Bash tool, real git, real files.

What the decision tests in ``test_permissions_bash`` judge, these run: an attack
must leave no marker on disk, and git must keep working through the tool
(git 2.39 fails ``git diff`` with an empty external diff; issue 17, item 4).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text as _text

pytestmark = pytest.mark.anyio

_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **_GIT_ENV})


def _repo(ws: Path) -> None:
    _git(ws, "init", "-q")
    (ws / "f.txt").write_text("one\n")
    _git(ws, "add", "f.txt")
    _git(ws, "commit", "-qm", "one")
    (ws / "f.txt").write_text("one\ntwo\n")  # uncommitted change: git diff has work to do


async def _run(tmp_path: Path, commands: list[str], *, mode: str = "default", **perms: Any) -> list[ResultEnvelope]:
    settings = tmp_path / "operator-settings.json"
    settings.write_text(json.dumps({"permissions": perms}))
    async with shellrt.Runtime(
        workspace=tmp_path / "ws",
        sandbox="local",
        session_dir=tmp_path / ".s",
        tools=[Bash()],
        settings_files=[settings],
        mode=mode,
    ) as rt:
        blocks = [ToolUseBlock(id=f"t{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        return await rt.run_envelopes(blocks)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    (tmp_path / "ws").mkdir()
    return home


async def test_git_reads_work_through_the_bash_tool(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    _repo(ws)
    results = await _run(tmp_path, ["git diff", "git log -p", "git show", "git diff --stat"])
    for envelope in results:
        assert not envelope.is_error, _text(envelope)
        assert "Exit code" not in _text(envelope), _text(envelope)
    assert "+two" in _text(results[0])
    assert "+one" in _text(results[1]) and "+one" in _text(results[2])


@pytest.mark.parametrize("mode", ["default", "plan", "dontAsk", "acceptEdits", "bypassPermissions"])
async def test_hostile_repository_runs_nothing(tmp_path: Path, home: Path, mode: str) -> None:
    ws = tmp_path / "ws"
    _repo(ws)
    marker = tmp_path / "PWNED"
    _git(ws, "config", "diff.evil.textconv", f"touch {marker}; cat")
    _git(ws, "config", "diff.evil.command", f"touch {marker}")
    _git(ws, "config", "filter.evil.clean", f"touch {marker}; cat")
    (ws / ".gitattributes").write_text("*.txt diff=evil filter=evil\n")
    results = await _run(
        tmp_path, ["git diff", "git log -p", "git show", "git status"], mode=mode,
        allow=["Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)", "Bash(git status:*)"],
    )
    assert all(e.is_error for e in results), [_text(e) for e in results]
    assert not marker.exists()


@pytest.mark.parametrize(
    "command",
    [
        "GIT_EXTERNAL_DIFF='touch PWNED;true' git diff",
        "export GIT_EXTERNAL_DIFF='touch PWNED;true'; git diff",
        "git diff > PWNED",
        "ls >| PWNED",
        "git diff & touch PWNED",
        "cat <<EOF\n`touch PWNED`\nEOF",
        "cat <<EOF\n  $(touch PWNED)\nEOF",
    ],
)
async def test_rules_do_not_run_what_the_words_hide(tmp_path: Path, home: Path, command: str) -> None:
    ws = tmp_path / "ws"
    _repo(ws)
    [envelope] = await _run(tmp_path, [command], allow=["Bash(git diff:*)", "Bash(ls:*)", "Bash(cat:*)"])
    assert envelope.is_error, _text(envelope)
    assert not (ws / "PWNED").exists()


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"])
async def test_deny_rule_holds_against_spelling_in_every_mode(tmp_path: Path, home: Path, mode: str) -> None:
    ws = tmp_path / "ws"
    for name in ("a", "b", "c", "d"):
        (ws / name).write_text("x")
    commands = ["/???/rm a", "$'rm' b", "IFS=_; rm${IFS}c", "\\rm d"]
    results = await _run(tmp_path, commands, mode=mode, deny=["Bash(rm:*)"])
    assert all(e.is_error for e in results), [_text(e) for e in results]
    assert all((ws / name).exists() for name in ("a", "b", "c", "d"))


async def test_read_denies_hold_for_bash(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir()
    (ws / "secrets" / "a").write_text("TOPSECRET\n")
    (ws / "notes.txt").write_text("hello\n")
    results = await _run(
        tmp_path,
        ["cat secrets/a", "cat < secrets/a", "grep -r TOPSECRET .", "cat notes.txt"],
        deny=[f"Read(/{ws}/secrets/**)"],  # //abs: an operator file's ./ is its own directory
    )
    for envelope in results[:3]:
        assert envelope.is_error and "TOPSECRET" not in _text(envelope).replace("grep -r TOPSECRET", "")
    assert not results[3].is_error and "hello" in _text(results[3])


async def test_compound_with_rule_and_read_only_parts_runs(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a").write_text("A\n")
    (ws / "x").write_text("X\n")
    [envelope] = await _run(tmp_path, ["cat a && cp x y"], allow=["Bash(cp:*)"])
    assert not envelope.is_error, _text(envelope)
    assert (ws / "y").read_text() == "X\n"


async def test_docker_reads_are_judged_on_the_host_view(tmp_path: Path, home: Path) -> None:
    """The container's /workspace is the workspace: reads there run unasked, reads elsewhere ask."""
    from sandbox import DockerConfig
    from tests._docker_support import DEBIAN, require_docker

    require_docker()
    ws = tmp_path / "ws"
    (ws / "hello.txt").write_text("from the host\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "a").write_text("TOPSECRET\n")
    settings = tmp_path / "operator-settings.json"
    settings.write_text(json.dumps({"permissions": {"deny": [f"Read(/{ws}/secrets/**)"]}}))
    async with shellrt.Runtime(
        workspace=ws, sandbox=DockerConfig(image=DEBIAN), session_dir=tmp_path / ".s", tools=[Bash()],
        settings_files=[settings],
    ) as rt:
        commands = ["cat hello.txt", "cat /workspace/hello.txt", "cat /etc/hostname", "cat /workspace/secrets/a"]
        blocks = [ToolUseBlock(id=f"t{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        inside, absolute, outside, secret = await rt.run_envelopes(blocks)
    assert not inside.is_error and "from the host" in _text(inside), _text(inside)
    assert not absolute.is_error and "from the host" in _text(absolute)
    assert outside.is_error
    assert secret.is_error and "TOPSECRET" not in _text(secret)
