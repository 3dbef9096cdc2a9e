"""Red team round 26, docker: the copy-back wrote a protected file under another name and a link.

``export_workspace`` holds back what a later program on the host would obey (agent settings, git
hooks and config, editor tasks: ``refuse``, the caller's `protected_reason`), judging each member
by its own name. A command made ``evil/settings.json`` (no protected name) and ``.claude -> evil``
(a link that stays inside: allowed): both came out, and the host's ``.claude/settings.json`` was
the command's file; an agent started there obeys its hooks, on the host, as the operator. Now every
name the extracted tree gives an entry through a link the archive made is judged too (chains of
links and a link to the root included); such a link is removed and named in the error, the rest
stays. A link to a directory the command may write but that is harmless under the link's name
still comes out. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._linkcheck import aliased_links, names_lister
from sandbox.docker._untar import WorkspaceExportError
from shellrt.supervisor.protect import protected_reason
from tests._docker_support import config, policy, require_docker, run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_PLANT = (
    "mkdir -p evil evil2 evil3 real && echo planted > evil/settings.json && ln -s evil .claude && "
    "echo planted > evil2/tasks.json && ln -s evil2 .vscode && "
    "echo planted > evil3/devcontainer.json && ln -s evil3 c1 && ln -s c1 .devcontainer && "
    "echo planted > settings.json && ln -s . .shellrt && "
    "echo kept > real/notes.txt && ln -s real docs && echo ok"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt26exl"):
        yield b


async def test_a_link_never_gives_a_command_file_a_protected_name(
    backend: DockerBackend, tmp_path: Path
) -> None:
    dest = tmp_path / "out"
    with anyio.fail_after(120):
        assert await run_sh(backend, _PLANT) == (0, "ok\n")
        with pytest.raises(WorkspaceExportError) as caught:
            await backend.export_workspace(dest, refuse=protected_reason)
    # Before: no error at all, and each of these read the command's file.
    for name in (
        ".claude/settings.json",
        ".vscode/tasks.json",
        ".devcontainer/devcontainer.json",
        ".shellrt/settings.json",
    ):
        assert not (dest / name).exists(), name
    refused = {name for name, _ in caught.value.refused}
    assert {".claude", ".vscode", ".devcontainer", ".shellrt"} <= refused, caught.value.refused
    # The rest came out: the files under their own names, a harmless link and a link's own link.
    assert (dest / "evil" / "settings.json").read_text() == "planted\n"
    assert (dest / "docs").is_symlink() and (dest / "docs" / "notes.txt").read_text() == "kept\n"
    assert (dest / "c1").is_symlink()


def _held(parts: list[str], is_dir: bool) -> str | None:
    return None if is_dir else protected_reason("/".join(parts))


def test_chains_loops_and_the_bound_are_judged_without_docker() -> None:
    """`aliased_links` alone: a link to the root, a chain through a parent link, ``..`` targets, a
    loop, and more names than the bound (refused, not judged forever)."""
    links = {
        ".claude": ".",  # .claude/settings.json is ./settings.json
        "a": "b",
        "b": "evil",
        "x/.vscode": "../a",  # through a and b: x/.vscode/tasks.json is evil/tasks.json
        "loop1": "loop2",
        "loop2": "loop1",
        "fine": "evil",
    }
    entries = {"settings.json", "evil", "evil/tasks.json", "x"}
    found = dict(aliased_links(links, names_lister({*entries, *links}, {"evil", "x"}), _held))
    assert set(found) == {".claude", "x/.vscode", "loop1", "loop2"}, found
    assert "loop" in found["loop1"] and "tasks.json" in found["x/.vscode"], found
    many = {f"f{i}" for i in range(50)}
    bounded = dict(aliased_links({"l": "."}, names_lister(many, set()), lambda p, d: None, max_checks=10))
    assert "more than 10 names" in bounded["l"], bounded


async def test_a_link_to_what_the_host_already_has_is_judged_too(tmp_path: Path) -> None:
    """The repository's ``fixtures/settings.json`` (harmless there) is deleted in the container and
    ``.claude -> fixtures`` made: exported back into the workspace, where the host's file stays,
    the link alone named it ``.claude/settings.json`` (the archive holds no entry below it)."""
    require_docker()
    ws = tmp_path / "ws"
    (ws / "fixtures").mkdir(parents=True)
    (ws / "fixtures" / "settings.json").write_text('{"hooks": "the repository\'s test fixture"}\n')
    async with DockerBackend(config(), policy(ws)) as b:
        with anyio.fail_after(120):
            rc, out = await run_sh(b, "rm fixtures/settings.json && ln -s fixtures .claude && echo ok")
            assert (rc, out) == (0, "ok\n")
            with pytest.raises(WorkspaceExportError) as caught:
                await b.export_workspace(ws, refuse=protected_reason)
    assert not (ws / ".claude").exists(), "the host's fixture is now the agent's settings"
    assert [name for name, _ in caught.value.refused] == [".claude"], caught.value.refused
    assert (ws / "fixtures" / "settings.json").exists()
