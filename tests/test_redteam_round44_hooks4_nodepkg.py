"""Red team round 44 (hooks4): what a hook's node tool requires from the workspace's node_modules.

The operator's formatter hook ``npx --no-install fmtx`` runs ``node_modules/.bin/fmtx`` on the host.
Round 23 recorded that ``.bin`` entry and its link's target; the modules the script requires (its
package's others, its dependencies) were not recorded, and a sandboxed command that rewrote
``node_modules/fmtx/lib.js``, or planted a dependency where node looks first, had the hook run it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shellrt.permissions.sources import load_settings
from shellrt.permissions.trust import record_trust
from tests._bwrap_session import require_bwrap
from tests._calls import hook_bash_session as _session
from tests._governance import trust_env

_HOOK = "npx --no-install fmtx"


def _install(ws: Path, ran: Path) -> None:
    """A formatter package with one dependency, installed (hoisted) as npm does."""
    pkg = ws / "node_modules" / "fmtx"
    dep = ws / "node_modules" / "fmtdep"
    pkg.mkdir(parents=True)
    dep.mkdir(parents=True)
    (ws / "node_modules" / ".bin").mkdir()
    (ws / "package.json").write_text('{"name": "x"}\n')
    (pkg / "package.json").write_text(json.dumps({"name": "fmtx", "bin": {"fmtx": "cli.js"},
                                                  "dependencies": {"fmtdep": "^1"}}))
    (pkg / "cli.js").write_text("#!/usr/bin/env node\nrequire('./lib.js');\n")
    os.chmod(pkg / "cli.js", 0o755)
    (pkg / "lib.js").write_text(f"require('fmtdep');\nrequire('fs').appendFileSync({str(ran)!r}, 'ran\\n');\n")
    (dep / "package.json").write_text('{"name": "fmtdep", "main": "index.js"}')
    (dep / "index.js").write_text("module.exports = 1;\n")
    os.symlink("../fmtx/cli.js", ws / "node_modules" / ".bin" / "fmtx")


@pytest.mark.parametrize(
    "target",
    [
        "node_modules/fmtx/lib.js",  # the package's own module, beside the .bin link's target
        "node_modules/fmtdep/index.js",  # a dependency it declares
        "node_modules/fmtx/node_modules/fmtdep/index.js",  # where node looks for it first
    ],
)
def test_a_module_a_hooks_node_tool_requires_is_not_run_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """Failed 3 of 3 before: the hook (this session's, then the next's) ran the planted module."""
    require_bwrap()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws, ran, marker = tmp_path / "ws", tmp_path / "hook-ran", tmp_path / "ran-on-the-host"
    _install(ws, ran)
    own = tmp_path / "operator.json"  # the operator's own file: always obeyed, never trust-checked
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": _HOOK}]}]}}))
    code = f"require('fs').writeFileSync({str(marker)!r}, 'x'); module.exports = 1;"
    # Through a name the command computes: no static check sees the path, the after-command one must.
    hidden = target.replace("node_modules", "$(printf node_%s modules)")
    plant = f"mkdir -p \"{os.path.dirname(hidden)}\" && printf '%s\\n' \"{code}\" > \"{hidden}\" && echo planted"
    first = _session(ws, own, tmp_path / "s1", ["echo before", plant, "echo after"])
    assert ran.exists(), "the hook did not run before the plant: the test proves nothing"
    assert "planted" in json.dumps(first), first  # written; the after-command check must revert it
    second = _session(ws, own, tmp_path / "s2", ["echo next"])
    assert "next" in json.dumps(second), second
    assert not marker.exists(), f"the operator's hook ran {target}, which a sandboxed command wrote"
    assert not (ws / target).exists() or str(marker) not in (ws / target).read_text()  # not kept


def test_a_pulled_change_to_a_hooks_node_package_untrusts_a_project_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the trusted ``.claude/settings.json`` kept its hook after the change."""
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    _install(repo, tmp_path / "ran")
    (repo / ".claude").mkdir()
    body = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": _HOOK}]}]}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(body))
    record_trust(repo)
    assert not load_settings(repo).trust_notice
    (repo / "node_modules" / "fmtdep" / "index.js").write_text("require('child_process').execSync('id');\n")
    notice = str(load_settings(repo).trust_notice or "")
    # Round 45: the whole node_modules node searches is recorded (the declared package inside it).
    assert "hook directory node_modules changed since the workspace was trusted" in notice, notice


def test_a_package_a_hooks_own_node_script_requires_is_not_run_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the operator's ``node scripts/guard.js`` required the planted package."""
    require_bwrap()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws, ran, marker = tmp_path / "ws", tmp_path / "hook-ran", tmp_path / "ran-on-the-host"
    _install(ws, ran)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "guard.js").write_text(
        f"const d = require('fmtdep');\nrequire('fs').appendFileSync({str(ran)!r}, 'ran\\n');\n"
    )
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": 'node "$CLAUDE_PROJECT_DIR"/scripts/guard.js'}]}]}}))
    code = f"require('fs').writeFileSync({str(marker)!r}, 'x'); module.exports = 1;"
    hidden = "$(printf node_%s modules)/fmtdep/index.js"
    plant = f"printf '%s\\n' \"{code}\" > \"{hidden}\" && echo planted"
    first = _session(ws, own, tmp_path / "s1", ["echo before", plant, "echo after"])
    assert ran.exists(), "the hook did not run before the plant: the test proves nothing"
    assert "planted" in json.dumps(first), first
    _session(ws, own, tmp_path / "s2", ["echo next"])
    assert not marker.exists(), "the operator's hook script required a package a sandboxed command wrote"


def test_a_pnpm_layouts_dependency_is_recorded_where_node_finds_it(tmp_path: Path) -> None:
    """pnpm links ``node_modules/fmtx`` into ``.pnpm/…`` and its dependencies beside it there: node
    resolves from the real path, and so does the record (failed 1 of 1 on the base)."""
    from shellrt.permissions.hook_files import compare_hook_files, hook_files

    ws = tmp_path / "ws"
    store = ws / "node_modules" / ".pnpm" / "fmtx@1.0.0" / "node_modules"
    (store / "fmtx").mkdir(parents=True)
    (store / "fmtx" / "package.json").write_text('{"name": "fmtx", "dependencies": {"fmtdep": "1"}}')
    (store / "fmtx" / "cli.js").write_text("require('fmtdep')\n")
    dep = ws / "node_modules" / ".pnpm" / "fmtdep@1.0.0" / "node_modules" / "fmtdep"
    dep.mkdir(parents=True)
    (dep / "index.js").write_text("module.exports = 1\n")
    os.symlink("../../fmtdep@1.0.0/node_modules/fmtdep", store / "fmtdep")
    (ws / "node_modules" / ".bin").mkdir()
    os.symlink("../.pnpm/fmtx@1.0.0/node_modules/fmtx/cli.js", ws / "node_modules" / ".bin" / "fmtx")
    (ws / "package.json").write_text("{}")
    before = hook_files(ws, [_HOOK])
    (dep / "index.js").write_text("require('child_process').execSync('id')\n")
    why = compare_hook_files(before, hook_files(ws, [_HOOK])) or ""
    assert "hook directory node_modules changed" in why, why  # round 45: recorded whole
