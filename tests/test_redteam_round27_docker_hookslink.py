"""Red team round 27, docker: the copy-back gave a command's file a configured hooks dir's name.

``shellrt run --export DEST`` judged what comes out with `protected_reason` (names alone: agent
settings, ``.git/hooks``, git config). A repository whose config names ``core.hooksPath = .husky``
(round 16) runs ``.husky/pre-commit`` as ``.git/hooks/pre-commit``; only `hooks_dir_reason`, which
reads the disk, knows. A command's ``.husky/pre-commit`` and its ``evil/pre-commit`` with a link
``.husky -> evil`` both came out, and the host's next ``git commit`` in DEST ran the command's
script as the operator. Now the export's refusal is both (`export_refusal`). FAIL, not skip, under
CI=true.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._linkcheck import aliased_links, disk_lister
from sandbox.docker._untar import WorkspaceExportError
from shellrt.cli.run import export_refusal
from tests._docker_support import run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_PLANT = (
    "mkdir -p evil .githooks && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > evil/pre-commit && "
    "ln -s evil .husky && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .githooks/pre-push && "
    "mkdir -p real && echo kept > real/notes.txt && ln -s real docs && echo ok"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt27hk"):
        yield b


async def test_a_configured_hooks_dir_is_held_back_by_link_and_by_name(
    backend: DockerBackend, tmp_path: Path
) -> None:
    dest = tmp_path / "out"
    (dest / ".git").mkdir(parents=True)
    # The host repository's config: two hooks directories, one named through an include.
    (dest / ".git" / "config").write_text("[core]\n\thooksPath = .husky\n[include]\n\tpath = more\n")
    (dest / ".git" / "more").write_text("[core]\n\thooksPath = .githooks\n")
    with anyio.fail_after(120):
        assert await run_sh(backend, _PLANT) == (0, "ok\n")
        with pytest.raises(WorkspaceExportError) as caught:
            await backend.export_workspace(dest, refuse=export_refusal(dest))
    # Before: no error, and git ran .husky/pre-commit (the command's, through the link) and
    # .githooks/pre-push (a plain member).
    assert not (dest / ".husky" / "pre-commit").exists()
    assert not (dest / ".githooks" / "pre-push").exists()
    refused = {name for name, _ in caught.value.refused}
    # The link, or the file when the link came first (then its real path is the hooks dir).
    assert ".githooks/pre-push" in refused and refused & {".husky", "evil/pre-commit"}, caught.value.refused
    # The rest came out: a harmless link.
    assert (dest / "docs" / "notes.txt").read_text() == "kept\n"
    # Protected names still are (agent settings): the refusal adds to `protected_reason`.
    assert export_refusal(dest)(".claude/settings.json") is not None
    assert export_refusal(dest)("src/main.py") is None


def test_the_link_itself_is_judged_without_docker(tmp_path: Path) -> None:
    """The link check alone (whatever order the archive had): ``.husky -> evil`` gives
    ``evil/pre-commit`` the hook's name, judged on the disk as the extraction left it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n\thooksPath = .husky\n")
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "pre-commit").write_text("#!/bin/sh\n")
    (tmp_path / ".husky").symlink_to("evil")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "pre-commit").write_text("not a hook here\n")
    (tmp_path / "docs").symlink_to("real")
    refuse = export_refusal(tmp_path)

    def held(parts: list[str], is_dir: bool) -> str | None:
        return None if is_dir else refuse("/".join(parts))

    root = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        found = aliased_links({".husky": "evil", "docs": "real"}, disk_lister(root), held)
    finally:
        os.close(root)
    assert [link for link, _ in found] == [".husky"], found
