"""A failed command is an error result, by one rule (`shellrt.supervisor.exit_meaning`), everywhere."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor import NON_ERROR_EXITS, exit_is_error, exit_meaning


@pytest.mark.parametrize(
    ("command", "code", "error"),
    [
        ("grep x f", 1, False),
        ("grep x f", 2, True),
        ("cat f | grep x", 1, False),
        ("LANG=C command grep -q x f", 1, False),
        ("rg foo > /dev/null 2>&1", 1, False),
        ("rg foo > out 2>&1", 1, True),  # a failed redirection is 1 too (round 36)
        ("diff a b", 1, False),
        ("cmp a b", 1, False),
        ("[ -f x ]", 1, False),
        ("test -d x", 1, False),
        ("grep x f; false", 1, True),  # the status is false's
        ("diff a b && echo same", 1, True),
        ("echo $(grep x f)", 1, True),  # not plain to see: fail closed
        ("(grep x f)", 1, True),
        ("if grep x f; then :; fi", 1, True),
        ("make", 2, True),
        ("true", 0, False),
    ],
)
def test_exit_is_error_follows_the_one_table(command: str, code: int, error: bool) -> None:
    assert exit_is_error(command, code) is error
    assert (exit_meaning(command, code) is None) is (error or code == 0)


def test_the_table_lists_the_documented_meanings() -> None:
    assert {"grep", "rg", "diff", "cmp", "test", "["} <= set(NON_ERROR_EXITS)


def _bash(id_: str, command: str) -> dict[str, object]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}


def test_runtime_results_and_sibling_cancellation_follow_the_rule(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello\n")

    async def main() -> list[dict[str, object]]:
        async with Runtime(tmp_path, "local", mode="bypassPermissions", session_dir=tmp_path / ".s") as rt:
            out: list[dict[str, object]] = []
            for blocks in (
                [_bash("a", "exit 3")],
                # read-only siblings run as one parallel batch
                [_bash("b1", "grep absent f.txt"), _bash("b2", "sleep 1; cat f.txt")],
                [_bash("c1", "cat missing.txt"), _bash("c2", "sleep 5; cat f.txt")],
            ):
                answer = await rt.run({"role": "assistant", "content": blocks})
                out.extend(answer["content"])
            return out

    a, b1, b2, c1, c2 = anyio.run(main)
    assert a["is_error"] is True and "Exit code 3" in str(a["content"])
    assert b1["is_error"] is False and "no match" in str(b1["content"])
    assert b2["is_error"] is False and "hello" in str(b2["content"]), (
        "a grep no-match must not cancel siblings"
    )
    assert c1["is_error"] is True
    assert c2["is_error"] is True and "sibling" in str(c2["content"])
