"""Trust covers what a hook script loads beside it, not only the script it names.

A hook ``python3 scripts/check.py`` that puts its own directory on ``sys.path``
runs ``scripts/util.py`` too; a script's ``. "$(dirname "$0")/lib.sh"``
or, for a script at the workspace root, ``. ./lib.sh`` (hooks run from the root)
runs its neighbours. So the directory of every hook file is recorded whole (the
root's own files only, for a script at the root), bounded; a directory past the
bounds is never trusted and says why. Real `shellrt trust add` runs, real hooks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import MAX_TREE_ENTRIES
from tests._governance import trust_env
from tests.test_trust_hook_scripts import _hooks_obeyed, _log, _repo, _run, _script, _trust

pytestmark = pytest.mark.anyio


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return trust_env(tmp_path, monkeypatch)


def _python_hook(tmp_path: Path) -> tuple[Path, Path]:
    repo, log = _repo(tmp_path, "python3 scripts/check.py", {})
    (repo / "scripts").mkdir()
    (repo / "scripts" / "util.py").write_text(f"def tag():\n    open({str(log)!r}, 'a').write('v1\\n')\n")
    # Hooks run with PYTHONSAFEPATH=1; scripts that import their neighbours say so themselves.
    (repo / "scripts" / "check.py").write_text(
        "import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\nimport util\nutil.tag()\n"
    )
    return repo, log


async def test_a_changed_module_beside_a_python_hook_untrusts(tmp_path: Path, env: dict[str, str]) -> None:
    repo, log = _python_hook(tmp_path)
    shown = _trust(repo, env)
    assert "scripts" in shown, shown
    assert _hooks_obeyed(repo)[0]
    await _run(repo, "true")
    assert _log(log) == ["v1"]
    (repo / "scripts" / "util.py").write_text(f"def tag():\n    open({str(log)!r}, 'a').write('v2\\n')\n")
    obeyed, diagnostics = _hooks_obeyed(repo)
    # the module it imports is recorded itself now (hook_loads_python), and its directory whole
    assert not obeyed and "hook file scripts/util.py changed" in diagnostics, diagnostics
    await _run(repo, "true")
    assert _log(log) == ["v1"]


async def test_a_module_changed_by_a_command_is_not_run_in_the_session(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repo, log = _python_hook(tmp_path)
    _trust(repo, env)
    evil = tmp_path / "evil.py"
    evil.write_text(f"def tag():\n    open({str(log)!r}, 'a').write('planted\\n')\n")
    await _run(repo, "true", f"cp {evil} scripts/util.py", "true")
    # Round 17: what a hook loads is a protected file: the copy is reverted after the command.
    assert (repo / "scripts" / "util.py").read_text() != evil.read_text()
    assert "planted" not in _log(log) and _log(log)[:2] == ["v1", "v1"], _log(log)


async def test_a_sourced_file_beside_a_root_hook_untrusts(tmp_path: Path, env: dict[str, str]) -> None:
    repo, log = _repo(tmp_path, "bash hook.sh", {})
    (repo / "hook.sh").write_text(". ./lib.sh\ntag\n")
    (repo / "lib.sh").write_text(f"tag() {{ echo v1 >> {log}; }}\n")
    _trust(repo, env)
    assert _hooks_obeyed(repo)[0]
    (repo / "lib.sh").write_text(f"tag() {{ echo v2 >> {log}; }}\n")
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "changed since the workspace was trusted" in diagnostics, diagnostics


async def test_a_root_hook_does_not_watch_subdirectories(tmp_path: Path, env: dict[str, str]) -> None:
    """The root is recorded shallowly: work in subdirectories keeps the workspace trusted."""
    repo, _ = _repo(tmp_path, "bash hook.sh", {"hook.sh": "v1"})
    (repo / "src").mkdir()
    _trust(repo, env)
    (repo / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    assert _hooks_obeyed(repo)[0]


async def test_a_too_large_hook_directory_is_never_trusted(tmp_path: Path, env: dict[str, str]) -> None:
    repo, log = _repo(tmp_path, "python3 scripts/check.py", {"scripts/check.py": "v1"})
    for index in range(MAX_TREE_ENTRIES + 1):
        (repo / "scripts" / f"f{index}.txt").write_text("x")
    shown = _trust(repo, env)
    assert "WARNING" in shown and "scripts" in shown and "too large" in shown, shown
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "too large" in diagnostics, diagnostics


async def test_hooks_in_the_hooks_directory_are_unchanged(tmp_path: Path, env: dict[str, str]) -> None:
    repo, log = _repo(tmp_path, "bash .claude/hooks/x.sh", {".claude/hooks/x.sh": "v1"})
    _script(repo, "README.md", "docs", log)
    _trust(repo, env)
    (repo / "README.md").write_text("changed\n")
    assert _hooks_obeyed(repo)[0]
    assert os.path.exists(repo / ".claude" / "hooks" / "x.sh")
