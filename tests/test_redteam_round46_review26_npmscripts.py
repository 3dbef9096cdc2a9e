"""Red team round 46 (review26, second reader of round 45 hooks5): a hook that runs a
``package.json`` script (``npm run fmt``, ``npm test``, ``pnpm lint``, ``yarn fmt``).

Round 45 promised that a host hook running node code from the workspace -- "a package's script"
named -- runs only what the session found. ``npm run fmt`` was recorded by the root's own files
only: the script line's ``fmtx`` is ``node_modules/.bin/fmtx`` (npm puts it first on the script's
``PATH``) and ``node tools/lint.js`` loads ``tools/``; neither was recorded nor protected, and a
sandboxed command's rewrite of ``node_modules/fmtx/cli.js`` ran on the host. Yarn (``yarnPath``,
plugins, PnP's ``.yarn/cache``) and bun (``bunfig.toml``'s ``preload``) run the project's own
configuration as code on every subcommand; an install runs every package's lifecycle scripts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files
from tests._bwrap_session import require_bwrap
from tests._calls import hook_bash_session as _session

_EVIL = "require('child_process').execSync('id')\n"


def _project(ws: Path, scripts: dict[str, str]) -> None:
    (ws / "node_modules" / "fmtx").mkdir(parents=True)
    (ws / "node_modules" / ".bin").mkdir()
    (ws / "node_modules" / "fmtx" / "cli.js").write_text("#!/usr/bin/env node\nrequire('./lib.js');\n")
    (ws / "node_modules" / "fmtx" / "lib.js").write_text("module.exports = 1;\n")
    (ws / "node_modules" / ".bin" / "fmtx").symlink_to("../fmtx/cli.js")
    (ws / "tools").mkdir()
    (ws / "tools" / "lint.js").write_text("module.exports = 1;\n")
    (ws / ".yarn" / "releases").mkdir(parents=True)
    (ws / ".yarn" / "releases" / "yarn.cjs").write_text("module.exports = 1;\n")
    (ws / ".yarnrc.yml").write_text("yarnPath: .yarn/releases/yarn.cjs\n")
    (ws / "package.json").write_text(json.dumps({"scripts": scripts}))


_SCRIPTS = {"fmt": "fmtx --write .", "lint": "node tools/lint.js", "pretest": "npm run lint", "test": "echo ok"}


@pytest.mark.parametrize(
    ("hook", "rewritten"),
    [
        ("npm run fmt", "node_modules/fmtx/cli.js"),  # the .bin entry's target
        ("npm run fmt", "node_modules/fmtx/lib.js"),  # what it requires
        ("npm test", "tools/lint.js"),  # pretest -> npm run lint -> node tools/lint.js
        ("pnpm fmt", "node_modules/fmtx/cli.js"),  # pnpm runs a script by its bare name
        ("yarn fmt", ".yarn/releases/yarn.cjs"),  # yarnPath: yarn runs the project's release
        ("npm install", "tools/lint.js"),  # lifecycle scripts: the project whole
    ],
)
def test_what_a_package_script_runs_is_recorded(tmp_path: Path, hook: str, rewritten: str) -> None:
    """Failed 6 of 6 before: each rewrite kept the hook's record."""
    ws = tmp_path / "ws"
    _project(ws, _SCRIPTS)
    before = hook_files(ws, [hook])
    assert not before.problems(), before.problems()
    (ws / rewritten).write_text(_EVIL)
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{rewritten} not recorded for {hook}"


def test_a_script_line_that_cannot_be_resolved_records_the_workspace(tmp_path: Path) -> None:
    """A line with a variable (``$npm_package_config_x``), a script running itself, or another
    directory's or package's scripts (``--prefix``, ``-w``, ``-C``): fail closed."""
    ws = tmp_path / "ws"
    _project(ws, {"v": "node $npm_package_config_entry", "loop": "npm run loop"})
    for hook in ("npm run v", "npm run loop", "npm --prefix sub run fmt", "npm run fmt -w pkg", "pnpm -C sub fmt"):
        assert WHOLE_WORKSPACE in hook_files(ws, [hook]).files, hook


def test_a_plain_script_does_not_record_the_workspace(tmp_path: Path) -> None:
    """Control: ``npm run fmt`` records the tool and ``node_modules``, not the whole tree (a
    command's other writes do not stop the hook)."""
    ws = tmp_path / "ws"
    _project(ws, _SCRIPTS)
    record = hook_files(ws, ["npm run fmt"])
    assert WHOLE_WORKSPACE not in record.files and "node_modules" in record.dirs, record
    (ws / "tools" / "b.js").write_text("x = 1\n")  # a write below the root, in nothing recorded
    assert compare_hook_files(record, hook_files(ws, ["npm run fmt"])) is None


def test_an_npm_run_hook_does_not_run_a_planted_tool_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end, failed before: the operator's ``npm run --silent fmt`` PostToolUse hook ran the
    ``node_modules/fmtx/cli.js`` a sandboxed command rewrote, in that session and the next."""
    require_bwrap()
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_update_notifier", "false")
    ws, ran, marker = tmp_path / "ws", tmp_path / "hook-ran", tmp_path / "ran-on-the-host"
    _project(ws, {"fmt": "fmtx"})
    (ws / "node_modules" / "fmtx" / "cli.js").write_text(
        f"#!/usr/bin/env node\nrequire('fs').appendFileSync({str(ran)!r}, 'ran\\n');\n"
    )
    (ws / "node_modules" / "fmtx" / "cli.js").chmod(0o755)
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "npm run --silent fmt"}]}]}}))
    code = f"#!/usr/bin/env node\nrequire('fs').writeFileSync({str(marker)!r}, 'x');"
    plant = f"printf '%s\\n' \"{code}\" > \"node_modules/$(printf fm%s tx)/cli.js\" && echo planted"
    first = _session(ws, own, tmp_path / "s1", ["echo before", plant, "echo after"])
    assert ran.exists(), f"the hook did not run before the plant: the test proves nothing {first}"
    _session(ws, own, tmp_path / "s2", ["echo next"])
    assert not marker.exists(), "the operator's npm-run hook ran a tool a sandboxed command wrote"


def test_a_workspace_package_link_refuses_saying_what_it_is(tmp_path: Path) -> None:
    """``node_modules/a -> ../packages/a`` (npm workspaces) is not vouched for; the message said
    "links a directory out of the workspace", which it does not: it now names the link's kind and
    an install outside the workspace to use instead."""
    ws = tmp_path / "ws"
    _project(ws, _SCRIPTS)
    (ws / "packages" / "a").mkdir(parents=True)
    (ws / "node_modules" / "a").symlink_to("../packages/a")
    problems = " ".join(hook_files(ws, ["npm run fmt"]).problems())
    assert "node_modules/a -> ../packages/a" in problems and "/opt/tools/node_modules/.bin" in problems, problems
