"""Red team round 26, docker: a command's working directory swapped for a symbolic link.

The host judges a session's cwd before each command (`CwdTracker.start_dir`: physical, inside the
roots; in the container's ``/tmp`` it has no view at all) and the permission decision and
read-only judgement are made for that path. The executor's runner then entered it with ``cd --``,
which follows whatever is there by then: a link planted in place of ``/tmp/d`` (the host cannot
look there) or swapped with ``d`` in the workspace in a loop by a background task
(``renameat2(RENAME_EXCHANGE)``) made the command start in ``/etc``. Now the runner compares the
physical directory it entered (``cd -P .``: getcwd) with the path sent and refuses a start where
they differ (``cwd-link``): the command starts exactly at the path judged, or is not run, and a
session's tracked cwd goes back to the workspace root. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.errors import SandboxExecError
from shellrt.supervisor import Supervisor, WorkingDirectoryError
from tests._docker_support import read_to_end, run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Swaps ``d`` (a directory) and ``l`` (a symlink to /etc) in the cwd as fast as it can, forever
#: (renameat2 is system call 316 on x86_64; perl is in the test image, python is not).
_SWAPPER = (
    'perl -e \'my ($d, $l) = ("d", "l"); symlink "/etc", $l; open(F, ">started"); close F; '
    "while (1) { syscall(316, -100, $d, -100, $l, 2) }'"
)
#: "in-d" when started in d (even if renamed since), else where it started.
_PROBE = "test -e here-d && echo in-d || pwd -P"
_TRIES = 60


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt26cwd"):
        yield b


async def _pwd(backend: DockerBackend, cwd: str, user: str | None = None) -> str:
    request = ExecRequest(argv=("pwd", "-P"), cwd=cwd, env={"PATH": "/usr/bin:/bin"}, user=user)
    proc = await backend.exec(request)
    out = await read_to_end(proc.stdout)
    await proc.wait()
    return out.decode(errors="replace").strip()


@pytest.mark.parametrize("user", [None, "root"])
async def test_a_link_on_the_way_to_the_cwd_is_not_followed(backend: DockerBackend, user: str | None) -> None:
    with anyio.fail_after(60):
        rc, out = await run_sh(
            backend,
            "rm -rf /tmp/l /workspace/l /workspace/u; ln -s /etc /tmp/l && ln -s /etc /workspace/l && "
            "ln -s /usr /workspace/u && echo ok",
        )
        assert out.strip() == "ok", out
        for cwd in ("/tmp/l", "/workspace/l", "/workspace/u/bin", "/workspace/l/", "/workspace/./l"):
            try:
                where = await _pwd(backend, cwd, user)
            except SandboxExecError as exc:
                assert "symbolic link" in str(exc) and "Nothing was run" in str(exc), exc
                continue
            pytest.fail(f"cwd {cwd} started in {where}")  # before: /etc, /usr/bin
        # Physical paths, normalized or not, still start there.
        assert await _pwd(backend, "/workspace/", user) == "/workspace"
        assert await _pwd(backend, "/tmp/./", user) == "/tmp"


async def test_a_session_cwd_in_tmp_replaced_by_a_link_goes_back_to_the_root(
    backend: DockerBackend, tmp_path: Path
) -> None:
    """The host has no view of the container's /tmp: a link planted in place of the session's cwd
    there was entered at every later call (before: ``/etc``, 1 of 1)."""
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    try:
        with anyio.fail_after(90):
            first = await sup.run("rm -rf /tmp/d && mkdir /tmp/d && cd /tmp/d && pwd", timeout_s=30)
            assert first.preview.strip() == "/tmp/d" and sup.cwd == "/tmp/d", first
            # Run in /tmp/d, it stays the session's cwd (no cd): replaced by a link to /etc.
            plant = await sup.run("rmdir /tmp/d && ln -s /etc /tmp/d", timeout_s=30)
            assert plant.exit_code == 0 and sup.cwd == "/tmp/d", (plant, sup.cwd)
            outcome = await _outcome(sup, "pwd -P")
            assert outcome.startswith("refused") and "back at the workspace root" in outcome, outcome
            assert sup.cwd == "/workspace", sup.cwd
            after = await sup.run("pwd -P", timeout_s=30)
            assert after.preview.strip() == "/workspace", after
    finally:
        await sup.close()


async def test_a_background_swap_never_starts_a_command_elsewhere(
    backend: DockerBackend, tmp_path: Path
) -> None:
    """A background task swaps the session's cwd ``d`` and a link to /etc in a loop."""
    ws = backend.to_host_path(backend.workspace)  # copy mode: the container's private copy
    assert ws is not None
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    printed: list[str] = []
    try:
        with anyio.fail_after(480):  # 60 docker execs at load 40 took over 240 s
            (ws / "d").mkdir()
            (ws / "d" / "here-d").touch()
            await sup.run(f"cd {backend.workspace}", timeout_s=30)
            await sup.start_background(_SWAPPER, description="swapper")
            with anyio.fail_after(120):  # a background task gets little CPU at load
                while not (ws / "started").exists():
                    await anyio.sleep(0.01)
            for _ in range(_TRIES):  # until a start met the link (refused) and one ran in d
                printed.append(await _outcome(sup, _PROBE, session_cwd="/workspace/d"))
                if _elsewhere(printed) or (
                    "in-d" in printed and any(p.startswith("refused") for p in printed)
                ):
                    break
    finally:
        await sup.close()
    assert not _elsewhere(printed), printed  # before: /etc
    assert "in-d" in printed, printed
    assert any(p.startswith("refused") or p == "/workspace" for p in printed), printed


async def _outcome(sup: Supervisor, command: str, *, session_cwd: str | None = None) -> str:
    """What the command printed, or ``refused: ...`` when it was not run."""
    try:
        result = await sup.run(command, timeout_s=30, session_cwd=session_cwd)
    except (SandboxExecError, WorkingDirectoryError) as exc:
        assert "symbolic link" in str(exc), exc
        return f"refused: {exc}"
    return result.preview.strip() if result.exit_code == 0 else f"refused: {result.preview}"


def _elsewhere(printed: list[str]) -> list[str]:
    """Starts neither in d, nor refused, nor at the workspace root (the host's own fallback)."""
    return [p for p in printed if not p.startswith("refused") and p not in ("in-d", "/workspace")]
