"""Red team, round 39 (review13): second reader of review7's written-file checks.

Each form passed ``Bash(rm:*)`` denied in ``bypassPermissions`` (``q`` holds ``/bin/rm`` under a hidden
name): a copy into a directory (``cp q/conftest.py tests/``: only ``tests/`` was read), a recursive copy
or an unpacked archive whose own names decide what lands (``cp -r payload/. .`` writing
``.git/hooks/pre-commit``, ``tar xf t.tar; pytest``), a runner outside review7's table (``make test``,
``./run_tests.sh``, ``coverage run -m pytest``), ``sqlite3`` writing a file its SQL names
(``writefile``, ``.output``), and pytest's ``.pytest.ini``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
INTO_DIRECTORY = [H + f for f in [
    "mkdir p; cp q p/conftest.py; cp p/conftest.py tests/; pytest", "cp p/conftest.py .; pytest",
    "cp p/conftest.py tests; python3 -m pytest", "mv p/package.json .; npm test",
    "ln -s p/conftest.py tests/; pytest", "install p/setup.py .; pip install .",
]]
TREE_NAMES = [H + f for f in [
    "cp -r payload/. .; git commit -m x", "cp -a payload/ sub; git -C sub commit -m x",
    "cp -r evil/ tests/; pytest", "cp --recursive evil tests; pytest", "tar xf t.tar; pytest",
    "unzip a.zip; npm test",
]]
RUNNERS = [H + f for f in [
    "cp q conftest.py; make test", "cp q conftest.py; make -C sub test", "cp q conftest.py; ./run_tests.sh",
    "cp q conftest.py; bash run_tests.sh", "cp q conftest.py; coverage run -m pytest",
    "cp q .pytest.ini; pytest",
]]
SQLITE = [H + f for f in [
    "sqlite3 db \"select writefile('.git/hooks/pre-commit', readfile('q'))\"; git commit -m x",
    "sqlite3 db \".output conftest.py\" \"select 1\"; pytest",
    "sqlite3 db \"select writefile('conftest.py', readfile('q'))\"; pytest",
]]
KEPT = ["cp a b; git status", "cp a.txt b.txt; npm test", "cp .env.example .env; git status",
        "cp README.md docs/; git add docs", "mv old.txt new.txt; git status", "cp -r src/ build/; ls build",
        "tar czf out.tgz src; git status", "cp a.txt dist/; make", "echo x > notes.md; make",
        "mkdir -p dist && cp index.html dist/ && npm run build", "tee out.log < in; make"]


async def test_a_copy_into_a_directory_writes_the_source_name_there(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, INTO_DIRECTORY, KEPT) == ([], [])
    assert analyze("cp q/conftest.py tests/").write_targets == ["tests/", "tests/conftest.py"]
    assert analyze("cp p/x .").write_targets == [".", "x"]
    assert analyze("cp -T a b").write_targets == ["b"]  # -T: b is the file itself


async def test_a_tree_or_archive_whose_own_names_decide_what_lands_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, TREE_NAMES, []) == ([], [])


async def test_a_project_runner_may_run_what_a_test_runner_finds(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, RUNNERS, []) == ([], [])


async def test_sqlite_writes_what_its_sql_names(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, SQLITE, []) == ([], [])
