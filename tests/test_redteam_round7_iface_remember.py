"""Red team round 7 (interfaces): "allow always" must remember what the person saw, not more.

The rule saved for an answer was the call's text put inside ``Tool(...)`` as is, but
the rule language reads some of that text as patterns: a command with ``*`` in it
(``rm -f *.o``) became ``Bash(rm -f *.o)``, whose ``*`` matches any text, so the
next ``rm -f main.c x.o`` ran unasked; a file named ``[ab].txt`` or ``*`` became a
path glob covering ``a.txt`` or every file beside it. The model chooses both the
command and the file names, so it could phrase a harmless-looking call whose
remembered answer covers what it wants next. Real processes, the local backend.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import ApprovalRequest, ApprovalResponse, suggest_rules
from shellrt.protocol import PermissionSubject, ToolUseBlock
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    return ws


class _Person:
    """Answers the first ask "allow always" (``remember``) and refuses every later one."""

    def __init__(self, remember: str) -> None:
        self.remember = remember
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalResponse:
        self.asked.append(request)
        if len(self.asked) == 1:
            return ApprovalResponse(behavior="allow", remember=self.remember)  # type: ignore[arg-type]
        return ApprovalResponse(behavior="deny", message="not that one")


async def _session(ws: Path, person: _Person, calls: list[tuple[str, dict[str, Any]]]) -> list[bool]:
    """Run each call as its own message; whether each ran without an error."""
    out: list[bool] = []
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", approver=person, trust_workspace=True
    ) as rt:
        for name, tool_input in calls:
            block = ToolUseBlock(id=f"r7r{next(_ids)}", name=name, input=tool_input)
            (envelope,) = await rt.run_envelopes([block])
            out.append(not envelope.is_error)
    return out


@pytest.mark.parametrize("remember", ["session", "project"])
async def test_a_remembered_command_with_a_star_covers_only_itself(ws: Path, remember: str) -> None:
    (ws / "main.c").write_text("int main;")
    person = _Person(remember)
    ran = await _session(
        ws,
        person,
        [
            ("Bash", {"command": "python3 -c 'print(*range(3))'"}),
            ("Bash", {"command": 'python3 -c \'print(__import__("os").remove("main.c") or range(3))\''}),
        ],
    )
    assert ran[0] and len(person.asked) == 2 and not ran[1], (ran, person.asked)
    assert (ws / "main.c").exists()
    saved = ws / ".shellrt" / "settings.local.json"
    if saved.exists():
        assert not any("*" in r for r in json.loads(saved.read_text())["permissions"]["allow"])


@pytest.mark.parametrize(
    ("planted", "target"),
    [("[ab].txt", "a.txt"), ("*", "notes.txt"), ("{x,notes}.md", "notes.md"), ("w?", "wx")],
)
async def test_a_remembered_write_to_a_file_named_like_a_glob_covers_only_that_file(
    ws: Path, planted: str, target: str
) -> None:
    person = _Person("session")
    ran = await _session(
        ws,
        person,
        [
            ("Write", {"file_path": str(ws / planted), "content": "first"}),
            ("Write", {"file_path": str(ws / target), "content": "second"}),
            ("Write", {"file_path": str(ws / planted), "content": "third"}),
        ],
    )
    assert ran[0] and not ran[1] and not (ws / target).exists(), (ran, person.asked)
    # The remembered answer still covers the very file it was given for.
    assert ran[2] and (ws / planted).read_text() == "third" and len(person.asked) == 2


async def test_a_remembered_read_of_a_directory_named_like_a_glob_covers_only_it(
    ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "*").mkdir(parents=True)
    (outside / "*" / "a.txt").write_text("fine")
    (outside / "private").mkdir()
    (outside / "private" / "b.txt").write_text("secret")
    person = _Person("session")
    ran = await _session(
        ws,
        person,
        [
            ("Read", {"file_path": str(outside / "*" / "a.txt")}),
            ("Read", {"file_path": str(outside / "private" / "b.txt")}),
        ],
    )
    assert ran[0] and len(person.asked) == 2 and not ran[1], (ran, person.asked)


def test_suggested_rules_escape_or_leave_out_what_the_rule_language_reads_as_a_pattern() -> None:
    assert suggest_rules("Bash", PermissionSubject(commands=("rm -f *.o", "make"), access="execute")) == [
        "Bash(make)"
    ]
    assert suggest_rules("Bash", PermissionSubject(commands=("git status",), access="execute")) == [
        "Bash(git status)"
    ]
    assert suggest_rules("Write", PermissionSubject(paths=("/w/[a]{b}*?\\.txt",), access="write")) == [
        r"Edit(//w/\[a\]\{b\}\*\?\\.txt)"
    ]
    assert suggest_rules("WebFetch", PermissionSubject(domains=("*.evil.example",), access="fetch")) == []
    assert suggest_rules("WebFetch", PermissionSubject(domains=("docs.python.org",), access="fetch")) == [
        "WebFetch(domain:docs.python.org)"
    ]
