"""Red team round 27 (merge), docker: a directory name ending in CR or LF and the session's cwd.

Round 27's supervisor fix ends bash's cwd report with a ``/`` line so a name ending in CR or LF
arrives whole (local and bwrap failed before: ``test_redteam_round27_sup_cwdtail.py``). Docker
held before and after (probed at the merge, 1 of 1 passed on the code before): the executor
reports a cwd only when the command's first line equals the kernel's (round 27 docker,
``priv.c``), so ``cd $'b\\n'`` is not reported (the session stays) and ``cd $'a\\r'`` is
followed whole. This guards that the two fixes keep agreeing.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from shellrt.supervisor import Supervisor
from tests._docker_support import shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_MAKE = "for d in a b c $'a\\r' $'b\\n' $'c\\r\\n\\r'; do mkdir -p \"$d\" && printf %q \"$d\" >\"$d/marker\"; done"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt27cwdtail"):
        yield b


async def test_a_cwd_ending_in_cr_or_lf_never_moves_the_session_to_a_sibling(
    backend: DockerBackend, tmp_path: Path
) -> None:
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    try:
        with anyio.fail_after(120):
            await sup.run(_MAKE, timeout_s=60)
            start = str(sup.cwd)
            for name, real in (("a\\r", "a\r"), ("b\\n", "b\n"), ("c\\r\\n\\r", "c\r\n\r")):
                await sup.run(f"cd $'{name}'", timeout_s=60)
                there = await sup.run("cat marker 2>/dev/null || echo none", timeout_s=60)
                assert there.preview.strip() in (f"$'{name}'", "none"), (name, there.preview, str(sup.cwd))
                assert str(sup.cwd) in (start, f"{start}/{real}"), (name, str(sup.cwd))
                await sup.run(f"cd {start}", timeout_s=60)
            await sup.run("cd b", timeout_s=60)  # a plain name is still followed
            assert str(sup.cwd) == f"{start}/b"
    finally:
        await sup.close()
