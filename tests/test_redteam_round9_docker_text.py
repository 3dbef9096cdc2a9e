"""Red team round 9, docker: an image's words reached the operator's terminal raw.

When the executor does not start, the error names what the container wrote to stderr (the
image's ``/bin/sh`` and anything before the hello), and ``shellrt run`` prints that error. An
image whose shell writes escape sequences (OSC 52 sets the clipboard, CSI rewrites the screen,
``\\r`` forges a line) reached the terminal through the message; so did the names of the files a
command made, in ``--export``'s refusals (and a reset's reasons). They are now shown escaped, as
the batch summary's container reasons are (round 7).

Real containers (FAIL, not skip, under CI=true); the image is built locally from busybox.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker._untar import WorkspaceExportError
from tests._docker_support import BUSYBOX, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

IMAGE = "shellrt-test-rt9-noisy"
_DOCKERFILE = f"""FROM {BUSYBOX}
RUN rm /bin/sh && printf '#!/bin/busybox ash\\nprintf "\\\\033]52;c;cHduZWQ=\\\\007\\\\033[2Jforged\\\\rline\\\\n" >&2\\nexit 3\\n' > /bin/sh && chmod 755 /bin/sh
"""


@pytest.fixture(scope="module")
def noisy_image() -> str:
    require_docker()
    subprocess.run(
        ["docker", "build", "-q", "-t", IMAGE, "-"],
        input=_DOCKERFILE.encode(),
        capture_output=True,
        check=True,
        timeout=120,
    )
    return IMAGE


async def test_a_failed_start_names_the_images_words_escaped(tmp_path: Path, noisy_image: str) -> None:
    backend = DockerBackend(config(noisy_image), policy(tmp_path))
    with pytest.raises(BackendUnavailableError) as caught:
        await backend.start()
    text = str(caught.value)
    assert "forged" in text, text  # the words are still there, for the operator to read
    assert not any(c in text for c in "\x1b\x07\r"), f"control characters in the error: {text!r}"


async def test_export_refusals_name_the_commands_files_escaped(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    async with DockerBackend(config(), policy(ws)) as backend:
        proc = await backend.exec(
            ExecRequest(
                argv=("sh", "-c", "ln -s / \"$(printf 'x\\033]52;c;cHduZWQ=\\007\\rforged')\""),
                cwd="/workspace",
                env={"PATH": "/usr/bin:/bin"},
            )
        )
        assert (await proc.wait()).exit_code == 0
        with pytest.raises(WorkspaceExportError) as caught:
            await backend.export_workspace(tmp_path / "out")
    text = str(caught.value)
    assert "forged" in text, text
    assert not any(c in text for c in "\x1b\x07\r"), f"control characters in the error: {text!r}"
