"""Red team, round 45 (analysis6): a code reader the analysis models loads a module the same command wrote.

Round 42 asked for a named write beside a program no table describes, but code readers with a model
(ruby, perl, lua, php, java, tcl, julia, groovy, make, awk, sqlite3, vim, wish, expect, xonsh, osascript,
jshell, pwsh) were outside that rule and had no finder entry (round 42's Left): ``ruby test.rb`` ran a
written ``helper.rb`` it requires, ``java Main`` a ``Helper.class``, ``make`` an included ``x.mk``,
``sqlite3 db '.read x.sql'`` and ``vim -c 'so x.vim'`` the file their inline commands name, each past
``Bash(rm:*)`` in ``bypassPermissions``. ``q`` holds ``/bin/rm`` under a hidden name; the written module runs it.
Now each modelled reader has a finder entry, and one without (``fish``, ``nu``, ``.``) counts any file
written by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis.unread_code import CODE_READERS, reader_write
from shellrt.analysis.written_places import has_finder
from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
ATTACKS = [H + f for f in [
    "printf 'system(\"./q x\")' > helper.rb; ruby test.rb", "printf 'x' > lib/helper.rb; ruby -Ilib test.rb",
    "printf 'x' > test_helper.rb; ruby -Itest test/a_test.rb", "printf 'system(\"./q x\")' > helper.pm; perl test.pl",
    "printf 'x' > Helper.pm; perl -Ilib main.pl", "printf 'x' > Helper.pm; perl Makefile.PL",
    "printf 'os.execute(\"./q x\")' > helper.lua; lua main.lua", "printf 'x' > x.so; lua5.4 main.lua",
    "printf '<?php system(\"./q x\");' > helper.php; php index.php", "printf 'x' > vendor/autoload.php; php index.php",
    "printf 'x' > Helper.class; java Main", "printf 'x' > Helper.class; java -cp . Main", "printf 'x' > x.jar; java -jar app.jar",
    "printf 'x' > helper.tcl; tclsh main.tcl", "printf 'x' > x.tcl; wish main.tcl", "printf 'x' > x.exp; expect main.exp",
    "printf 'x' > helper.jl; julia main.jl", "printf 'x' > helper.groovy; groovy main.groovy",
    "printf 'x' > x.mk; make", "printf 'x' > local.mk; make test", "printf 'x' > config.mk; gmake",
    "printf 'x' > x.awk; awk -f main.awk f", "printf 'x' > x.awk; gawk -f main.awk f",
    "printf '.shell ./q x' > x.sql; sqlite3 db '.read x.sql'", "printf '.shell ./q x' > x.sql; sqlite3 -cmd '.read x.sql' db .q",
    "printf 'x' > x.ext.so; sqlite3 db '.load ./x.ext'", "printf ':!./q x' > x.vim; vim -c 'so x.vim'",
    "printf 'x' > x.vim; vim -S main.vim", "printf 'x' > x.xsh; xonsh main.xsh", "printf 'x' > x.scpt; osascript main.scpt",
    "printf 'x' > x.jsh; jshell main.jsh", "printf 'x' > x.psm1; pwsh -File main.ps1", "printf 'x' > x.ps1; pwsh main.ps1",
    "printf 'x' > lib.fish; fish main.fish",
]]
KEPT = [
    "echo x > out.txt; ruby t.rb", "echo x > notes.txt; perl t.pl", "echo x > out.log; make", "make > build.log",
    "sort f > out.txt; awk '{print}' out.txt", "echo x > out.txt; sed -n p out.txt", "echo x > a.txt; java -jar app.jar",
    "echo x > notes.txt; sqlite3 db .tables", "ruby t.rb > out.rb.txt",
]


async def test_a_modelled_reader_beside_a_written_module_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


def test_every_code_reader_has_a_finder_or_counts_any_named_write() -> None:
    """A reader added to the tables later is judged too: a table entry, or any named write counts."""
    others = [("printf x > out.dat", ["out.dat"])]
    blind = {"sed", "ed", "red", "ex", "busybox", "toybox"}
    for reader in sorted(CODE_READERS - blind):
        assert has_finder(reader) or reader_write(reader, others), reader
    assert reader_write("nu", others) and not reader_write("sed", others) and not reader_write("ruby", others)
