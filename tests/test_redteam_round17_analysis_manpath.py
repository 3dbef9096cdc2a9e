"""Red team, round 17 (classifier): ``man`` obeyed a planted ``~/.manpath``.

man-db reads the user's ``~/.manpath`` on every run, and its ``DEFINE`` lines name the programs
man runs to show a page (``pager``, ``tbl``, ``troff``, ``nroff``, ``col``, ``cat``). ``man ls`` is
read-only and runs unasked, with ``MANPAGER``/``PAGER`` set to ``cat`` and ``MANOPT`` emptied
(``PROGRAM_ENV``), but nothing stopped the file: a command that could write HOME once (the host's
HOME on the local backend; ``/tmp``, the sandbox user's HOME, in a bwrap session) left a
``DEFINE tbl <program>`` there, and every later ``man`` ran that program. The analysis now gives
``MANOPT=-C /dev/null`` (man-db's own option: another user configuration file), in bash and
PowerShell (pwsh on Linux runs the program ``man`` too), and ``.manpath`` is a protected home file
(reverted after a command, as ``.vimrc`` is: the user's own ``man`` on the host obeys it).
Real man-db, real files; the environment is the one ``analyze()`` returns.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.supervisor._protect_home import HOME_FILES

_PAGE = '.TH PROBE 1\n.SH NAME\nprobe \\- a page\n.SH DESCRIPTION\nplain text\n'


def _man() -> str:
    found = shutil.which("man")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("man (man-db) is needed for this test in CI")
        pytest.skip("man is not installed")
    return found


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    pages = tmp_path / "man" / "man1"
    pages.mkdir(parents=True)
    home.mkdir()
    (pages / "probe.1").write_text(_PAGE)
    marker = tmp_path / "ran"
    defines = "".join(f"DEFINE {key} touch {marker}\n" for key in ("pager", "tbl", "col", "cat", "troff", "nroff"))
    (home / ".manpath").write_text(defines)
    return home, marker


def _run(tmp_path: Path, home: Path, extra: dict[str, str]) -> str:
    # The probe's page is found through MANPATH, which the harness sets after the analysis's
    # environment (round 25 gives `man` a fixed system MANPATH; this test is about ~/.manpath).
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C", **extra,
           "MANPATH": str(tmp_path / "man")}
    done = subprocess.run([_man(), "probe"], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=30)
    return done.stdout


def test_premise_a_planted_manpath_runs_its_programs(tmp_path: Path) -> None:
    home, marker = _planted(tmp_path)
    _run(tmp_path, home, {"MANOPT": "", "MANPAGER": "cat", "PAGER": "cat"})  # main's environment
    assert marker.exists()


# bash only: in PowerShell ``man`` is also Windows' ``help`` function, never read-only (round 56 pwsh2).
@pytest.mark.parametrize("shell", ["bash"])
def test_read_only_man_gets_an_environment_that_ignores_manpath(tmp_path: Path, shell: str) -> None:
    result = analyze("man probe", shell=shell)  # type: ignore[arg-type]
    assert result.read_only, result.reasons
    home, marker = _planted(tmp_path)
    out = _run(tmp_path, home, dict(result.env))
    assert not marker.exists(), "man ran a program named by ~/.manpath"
    assert "plain text" in out  # the page is still shown


def test_wrapped_man_gets_it_too() -> None:
    assert analyze("timeout 5 man ls").env.get("MANOPT") == "-C /dev/null"


def test_manpath_is_a_protected_home_file() -> None:
    assert ".manpath" in HOME_FILES
