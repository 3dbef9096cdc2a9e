"""Red team, round 20 (classifier): every option of every read-only git subcommand, run in bubblewrap.

The git half of the option generator (`test_redteam_round20_analysis_optgen.py`): for each git
subcommand the models judge read-only, every option ``git SUB -h`` prints is put next to a marker
path (``git SUB OPT MK``, ``git SUB OPT=MK`` / ``-OMK``) or alone (``git SUB OPT``). The forms
``analyze()`` judges read-only run one after another in one Bash tool call inside bubblewrap, in a
repository with a modified file and a file whose stat data changed but whose content did not, with
the environment the Bash tool gives a read-only git command; after each, nothing in the workspace
(``.git`` included: a lock file changes its directory) may be newer than a stamp taken before it.
It found round 20's ``git diff`` index refresh (`test_redteam_round20_analysis_git_index.py`).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import shellrt
from shellrt.analysis import analyze
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

#: The read-only git subcommands of the models (a fixed list).
SUBCOMMANDS = ["blame", "cat-file", "check-attr", "check-ignore", "cherry", "count-objects", "describe", "diff",
               "diff-files", "diff-index", "diff-tree", "for-each-ref", "grep", "log", "ls-files", "ls-tree",
               "merge-base", "name-rev", "rev-list", "shortlog", "show", "show-ref", "status", "var", "version",
               "whatchanged"]
_OPTION = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]*|-[a-zA-Z0-9])")
#: Run every STRIDE-th read-only form (all are judged); the full run (stride 1) is in the docs.
STRIDE = 8
_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@functools.cache
def _forms() -> list[str]:
    out: list[str] = []
    for sub in SUBCOMMANDS:
        done = subprocess.run(["git", sub, "-h"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        for option in sorted(set(_OPTION.findall(done.stdout + done.stderr))):
            attached = f"{option}=MK" if option.startswith("--") else f"{option}MK"
            out += [f"git {sub} {option} MK", f"git {sub} {attached}", f"git {sub} {option}"]
    return out


def test_the_git_generator_reaches_both_verdicts() -> None:
    forms = _forms()
    read_only = [form for form in forms if analyze(form).read_only]
    assert len(read_only) > 500, len(read_only)
    for writer in ("git cat-file --filters MK", "git cat-file --textconv MK", "git grep -OMK",
                   "git grep --open-files-in-pager=MK", "git describe --dirty=MK"):
        assert writer in forms and writer not in read_only, writer


async def test_read_only_git_forms_change_nothing_in_bwrap(tmp_path: Path) -> None:
    require_bwrap()
    judged = [form for form in _forms() if analyze(form).read_only]
    # A stride of them, and every `git diff` form (it reads the work tree against the index).
    sample = [form for n, form in enumerate(judged) if n % STRIDE == 0 or form.startswith("git diff ")]
    envs = {tuple(sorted(analyze(form).env.items())) for form in sample}
    assert len(envs) == 1, "one read-only git environment"
    ws = tmp_path / "ws"
    repo = ws / "r"
    repo.mkdir(parents=True)
    env = {**os.environ, **_GIT_ENV}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name in ("f", "g"):
        (repo / name).write_text("a\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "1"], cwd=repo, check=True, env=env)
    (repo / "f").write_text("b\n")
    earlier = (repo / ".git" / "index").stat().st_mtime - 100
    os.utime(repo / "g", (earlier, earlier))  # stat data changed, content not
    (ws / "forms").mkdir()
    for n, form in enumerate(sample):
        (ws / "forms" / f"{n}.sh").write_text(form + "\n")
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in envs.pop())
    driver = (f"export {exports}; cd r; n=0; while [ -f ../forms/$n.sh ]; do : > ../stamp; "
              "(timeout 2 bash ../forms/$n.sh) </dev/null >/dev/null 2>&1; "
              "x=$(find . .. -maxdepth 3 -newer ../stamp ! -path . ! -path .. ! -path ../stamp 2>/dev/null); "
              "[ -n \"$x\" ] && echo \"$n\" $x >> ../changed; n=$((n+1)); done; echo ran $n")
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()],
                               mode="bypassPermissions") as rt:
        [done] = await rt.run_envelopes([ToolUseBlock(id="git", name="Bash", input={"command": driver})])
    assert f"ran {len(sample)}" in str(done.model.content), done.model.content
    changed = (ws / "changed").read_text().splitlines() if (ws / "changed").exists() else []
    assert not changed, [(sample[int(line.split()[0])], line) for line in changed]
