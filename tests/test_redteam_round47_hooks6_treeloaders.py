"""Red team round 47 (hooks6): a hook that runs a tool which finds the project's code by its own
search -- a test runner (``pytest``, ``python3 -m pytest``, ``python3 -m unittest``), a task
runner (``make``'s recipes and includes), a tool whose config is code found beside the file it is
given (``/usr/local/bin/prettier --write src/deep/a.js`` reads ``src/.prettierrc.js``).

Each was recorded by a fixed table of root files at most (``conftest.py``, ``Makefile``) or by
nothing (``-m``: untrackable, only ``.claude/hooks`` watched): a sandboxed command's
``tests/conftest.py``, ``scripts/lint.sh`` or ``src/.prettierrc.js`` kept the hook's record, and
the operator's hook ran it on the host.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files
from tests._bwrap_session import require_bwrap
from tests._calls import hook_bash_session as _session

_EVIL = "import os\nos.system('id')\n"


def _project(ws: Path) -> None:
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (ws / "scripts").mkdir()
    (ws / "scripts" / "lint.sh").write_text("echo lint\n")
    (ws / "mk").mkdir()
    (ws / "mk" / "rules.mk").write_text("x:\n\ttrue\n")
    (ws / "Makefile").write_text("include mk/rules.mk\nlint:\n\tsh scripts/lint.sh\n")
    (ws / "lib").mkdir()
    (ws / "lib" / "policy.ts").write_text("export const ok = true;\n")
    (ws / "deno.json").write_text('{"imports": {"pol/": "./lib/"}}\n')
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "src" / "deep" / "a.js").write_text("let a = 1\n")


@pytest.mark.parametrize(
    ("hook", "planted"),
    [
        ("pytest -q", "tests/conftest.py"),  # pytest imports every conftest.py on the way to a test
        ("pytest -q", "tests/test_new.py"),  # ... and every test file it collects
        ("python3 -m pytest -q", "tests/conftest.py"),  # -m: was untrackable, .claude/hooks only
        ("python3 -m unittest", "tests/test_new.py"),  # discovery from the cwd
        ("timeout 60 pytest", "tests/conftest.py"),  # behind a wrapper
        ("make lint", "scripts/lint.sh"),  # a recipe's script
        ("make lint", "mk/rules.mk"),  # an include
        ("/usr/local/bin/prettier --write src/deep/a.js", "src/.prettierrc.js"),  # config above the file
        ("/usr/local/bin/prettier --write src/deep/a.js", "prettier.config.js"),  # config at the root
        ("npx --no-install eslint src/deep/a.js", "src/eslint.config.mjs"),
        # a module map found from the cwd: deno.json's "imports", tsconfig.json's "paths"
        ('deno run "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.ts', "lib/policy.ts"),
        ('tsx "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.ts', "tsconfig.json"),
    ],
)
def test_what_a_searching_tool_loads_is_recorded(tmp_path: Path, hook: str, planted: str) -> None:
    """Failed 12 of 12 before: each plant kept the hook's record (so the hook ran it)."""
    ws = tmp_path / "ws"
    _project(ws)
    before = hook_files(ws, [hook])
    target = ws / planted
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_EVIL + ("\n" if target.exists() else ""))
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{planted} not recorded for {hook}"


def test_a_tool_that_loads_no_project_code_stays_narrow(tmp_path: Path) -> None:
    """Control: ``jq``, ``python3 -P -m json.tool`` and ``ruff`` (its config is data) record no tree
    (round 48: without ``-P`` the cwd, the workspace root, is first on ``sys.path``)."""
    ws = tmp_path / "ws"
    _project(ws)
    for hook in ("jq -r .tool_name", "python3 -P -m json.tool", "ruff check --fix src/deep/a.js"):
        record = hook_files(ws, [hook])
        assert WHOLE_WORKSPACE not in {*record.files, *record.dirs}, (hook, record)
        (ws / "tests" / "test_more.py").write_text("x = 1\n")
        assert compare_hook_files(record, hook_files(ws, [hook])) is None, hook


def test_a_pytest_hook_does_not_run_a_planted_conftest_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end, failed before: the operator's ``pytest`` PostToolUse hook imported the
    ``tests/conftest.py`` a sandboxed command wrote, on the host, in that session and the next."""
    require_bwrap()
    pytest_path = shutil.which("pytest")
    if pytest_path is None:
        pytest.skip("pytest is not on PATH")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws, ran, marker = tmp_path / "ws", tmp_path / "hook-ran", tmp_path / "ran-on-the-host"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "test_ok.py").write_text(
        f"def test_ok():\n    open({str(ran)!r}, 'a').write('ran\\n')\n"
    )
    own = tmp_path / "operator.json"
    hook = "pytest -q -p no:cacheprovider tests"
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": hook}]}]}}))
    code = f"open({str(marker)!r}, 'w').write('x')"
    plant = f"printf '%s\\n' \"{code}\" > \"tests/$(printf conf%s test).py\" && echo planted"
    first = _session(ws, own, tmp_path / "s1", ["echo before", plant, "echo after"])
    assert ran.exists(), f"the hook did not run before the plant: the test proves nothing {first}"
    _session(ws, own, tmp_path / "s2", ["echo next"])
    assert not marker.exists(), "the operator's pytest hook ran a conftest.py a sandboxed command wrote"


@pytest.mark.parametrize(
    ("script", "planted"),
    [
        ("pytest -q\n", "tests/conftest.py"),
        ('cd "$CLAUDE_PROJECT_DIR" && make lint\n', "scripts/lint.sh"),
        ("uv run --frozen ruff check .\n", "tests/conftest.py"),  # a project runner (round 24's class)
        ("npx --no-install fmtx src\n", "node_modules/fmtx/cli.js"),  # npx's local binary (round 44's)
    ],
)
def test_what_a_hook_scripts_commands_load_is_recorded(tmp_path: Path, script: str, planted: str) -> None:
    """A hook shell script that runs such a tool: the command line's resolution (manifests, project
    runners, npx binaries, the tools above) was applied to the hook's own line only, never to the
    commands inside the script it runs. Failed 4 of 4 before."""
    ws = tmp_path / "ws"
    _project(ws)
    (ws / "node_modules" / "fmtx").mkdir(parents=True)
    (ws / "node_modules" / ".bin").mkdir()
    (ws / "node_modules" / "fmtx" / "cli.js").write_text("module.exports = 1;\n")
    (ws / "node_modules" / ".bin" / "fmtx").symlink_to("../fmtx/cli.js")
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "check.sh").write_text("#!/bin/sh\n" + script)
    hook = 'sh "$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh'
    before = hook_files(ws, [hook])
    (ws / planted).write_text(_EVIL)
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{planted} not recorded for {script}"


def test_a_hook_scripts_plain_commands_stay_narrow(tmp_path: Path) -> None:
    """Control: a script of ``jq``, ``LC_ALL=C sort``, ``git diff`` records its own directory only."""
    ws = tmp_path / "ws"
    _project(ws)
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "check.sh").write_text(
        "#!/bin/sh\njq -r .tool_name | LC_ALL=C sort\ngit diff --stat\n"
    )
    record = hook_files(ws, ['sh "$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh'])
    assert set(record.dirs) == {".claude/hooks"} and set(record.files) == {".claude/hooks/check.sh"}, record
