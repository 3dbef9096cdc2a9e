"""Trust covers what a hook script loads relative to the hook's working directory.

Hooks run from the workspace root, so ``. ./lib.sh`` in ``scripts/x.sh`` loads the root's
``lib.sh`` and ``source lib/x.sh`` loads ``lib/x.sh`` — neither beside the script, so
neither was recorded: a change to them kept the workspace trusted and the host ran it.
Shell hook scripts are now read for what they load (transitively), and those files and
their directories are recorded like the script's own; a load chosen at run time is never
trusted, with a warning. Real `shellrt trust add` runs, real hooks on the local backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._governance import trust_env
from tests.test_trust_hook_scripts import _hooks_obeyed, _log, _repo, _run, _trust

pytestmark = pytest.mark.anyio


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return trust_env(tmp_path, monkeypatch)


def _tagger(path: Path, tag: str, log: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"tag() {{ echo {tag} >> {log}; }}\n")


@pytest.mark.parametrize(
    ("loader", "helper"),
    [
        (". ./lib.sh", "lib.sh"),  # from scripts/x.sh: the root's lib.sh, not scripts/lib.sh
        ("source lib/x.sh", "lib/x.sh"),
        ('cd "$(dirname "$0")"\nsource ../lib/x.sh', "lib/x.sh"),
        ('. "$CLAUDE_PROJECT_DIR/lib/x.sh"', "lib/x.sh"),
        ("bash tools/helper.sh; . ./lib.sh", "lib.sh"),
    ],
)
async def test_a_changed_helper_loaded_from_the_working_directory_untrusts(
    tmp_path: Path, env: dict[str, str], loader: str, helper: str
) -> None:
    repo, log = _repo(tmp_path, "bash scripts/x.sh", {})
    (repo / "scripts").mkdir()
    (repo / "scripts" / "x.sh").write_text(f"#!/bin/bash\n{loader}\ntag\n")
    (repo / "tools").mkdir()
    (repo / "tools" / "helper.sh").write_text("true\n")
    _tagger(repo / helper, "v1", log)
    shown = _trust(repo, env)
    assert helper in shown and "WARNING" not in shown, shown
    assert _hooks_obeyed(repo)[0]
    await _run(repo, "true")
    assert _log(log) == ["v1"]
    _tagger(repo / helper, "v2", log)  # as a `git pull` would
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "changed since the workspace was trusted" in diagnostics, diagnostics
    await _run(repo, "true")
    assert _log(log) == ["v1"]


async def test_a_helper_changed_by_a_command_is_not_run_in_the_session(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repo, log = _repo(tmp_path, "bash .claude/hooks/x.sh", {})
    (repo / ".claude" / "hooks").mkdir()
    (repo / ".claude" / "hooks" / "x.sh").write_text("#!/bin/bash\n. ./lib.sh\ntag\n")
    _tagger(repo / "lib.sh", "v1", log)
    _trust(repo, env)
    evil = tmp_path / "evil.sh"
    _tagger(evil, "planted", log)
    await _run(repo, "true", f"cp {evil} lib.sh", "true")
    # Round 17: what a hook loads is a protected file: the copy is reverted after the command
    # (it used to be kept, and only this session's hooks skipped it).
    assert (repo / "lib.sh").read_text() != evil.read_text()
    assert "planted" not in _log(log) and _log(log)[:2] == ["v1", "v1"], _log(log)


async def test_a_helper_sourced_by_a_helper_is_covered(tmp_path: Path, env: dict[str, str]) -> None:
    repo, log = _repo(tmp_path, "bash scripts/x.sh", {})
    (repo / "scripts").mkdir()
    (repo / "scripts" / "x.sh").write_text("#!/bin/bash\n. ./lib.sh\ntag\n")
    (repo / "lib.sh").write_text('. "$(dirname "${BASH_SOURCE[0]}")/deep/more.sh"\n')
    _tagger(repo / "deep" / "more.sh", "v1", log)
    _trust(repo, env)
    assert _hooks_obeyed(repo)[0]
    _tagger(repo / "deep" / "more.sh", "v2", log)
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "deep/more.sh changed" in diagnostics, diagnostics


@pytest.mark.parametrize(
    "loader", ['. "$LIB/x.sh"', 'cd "$SOMEWHERE"\n. ./lib.sh', 'source "$(pick-one)"', '"$HELPER" --check']
)
async def test_a_load_chosen_at_run_time_is_never_trusted(
    tmp_path: Path, env: dict[str, str], loader: str
) -> None:
    repo, log = _repo(tmp_path, "bash scripts/x.sh", {})
    (repo / "scripts").mkdir()
    (repo / "scripts" / "x.sh").write_text(f"#!/bin/bash\n{loader}\necho ran >> {log}\n")
    (repo / "lib.sh").write_text("true\n")
    shown = _trust(repo, env)
    assert "WARNING" in shown and "chosen at run time" in shown and "fixed path" in shown, shown
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "chosen at run time" in diagnostics, diagnostics
    await _run(repo, "true")
    assert _log(log) == []


async def test_a_script_that_loads_nothing_by_path_keeps_the_root_unwatched(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Only what is loaded is recorded: reading data by a variable, or editing the root, is fine."""
    repo, log = _repo(tmp_path, "bash scripts/x.sh", {})
    (repo / "scripts").mkdir()
    (repo / "scripts" / "x.sh").write_text(
        f'#!/bin/bash\ninput=$(cat)\necho "$input" | grep -q "rm -rf" && exit 2\necho ok >> {log}\n'
    )
    _trust(repo, env)
    (repo / "README.md").write_text("changed\n")
    assert _hooks_obeyed(repo)[0]
    await _run(repo, "true")
    assert _log(log) == ["ok"]


async def test_a_loaded_helper_in_a_too_large_directory_is_never_trusted(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The helper's directory is recorded whole, within the same bounds as a hook script's own."""
    from shellrt.permissions.hook_files import MAX_TREE_ENTRIES

    repo, log = _repo(tmp_path, "bash scripts/x.sh", {})
    (repo / "scripts").mkdir()
    (repo / "scripts" / "x.sh").write_text(f"#!/bin/bash\n. vendor/lib.sh\necho ran >> {log}\n")
    (repo / "vendor").mkdir()
    (repo / "vendor" / "lib.sh").write_text("true\n")
    for index in range(MAX_TREE_ENTRIES + 1):
        (repo / "vendor" / f"f{index}.txt").write_text("x")
    shown = _trust(repo, env)
    assert "WARNING" in shown and "vendor" in shown and "too large" in shown, shown
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "too large" in diagnostics, diagnostics


def _python_guard(repo: Path, body: str, log: Path) -> None:
    (repo / "scripts").mkdir(exist_ok=True)
    (repo / "scripts" / "check.py").write_text(
        "import os, sys, runpy\n" + body + f"\nopen({str(log)!r}, 'a').write(TAG + '\\n')\n"
    )


@pytest.mark.parametrize(
    ("body", "helper", "helper_text"),
    [
        ("sys.path.insert(0, os.getcwd())\nfrom helpers import TAG", "helpers.py", "TAG = {tag!r}\n"),
        (
            'sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))\nfrom shared import TAG',
            "lib/shared.py",
            "TAG = {tag!r}\n",
        ),
        ('TAG = runpy.run_path("tools/tag.py")["TAG"]', "tools/tag.py", "TAG = {tag!r}\n"),
        ('TAG = open("guard-tag.txt").read().strip()', "guard-tag.txt", "{tag}\n"),
    ],
)
async def test_a_changed_file_a_python_hook_loads_from_the_working_directory_untrusts(
    tmp_path: Path, env: dict[str, str], body: str, helper: str, helper_text: str
) -> None:
    repo, log = _repo(tmp_path, "python3 scripts/check.py", {})
    _python_guard(repo, body, log)
    (repo / helper).parent.mkdir(parents=True, exist_ok=True)
    (repo / helper).write_text(helper_text.format(tag="v1"))
    shown = _trust(repo, env)
    assert helper in shown and "WARNING" not in shown, shown
    await _run(repo, "true")
    assert _log(log) == ["v1"]
    (repo / helper).write_text(helper_text.format(tag="v2"))
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and f"{helper} changed since the workspace was trusted" in diagnostics, diagnostics
    await _run(repo, "true")
    assert _log(log) == ["v1"]


@pytest.mark.parametrize(
    "body", ['sys.path.append(os.environ.get("LIB", "."))', "runpy.run_path(sys.argv[0] + '.x')"]
)
async def test_a_python_load_chosen_at_run_time_is_never_trusted(
    tmp_path: Path, env: dict[str, str], body: str
) -> None:
    repo, log = _repo(tmp_path, "python3 scripts/check.py", {})
    _python_guard(repo, body + "\nTAG = 'ran'", log)
    shown = _trust(repo, env)
    assert "WARNING" in shown and "chosen at run time" in shown, shown
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "chosen at run time" in diagnostics, diagnostics


async def test_what_a_python_helper_imports_through_the_hooks_sys_path_is_covered(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """``sys.path`` is one per process: the helper's own imports resolve in the directory the hook added."""
    repo, log = _repo(tmp_path, "python3 scripts/check.py", {})
    _python_guard(repo, "sys.path.insert(0, os.getcwd())\nfrom helpers import TAG", log)
    (repo / "helpers.py").write_text("from deeper import TAG\n")
    (repo / "deeper.py").write_text("TAG = 'v1'\n")
    _trust(repo, env)
    assert _hooks_obeyed(repo)[0]
    (repo / "deeper.py").write_text("TAG = 'v2'\n")
    obeyed, diagnostics = _hooks_obeyed(repo)
    assert not obeyed and "deeper.py changed" in diagnostics, diagnostics
