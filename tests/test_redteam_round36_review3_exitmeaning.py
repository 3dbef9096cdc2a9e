"""Red team, round 36 (review3): the exit-meaning tokenizer read as a hostile command would.

Three ways a command's exit status got a harmless meaning it should not have, or cost the
supervisor minutes:

- ``_DUP`` (``\\d*[<>]&...``) backtracked over every start inside a run of digits: 16,000 digits
  took 1.7 s, the Bash tool's 100,000-character limit ~66 s of the event loop, per call, twice
  (is_error and the text). The tokenizer is now linear and bounded (`MAX_READ_CHARS`).
- ``sudo`` was a wrapper whose status is the wrapped command's, but sudo's own failure (no
  password, not permitted) is exit 1: ``sudo -n grep x f`` refused read "no match; not an error".
- ``[[ $n -eq 1 ]]`` exits 1 on an arithmetic error (``08``: "value too great for base"), the
  same 1 as a false condition: a ``[[`` that compares numbers gets no meaning (fail closed;
  ``test``/``[`` exit 2 on a bad number).
"""

from __future__ import annotations

import pytest

from shellrt.supervisor import exit_is_error, exit_meaning
from tests._timing import cpu_seconds


def test_hostile_digit_run_is_read_in_linear_time() -> None:
    started = cpu_seconds()  # CPU, not wall: a loaded lane's wait for a core is not the tokenizer's cost
    for _ in range(2):
        exit_is_error("grep x " + "1" * 100_000, 1)
    assert cpu_seconds() - started < 3.0  # ~0 s idle (round 49: the read is bounded); ~66 s a call before


def test_digit_run_under_the_bound_is_linear() -> None:
    started = cpu_seconds()
    assert exit_meaning("grep x " + "1" * 19_000 + " 2>&1", 1) == "no match"
    # 0.024 s of CPU idle (round 49); the backtracking tokenizer: 1.7 s at 16,000 digits, ~2.4 s here.
    assert cpu_seconds() - started < 1.0


def test_megabyte_command_costs_little() -> None:
    started = cpu_seconds()
    assert exit_is_error("grep x f " + "a# " * 330_000, 1)
    assert cpu_seconds() - started < 0.5  # 0.002 s of CPU idle (round 49)


@pytest.mark.parametrize(
    "command",
    ["sudo -n grep x f", "sudo grep -q x f", "sudo diff a b", "sudo test -f x", "nice sudo grep x f"],
)
def test_sudo_own_failure_is_not_an_answer(command: str) -> None:
    assert exit_meaning(command, 1) is None
    assert exit_is_error(command, 1)


@pytest.mark.parametrize(
    "command",
    ["[[ $n -eq 1 ]]", "[[ 08 -lt 9 ]]", "[[ x == y && 1+ -ge 2 ]]"],
)
def test_numeric_comparison_error_is_not_false(command: str) -> None:
    assert exit_meaning(command, 1) is None


@pytest.mark.parametrize(
    ("command", "meaning"),
    [
        ("grep x f 2>&1", "no match"),
        ("cat f | grep -q x", "no match"),
        ("[[ -f x ]]", "condition is false"),
        ("test \"$a\" = b", "condition is false"),
        ("env LC_ALL=C grep x f", "no match"),
    ],
)
def test_plain_forms_keep_their_meaning(command: str, meaning: str) -> None:
    assert exit_meaning(command, 1) == meaning
