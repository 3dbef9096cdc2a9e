"""Red team round 13: a nonsense Bash ``timeout`` gets the valid range and what to do.

Measured on the old code: ``timeout: 1e308`` answered "Unable to parse input string as an
integer, exceeded maximum size", ``inf``/``nan`` "Input should be a finite number", ``"abc"``
"unable to parse string as an integer", ``1.5`` "got a number with a fractional part" — none
said the range (1 to 600000 ms) or what to do — and ``timeout: true`` was taken as 1 ms (the
command killed at once). Every bad value now gets one message with the range, the value
given, and the way out (omit it for the default, run_in_background for longer work).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from shellrt.runtime.execution import format_validation_error
from shellrt.tools.bash import BashInput
from tests.test_server_jsonl import JsonlClient, bash, text_of

_RANGE = "a whole number of milliseconds from 1 to 600000"


def _message(timeout: Any) -> str:
    with pytest.raises(ValidationError) as info:
        BashInput.model_validate({"command": "true", "timeout": timeout})
    return format_validation_error("Bash", info.value)


@pytest.mark.parametrize(
    "timeout",
    [
        1e308,
        float("inf"),
        float("-inf"),
        float("nan"),
        -1,
        0,
        -(10**40),
        10**40,
        600_001,
        1.5,
        "abc",
        "",
        True,
        False,
        [],
        {},
        "1e3",
        "inf",
    ],
)
def test_a_bad_timeout_says_the_range_and_what_to_do(timeout: Any) -> None:
    said = _message(timeout)
    assert _RANGE in said, said
    assert "omit `timeout`" in said and "run_in_background" in said, said
    assert len(said) < 400, said


def test_a_huge_timeout_is_not_echoed_whole() -> None:
    said = _message(10**5000)
    assert _RANGE in said and len(said) < 400, said


@pytest.mark.parametrize(
    ("given", "kept"), [(1, 1), (600_000, 600_000), (5000.0, 5000), ("2500", 2500), (None, None)]
)
def test_good_timeouts_still_parse(given: Any, kept: int | None) -> None:
    assert BashInput.model_validate({"command": "true", "timeout": given}).timeout == kept


def test_the_schema_still_shows_the_range() -> None:
    schema = BashInput.model_json_schema()["properties"]["timeout"]
    text = str(schema)
    assert "600000" in text and "'minimum': 1" in text, text


def test_over_the_jsonl_wire(tmp_path: Path) -> None:
    """The model sees the message (a real `serve --jsonl`); nothing ran."""
    ws = tmp_path / "ws"
    ws.mkdir()
    client = JsonlClient(ws, "--sandbox", "local")
    try:
        answer = client.send(
            {
                "role": "assistant",
                "content": [
                    bash("a", "touch ran-a", timeout=1e308),
                    bash("b", "touch ran-b", timeout=True),
                    bash("c", "touch ran-c", timeout=-(10**30)),
                ],
            }
        )
    finally:
        client.close()
    for block in answer["content"]:
        assert block["is_error"] and _RANGE in text_of(block), block
    assert not list(ws.glob("ran-*"))
