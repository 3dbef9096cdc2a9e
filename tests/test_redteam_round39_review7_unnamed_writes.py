"""Red team, round 39 (review7): code written where a later program finds it, under a name no rule reads.

Second reader of round 38's `written_places`. Each form passed ``Bash(rm:*)`` in ``bypassPermissions``
(``q`` holds ``/bin/rm``, copied through a hidden name): a write whose name is known only at run time
beside git or a program that may run it (round 38's Left: ``d=.git/hooks; cat q > "$d/pre-commit"``,
``cp q "$p"``, a function's operand, ``set --``, a loop word, ``$(echo …)``, brace expansion, find's
``{}``), ``cp -t DIR`` (modelled as writing its last operand), a file a program finds by itself
(``conftest.py`` of pytest, ``package.json`` of npm, ``os.py`` beside ``python3 t.py``), git's and
ssh's configuration outside ``.git`` (``~/.gitconfig``, ``.gitattributes``, ``~/.ssh/config``), and a
PATH directory behind braces or ``$HOME`` (``tee ~/bin/{ls,x}``, ``> $HOME/bin/ls``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._hidden_code import rule_misses
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: `cp -- "$x" q` writes `q` by name (after `--` the run-time word is a source).
H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
#: A hook written under a name known only at run time, then git (or a program that may run git).
RUN_TIME_NAMES = [H + f for f in [
    'd=.git/hooks; cat q > "$d/pre-commit"; git commit -m x', 'cp q "$p"; git commit -m x',
    'cat q > "$p"; git commit -m x', "f() { cp q \"$1\"; }; f .git/hooks/pre-commit; git commit -m x",
    'f() { cat q > "$1"; }; f .git/hooks/pre-commit; git commit -m x',
    'set -- .git/hooks/pre-commit; cp q "$1"; git commit -m x',
    'for f in .git/hooks/pre-commit; do cat q > "$f"; done; git commit -m x',
    'cat q > "${1:-.git/hooks/pre-commit}"; git commit -m x', "cat q > ${h:-.git}/hooks/pre-commit; git commit",
    'cat q > "$(echo .git/hooks/pre-commit)"; git commit -m x', "cp q $(echo .git/hooks/pre-commit); git commit",
    'exec 3>"$d/pre-commit"; cat q >&3; git commit -m x', '{ cat q; } > "$d/pre-commit"; git commit -m x',
    'cat q >> "$d/pre-commit"; git commit -m x', 'read -r p < list; cat q > "$p"; git commit -m x',
    'mapfile -t a < list; cp q "${a[0]}"; git commit -m x', "tee .git/hooks/{pre-commit,x} < q; git commit",
    "tee .git/hooks/pre-commit{,} < q; git commit", "tee {.git/hooks/pre-commit,y} < q; git commit -m x",
    "cp q .git/hooks/pre-commi{t,}; git commit", "find .git -name hooks -exec cp q {}/pre-commit \\;; git commit",
    "find .git/hooks -maxdepth 0 -exec cp q {}/pre-commit \\;; git commit -m x",
    'cp q "$p"; make commit', 'cat q > "$f"; npm test', 'cp q "$p"; pytest',
]]
#: `cp/mv/install/ln -t DIR`: the operands land in DIR.
TARGET_DIRECTORY = [H + f for f in [
    "cp q pre-commit; cp -t .git/hooks pre-commit; git commit -m x", "cp q ls; cp -t ~/bin ls; ls y",
    "cp q ls; mv --target-directory ~/bin ls; ls y", "cp q ls; install -m755 -t ~/.local/bin ls; ls y",
]]
#: A file a program finds by itself, written by name in the same command.
FOUND_BY_ITSELF = [H + f for f in [
    "cp q conftest.py; pytest", "cp q tests/conftest.py; python3 -m pytest", "cp q package.json; npm test",
    "cp q .npmrc; npm ci", "cp q build.rs; cargo build", "cp q setup.py; pip install .", "cp q os.py; python3 t.py",
    "cp q sitecustomize.py; python3 t.py", "cp q jest.config.js; npx jest", "cp q x_test.go; go test ./...",
    "cp q CMakeLists.txt; cmake .", "cp q justfile; just", "cp q Rakefile; rake", "cp q .envrc; direnv allow",
    "cp q ~/.profile; sh -l -c true", "cp q .pre-commit-config.yaml; pre-commit run -a",
    "cp q ~/.gitconfig; git status", "cp q ~/.config/git/config; git status", "cp q .gitattributes; git diff",
    "cp q ~/.ssh/config; git fetch",
]]
#: A PATH directory behind brace expansion or `$HOME`.
PATH_PIECES = [H + f for f in [
    "cp q ~/bin/{ls,x}; ls y", "tee ~/bin/{ls,x} < q; ls y", "tee ~/bin/ls{,} < q; ls y",
    "cat q > $HOME/bin/ls; ls y", "n=ls; cat q > ~/bin/$n; ls y",
]]
KEPT = ["cp a b; git status", "echo x > f; git add f; git commit -m x", "cp a.txt b.txt; npm test",
        "cp -- \"$f\" out; git status", "cp src/\"$f\" dest/; git status", 'echo hi > "$f"; cat "$f"',
        'mkdir -p "$d"; ls', "npm ci && npm test", "cp a ~/bin/tool2; ls y", "tee out.log < in; make",
        "echo x > notes.md; pytest", "git diff > \"$f\"; cat \"$f\"", "cp -t dist a b; ls dist"]


async def test_a_write_known_only_at_run_time_beside_git_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, RUN_TIME_NAMES, KEPT) == ([], [])


async def test_a_target_directory_option_is_where_the_write_lands(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, TARGET_DIRECTORY, []) == ([], [])
    assert analyze("cp -ft ~/bin ls").write_targets == ["~/bin", "~/bin/ls"]
    assert analyze("install -m 755 -t d a").write_targets == ["d", "d/a"]
    # `-S t`: a suffix, no target directory; `a` may be a directory `d` is copied into (round 39, review13)
    assert analyze("cp -St d a").write_targets == ["a", "a/d"]


async def test_a_file_a_program_finds_by_itself_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, FOUND_BY_ITSELF, []) == ([], [])


async def test_a_path_directory_behind_braces_or_home_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, PATH_PIECES, []) == ([], [])


def test_real_cp_t_writes_into_the_directory(tmp_path: Path) -> None:
    """The premise: ``cp -t DIR f`` writes ``DIR/f`` (the analysis said ``f``)."""
    cp = shutil.which("cp")
    require(cp is not None, "cp not installed")
    assert cp is not None
    (tmp_path / "hooks").mkdir()
    (tmp_path / "pre-commit").write_text("x\n")
    subprocess.run([cp, "-t", "hooks", "pre-commit"], cwd=tmp_path, check=True, timeout=30)
    assert (tmp_path / "hooks" / "pre-commit").read_text() == "x\n"


async def test_an_edit_deny_rule_sees_run_time_and_target_directory_writes(tmp_path: Path) -> None:
    """The same writes were invisible to ``Edit(...)`` deny rules too (`cat q > "$p"` was denied, `cp q
    "$p"` was not): only redirections held ""; ``cp -t secret q`` was read as writing ``q``."""
    from shellrt.tools.bash import Bash
    from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

    writes = ['p=secret/x; cp q "$p"', "cp q secret/{x,y}", "tee secret/{x,y} < q", "cp -t secret q",
              "mv -t secret q", "install -t secret q"]
    got = await decide(tmp_path, Bash(), [*writes, 'cp -- "$f" out'], "bypassPermissions", deny=["Edit(secret/**)"])
    assert got == ["deny"] * len(writes) + ["allow"]
