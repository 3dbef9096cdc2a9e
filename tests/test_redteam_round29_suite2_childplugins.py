"""Round 29 suite2: a non-root twin's child pytest loads only the plugins its tests use.

The child never runs ``-n`` nor times code, so xdist's and pytest-benchmark's plugins were only
their import in each of ~40 children (0.2-0.4 s each at load 15). A test that does use one keeps
it: dropping a used plugin would make its test err (a failed twin), so the patterns look for the
uses (an import, the ``benchmark`` fixture, xdist's fixtures and hooks), not for the words.
"""

from __future__ import annotations

from pathlib import Path

from tests import _nonroot

_ALL = {f"no:{name}" for name in _nonroot._OPTIONAL_PLUGINS}


def _dropped(args: list[str]) -> set[str]:
    return {word for word in _nonroot.plugins_unused_by(args) if word != "-p"}


def test_a_twin_target_runs_without_the_unused_plugins_and_a_user_keeps_its_own(tmp_path: Path) -> None:
    # A bwrap twin's target (it imports tests.conftest and tests._nonroot, whose text names xdist).
    target = "tests/test_redteam_round11_bwrap_nested.py::test_the_way_to_an_inner_root_cannot_be_swapped"
    assert _dropped([target]) == _ALL
    uses = {
        "hypothesispytest": "from hypothesis import given\n",
        "benchmark": "def test_x(benchmark):\n    benchmark(len, 'x')\n",
        "xdist": "def test_x(worker_id: str) -> None:\n    assert worker_id\n",
    }
    for plugin, text in uses.items():
        source = tmp_path / f"test_uses_{plugin}.py"
        source.write_text(text)
        assert f"no:{plugin}" not in _dropped([str(source)]), plugin
    mention = tmp_path / "test_mentions.py"
    mention.write_text('"""Runs under pytest-xdist; no benchmark here."""\ndef test_x() -> None:\n    pass\n')
    assert _dropped([str(mention)]) == _ALL
    # Not a file: every plugin stays (nothing to read the uses from).
    assert _nonroot.plugins_unused_by(["-k", "x", "tests"]) == []
