"""Red team round 42 (files5): an ignore file that never ends took all of the host's memory.

ripgrep follows a symlinked ``.gitignore``, ``.ignore``, ``.rgignore`` or ``.git/info/exclude``
and reads it whole before it obeys it: ``ln -s /dev/zero .gitignore`` (one command, or a
repository that ships the link: git keeps symlinks) made every Glob and Grep of the tree grow a
ripgrep on the host (local) without bound, gigabytes a second, until the host ran out of memory
or the 60 s deadline -- the search failed, and the host's memory went with it (bwrap: ripgrep in
the sandbox, bounded only by the session's memory, none for a non-root caller). The walker never
read it (it opens ignore files without following a link, and reads regular files only). Now
ripgrep runs under a data bound (`_search.RG_DATA_BYTES`) and a ripgrep that ran out of it is
answered by the walker, as a FIFO ignore file is (round 41); git does not follow such links
either (2.32).

The host tests run the tools in a child held to 3 GiB of data, so the unfixed ripgrep fails
there rather than taking the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import shellrt
from sandbox.policy import ResourceLimits, SandboxPolicy
from shellrt.tools import _search
from tests import _nonroot
from tests._calls import one_call
from tests.conftest import require

_CHILD = """
import json, os, resource, sys, time
from pathlib import Path
import anyio
resource.setrlimit(resource.RLIMIT_DATA, (3 << 30, 3 << 30))
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests.test_tools_edit import make_ctx

async def go(tool, raw, ctx):
    inp = tool.parse_input(raw)
    assert (await tool.validate(inp, ctx)).ok
    try:
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))
    except Exception as exc:
        return f"error: {exc}"

answers = {}
for root in map(Path, sys.argv[1:]):
    ctx = make_ctx(root)
    for tool, raw in ((GlobTool(), {"pattern": "**/*.py"}), (GrepTool(), {"pattern": "needle"})):
        start = time.monotonic()
        answers[f"{root.name} {tool.name}"] = [anyio.run(go, tool, raw, ctx), time.monotonic() - start]
print(json.dumps(answers))
"""


#: Each a workspace of its own; one child searches them all, in turn (a child each before round 52's
#: suitetime2: four interpreter starts as root and four more in the non-root twin).
_LINKS = {
    "gitignore": ".gitignore",
    "ignore": "src/.ignore",
    "rgignore": ".rgignore",
    "exclude": ".git/info/exclude",
}


def test_an_endless_ignore_file_does_not_grow_the_host_search(tmp_path: Path) -> None:
    require(_search.ripgrep_binary() is not None, "ripgrep (the host search this attack grew)")
    roots = []
    for name, link in _LINKS.items():
        root = Path(os.path.realpath(tmp_path)) / name
        (root / "src").mkdir(parents=True)
        (root / ".git/info").mkdir(parents=True)  # ripgrep obeys .gitignore only in a repository
        (root / ".session").mkdir()
        (root / "src/a.py").write_text("needle = 1\n")
        os.symlink("/dev/zero", root / link)
        roots.append(str(root))
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *roots],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])},
        timeout=300 * len(roots),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(answers) == sorted(f"{name} {tool}" for name in _LINKS for tool in ("Glob", "Grep")), (
        answers
    )
    for name, (got, took) in answers.items():
        assert "src/a.py" in got and not got.startswith("error"), (name, got)
        assert took < 30, f"{name} took {took:.1f} s"


@pytest.mark.anyio
async def test_a_bwrap_command_cannot_grow_glob_or_grep_with_an_endless_ignore_file(tmp_path: Path) -> None:
    """ripgrep runs in the sandbox there; the session is held to 1 GiB so the unfixed one is
    killed by the session's bound, not the host's (a root caller; a non-root one has none)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(
        os.geteuid() == 0, "a session memory bound (root caller): the unfixed search is unbounded otherwise"
    )
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src/a.py").write_text("needle = 1\n")
    async with shellrt.Runtime(
        workspace=root,
        sandbox="bwrap",
        mode="acceptEdits",
        session_dir=tmp_path / "s",
        settings_files=(),
        allow=("Bash",),
        policy=SandboxPolicy(workspace=root, limits=ResourceLimits(memory_bytes=1 << 30)),
    ) as rt:
        made = await one_call(rt, "Bash", command="mkdir -p .git && ln -s /dev/zero .gitignore")
        assert not made["is_error"], made
        for name, raw in (("Grep", {"pattern": "needle"}), ("Glob", {"pattern": "**/*.py"})):
            start = time.monotonic()
            got = await one_call(rt, name, **raw)
            took = time.monotonic() - start
            assert "src/a.py" in str(got["content"]) and not got["is_error"], got
            assert took < 30, f"{name} took {took:.1f} s"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_an_endless_ignore_file_does_not_grow_the_host_search")
