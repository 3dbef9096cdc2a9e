"""Red team, round 31 (iface): a repository's own ``./test`` or ``bin/grep`` failed as "not an error".

A Bash result is an error when the command exits non-zero, except for the documented answers of
a few programs when they ran last (``grep`` 1 = no match, ``diff`` 1, ``test`` 1: round 27's
exit meanings). The program was judged by its basename, so a hostile repository's ``./test``
(what a model runs to test it) exiting 1 came back as "Exit code 1 (condition is false; not an
error)" with ``is_error`` false: no sibling cancelled, a harness's tool_use task passed. The same
for ``bin/grep``, ``scripts/diff`` and for ``grep`` found through a ``PATH`` the command set to the
repository's directory. Round 27 batch's "Left". Real commands on the local backend (the meaning is
judged on the host from the command's text, whatever the sandbox).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor import exit_is_error

#: Commands that run the repository's program, not the one the table describes.
REPOSITORY_PROGRAMS = [
    "./test",
    "bin/grep needle hay",
    "scripts/diff a b",
    "PATH=bin:/usr/bin grep needle hay",
    "env PATH=bin grep needle hay",
    "LANG=C PATH=./bin command grep needle hay",
    "export PATH=bin; grep needle hay",
    "source .venv/bin/activate && grep needle hay",
    ". ./env.sh; test -f x",
    "eval 'grep() { return 1; }'; grep needle hay",
    "function grep { ./bin/grep; }; grep needle hay",
    "hash -p ./bin/grep grep; grep needle hay",
]


@pytest.mark.parametrize("command", REPOSITORY_PROGRAMS)
def test_a_repositorys_program_is_not_judged_by_its_name(command: str) -> None:
    """Failed before: 12 of 12 read as a documented answer."""
    assert exit_is_error(command, 1)


@pytest.mark.parametrize(
    "command",
    [
        "grep x f",
        "/usr/bin/grep x f",
        "/bin/test -f x",
        "LANG=C grep x f",
        "find . -name '*.py' | grep function",  # `.` and `function` as arguments
        "echo PATH=x | grep -c PATH=",
        "cd sub; test -d build",  # `cd sub && ...`: no meaning since round 36 (cd's failure is 1 too)
    ],
)
def test_the_systems_program_keeps_its_meaning(command: str) -> None:
    assert not exit_is_error(command, 1)


def test_a_hostile_repositorys_failing_test_script_is_an_error(tmp_path: Path) -> None:
    """Failed before: 3 of 3 results said "not an error" (``is_error`` false)."""
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    (ws / "scripts").mkdir()
    for script in ("test", "bin/grep", "scripts/diff"):
        (ws / script).write_text("#!/bin/sh\necho '3 tests FAILED'\nexit 1\n")
        (ws / script).chmod(0o755)
    calls = ["./test", "bin/grep needle hay", "PATH=bin:/usr/bin grep needle hay"]

    async def main() -> list[dict[str, object]]:
        out = []
        async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            for i, command in enumerate(calls):
                block = {"type": "tool_use", "id": f"x{i}", "name": "Bash", "input": {"command": command}}
                out += (await rt.run([block]))["content"]
        return out

    blocks = anyio.run(main)
    passed = [
        c for c, b in zip(calls, blocks, strict=True) if not b.get("is_error") or "not an error" in str(b)
    ]
    assert "3 tests FAILED" in str(blocks[0]["content"])
    assert not passed, f"a repository's failing program read as an answer: {passed}"
