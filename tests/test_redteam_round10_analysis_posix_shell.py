"""Red team, round 10 (command analysis): a command run by a POSIX sh that is not bash.

On a docker image without bash (busybox, alpine) every Bash command runs under ``/bin/sh``
(`SandboxBackend.shell_path`), and the Bash tool analysed it as bash. busybox ash and dash have
no ``[[``: they run ``[[`` as a command, so ``>`` inside it is a redirection. ``[[ x > victim.txt
]]`` was a read-only string comparison to the analysis (allowed unasked in ``default`` and
``plan`` mode) and truncated ``victim.txt`` in the container. The Bash tool now analyses with the
backend's shell: where it is not bash, the analysis' ``sh`` dialect makes every construct only
bash has (``[[``, ``((``, ``&>``, ``>&file``, ``|&``, ``;&``, ``<<<``, ``$'…'``, ``$"…"``, ``$[…]``,
brace expansion, arrays, process substitution, ``function``, ``select``, ``coproc``) unread.

The differential test runs real busybox sh and dash (host binaries) on a seeded corpus built
from POSIX and bash-only forms and checks that every command the ``sh`` analysis judges read-only
creates or changes no file and runs no program outside the read-only set.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

import shellrt
from sandbox import DockerConfig
from shellrt.analysis import analyze
from tests._docker_support import BUSYBOX, DEBIAN, require_docker
from tests.conftest import require

pytestmark = pytest.mark.anyio


_BASH_ONLY = [
    "[[ x > victim.txt ]]",
    "[[ -n a && sh ]]",
    "[[ a || sh ]]",
    "[[ a < victim.txt ]] && ls",
    "ls &>/dev/null",
    "ls &>>/dev/null",
    "ls >& victim.txt",
    "ls |& cat",
    "cat <<< x",
    "case x in x) ls;& y) ls;; esac",
    "echo $'a'",
    'echo $"a"',
    "echo $[1+1]",
    "echo {a,b}",
    "cat <(ls)",
    "a=(1 2)",
    "a[1]=x",
    "(( x > 5 ))",
    "for ((i=0;i<1;i++)); do ls; done",
    "function f { ls; }",
    "select x in a; do ls; done",
    "coproc ls",
]


@pytest.mark.parametrize("command", _BASH_ONLY)
def test_bash_only_syntax_is_unread_for_a_posix_sh(command: str) -> None:
    analysis = analyze(command, "sh")
    assert not analysis.read_only and not analysis.parse_ok, (command, analysis.reasons)
    assert command in [part.text for part in analysis.subcommands], analysis.subcommands


def test_posix_commands_stay_read_only_for_a_posix_sh() -> None:
    for command in (
        "ls",
        "ls 2>&1",
        "ls >&2",
        "[ -f x ] && ls",
        "git status",
        "grep -r x .",
        "echo $((1+2))",
    ):
        analysis = analyze(command, "sh")
        assert analysis.read_only and analysis.parse_ok, (command, analysis.reasons)
    assert analyze("[[ x > victim.txt ]]").read_only  # to bash: a comparison, which it stays


# --- differential: real busybox sh and dash --------------------------------------------------

_PIECES = [
    "ls", "echo a", "cat in.txt", "[ -f in.txt ]", "[[ x > out1 ]]", "[[ a || sh ]]", "[[ a && sh ]]",
    "[[ -f in.txt ]]", "ls &>/dev/null", "ls &>out2", "ls >& out3", "ls 2>&1", "ls >&2", "ls |& cat",
    "cat <<< x", "echo $'a'", 'echo $"a"', "echo $[1+1]", "echo {a,b}", "cat <(ls)", "(( x > out4 ))",
    "((ls) )", "time ls", "true", "! ls", "{ ls; }", "(ls)", "case a in a) ls;; esac",
    "case a in a) ls;& b) sh;; esac", "echo $((1+2))", "x=1", "a=(sh)", "f() { ls; }",
]  # fmt: skip
_JOINERS = [" ; ", " && ", " || ", " | ", "\n"]
_READ_ONLY_PROGRAMS = {"ls", "cat", "echo", "[", "test", "true", "time"}


def _shells() -> list[list[str]]:
    found = []
    if shutil.which("busybox"):
        found.append([shutil.which("busybox") or "busybox", "sh"])
    if shutil.which("dash"):
        found.append([shutil.which("dash") or "dash"])
    return found


def _corpus(n: int) -> list[str]:
    rng = random.Random(1010)
    out = list(_PIECES)
    while len(out) < n:
        k = rng.randint(2, 3)
        out.append(rng.choice(_JOINERS).join(rng.choice(_PIECES) for _ in range(k)))
    return out


def _trap_bin(where: Path) -> Path:
    """A PATH of recorders: any program the shell runs that is not read-only leaves a mark."""
    bin_dir = where / "bin"
    bin_dir.mkdir()
    for name in ("sh", "]]", "touch", "x", "rm"):
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\necho ran >> {where}/ran.{name.strip(']') or 'brackets'}\n")
        script.chmod(0o755)
    return bin_dir


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and "bin" not in p.relative_to(root).parts
    }


def test_what_the_sh_analysis_calls_read_only_writes_nothing_under_busybox_and_dash(tmp_path: Path) -> None:
    shells = _shells()
    require(bool(shells), "busybox or dash is not installed (apt-get install busybox dash)")
    corpus = _corpus(400)
    read_only = [c for c in corpus if analyze(c, "sh").read_only]
    unread = [c for c in corpus if not analyze(c, "sh").read_only and analyze(c).read_only]
    assert read_only and unread, "the corpus must hold both kinds"
    work = tmp_path / "w"
    work.mkdir()
    bin_dir = _trap_bin(tmp_path)
    (work / "in.txt").write_text("data\n")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "LC_ALL": "C"}
    wrote: list[tuple[str, str]] = []
    for shell in shells:
        for command in read_only:
            before = _snapshot(tmp_path)
            subprocess.run(
                [*shell, "-c", command],
                cwd=work,
                env=env,
                capture_output=True,
                timeout=10,
                check=False,
            )
            after = _snapshot(tmp_path)
            if after != before:
                wrote.append((" ".join(shell), command))
                for name in set(after) - set(before):
                    (tmp_path / name).unlink()
    assert not wrote, wrote[:10]
    # The unread ones include commands that do write there (the class is real, not hypothetical).
    writes_somewhere = 0
    for command in unread:
        before = _snapshot(tmp_path)
        subprocess.run(
            [*shells[0], "-c", command], cwd=work, env=env, capture_output=True, timeout=10, check=False
        )
        after = _snapshot(tmp_path)
        if after != before:
            writes_somewhere += 1
            for name in set(after) - set(before):
                (tmp_path / name).unlink()
    assert writes_somewhere > 0


# --- end to end: a busybox image ----------------------------------------------------------------


def _text(user: dict[str, object]) -> str:
    content = user["content"][0]["content"]  # type: ignore[index]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_a_double_bracket_writes_nothing_unasked_on_a_busybox_image(tmp_path: Path, mode: str) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "victim.txt").write_text("precious\n")
    async with shellrt.Runtime(
        workspace=ws,
        sandbox=DockerConfig(image=BUSYBOX, workspace_mode="bind"),
        mode=mode,
        session_dir=tmp_path / "session",
    ) as rt:
        user = await rt.run(
            {"type": "tool_use", "id": "r10p", "name": "Bash", "input": {"command": "[[ x > victim.txt ]]"}}
        )
        assert user["content"][0].get("is_error"), _text(user)
    assert (ws / "victim.txt").read_text() == "precious\n"


async def test_a_double_bracket_stays_read_only_where_bash_runs_it(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "victim.txt").write_text("precious\n")
    async with shellrt.Runtime(
        workspace=ws, sandbox=DockerConfig(image=DEBIAN), mode="plan", session_dir=tmp_path / "session"
    ) as rt:
        user = await rt.run(
            {
                "type": "tool_use",
                "id": "r10q",
                "name": "Bash",
                "input": {"command": "[[ x > victim.txt ]] || echo no"},
            }
        )
        assert not user["content"][0].get("is_error"), _text(user)
        assert "no" in _text(user)
