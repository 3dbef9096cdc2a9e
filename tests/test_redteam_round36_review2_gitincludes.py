"""Red team round 36 (review2): a git config that includes very many files.

The include walk (`config_hooks_and_includes`) follows ``include.path``/``includeIf.*.path`` as git
does. It had git's depth bound (ten) but no bound on how many files one config names, and it kept
them in a list it searched for each new one (quadratic). A hostile repository's ``.git/config``
(a tarball, a copied checkout) with ~100 000 ``path = x<i>`` lines (1.5 MB of the 64 MB a config
may be) made the permission check of the first Write in it (`hooks_dir_reason`) take minutes;
written by a command into a file the operator's ``~/.gitconfig`` includes (a dotfiles workspace,
round 36 trust), it did the same to every later session's start (`env_gitconfigs`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_MANY = 100_000


def _many_includes(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[include]\n" + "".join(f"\tpath = x{i}\n" for i in range(_MANY)))


def _run(code: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, **env, "PYTHONPATH": root}
    try:
        return subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the include walk of {_MANY} includes took over {timeout} s") from None


def test_a_repository_config_with_very_many_includes_is_judged_quickly_and_closed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _many_includes(repo / ".git" / "config")
    code = (
        "import sys\n"
        "from shellrt.supervisor.protect import hooks_dir_reason\n"
        f"print(hooks_dir_reason({str(repo / 'src' / 'a.py')!r}))\n"
    )
    done = _run(code, {}, timeout=20)
    assert done.returncode == 0, done.stderr
    # Fail closed: what such a config names past the bound is unknown, so a write there is not plain.
    assert "includes more than" in done.stdout, done.stdout


def test_an_included_operator_file_with_very_many_includes_does_not_stall_a_session_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    inc = tmp_path / "work" / "git" / "extra.inc"  # the dotfiles workspace a command writes
    (home / ".gitconfig").write_text(f"[include]\n\tpath = {inc}\n")
    _many_includes(inc)
    code = (
        "from shellrt.supervisor._env_gitconfig import env_gitconfigs\n"
        f"found = env_gitconfigs()\nprint({str(inc)!r} in found, len(found) < 5000)\n"
    )
    done = _run(code, {"HOME": str(home), "XDG_CONFIG_HOME": ""}, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"], done.stdout
