"""Red team, round 14 (command analysis): jq modules are read paths (open since rounds 8 and 13).

``jq -L DIR 'import "data" as $d; $d'`` prints ``DIR/data.json``; ``include "p"`` and ``import "p"
as x`` load ``p.jq``; ``{search: "/elsewhere"}`` metadata and jq's default path (``~/.jq``, beside
the binary) pick other directories. The Bash tool already read these as paths (and asked), but the
analysis' ``read_paths`` named none of them, so a consumer of ``shellrt classify`` met no read of
``DIR/data.json``. The analysis now names ``-L`` directories, each module's candidate files (in the
working directory and in every ``-L`` directory) and "" (unknown) for the search path it cannot know.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze


def test_jq_prints_a_module_file(tmp_path: Path) -> None:
    jq = shutil.which("jq")
    assert jq is not None
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "data.json").write_text('{"secret": "S3"}')
    for argv in (["-n", "-c", "-L", "lib", 'import "data" as $d; $d'], ["-nc", "-Llib", 'import "data" as $d; $d']):
        out = subprocess.run([jq, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert "S3" in out.stdout, (argv, out)


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("jq -n -L lib 'import \"data\" as $d; $d'", ["lib", "lib/data.json", "data.json", ""]),
        ("jq -ncL/x 'import \"data\" as $d; $d'", ["/x", "/x/data.json", ""]),
        ("jq -Llib -n 'include \"m\"; 1'", ["lib/m.jq", "m.jq", ""]),
        ("jq 'import \"a/b\" as x; .' f", ["a/b.jq", "a/b/b.jq", "f", ""]),
        ("jq -n 'import \"x\" as $d {search: \"/etc\"}; $d'", ["x.json", ""]),
        # A comment between the keyword and the path: not read, so unknown ("").
        ("jq -n 'import # c\n\"x\" as $d; $d'", [""]),
        ("jq -n '{import: 1}'", [""]),  # a key named so: over-reported, never missed
    ],
)
def test_modules_are_read_paths(command: str, paths: list[str]) -> None:
    analysis = analyze(command)
    assert set(paths) <= set(analysis.read_paths), (command, analysis.read_paths)


@pytest.mark.parametrize("command", ["jq .import f", "jq '$include' f", "jq '.a.include' f", "jq . f"])
def test_fields_named_so_are_no_modules(command: str) -> None:
    analysis = analyze(command)
    assert "" not in analysis.read_paths, (command, analysis.read_paths)
