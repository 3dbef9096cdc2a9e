"""Red team round 37 (review2): a git config naming a path of thousands of components stalled the host.

``os.path.realpath`` looks at every component of a path in turn, each time over the whole path so
far: quadratic. The readers of git config resolve each path a config names: a hostile repository's
``.git/config`` with ``core.hooksPath = /x/x/x…`` (512 KiB) made every Write or Edit judgement
(`hooks_dir_reason`, on the permission engine's and the file tools' path) take 17-19 s; an
``[include] path`` of that length 40 s once per version of the config. In a file the operator's
``~/.gitconfig`` includes (a dotfiles repository as the workspace), round 37's
`operator_template_dirs` took 29 s, `env_gitconfigs` 86 s, and an ``init.templateDir`` of that
length 13 s in every `linked_places`. Now a path of PATH_MAX characters or more names nothing (git
opens nothing there either), one of more than 128 components, or more than 256 hooks paths, makes
the walk incomplete (fail closed: the file tools ask), and the home reader resolves within a bound.
Each case runs in a child limited to 60 s; each must answer in under 1.5 s (the home's three
readers, which each parse the 512 KiB config once, in under 6 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_LONG = "/" + "x/" * (1 << 18)  # 512 KiB, 262,144 components
_DEEP = "/x" * 2_000  # 4,000 characters: under PATH_MAX, 2,000 components

_CHILD = textwrap.dedent(
    """
    import json, os, resource, sys, time
    def cpu():  # this process's and its reaped children's (git's): a loaded lane's waits count in neither
        return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))
    ws, home, what = sys.argv[1:4]
    os.environ["HOME"] = home
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_TEMPLATE_DIR"):
        os.environ.pop(name, None)
    from shellrt.supervisor._env_gitconfig import env_gitconfigs, operator_template_dirs
    from shellrt.supervisor._protect_home import _linked_places
    from shellrt.supervisor.protect import hooks_dir_reason
    start, start_cpu = time.monotonic(), cpu()
    reason = None
    if what == "repo":
        reason = hooks_dir_reason(os.path.join(ws, "src", "a.py"))
    else:
        operator_template_dirs()
        env_gitconfigs()
        _linked_places()
    print(json.dumps({"seconds": time.monotonic() - start, "cpu": cpu() - start_cpu, "reason": reason}))
    """
)

_CASES = {
    # A hostile repository's own config (no premise about the home).
    "hooks path": ("repo", f"[core]\n\thooksPath = {_LONG}\n"),
    "include path": ("repo", f"[include]\n\tpath = {_LONG}\n"),
    "deep hooks paths": ("repo", "[core]\n" + "".join(f"\thooksPath = {_DEEP}/h{i}\n" for i in range(300))),
    # A file the operator's ~/.gitconfig includes, in the workspace.
    "operator include": ("home", f"[include]\n\tpath = {_LONG}\n"),
    "template dir": ("home", f"[init]\n\ttemplateDir = {_LONG}\n"),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_a_config_naming_a_huge_path_is_read_quickly(tmp_path: Path, case: str) -> None:
    where, text = _CASES[case]
    ws = tmp_path / "ws"
    home = tmp_path / "home"
    (ws / "src").mkdir(parents=True)
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    if where == "repo":
        with open(ws / ".git" / "config", "a") as config:
            config.write(text)
    else:
        (ws / "extra.inc").write_text(text)
        (home / ".gitconfig").write_text(f"[include]\n\tpath = {ws}/extra.inc\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(ws), str(home), where],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: reading the git config ran past 60 s")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    # The home's three readers each parse the 512 KiB file once (~0.3 s each, linear: kept).
    # CPU, not wall (round 49: 0.004-0.04 s of CPU; a loaded lane's waits are not the reader's cost).
    assert result["cpu"] < (1.5 if where == "repo" else 6.0), f"{case}: {result['cpu']:.1f} s of CPU {result}"
    if case == "deep hooks paths":  # cannot tell cheaply which directory holds hooks: the tools ask
        assert result["reason"] and "hooks paths" in result["reason"], result


def test_an_ordinary_hooks_path_is_still_judged(tmp_path: Path) -> None:
    from shellrt.supervisor.protect import hooks_dir_reason

    ws = tmp_path / "ws"
    (ws / ".husky").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    with open(ws / ".git" / "config", "a") as config:
        config.write(f"[core]\n\thooksPath = .husky\n[include]\n\tpath = {_LONG}\n")
    assert hooks_dir_reason(ws / ".husky" / "pre-commit")
    assert hooks_dir_reason(ws / "src" / "a.py") is None
