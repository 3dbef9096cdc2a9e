"""Red team, round 15 (classifier): jq's ``modulemeta`` loads a module named at run time.

Round 14 made the files jq's ``import``/``include`` directives load read paths. ``modulemeta``
takes a module *name as its input* and parses that module (``NAME.jq`` in each ``-L`` directory,
``..`` allowed), so the name need not be written anywhere: ``jq -L secrets -n '"key" |
modulemeta'`` parsed ``secrets/key.jq`` and jq's syntax error printed its lines, while the
analysis named no read below ``secrets``: in default mode it ran unasked under
``Read(./secrets/**)``. A filter using ``modulemeta`` now reads its ``-L`` directories and ""
(unknown), so the Bash tool asks while a ``Read(...)`` rule exists.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._governance import envelope_text, isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_FILTER = '"key" | modulemeta'


@pytest.mark.parametrize(
    "argv",
    [["jq", "-L", "secrets", "-n", _FILTER], ["jq", "-n", "-Lsecrets", _FILTER], ["jq", "-n", _FILTER],
     ["jq", "-n", '"x"|modulemeta|.deps']],
)
def test_modulemeta_reads_are_unknown(argv: list[str]) -> None:
    import shlex

    analysis = analyze(shlex.join(argv))
    assert "" in analysis.read_paths, (argv, analysis.read_paths)


@pytest.mark.parametrize("command", ["jq .modulemeta f", "jq -n '$modulemeta'", "jq .x f"])
def test_fields_and_variables_named_so_are_not_module_loads(command: str) -> None:
    assert "" not in analyze(command).read_paths, command


def _secret_module(ws: Path) -> None:
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.jq").write_text("def f: 1;\nhunter2 here\n")


def test_jq_prints_the_module(tmp_path: Path) -> None:
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed")
    _secret_module(tmp_path)
    out = subprocess.run([jq, "-L", "secrets", "-n", _FILTER], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert "hunter2" in out.stdout + out.stderr, out


async def test_the_bash_tool_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    ws = isolated_workspace(tmp_path, monkeypatch)
    _secret_module(ws)
    # The name is computed: no word of the command names the directory.
    [envelope] = await run_bash(ws, ["""jq -L . -n '"secr" + "ets/key" | modulemeta'"""], mode="default",
                                id_prefix="r15jq", deny=["Read(./secrets/**)"])
    text = envelope_text(envelope)
    assert envelope.is_error and "hunter2" not in text, text
