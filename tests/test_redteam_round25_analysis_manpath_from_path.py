"""Red team, round 25 (analysis): ``man NAME`` showed a page the workspace planted next to a ``PATH`` directory.

man-db builds its search path from ``PATH`` when ``MANPATH`` is unset: for every ``PATH`` entry
``D`` it searches ``D/../share/man`` and ``D/../man`` (this machine's ``manpath`` lists
``/root/.pyenv/man`` that way). The tool's ``PATH`` is the host's, so a virtualenv or project
``bin`` inside the workspace (``.venv/bin``, ``node_modules/.bin``, ``bin``) made the repository's
``.venv/share/man/man1/*.1`` the first page of that name. ``man ls`` is read-only and runs
unasked; a planted ``ls.1`` whose body is ``.so /any/file`` printed that file, a read no word of
the command names (round 15 refused ``man -M DIR`` and ``man ./page`` for exactly this ``.so``).
The analysis now gives ``man`` a fixed system ``MANPATH`` (``PROGRAM_ENV``), in bash and
PowerShell. Real man-db, real files; the environment is the one ``analyze()`` returns.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests.conftest import require

#: What main gave ``man`` before round 25 (round 17's environment).
_OLD_ENV = {"MANOPT": "-C /dev/null", "MANPAGER": "cat", "PAGER": "cat"}
_SECRET = "TOPSECRET-OUTSIDE-THE-PAGE"


def _man() -> str:
    found = shutil.which("man")
    require(found is not None, "man (man-db) is not installed")
    return str(found)


def _plant(tmp_path: Path, bin_dir: str, man_dir: str, name: str) -> Path:
    """A workspace with ``bin_dir`` (a PATH entry) and a page ``name.1`` that ``.so``s a file outside it."""
    ws = tmp_path / "ws"
    (ws / bin_dir).mkdir(parents=True)
    pages = ws / man_dir / "man1"
    pages.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(_SECRET + "\n")
    (pages / f"{name}.1").write_text(f".TH X 1\n.SH NAME\n{name} \\- planted\n.SH DESCRIPTION\n.so {outside}/secret\n")
    (tmp_path / "home").mkdir()
    return ws


def _run(tmp_path: Path, ws: Path, bin_dir: str, name: str, extra: dict[str, str]) -> str:
    env = {"PATH": f"{ws / bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LANG": "C", **extra}
    done = subprocess.run([_man(), name], env=env, cwd=ws, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=30)
    return done.stdout + done.stderr


#: (PATH entry, manual directory man-db derives from it)
_LAYOUTS = [(".venv/bin", ".venv/share/man"), ("bin", "man")]


@pytest.mark.parametrize(("bin_dir", "man_dir"), _LAYOUTS)
def test_premise_a_page_next_to_a_path_entry_prints_any_file(tmp_path: Path, bin_dir: str, man_dir: str) -> None:
    ws = _plant(tmp_path, bin_dir, man_dir, "zzprobe")
    assert _SECRET in _run(tmp_path, ws, bin_dir, "zzprobe", _OLD_ENV)


# bash only: in PowerShell ``man`` is also Windows' ``help`` function, never read-only (round 56 pwsh2).
@pytest.mark.parametrize("shell", ["bash"])
@pytest.mark.parametrize(("bin_dir", "man_dir"), _LAYOUTS)
def test_read_only_man_searches_only_the_system_manual(tmp_path: Path, bin_dir: str, man_dir: str,
                                                        shell: str) -> None:
    result = analyze("man zzprobe", shell=shell)  # type: ignore[arg-type]
    assert result.read_only, result.reasons
    ws = _plant(tmp_path, bin_dir, man_dir, "zzprobe")
    assert _SECRET not in _run(tmp_path, ws, bin_dir, "zzprobe", dict(result.env))


def test_a_planted_ls_page_does_not_shadow_the_system_one(tmp_path: Path) -> None:
    result = analyze("man ls")
    ws = _plant(tmp_path, ".venv/bin", ".venv/share/man", "ls")
    out = _run(tmp_path, ws, ".venv/bin", "ls", dict(result.env))
    assert _SECRET not in out and "planted" not in out
    assert "LS(1)" in out  # the system page is still shown (the cost side)


def test_wrapped_man_gets_it_too() -> None:
    assert analyze("timeout 5 man ls").env.get("MANPATH") == analyze("man ls").env.get("MANPATH")
    assert "/usr/share/man" in analyze("man ls").env.get("MANPATH", "").split(":")


#: ``man -m SYSTEM`` appends SYSTEM to every manual directory: ``..`` steps reach any tree.
SYSTEMS = ["man -m {rel} zzprobe", "man -m{rel} zzprobe", "man -am {rel} zzprobe", "timeout 5 man -m {rel} zzprobe"]


def _relative_to_root(path: Path) -> str:
    return "../../../../../.." + str(path)  # from /usr/share/man (and every other system tree) to /


def test_premise_man_m_reads_a_tree_of_the_commands_choosing(tmp_path: Path) -> None:
    ws = _plant(tmp_path, "bin", "pages", "zzprobe")
    env = dict(analyze("man zzprobe").env)  # round 25's environment: the fixed MANPATH does not stop -m
    done = subprocess.run([_man(), "-m", _relative_to_root(ws / "pages"), "zzprobe"], cwd=ws, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LANG": "C", **env},
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert _SECRET in done.stdout


@pytest.mark.parametrize("shell", ["bash", "powershell"])
def test_man_m_is_not_read_only(tmp_path: Path, shell: str) -> None:
    rel = _relative_to_root(tmp_path / "ws" / "pages")
    judged = [c for c in SYSTEMS if analyze(c.format(rel=rel), shell=shell).read_only]  # type: ignore[arg-type]
    assert judged == [], judged
    # read-only in bash; in PowerShell ``man`` is also Windows' ``help`` function, never (round 56 pwsh2)
    assert analyze("man -a ls", shell=shell).read_only == (shell == "bash")  # type: ignore[arg-type]
