"""Helpers for the docker sandbox tests: availability, test images, container listing.

Docker tests skip locally when the daemon or the test images are missing, and
FAIL under CI=true (`tests.conftest.require`). Images come from
``scripts/build-test-images.sh``; no registry is ever contacted.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import DockerConfig, ExecRequest, SandboxPolicy, SandboxProcess
from sandbox.docker import DockerBackend
from tests.conftest import require

DEBIAN = "shellrt-test-debian"
BUSYBOX = "shellrt-test-busybox"
NOSH = "shellrt-test-nosh"
ALL_IMAGES = (DEBIAN, BUSYBOX, NOSH)


@functools.cache
def _docker_state() -> str | None:
    """None when docker and every test image are usable, else why not."""
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker CLI unusable: {exc}"
    if info.returncode != 0:
        return "Docker daemon not reachable (run scripts/start-dockerd.sh)"
    for image in ALL_IMAGES:
        probe = subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=20)
        if probe.returncode != 0:
            return f"test image {image} missing (run scripts/build-test-images.sh)"
    return None


def require_docker() -> None:
    """Skip (locally) or fail (CI=true) unless docker and the test images are there."""
    state = _docker_state()
    require(state is None, state or "")


def config(image: str = DEBIAN, **kw: object) -> DockerConfig:
    return DockerConfig(image=image, **kw)  # type: ignore[arg-type]


def policy(workspace: Path, **kw: object) -> SandboxPolicy:
    return SandboxPolicy(workspace=workspace, **kw)  # type: ignore[arg-type]


async def shared_backend(
    factory: pytest.TempPathFactory, name: str, image: str = DEBIAN, **policy_kw: object
) -> AsyncIterator[DockerBackend]:
    """One started backend (workspace ``factory.mktemp(name)``) for a module-scoped fixture to
    yield from: one container start per test module."""
    require_docker()
    async with DockerBackend(config(image), policy(factory.mktemp(name), **policy_kw)) as b:
        yield b


def reset_workspaces(tmp_path: Path) -> tuple[Path, Path]:
    """Two workspaces for a reset test: ``a`` (empty, before the reset) and ``b`` (after it,
    holding only ``mine.txt``)."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (second / "mine.txt").write_text("second\n")
    return first, second


def container_exists(container_id: str) -> bool:
    out = subprocess.run(["docker", "inspect", container_id], capture_output=True, timeout=30)
    return out.returncode == 0


def owned_containers(pid: int, *, running: bool = False) -> list[str]:
    """Ids of the containers process ``pid`` made (``running``: only those running).

    ``running`` leaves out the never-started container a docker backend's first start creates
    and removes at once to read the daemon's default masks (round 45): it carries its owner's
    labels, so a test that waits for, pauses or kills "the owner's container" must not pick it
    (CI126 and CI127 each failed once on it).
    """
    status = ["--filter", "status=running"] if running else []
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=shellrt.owner-pid={pid}", *status],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.split()


def managed_container_ids(session_ids: set[str] | None = None, *, owner_pid: int | None = None) -> set[str]:
    """Ids of shellrt containers (optionally only those of the given sessions, or made by one process).

    ``owner_pid`` keeps a leak check to the containers the test's own process made, so
    another shellrt on the machine (a second test run, an operator) cannot fail it.
    """
    owner = [] if owner_pid is None else ["--filter", f"label=shellrt.owner-pid={owner_pid}"]
    out = subprocess.run(
        [
            "docker",
            "ps",
            "-aq",
            "--no-trunc",
            "--filter",
            "label=shellrt.managed=1",
            *owner,
            "--format",
            '{{.ID}} {{.Label "shellrt.session"}}',
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    ids: set[str] = set()
    for line in out.stdout.splitlines():
        cid, _, session = line.partition(" ")
        if session_ids is None or session in session_ids:
            ids.add(cid)
    return ids


async def read_to_end(stream: Any) -> bytes:
    """Every byte of a process's output stream until it ends."""
    out = b""
    try:
        while True:
            out += await stream.receive()
    except anyio.EndOfStream:
        pass
    return out


async def run_argv(backend: DockerBackend, *argv: str) -> str:
    """``argv`` run in ``backend``'s container (cwd ``/workspace``, ``PATH`` alone in its environment,
    stderr merged into stdout): its output, once it ended."""
    proc = await backend.exec(
        ExecRequest(argv=argv, cwd="/workspace", env={"PATH": "/usr/bin:/bin"}, merge_stderr=True)
    )
    out = await read_to_end(proc.stdout)
    await proc.wait()
    return out.decode()


async def start_sh(
    backend: DockerBackend, command: str, *, user: str | None = None, path: str = "/usr/bin:/bin"
) -> SandboxProcess:
    """``sh -c command`` started in ``backend``'s container (cwd ``/workspace``, stderr merged into
    stdout, ``PATH`` alone in its environment), left running."""
    return await backend.exec(
        ExecRequest(argv=("sh", "-c", command), cwd="/workspace", env={"PATH": path}, merge_stderr=True, user=user)
    )


async def run_sh(backend: DockerBackend, command: str, *, user: str | None = None) -> tuple[int | None, str]:
    """``sh -c command`` in ``backend``'s container (cwd ``/workspace``): exit code, stdout+stderr."""
    proc = await start_sh(backend, command, user=user, path="/usr/bin:/bin:/usr/sbin:/sbin")
    out = await read_to_end(proc.stdout)
    return (await proc.wait()).exit_code, out.decode(errors="replace")


async def run_beside(
    backend: DockerBackend, holder: str, command: str, *, user: str | None = None
) -> tuple[int | None, str, str]:
    """``command`` run while ``holder`` (started first, and ending by itself) runs beside it, both
    ``sh -c`` as ``user``: the command's exit code and output, then the holder's whole output."""
    proc = await start_sh(backend, holder, user=user)
    try:
        rc, said = await run_sh(backend, command, user=user)
    finally:
        held = (await read_to_end(proc.stdout)).decode(errors="replace")
        await proc.wait()
    return rc, said, held


async def run_while_held(
    backend: DockerBackend, holder: str, ready: str, command: str, users: tuple[str | None, ...]
) -> dict[str | None, tuple[int | None, str]]:
    """``command`` run as each of ``users`` while ``holder`` (a leased ``sh -c``, killed after)
    runs: it must first print a line starting with ``ready`` (e.g. the name of what it holds)."""
    proc = await start_sh(backend, holder)
    try:
        said = (await proc.stdout.receive()).decode()
        assert said.startswith(ready), said
        return {user: await run_sh(backend, command, user=user) for user in users}
    finally:
        await proc.kill()
        await read_to_end(proc.stdout)
        await proc.wait()


def listing_probe(directory: str, own: str) -> str:
    """A command that prints ``HIT`` for every name it lists in ``directory`` (and each line it
    reads through one), then ``own-ok`` if ``own`` (its own object by name, ``$o``) succeeds."""
    return (
        f"for f in $(ls -A {directory} 2>/dev/null; find {directory} -mindepth 1 2>/dev/null); do "
        f'echo "HIT listed $f"; cat "{directory}/${{f##*/}}" 2>/dev/null | sed "s/^/HIT read /"; done; '
        f"umask 077; o={directory}/own-$$; {own} && echo own-ok"
    )


def listing_problems(said: dict[str | None, tuple[int | None, str]]) -> dict[str | None, str]:
    """The users whose `listing_probe` failed, listed or read something, or missed its own object."""
    return {u: out for u, (rc, out) in said.items() if rc != 0 or "HIT" in out or "own-ok" not in out}


async def unlisted_problems(
    tmp_path: Path, holder: str, ready: str, lister: str, *, reopen: str | None = None
) -> dict[str | None, str]:
    """`listing_problems` of ``lister`` (leased and per-call root) while ``holder`` runs, in a new
    session; with ``reopen`` (a root command that must print ``reopened``), a
    ``root_can_administer`` one where that runs first, then the leased lister alone."""
    require_docker()
    admin = reopen is not None
    async with DockerBackend(config(DEBIAN, root_can_administer=admin), policy(tmp_path)) as backend:
        with anyio.fail_after(60):
            if reopen is not None:
                rc, out = await run_sh(backend, reopen, user="root")
                assert rc == 0 and "reopened" in out, out
            users: tuple[str | None, ...] = (None,) if admin else (None, "root")
            return listing_problems(await run_while_held(backend, holder, ready, lister, users))


#: Counts the processes of uid ``$U`` in the container but docker-init (pid 1, uid 0).
_UID_PROCESSES = (
    'n=0; for d in /proc/[0-9]*; do [ "$d" = /proc/1 ] && continue; [ -e "$d/stat" ] || continue; '
    '[ "$(stat -c %u "$d" 2>/dev/null)" = "$U" ] && n=$((n+1)); done; echo "$n"'
)


async def uid_processes(backend: DockerBackend, uid: str) -> int:
    """How many processes of ``uid`` run in the container, counted as nobody (so none counted is
    the counter), within 60 s. The executor's and docker-init's covered directories (empty since
    round 40) are not processes a command could have left."""
    with anyio.fail_after(60):
        rc, out = await run_sh(backend, _UID_PROCESSES.replace("$U", uid), user="nobody")
    assert rc == 0, out
    return int(out.split()[-1])


def build_image(tag: str, dockerfile: str) -> str:
    """``tag`` built from ``dockerfile`` (no context; its FROM images exist here); the tag."""
    subprocess.run(
        ["docker", "build", "-q", "-t", tag, "-"], input=dockerfile.encode(), capture_output=True, check=True, timeout=180
    )
    return tag
