"""Red team round 4: a git submodule's own configuration is repository configuration too.

Before a git command is judged read-only, the Bash tool reads the repository's
effective configuration for code-running keys, and to judge ``git diff`` under
read rules it lists the changed files with ``git status`` — on the host, as the
caller (root in CI), outside every sandbox. ``git status`` (and ``git diff``)
of a superproject with a modified submodule runs ``git status`` *inside the
submodule*, which obeys the submodule's own ``.git/modules/<name>/config`` and
``.gitattributes``: a ``filter.<x>.clean`` there ran on the host during the
permission check, before anything was allowed, and the superproject's
configuration (all that was read) showed nothing.
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from pathlib import Path
from typing import Literal

import anyio
import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash
from tests._git import git_in
from tests._governance import envelope_text as _text
from tests.conftest import require

_ids = itertools.count()


def _repo_with_submodule(tmp_path: Path, *, depth: int = 1) -> tuple[Path, Path]:
    """A hostile repository: a submodule (``depth`` levels down) whose own config defines a
    clean filter its attributes select, with a modified tracked file. Returns (ws, innermost)."""
    origin = tmp_path / "origin0"
    origin.mkdir()
    git_in(origin, "init", "-q")
    (origin / "f.txt").write_text("x\n")
    (origin / ".gitattributes").write_text("* filter=x\n")
    git_in(origin, "add", "-A")
    git_in(origin, "commit", "-qm", "leaf")
    for level in range(1, depth):
        outer = tmp_path / f"origin{level}"
        outer.mkdir()
        git_in(outer, "init", "-q")
        (outer / "o.txt").write_text("o\n")
        git_in(outer, "add", "-A")
        git_in(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin), "inner")
        git_in(outer, "commit", "-qm", "outer")
        origin = outer
    ws = tmp_path / "ws"
    ws.mkdir()
    git_in(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    git_in(ws, "add", "a.txt")
    git_in(ws, "commit", "-qm", "init")
    git_in(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin), "sub")
    git_in(ws, "commit", "-qm", "sub")
    if depth > 1:
        git_in(ws, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
    inner = ws / "sub"
    for _ in range(1, depth):
        inner = inner / "inner"
    return ws, inner


def _plant_filter(inner: Path, mark: Path) -> None:
    git_in(inner, "config", "filter.x.clean", f"touch {mark}; cat")
    (inner / "f.txt").write_text("changed\n")


async def _bash(ws: Path, command: str, sandbox: Literal["local", "bwrap"]) -> ResultEnvelope:
    async with shellrt.Runtime(
        workspace=ws,
        sandbox=sandbox,
        session_dir=ws.parent / f".s{next(_ids)}",
        tools=[Bash()],
        settings_files=(),
        mode="dontAsk",
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id=f"rt4git{next(_ids)}", name="Bash", input={"command": command})]
        )
        return envelope


@pytest.mark.parametrize("command", ["git diff", "git status", "git diff --stat"])
def test_a_submodules_filter_never_runs_on_the_host_during_the_check(tmp_path: Path, command: str) -> None:
    """bwrap: the command itself runs sandboxed (its filter cannot write the host marker); a
    marker means the host ran it."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, inner = _repo_with_submodule(tmp_path)
    mark = tmp_path / "PWNED-on-host"
    _plant_filter(inner, mark)
    envelope = anyio.run(_bash, ws, command, "bwrap")
    assert not mark.exists(), f"the submodule's clean filter ran on the host: {_text(envelope)}"


@pytest.mark.parametrize("depth", [1, 2])
def test_a_submodules_code_running_config_makes_git_ask(tmp_path: Path, depth: int) -> None:
    """local: governance is the only guard; a read-only git there must not run the submodule's
    filter unasked (dontAsk denies what would ask)."""
    ws, inner = _repo_with_submodule(tmp_path, depth=depth)
    mark = tmp_path / "PWNED"
    _plant_filter(inner, mark)
    envelope = anyio.run(_bash, ws, "git diff", "local")
    assert envelope.is_error and not mark.exists(), _text(envelope)
    assert "submodule" in _text(envelope), _text(envelope)


def test_git_with_a_clean_submodule_still_runs_unasked(tmp_path: Path) -> None:
    ws, inner = _repo_with_submodule(tmp_path)
    (inner / "f.txt").write_text("changed\n")  # dirty, but its config names no program
    envelope = anyio.run(_bash, ws, "git diff", "local")
    assert not envelope.is_error, _text(envelope)
    assert "Subproject commit" in _text(envelope)


def _hostile_attributes(tmp_path: Path, kind: str) -> Path:
    """A repository whose .gitattributes is a FIFO or a symlink to a device, judged while the
    operator's own git config defines a driver (git-lfs's filter, the common case): the check
    then reads every attributes file of the work tree, on the host."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git_in(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    git_in(ws, "add", "a.txt")
    git_in(ws, "commit", "-qm", "init")
    sub = ws / "deep"
    sub.mkdir()
    if kind == "fifo":
        os.mkfifo(sub / ".gitattributes")
    else:
        os.symlink("/dev/zero", sub / ".gitattributes")
    return ws


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_hostile_attributes_file_cannot_stall_or_exhaust_the_check(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\trequired = true\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    ws = _hostile_attributes(tmp_path, kind)
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)
    if kind == "dev-zero":
        # Reading /dev/zero whole would take all memory; fail fast instead of taking the machine.
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, limit[1]))
    out: list[ResultEnvelope] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(anyio.run(_bash, ws, "git status", "local"))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    resource.setrlimit(resource.RLIMIT_AS, limit)
    assert not thread.is_alive(), "the permission check hung on the repository's .gitattributes"
    if errors:
        raise errors[0]
    if kind == "fifo":
        # git opens a FIFO .gitattributes and applies what a writer feeds it (round 50, hostread2):
        # the check does not read it (no stall) and refuses, naming it, instead of judging it empty.
        assert out[0].is_error, _text(out[0])
        assert "cannot be inspected" in _text(out[0]) and ".gitattributes" in _text(out[0]), _text(out[0])
    else:
        assert not out[0].is_error, _text(out[0])


def test_a_jq_filter_file_that_is_a_fifo_cannot_stall_the_check(tmp_path: Path) -> None:
    """``jq -f FILE``: the check looks into the filter file for module directives, on the host."""
    require(shutil.which("jq") is not None, "jq is not installed")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "filter.jq")
    (ws / "a.json").write_text("{}")
    out: list[ResultEnvelope] = []

    async def call() -> None:
        async with shellrt.Runtime(
            workspace=ws,
            sandbox="local",
            session_dir=tmp_path / "s",
            tools=[Bash()],
            settings_files=(),
            mode="dontAsk",
        ) as rt:
            block = ToolUseBlock(
                id=f"rt4jq{next(_ids)}",
                name="Bash",
                input={"command": "jq -f filter.jq a.json", "timeout": 2000},
            )
            out.extend(await rt.run_envelopes([block]))

    thread = threading.Thread(target=lambda: anyio.run(call), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the permission check hung opening the repository's filter file"
    assert out, "no result"


FLIP = """
import os, time
good = open(".git/config").read()
bad = good + '[filter "x"]' + chr(10) + chr(9) + 'clean = touch {mark}; cat' + chr(10)
end = time.time() + 60
while time.time() < end:
    for text in (good, bad):
        with open(".git/c.tmp", "w") as f:
            f.write(text)
        os.replace(".git/c.tmp", ".git/config")
"""


def test_a_config_flipped_between_the_checks_never_runs_a_filter_on_the_host(tmp_path: Path) -> None:
    """A background task swaps ``.git/config`` between a clean one and one with a clean filter,
    as fast as it can. Judging ``git diff`` read the config (clean: no hazard), then listed
    the changed files with ``git status`` on the host, which read it again (filter) and ran
    the filter for the stat-dirty ``f.txt``: host code execution within a few calls."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    git_in(ws, "init", "-q")
    (ws / "f.txt").write_text("a\n")
    (ws / ".gitattributes").write_text("f.txt filter=x\n")
    git_in(ws, "add", "-A")
    git_in(ws, "commit", "-qm", "init")
    (ws / "f.txt").write_text("b\n")  # same size, another mtime: git must hash it (through the filter)
    os.utime(ws / "f.txt", (1893456000, 1893456000))
    mark = tmp_path / "PWNED-on-host"
    (ws / "attack.py").write_text(FLIP.format(mark=mark))

    async def main() -> list[str]:
        texts: list[str] = []
        async with shellrt.Runtime(
            workspace=ws,
            sandbox="bwrap",
            session_dir=tmp_path / "s",
            tools=[Bash()],
            settings_files=(),
            mode="dontAsk",
            allow=["Bash(python3 attack.py)"],
            deny=[f"Read({ws}/secret.txt)"],  # read rules: judging git diff lists the changed files
        ) as rt:
            start = ToolUseBlock(
                id=f"rt4flip{next(_ids)}",
                name="Bash",
                input={"command": "python3 attack.py", "run_in_background": True},
            )
            await rt.run_envelopes([start])
            for _ in range(40):
                block = ToolUseBlock(id=f"rt4flip{next(_ids)}", name="Bash", input={"command": "git diff"})
                [envelope] = await rt.run_envelopes([block])
                texts.append(_text(envelope))
                if mark.exists():
                    break
        return texts

    texts = anyio.run(main)
    assert not mark.exists(), f"a repository filter ran on the host after {len(texts)} calls"
