"""Red team round 45 (hooks5): what a hook's node tool loads from node_modules that no manifest names.

Round 44 recorded the package a hook's node tool lies in and the packages its ``package.json``
declares. Node finds a bare ``require`` name in every ``node_modules`` on the way up, whatever
declares it: a plugin a tool's config names, an optional ``try { require(x) }``, a name computed at
run time, and a loose file ``node_modules/<name>.js``, which node loads before the directory
``node_modules/<name>``. None of those was recorded, and the operator's hook ran a sandboxed
command's plant on the host.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files
from tests._bwrap_session import require_bwrap
from tests._calls import hook_bash_session as _session

_HOOK = "npx --no-install fmtx"


def _install(ws: Path, ran: Path) -> None:
    """A formatter with one declared dependency, which loads a plugin by a computed name (as
    prettier and eslint load the plugins their configs name); all hoisted, as npm installs."""
    nm = ws / "node_modules"
    for name in ("fmtx", "fmtdep", "fmtplug", ".bin"):
        (nm / name).mkdir(parents=True)
    (ws / "package.json").write_text('{"name": "x", "devDependencies": {"fmtx": "1", "fmtplug": "1"}}\n')
    (nm / "fmtx" / "package.json").write_text(
        json.dumps({"name": "fmtx", "bin": {"fmtx": "cli.js"}, "dependencies": {"fmtdep": "^1"}})
    )
    (nm / "fmtx" / "cli.js").write_text("#!/usr/bin/env node\nrequire('./lib.js');\n")
    os.chmod(nm / "fmtx" / "cli.js", 0o755)
    (nm / "fmtx" / "lib.js").write_text(
        "require('fmtdep');\n"
        "const plugin = ['fmt', 'plug'].join('');  // as named in the project's config\n"
        "try { require(plugin); } catch (e) {}\n"
        f"require('fs').appendFileSync({str(ran)!r}, 'ran\\n');\n"
    )
    for name in ("fmtdep", "fmtplug"):
        (nm / name / "package.json").write_text(json.dumps({"name": name, "main": "index.js"}))
        (nm / name / "index.js").write_text("module.exports = 1;\n")
    os.symlink("../fmtx/cli.js", nm / ".bin" / "fmtx")


@pytest.mark.parametrize(
    "target",
    [
        "node_modules/fmtplug/index.js",  # a plugin loaded by a computed name, declared by no package
        "node_modules/fmtdep.js",  # a loose file: node loads it before the directory node_modules/fmtdep
    ],
)
def test_a_module_node_finds_without_a_declaration_is_not_run_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """Failed 2 of 2 before: the hook (this session's, then the next's) ran the plant."""
    require_bwrap()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws, ran, marker = tmp_path / "ws", tmp_path / "hook-ran", tmp_path / "ran-on-the-host"
    _install(ws, ran)
    own = tmp_path / "operator.json"  # the operator's own file: always obeyed, never trust-checked
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": _HOOK}]}]}}))
    code = f"require('fs').writeFileSync({str(marker)!r}, 'x'); module.exports = 1;"
    hidden = target.replace("node_modules", "$(printf node_%s modules)")  # no static check sees it
    plant = f"printf '%s\\n' \"{code}\" > \"{hidden}\" && echo planted"
    first = _session(ws, own, tmp_path / "s1", ["echo before", plant, "echo after"])
    assert ran.exists(), "the hook did not run before the plant: the test proves nothing"
    assert "planted" in json.dumps(first), first  # written; the after-command check must revert it
    second = _session(ws, own, tmp_path / "s2", ["echo next"])
    assert "next" in json.dumps(second), second
    assert not marker.exists(), f"the operator's hook ran {target}, which a sandboxed command wrote"


def _changed(ws: Path, hook: str, change: Any) -> str:
    before = hook_files(ws, [hook])
    assert not before.problems(), before.problems()
    change()
    return compare_hook_files(before, hook_files(ws, [hook])) or ""


def test_a_plain_file_bin_entry_records_the_package_it_reaches(tmp_path: Path) -> None:
    """``node_modules/.bin/fmtp`` a plain file requiring ``../fmtx/lib.js`` (failed 1 of 1 before:
    only ``node_modules/.bin`` was recorded, the package it runs was not)."""
    ws = tmp_path / "ws"
    _install(ws, tmp_path / "ran")
    (ws / "node_modules" / ".bin" / "fmtp").write_text("#!/usr/bin/env node\nrequire('../fmtx/lib.js');\n")
    lib = ws / "node_modules" / "fmtx" / "lib.js"
    why = _changed(ws, "npx --no-install fmtp", lambda: lib.write_text("require('child_process').execSync('id')\n"))
    assert "changed" in why and "node_modules" in why, why


def test_a_hook_scripts_computed_require_is_recorded(tmp_path: Path) -> None:
    """``node scripts/guard.js`` whose ``require(name)`` is chosen at run time: every package node
    could find is the hook's (failed 1 of 1 before: none was recorded)."""
    ws = tmp_path / "ws"
    _install(ws, tmp_path / "ran")
    (ws / "scripts").mkdir()
    (ws / "scripts" / "guard.js").write_text("const n = process.env.CHECKER || 'fmtplug';\nrequire(n);\n")
    index = ws / "node_modules" / "fmtplug" / "index.js"
    why = _changed(ws, "node scripts/guard.js", lambda: index.write_text("require('child_process').execSync('id')\n"))
    assert "changed" in why and "node_modules" in why, why


def test_a_package_planted_beside_a_hooks_script_is_seen(tmp_path: Path) -> None:
    """``scripts/node_modules/fmtdep`` is where node looks first for ``scripts/guard.js``'s
    ``require('fmtdep')``: held before (round 44 recorded it absent); kept as a guard."""
    ws = tmp_path / "ws"
    _install(ws, tmp_path / "ran")
    (ws / "scripts").mkdir()
    (ws / "scripts" / "guard.js").write_text("require('fmtdep');\n")

    def plant() -> None:
        (ws / "scripts" / "node_modules" / "fmtdep").mkdir(parents=True)
        (ws / "scripts" / "node_modules" / "fmtdep" / "index.js").write_text("module.exports = 2;\n")

    why = _changed(ws, "node scripts/guard.js", plant)
    assert why, "a package planted where node looks first was not seen"


def test_a_node_modules_past_the_bounds_refuses_the_hook_and_is_not_protected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bounds the hook never runs (fail closed, saying what to do), and the tree is left
    out of the protected files: protecting 4,000 files cost ~250 ms after every command."""
    from shellrt.permissions import hook_files as hf
    from shellrt.permissions.writable_files import root_file_paths, roots_files

    ws = tmp_path / "ws"
    _install(ws, tmp_path / "ran")
    monkeypatch.setattr(hf, "MAX_TREE_ENTRIES", 5)
    found = hook_files(ws, [_HOOK])
    problems = " ".join(found.problems())
    assert "node_modules, where node finds what a hook's node code requires" in problems, problems
    assert "outside the workspace, by its absolute path" in problems, problems
    protected = root_file_paths(roots_files([ws], [_HOOK], base=ws))
    assert str(ws / "node_modules") not in protected, protected
    assert str(ws / "node_modules" / ".bin" / "fmtx") in protected, protected  # the named file still is
