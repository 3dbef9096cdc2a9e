"""Red team round 47 (hooks6): a hook's node script loading a module by a path computed from a
literal relative prefix (round 45's Left): ``require('../plugins/' + name)``, a template with a
substitution, ``import()`` of one, ``path.join(__dirname, '..', 'plugins', name)``, and a
``createRequire`` function called by another name.

Round 45 followed literal relative specifiers only: the directory such a load reaches was not
recorded unless it was the script's own, and a sandboxed command's ``plugins/x.js`` ran on the
host through the operator's trusted hook.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files

_HOOK = 'node "$CLAUDE_PROJECT_DIR"/scripts/guard.js'


@pytest.mark.parametrize(
    ("load", "planted"),
    [
        ("require('../plugins/' + name)", "plugins/x.js"),
        ("require(`../plugins/${name}.js`)", "plugins/x.js"),
        ("import('../plugins/' + name)", "plugins/x.js"),
        ("require(path.join(__dirname, '..', 'plugins', name))", "plugins/x.js"),
        ("require(path.resolve(__dirname, '../plugins/deep', name))", "plugins/deep/x.js"),
        ("const req = createRequire(__filename); req('../lib/policy.js')", "lib/policy.js"),
        ("require('../' + name)", "anywhere/x.js"),  # the prefix is the root: the whole tree
        ("require('../absent/' + name)", "absent/x.js"),  # a directory made after the record
    ],
)
def test_a_computed_relative_load_records_its_directory(tmp_path: Path, load: str, planted: str) -> None:
    """Failed 5 of 8 before, each plant keeping the hook's record (held: the two concatenations onto
    a present directory, which the literal prefix named, and the one onto an absent directory, whose
    appearance changed the record)."""
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "guard.js").write_text(f"const path = require('path');\nconst name = process.argv[2];\n{load};\n")
    target = ws / planted
    if not planted.startswith("absent/"):
        target.parent.mkdir(parents=True)
        target.write_text("module.exports = 1;\n")
    before = hook_files(ws, [_HOOK])
    assert not before.problems(), before.problems()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("require('child_process').execSync('id');\n")
    assert compare_hook_files(before, hook_files(ws, [_HOOK])) is not None, f"{planted} not recorded for {load}"


def test_a_literal_load_stays_narrow(tmp_path: Path) -> None:
    """Control: a literal ``require('../lib/x.js')`` records ``lib``, not the tree; an unrelated
    write elsewhere keeps the record."""
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "lib").mkdir()
    (ws / "lib" / "x.js").write_text("module.exports = 1;\n")
    (ws / "scripts" / "guard.js").write_text("require('../lib/x.js');\nconsole.log('a' + b);\n")
    record = hook_files(ws, [_HOOK])
    assert "lib" in record.dirs and WHOLE_WORKSPACE not in {*record.dirs, *record.files}, record
    (ws / "src").mkdir()
    (ws / "src" / "y.js").write_text("x\n")
    assert compare_hook_files(record, hook_files(ws, [_HOOK])) is None
