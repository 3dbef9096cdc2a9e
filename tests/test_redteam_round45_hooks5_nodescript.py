"""Red team round 45 (hooks5): what a hook's own node script loads from the workspace by a path.

A hook ``node scripts/guard.js`` was recorded with its directory ``scripts/``; a module it loads from
elsewhere (``require('../lib/policy.js')``) or through its package scope (``require('#cfg')``,
which the nearest ``package.json``'s ``imports`` maps to a file) was not, and a sandboxed command's
rewrite of it ran on the host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files
from tests._bwrap_session import require_bwrap
from tests._calls import hook_bash_session as _session

_HOOK = 'node "$CLAUDE_PROJECT_DIR"/scripts/guard.js'


def test_a_module_a_hook_script_requires_from_another_directory_is_not_run_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the operator's guard required ``../lib/policy.js`` a command rewrote."""
    require_bwrap()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws, ran, marker = tmp_path / "ws", tmp_path / "hook-ran", tmp_path / "ran-on-the-host"
    (ws / "scripts").mkdir(parents=True)
    (ws / "lib").mkdir()
    (ws / "lib" / "policy.js").write_text("module.exports = {ok: true};\n")
    (ws / "scripts" / "guard.js").write_text(
        f"require('../lib/policy.js');\nrequire('fs').appendFileSync({str(ran)!r}, 'ran\\n');\n"
    )
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": _HOOK}]}]}}))
    code = f"require('fs').writeFileSync({str(marker)!r}, 'x');"
    plant = f"printf '%s\\n' \"{code}\" > \"$(printf l%s ib)/policy.js\" && echo planted"  # a computed name
    first = _session(ws, own, tmp_path / "s1", ["echo before", plant, "echo after"])
    assert ran.exists(), "the hook did not run before the plant: the test proves nothing"
    assert "planted" in json.dumps(first), first
    _session(ws, own, tmp_path / "s2", ["echo next"])
    assert not marker.exists(), "the operator's hook script loaded a module a sandboxed command wrote"


def _scoped(ws: Path) -> None:
    """A guard that imports ``#cfg``, which the root package.json maps to ``./config/cfg.js``."""
    (ws / "scripts").mkdir(parents=True)
    (ws / "config").mkdir()
    (ws / "package.json").write_text(json.dumps({"name": "x", "imports": {"#cfg": "./config/cfg.js"}}))
    (ws / "config" / "cfg.js").write_text("module.exports = {};\n")
    (ws / "scripts" / "guard.js").write_text("const cfg = require('#cfg');\n")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("config/cfg.js", "require('child_process').execSync('id')\n"),  # the module it maps to
        ("package.json", json.dumps({"imports": {"#cfg": "./evil.js"}})),  # the map itself
        ("scripts/package.json", json.dumps({"imports": {"#cfg": "./evil.js"}})),  # a nearer scope
    ],
)
def test_a_hook_scripts_subpath_import_is_recorded(tmp_path: Path, path: str, text: str) -> None:
    """Failed 2 of 3 before (``scripts/package.json`` lies in the recorded ``scripts/``)."""
    ws = tmp_path / "ws"
    _scoped(ws)
    (ws / "evil.js").write_text("require('child_process').execSync('id')\n")
    hook = "node scripts/guard.js"
    before = hook_files(ws, [hook])
    assert not before.problems(), before.problems()
    (ws / path).write_text(text)
    why = compare_hook_files(before, hook_files(ws, [hook]))
    # Any difference refuses: a rewritten map records other modules' directories (so the first
    # difference may be "…was not recorded" or "…was removed"), a rewritten module its own.
    assert why is not None and "the workspace was trusted" in why, why


def test_a_mapped_module_at_the_root_records_the_roots_own_files(tmp_path: Path) -> None:
    """``#cfg`` -> ``./cfg.js`` at the root: the root's own files are recorded (failed before)."""
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "package.json").write_text(json.dumps({"imports": {"#cfg": "./cfg.js"}}))
    (ws / "cfg.js").write_text("module.exports = {};\n")
    (ws / "scripts" / "guard.js").write_text("require('#cfg');\n")
    before = hook_files(ws, ["node scripts/guard.js"])
    (ws / "cfg.js").write_text("require('child_process').execSync('id')\n")
    why = compare_hook_files(before, hook_files(ws, ["node scripts/guard.js"])) or ""
    assert "changed" in why, why


def _tool(ws: Path) -> None:
    """A node tool installed in the workspace, run by its ``.bin`` entry, and the project's config."""
    (ws / "node_modules" / "fmtx").mkdir(parents=True)
    (ws / "node_modules" / ".bin").mkdir()
    (ws / "node_modules" / "fmtx" / "cli.js").write_text("#!/usr/bin/env node\n")
    (ws / "node_modules" / ".bin" / "fmtx").symlink_to("../fmtx/cli.js")
    (ws / "config").mkdir()
    (ws / "config" / "base.js").write_text("module.exports = {};\n")
    (ws / "fmtx.config.js").write_text("module.exports = require('./config/base.js');\n")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("config/base.js", "require('child_process').execSync('id')\n"),  # what the root config loads
        ("fmtx.config.mjs", "import 'node:child_process';\n"),  # a config planted at the root
    ],
)
def test_a_node_tools_root_config_and_what_it_loads_are_recorded(tmp_path: Path, path: str, text: str) -> None:
    """A tool run from ``node_modules/.bin`` reads its config at the root (prettier.config.js,
    eslint.config.mjs) and runs it with what it requires: failed 2 of 2 before (neither the root's
    files nor ``config/`` was recorded for ``node_modules/.bin/fmtx``)."""
    ws = tmp_path / "ws"
    _tool(ws)
    hook = "node_modules/.bin/fmtx --write src/a.js"
    before = hook_files(ws, [hook])
    assert not before.problems(), before.problems()
    (ws / path).write_text(text)
    why = compare_hook_files(before, hook_files(ws, [hook]))
    assert why is not None and "changed since the workspace was trusted" in why, why


def test_more_modules_than_are_read_refuses_the_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the modules read, what is left unread is not vouched for: the hook refuses (fail closed)."""
    from shellrt.permissions import hook_loads_node

    ws = tmp_path / "ws"
    for i in range(4):
        (ws / f"m{i}").mkdir(parents=True)
        (ws / f"m{i}" / "x.js").write_text(f"require('../m{i + 1}/x.js');\n")
    (ws / "scripts").mkdir()
    (ws / "scripts" / "guard.js").write_text("require('../m0/x.js');\n")
    assert not hook_files(ws, ["node scripts/guard.js"]).problems()
    monkeypatch.setattr(hook_loads_node, "MAX_NODE_MODULES_READ", 2)
    problems = " ".join(hook_files(ws, ["node scripts/guard.js"]).problems())
    assert "more than 2 modules" in problems, problems
