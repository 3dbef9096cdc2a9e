"""Round 17, interfaces: an "allow always" answer covered commands the person never saw.

A command rule matched a command with every run of whitespace folded to one space, inside
quotes too, and "allow always" saved the command folded the same way. But whitespace inside
quotes is data: to Python, indentation is code. The person approves, "always",

    python3 -c 'if 0:
        print(1)
        open("pwned", "w")'

(nothing happens: the ``open`` is inside ``if 0``), and the model's next call, the same words
with the last line dedented, creates ``pwned`` unasked. Now whitespace is folded outside quotes
only, for allow rules and for what "always" saves (deny and ask rules still match either way).
Real `Runtime` sessions on the local backend: the rules, not the sandbox, are under test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.permissions.rules import parse_rule
from shellrt.runtime import Runtime

_SEEN = "python3 -c 'if 0:\n    print(1)\n    open(\"pwned\", \"w\")'"
_RUN = "python3 -c 'if 0:\n    print(1)\nopen(\"pwned\", \"w\")'"  # the same words, one line dedented


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    yield root


def _use(index: int, command: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"t{index}", "name": "Bash", "input": {"command": command}}
    return {"role": "assistant", "content": [block]}


async def _session(ws: Path, commands: list[str]) -> tuple[list[str], list[ApprovalRequest]]:
    """The person allows the first call "always in this session" and denies every later ask."""
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request)
        if len(asked) == 1:
            return ApprovalResponse(behavior="allow", remember="session")
        return ApprovalResponse(behavior="deny")

    texts: list[str] = []
    async with Runtime(ws, "local", approver=approver) as rt:
        for index, command in enumerate(commands):
            out = await rt.run(_use(index, command))
            texts.append(json.dumps(out["content"][0]))
    return texts, asked


def test_allow_always_does_not_cover_other_whitespace_inside_quotes(ws: Path) -> None:
    texts, asked = anyio.run(_session, ws, [_SEEN, _RUN])
    assert not (ws / "pwned").exists(), texts  # the dedented line ran unasked
    assert len(asked) == 2, texts


def test_allow_always_still_covers_the_approved_call_again(ws: Path) -> None:
    texts, asked = anyio.run(_session, ws, [_SEEN, _SEEN, "python3  -c 'if 0:\n    print(1)\n    open(\"pwned\", \"w\")'"])
    assert len(asked) == 1, texts  # the same call, and with other spaces between words, run unasked
    assert not (ws / "pwned").exists()


def test_allow_rules_fold_whitespace_outside_quotes_only_and_deny_rules_either_way() -> None:
    allow = parse_rule("Bash(echo 'a  b')", "allow")
    assert allow.match_item("echo   'a  b'", home=Path("/"), resolve=False)
    assert not allow.match_item("echo 'a b'", home=Path("/"), resolve=False)
    doubled = parse_rule('Bash(echo "a  b")', "allow")
    assert doubled.match_item('echo "a  b" ', home=Path("/"), resolve=False)
    assert not doubled.match_item('echo "a b"', home=Path("/"), resolve=False)
    deny = parse_rule("Bash(echo 'a  b')", "deny")
    assert deny.match_item("echo 'a b'", home=Path("/"), resolve=False)  # as before: deny is broad
    assert deny.match_item("echo   'a  b'", home=Path("/"), resolve=False)


def test_the_menu_shows_a_suggested_rule_with_quoted_newlines_on_one_line(ws: Path) -> None:
    import io

    from shellrt.permissions.approvers import TerminalApprover

    _texts, asked = anyio.run(_session, ws, ["touch 'a\nb'"])
    request = asked[0]
    assert request.suggested_rules == ["Bash(touch 'a\nb')"], request.suggested_rules  # the call's own text
    shown = io.StringIO()
    TerminalApprover(stdin=io.StringIO("n\n"), stdout=shown)._ask(request)
    menu = [line for line in shown.getvalue().splitlines() if "Bash(touch 'a" in line]
    assert menu and all("\\nb')" in line for line in menu), shown.getvalue()


@pytest.mark.parametrize(
    ("seen", "run"),
    [
        ("python3 <<'EOF'\nprint('benign')\nEOF", "python3 <<'EOF'\nopen('pwned', 'w')\nEOF"),
        ("python3 <<< \"print('benign')\"", "python3 <<< \"open('pwned', 'w')\""),
        ("echo \"print('benign')\" | python3", "echo \"open('pwned', 'w')\" | python3"),
        ("python3 < good.py", "python3 < evil.py"),
    ],
)
def test_allow_always_is_not_remembered_for_a_program_fed_on_stdin(ws: Path, seen: str, run: str) -> None:
    (ws / "good.py").write_text("print('benign')\n")
    (ws / "evil.py").write_text("open('pwned', 'w')\n")
    texts, asked = anyio.run(_session, ws, [seen, run])
    assert "benign" in texts[0], texts
    assert not (ws / "pwned").exists(), texts  # `Bash(python3)` was remembered: any stdin ran unasked
    assert len(asked) == 2, texts
