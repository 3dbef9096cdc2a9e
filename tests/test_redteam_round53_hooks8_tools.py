"""Red team round 53 (hooks8): tools whose configuration or plugins are code, not in the table.

Round 47's table records the tree for a hook running a tool that loads code it finds by search.
Round 51 left "the table is a table": ``knip`` (``knip.config.ts``), ``remark`` (``.remarkrc.js``),
``svelte-check`` (``svelte.config.js``), ``tflint`` (the ``./.tflint.d/plugins`` binaries it runs),
``ansible-lint`` (``library/`` modules), ``checkov`` (``external-checks-dir``), ``sqlfluff`` (a jinja
``library_path`` of Python macros), ``composer`` (plugins in ``vendor/``) and ``vue-tsc``
(``vueCompilerOptions.plugins``) recorded nothing of them (9 of 9 failed before). Record only:
none of these tools is installed here (their loading is their documented behaviour).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files


@pytest.mark.parametrize(
    ("hook", "code"),
    [
        ("knip", "knip.config.ts"),
        ("remark . -o", ".remarkrc.js"),
        ("svelte-check", "svelte.config.js"),
        ("tflint", ".tflint.d/plugins/tflint-ruleset-x"),
        ("ansible-lint", "library/x.py"),
        ("checkov -d .", "checks/x.py"),
        ("sqlfluff lint src", "macros/x.py"),
        ("composer lint", "vendor/acme/plugin/src/Plugin.php"),
        ("vue-tsc --noEmit", "plugins/vue-plugin.js"),
    ],
)
def test_a_tool_loading_config_code_records_the_tree(tmp_path: Path, hook: str, code: str) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / code).parent.mkdir(parents=True, exist_ok=True)
    (ws / code).write_text("// trusted\n")
    before = hook_files(ws, [hook])
    (ws / code).write_text("require('child_process').execSync('id')\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{code} unrecorded: {hook}"


def test_a_data_tool_stays_narrow(tmp_path: Path) -> None:
    """Control: ``shellcheck`` and ``yamllint`` read data configs: no tree."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    record = hook_files(ws, ["shellcheck -x .claude/hooks/a.sh", "yamllint -s ."])
    assert WHOLE_WORKSPACE not in {*record.files, *record.dirs}, record
