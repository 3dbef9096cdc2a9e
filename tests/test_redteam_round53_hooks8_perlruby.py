"""Red team round 53 (hooks8): Perl, Ruby and PHP hook scripts' loads were never read.

Python, node and shell hook scripts are read for what they load (rounds 40-51); a Perl, Ruby or
PHP script was recorded as a file alone. Their relative loads start at the cwd, the workspace
root where hooks run: ``perl -Ilib x.pl`` with ``use A;``, ``use lib "lib"``, the same in the
operator's own script outside the workspace (real Perl ran a command's ``lib/A.pm`` on the host
in each, 3 of 3 failed before), and Ruby's ``require_relative``/``load``/``-r./x``, Perl's
``-Mlib=lib``, PHP's ``include`` (record only: not installed here; 4 of 4 failed before). Now an
attached ``-I<dir>`` is read as a path and a script holding a loading construct, or an option
other than plain flags, records the tree (`hook_loads_other`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files
from tests._hook_on_host import run_hook_on_host
from tests.conftest import require

_MARK = "R53-HOOKS8-PERL"
_PERL = shutil.which("perl") or ""
_PLANT = f'package A; print "{_MARK}\\n"; 1;\n'


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    for d in (ws / ".claude" / "hooks", ws / "lib", home):
        d.mkdir(parents=True)
    (ws / "lib" / "A.pm").write_text("package A; 1;\n")
    return ws, home


@pytest.mark.parametrize(
    ("name", "options", "text", "outside"),
    [
        ("include_option", "-Ilib", "use A;\n", False),
        ("use_lib", "", 'use lib "lib";\nuse A;\n', False),
        ("outside_script", "", 'use strict;\nuse lib "lib";\nuse A;\n', True),
    ],
)
def test_a_perl_script_loading_from_the_cwd_is_recorded(
    tmp_path: Path, name: str, options: str, text: str, outside: bool
) -> None:
    require(bool(_PERL), "perl is not installed")
    ws, home = _workspace(tmp_path)
    script = home / "x.pl" if outside else ws / ".claude" / "hooks" / "x.pl"
    script.write_text(text)
    where = str(script) if outside else '"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.pl'
    hook = f"{_PERL} {options} {where}"
    before = hook_files(ws, [hook])
    (ws / "lib" / "A.pm").write_text(_PLANT)
    run_hook_on_host(ws, hook, _MARK, name)
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"lib/A.pm unrecorded: {name}"


@pytest.mark.parametrize(
    ("hook", "script", "text", "target"),
    [
        ("ruby .claude/hooks/x.rb", "x.rb", 'require_relative "../../lib/a"\n', "lib/a.rb"),
        ("ruby .claude/hooks/x.rb", "x.rb", 'load "lib/a.rb"\n', "lib/a.rb"),
        ("ruby -r./lib/a .claude/hooks/x.rb", "x.rb", "puts 1\n", "lib/a.rb"),
        ("perl -Mlib=lib .claude/hooks/x.pl", "x.pl", "use A;\n", "lib/A.pm"),
        ("php .claude/hooks/x.php", "x.php", '<?php include "lib/a.php";\n', "lib/a.php"),
    ],
)
def test_other_loads_are_recorded(tmp_path: Path, hook: str, script: str, text: str, target: str) -> None:
    ws, _ = _workspace(tmp_path)
    (ws / ".claude" / "hooks" / script).write_text(text)
    (ws / target).write_text("# trusted\n")
    before = hook_files(ws, [hook])
    (ws / target).write_text("# planted\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{target} unrecorded: {hook}"


@pytest.mark.parametrize(
    ("hook", "script", "text"),
    [
        ("perl -w .claude/hooks/x.pl", "x.pl", 'use strict;\nuse JSON::PP;\nprint "ok\\n";\n'),
        ("ruby .claude/hooks/x.rb", "x.rb", 'require "json"\nputs JSON.parse(STDIN.read)\n'),
    ],
)
def test_a_script_loading_by_name_only_stays_narrow(
    tmp_path: Path, hook: str, script: str, text: str
) -> None:
    """Control: modules by name come from the interpreter's own path (no ``.`` there)."""
    ws, _ = _workspace(tmp_path)
    (ws / ".claude" / "hooks" / script).write_text(text)
    record = hook_files(ws, [hook])
    assert WHOLE_WORKSPACE not in {*record.files, *record.dirs}, record
