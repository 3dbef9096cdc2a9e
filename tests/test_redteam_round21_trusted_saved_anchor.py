"""Round 21, trusted: a saved "allow always in this project" rule was obeyed after what it runs changed.

Round 18 anchored the session's copy of a remembered rule to the content of the code it runs;
the copy saved to ``.shellrt/settings.local.json`` carried no anchor, so a later session ran
``make test`` / ``pytest`` / ``npm test`` under it after a command (or a teammate's commit)
rewrote the ``Makefile`` / ``conftest.py`` / ``package.json``, and in another checkout of the
repository with other content. Saved rules now carry what they allowed in a store outside the
workspace (`shellrt.permissions.rule_anchors`), and a rule with no record asks once, then pins.
Real `Runtime` sessions on the local backend (the rules are under test, not the sandbox).
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.runtime import Runtime

_IDS = itertools.count()
_BENIGN = {
    "make test": ("Makefile", "test:\n\t@echo benign\n", "test:\n\t@touch pwned\n"),
    "pytest": (
        "conftest.py",
        "",
        "open('pwned', 'w').close()\n",
    ),
    "npm test": (
        "package.json",
        '{"scripts": {"test": "echo benign"}}\n',
        '{"scripts": {"test": "touch pwned"}}\n',
    ),
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "config" / "trusted.json"))
    monkeypatch.delenv("SHELLRT_RULE_ANCHORS", raising=False)  # the default: next to the trust store
    yield tmp_path


#: The command each manifest's program is run with (pytest by this interpreter: on every caller's PATH).
_COMMAND = {"make test": "make test", "pytest": f"{sys.executable} -m pytest -q -p no:cacheprovider", "npm test": "npm test"}


def _workspace(root: Path, command: str) -> Path:
    name, benign, _ = _BENIGN[command]
    root.mkdir()
    (root / name).write_text(benign)
    (root / "test_ok.py").write_text("def test_ok():\n    pass\n")
    return root


def _session(ws: Path, commands: list[str], answer: str = "deny") -> tuple[list[dict[str, Any]], list[str]]:
    """Runs ``commands`` in a new session (as a later session would); every prompt is answered
    ``answer`` ("deny", or "project": allow always in this project). Returns results and prompts."""
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request.reason)
        if answer == "deny":
            return ApprovalResponse(behavior="deny")
        return ApprovalResponse(behavior="allow", remember=answer)  # type: ignore[arg-type]

    async def main() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        async with Runtime(ws, "local", approver=approver, mode="default", trust_workspace=True) as rt:
            for command in commands:
                block = {"type": "tool_use", "id": f"r21t{next(_IDS)}", "name": "Bash", "input": {"command": command}}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
        return out

    return anyio.run(main), asked


def _saved(ws: Path) -> list[str]:
    return list(json.loads((ws / ".shellrt" / "settings.local.json").read_text())["permissions"]["allow"])


@pytest.mark.parametrize("program", ["make test", "pytest", "npm test"])
def test_a_saved_rule_asks_again_after_what_it_runs_was_rewritten(home: Path, program: str) -> None:
    ws = _workspace(home / "ws", program)
    command = _COMMAND[program]
    results, asked = _session(ws, [command], answer="project")
    assert len(asked) == 1 and not results[0]["is_error"], results
    assert f"Bash({command})" in _saved(ws)
    results, asked = _session(ws, [command])  # a later session: the saved rule holds, unasked
    assert not asked and not results[0]["is_error"], (asked, results)
    name, _, evil = _BENIGN[program]
    (ws / name).write_text(evil)  # a teammate's commit, or a command of the earlier session
    results, asked = _session(ws, [command])
    assert not (ws / "pwned").exists(), results  # before: ran unasked under the saved rule
    assert len(asked) == 1 and "saved rule" in asked[0], asked


def test_a_saved_rule_without_a_record_asks_once_then_pins(home: Path) -> None:
    ws = _workspace(home / "ws", "make test")
    (ws / ".shellrt").mkdir()
    (ws / ".shellrt" / "settings.local.json").write_text(
        '{"permissions": {"allow": ["Bash(make test)", "Bash(touch made)"]}}\n'
    )
    results, asked = _session(ws, ["make test", "touch made"], answer="project")  # touch names no code
    assert len(asked) == 1 and "saved before" in asked[0], asked  # before: not asked (0 prompts)
    assert not results[0]["is_error"], results
    results, asked = _session(ws, ["make test"])
    assert not asked and "benign" in json.dumps(results), (asked, results)


def test_a_saved_rule_does_not_hold_in_another_checkout(home: Path) -> None:
    ws = _workspace(home / "ws", "make test")
    _session(ws, ["make test"], answer="project")
    other = home / "other"
    shutil.copytree(ws, other)  # another worktree of the repository, its local settings copied too
    (other / "Makefile").write_text(_BENIGN["make test"][2])
    results, asked = _session(other, ["make test"])
    assert not (other / "pwned").exists(), results  # before: ran unasked
    assert len(asked) == 1, asked


def test_a_saved_relative_rule_pins_per_checkout(home: Path) -> None:
    """``Bash(./scripts/*)`` written in one worktree's local settings: its first run there asks and
    an "always in this project" answer pins it; the same file in another checkout asks again."""
    ws = home / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "x.sh").write_text("#!/bin/sh\necho benign\n")
    (ws / "scripts" / "x.sh").chmod(0o755)
    (ws / ".shellrt").mkdir()
    (ws / ".shellrt" / "settings.local.json").write_text('{"permissions": {"allow": ["Bash(./scripts/*)"]}}\n')
    results, asked = _session(ws, ["./scripts/x.sh"], answer="project")
    assert len(asked) == 1 and "benign" in json.dumps(results), (asked, results)  # before: not asked
    results, asked = _session(ws, ["./scripts/x.sh"])
    assert not asked and "benign" in json.dumps(results), (asked, results)
    other = home / "other"
    shutil.copytree(ws, other)
    (other / "scripts" / "x.sh").write_text("#!/bin/sh\ntouch pwned\n")
    results, asked = _session(other, ["./scripts/x.sh"])
    assert not (other / "pwned").exists() and len(asked) == 1, (asked, results)


def test_an_interpreter_named_by_its_path_has_its_script_anchored(home: Path) -> None:
    """``/usr/bin/python3 t.py``: the program's name was its path, which matched no interpreter,
    so ``t.py`` was not fingerprinted and a rewrite ran under the remembered rule (round 18's class;
    with ``-m pytest`` its ``conftest.py`` under a saved rule too)."""
    ws = home / "ws"
    ws.mkdir()
    (ws / "t.x").write_text("print('benign')\n")
    command = f"{sys.executable} t.x"  # `/bin/sh x` was anchored before (the analysis names it `sh`)
    rewrite = "cp t.x old && echo 'import os' > t.x"  # a prompt of its own, also allowed
    results, asked = _session(ws, [command, command, rewrite, command], answer="session")
    assert "benign" in json.dumps(results[1]) and not results[2]["is_error"], results
    assert len(asked) == 3, asked  # before: 2 (the rewritten t.x ran under the remembered rule)
