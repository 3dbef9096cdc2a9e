"""A repository whose own ``.git/config`` runs a program (a clean filter) when git reads its
modified file: the classifier attacks' target, and the Bash sessions that try them in bubblewrap."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash

_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def filtered_repo(repo: Path, touches: str = "P", filtered: bool = True) -> None:
    """``repo`` with one committed then modified file ``f`` whose clean filter (``filter.x.clean``,
    when ``filtered``) touches ``touches`` (relative to the directory git runs the filter in)."""
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f").write_text("a\n")
    (repo / ".gitattributes").write_text("f filter=x\n")
    env = {**os.environ, **_GIT_ENV}
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "1"], cwd=repo, check=True, env=env)
    (repo / "f").write_text("b\n")
    if filtered:
        subprocess.run(["git", "config", "filter.x.clean", f"sh -c 'touch {touches} && cat'"], cwd=repo, check=True)


async def bash_in_order(ws: Path, session: Path, commands: list[str], mode: str = "default",
                        **runtime: object) -> list[str]:
    """The model-facing text of each command, run one after another in ONE bwrap session (the
    working directory carries over from one to the next)."""
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=session, tools=[Bash()],
                               mode=mode, **runtime) as rt:  # type: ignore[arg-type]
        texts = []
        for i, command in enumerate(commands):
            [envelope] = await rt.run_envelopes([ToolUseBlock(id=f"c{i}", name="Bash", input={"command": command})])
            texts.append(str(envelope.model.content))
    return texts
