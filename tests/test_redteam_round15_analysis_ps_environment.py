"""Red team, round 15 (classifier): ``ps e`` printed other processes' environment unasked.

procps ``ps`` was free-form read-only (any arguments). Its BSD modifier ``e`` (``ps axe``,
``ps e``, ``ps -p 1 e``) and the format keyword ``environ`` (``ps -o pid,environ``) print the
environment of every process the caller may inspect: API keys and tokens of the agent's own
process, of other sessions and programs of the user. No word names ``/proc/PID/environ``, so no
read path stood for it: in default mode ``ps axe`` ran without asking and printed a variable a
sibling process held. ``ps`` is now checked word by word: the ``e`` modifier (outside an option's
value) and ``environ`` in a format make it not read-only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._governance import envelope_text, isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_SECRET = "r15-ps-environment-canary"


@pytest.mark.parametrize(
    "command",
    ["ps e", "ps axe", "ps aexww", "ps -p 1 e", "ps --pid 1 e", "ps -o pid,environ", "ps -oenviron",
     "ps -eo pid,ENVIRON", "ps o pid,environ", "ps -A e", "ps ae -o pid"],
)
def test_showing_the_environment_is_not_read_only(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)


@pytest.mark.parametrize(
    "command",
    ["ps", "ps aux", "ps -e", "ps -ef", "ps -eo pid,etime,user", "ps axo pid,etime", "ps -p 1 -o pid,etime",
     "ps -u user", "ps --sort=-etime -e", "ps -C sleep", "ps -ely", "ps axopid,etime"],
)
def test_other_listings_stay_read_only(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only, (command, analysis.reasons)


@pytest.fixture
def sibling() -> Iterator[int]:
    """A process of this user holding a secret in its environment (the agent's own, in real use)."""
    env = {"R15_TOKEN": _SECRET, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], env=env, stdin=subprocess.PIPE)
    try:
        yield proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def test_ps_prints_the_environment(sibling: int) -> None:
    ps = shutil.which("ps")
    if ps is None:
        pytest.skip("procps is not installed")
    out = subprocess.run([ps, "-ww", "-p", str(sibling), "e"], capture_output=True, text=True, timeout=30)
    assert _SECRET in out.stdout, out


async def test_the_bash_tool_does_not_print_it_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sibling: int
) -> None:
    if shutil.which("ps") is None:
        pytest.skip("procps is not installed")
    ws = isolated_workspace(tmp_path, monkeypatch)
    commands = [f"ps -ww -p {sibling} e", f"ps -ww -p {sibling} -o environ"]
    envelopes = await run_bash(ws, commands, mode="default", id_prefix="r15ps")
    for command, envelope in zip(commands, envelopes, strict=True):
        text = envelope_text(envelope)
        assert envelope.is_error and _SECRET not in text, (command, text)
