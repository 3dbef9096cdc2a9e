"""Red team round 46 (review26, second reader of round 45 hooks5): what a hook's node script loads
through its package scope or by a literal the round's pattern did not read.

Round 45 recorded a hook script's relative requires and the directories its scope's ``imports``
map to. Node also loads, from the same scope: the package's own ``exports`` when a script requires
the package by its own name (self-reference: ``require('proj/cfg')``), an ``imports`` *pattern*'s
target (``"#x/*": "./*"`` maps ``#x/lib/policy.js`` to ``./lib/policy.js``: round 45 recorded the
directory of the literal ``*``), a directory's ``package.json`` ``main``, and a relative path
written as a template literal (``require(`../lib/policy.js`)``). A sandboxed command's rewrite of
any of these ran on the host as the operator's hook.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files

_HOOK = "node scripts/guard.js"
_EVIL = "require('child_process').execSync('id')\n"


def _ws(tmp_path: Path, manifest: dict[str, object], guard: str, modules: dict[str, str]) -> Path:
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "package.json").write_text(json.dumps(manifest))
    for rel, text in modules.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (ws / "scripts" / "guard.js").write_text(guard)
    return ws


_CASES = {
    # require('proj/cfg'): the scope's own "exports" (a condition map too), before any node_modules
    "self-reference": (
        {"name": "proj", "exports": {"./cfg": {"node": "./config/cfg.js", "default": "./config/cfg.js"}}},
        "require('proj/cfg');\n",
        "config/cfg.js",
    ),
    # "#x/*": "./*" maps #x/lib/policy.js to ./lib/policy.js
    "imports-pattern-root": ({"imports": {"#x/*": "./*"}}, "require('#x/lib/policy.js');\n", "lib/policy.js"),
    # "#y/*": "./*/index.js" maps #y/sub to ./sub/index.js
    "imports-pattern-inner": ({"imports": {"#y/*": "./*/index.js"}}, "require('#y/sub');\n", "sub/index.js"),
    # a template literal with no substitution is a literal path
    "template-literal": ({}, "require(`../lib/policy.js`);\n", "lib/policy.js"),
    # require('../lib') loads lib/package.json's "main"
    "directory-main": ({}, "require('../lib');\n", "src/main.js"),
}


def _modules(case: str) -> dict[str, str]:
    base = {"config/cfg.js": "module.exports = 1;\n", "lib/policy.js": "module.exports = 1;\n",
            "sub/index.js": "module.exports = 1;\n", "src/main.js": "module.exports = 1;\n"}
    if case == "directory-main":
        base.pop("lib/policy.js")
        base["lib/package.json"] = json.dumps({"main": "../src/main.js"})
    return base


@pytest.mark.parametrize("case", list(_CASES))
def test_what_node_loads_through_the_scope_is_recorded(tmp_path: Path, case: str) -> None:
    """Failed 5 of 5 before: each rewrite of the module node loads kept the record."""
    manifest, guard, loaded = _CASES[case]
    ws = _ws(tmp_path, manifest, guard, _modules(case))
    node = shutil.which("node")
    if node is not None:  # the module named is the one node loads (the test's premise)
        out = subprocess.run(
            [node, "-e", f"require({str(ws / 'scripts' / 'guard.js')!r}); "
             "console.log(Object.keys(require.cache).join('\\n'))"],
            capture_output=True, text=True, timeout=30, cwd=ws, check=True,
        ).stdout
        assert str(ws / loaded) in out.splitlines(), out
    before = hook_files(ws, [_HOOK])
    assert not before.problems(), before.problems()
    (ws / loaded).write_text(_EVIL)
    why = compare_hook_files(before, hook_files(ws, [_HOOK]))
    assert why is not None, f"{loaded} was rewritten and the hook's record did not change"


def test_an_imports_pattern_over_the_whole_root_records_the_workspace(tmp_path: Path) -> None:
    """``"#x/*": "./*"`` may map to any file: the workspace is recorded whole (a large one refuses)."""
    ws = _ws(tmp_path, {"imports": {"#x/*": "./*"}}, "require('#x/lib/policy.js');\n", _modules("x"))
    record = hook_files(ws, [_HOOK])
    assert "." in record.dirs, record.dirs
    (ws / "lib" / "policy.js").write_text(_EVIL)
    assert compare_hook_files(record, hook_files(ws, [_HOOK])) is not None


def test_a_pattern_over_a_large_root_refuses_saying_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bounds the hook refuses, and the message names the pattern and the way out."""
    from shellrt.permissions import hook_files as module

    ws = _ws(tmp_path, {"imports": {"#x/*": "./*"}}, "require('#x/lib/policy.js');\n", _modules("x"))
    monkeypatch.setattr(module, "MAX_TREE_ENTRIES", 5)
    problems = " ".join(hook_files(ws, [_HOOK]).problems())
    assert '"./lib/*"' in problems and "package.json maps a pattern" in problems, problems


def test_a_plain_hook_script_records_no_more_than_before(tmp_path: Path) -> None:
    """Control: a script with a relative require and a package.json without exports or patterns
    records its own and the module's directory, not the workspace."""
    ws = _ws(tmp_path, {"name": "proj", "imports": {"#c": "./config/cfg.js"}},
             "require('../lib/policy.js'); require('#c');\n", _modules("x"))
    record = hook_files(ws, [_HOOK])
    assert "." not in record.dirs and {"scripts", "lib", "config"} <= set(record.dirs), record.dirs
    (ws / "sub" / "index.js").write_text(_EVIL)  # nothing loads it
    assert compare_hook_files(record, hook_files(ws, [_HOOK])) is None
