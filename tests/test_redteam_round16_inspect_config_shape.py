"""Red team round 16 (follow-up): the shape of a dataset's sandbox config file is bounded before it is walked.

A sample's config file comes with the dataset, not from the operator (round 15). Twelve nested
YAML aliases (a few hundred bytes) expand to 9**12 nodes: ``yaml.safe_load`` shares them, but the
validation and its error message walk every one, and ``inspect eval`` hung, growing without bound
(stopped after 120 s). JSON nested past the recursion limit raised RecursionError (not the
ValueError callers handle), and a file of any size was read whole. Each is now a ValueError that
says what to fix, within milliseconds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shellrt.integrations._inspect_config import load_config


def _alias_bomb() -> str:
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    previous = "a"
    for index in range(1, 12):
        name = chr(ord("a") + index)
        lines.append(f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]")
        previous = name
    lines.append(f"allowed_domains: *{previous}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("bomb.yaml", _alias_bomb(), "aliases"),
        ("deep.json", '{"env": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
        ("deep.yaml", "env: " + "[" * 200_000 + "]" * 200_000 + "\n", "nested too deeply"),
        ("big.yaml", "sandbox: bwrap\n" + "# padding\n" * 200_000, "larger than"),
    ],
    ids=["alias-bomb", "deep-json", "deep-yaml", "big"],
)
def test_a_hostile_config_file_is_refused_quickly(tmp_path: Path, name: str, text: str, says: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    started = time.monotonic()
    with pytest.raises(ValueError, match=says):
        load_config(path)
    assert time.monotonic() - started < 5.0


def test_an_ordinary_config_file_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "shellrt.yaml"
    path.write_text("sandbox: bwrap\nnetwork: none\n")
    assert load_config(path).sandbox == "bwrap"
