"""Red team round 51 (hooks10): a "static" data substitution that loads jq code from the cwd.

Round 50 let a hook line keep its narrow record when each substitution ran a data program with
static words: ``echo "$(jq -r 'import "m" as m {search: "./"}; m::f' -n)"`` is that, yet jq loads
``./m.jq`` (jq code chosen by the workspace) and its output becomes the hook's own output (a
PreToolUse hook's stdout is its decision). So do ``include "m" {search: "."}``, ``-L.`` with
``include``, and ``--rawfile x m.jq`` (a file named where no path is read). Each ran a command's
``m.jq`` (or read it); the first went unrecorded (1 of 4 failed before: the other three were
recorded by the reading of their words as paths, ``m.jq`` named or a ``.`` in a word, not by a
rule about jq). Now a data program in a substitution
takes only the options `hook_substitutions._OPTIONS` lists and jq no module directive: else the
line is untrackable (the tree is recorded).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files

_MARK = "R51-HOOKS10-JQ"

pytestmark = pytest.mark.skipif(not shutil.which("jq"), reason="needs jq")

_HOOKS = [
    """echo "$(jq -nr 'import "m" as m {search: "./"}; m::f')\"""",
    """echo "$(jq -nr 'include "m" {search: "."}; f')\"""",
    """echo "$(jq -L. -nr 'include "m"; f')\"""",
    """echo "$(jq -nr --rawfile x m.jq '$x')\"""",
]


def test_jq_code_or_files_from_the_cwd_are_recorded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.json").write_text('{"message": "hi"}\n')
    (ws / "m.jq").write_text('def f: "fine";\n')
    befores = [hook_files(ws, [hook]) for hook in _HOOKS]
    (ws / "m.jq").write_text(f'def f: "{_MARK}";\n')
    done = subprocess.run(
        ["bash", "-c", "; ".join(_HOOKS)], cwd=ws, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.count(_MARK) == len(_HOOKS), (done.stdout, done.stderr)  # the premise
    missed = [h for h, b in zip(_HOOKS, befores, strict=True) if compare_hook_files(b, hook_files(ws, [h])) is None]
    assert missed == [], missed


def test_plain_data_substitutions_stay_narrow(tmp_path: Path) -> None:
    """Control: round 50's lines and listed options keep the narrow record."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.csv").write_text("a,b\n")
    for hook in (
        'notify-send "$(jq -r .message)"',
        'logger -t c "$(jq -c --arg k v .)"',
        'echo "$(head -n5 f.csv)" "$(cut -d, -f1 f.csv)" "$(date -u +%s)" "$(hostname -s)" "$(id -un)"',
    ):
        record = hook_files(ws, [hook])
        assert "." not in record.files and not record.untrackable, (hook, record)
