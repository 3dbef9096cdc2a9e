"""Red team round 28, docker2: where Landlock was unavailable, commands were silently not isolated.

Round 28 (docker) put each command in a Landlock domain of its own (``priv.c`` ``isolate_command``),
but returned silently where the kernel was older than 5.19, Landlock was off, or the daemon's
seccomp profile refused ``landlock_create_ruleset``: a background task could then read and signal
later commands again and neither the host nor the person running the session was told. The
executor now probes once at start (``probe_isolation``: a child does what a command's helper does
and checks the signal scope holds) and names the level in its hello; the backend reports it
(``DockerBackend.command_isolation``), warns once (log and the session's start warnings, which
``shellrt run``/``serve`` print on stderr) and, under ``DockerConfig.require_command_isolation``,
refuses to start, also when the probe itself failed.

Landlock is made unavailable for real: the container runs under a seccomp profile answering
``ENOSYS`` to the three landlock calls (the backend's own options with that one added; the daemon
takes a profile's JSON in ``SecurityOpt``). A profile answering ``EPERM`` to
``landlock_restrict_self`` alone makes the probe fail. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.api.client
import pytest

from sandbox import BackendUnavailableError
from sandbox.docker import DockerBackend
from shellrt.runtime.sandbox_choice import resolve_sandbox
from tests._docker_support import DEBIAN, config, managed_container_ids, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_ENOSYS, _EPERM = 38, 1
_LANDLOCK = ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"]


def _profile(rules: list[tuple[list[str], int]]) -> str:
    calls = [{"names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": errno} for names, errno in rules]
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": calls})


@pytest.fixture
def seccomp(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Append the profile put in the yielded list (if any) to every container this test creates."""
    chosen: list[str] = []
    real = docker.api.client.APIClient.create_host_config

    def with_profile(self: Any, *args: Any, **kwargs: Any) -> Any:
        if chosen:
            kwargs["security_opt"] = [*kwargs.get("security_opt", []), f"seccomp={chosen[0]}"]
        return real(self, *args, **kwargs)

    monkeypatch.setattr(docker.api.client.APIClient, "create_host_config", with_profile)
    yield chosen


async def test_the_isolation_level_is_reported_and_warned(
    tmp_path: Path, seccomp: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    require_docker()
    # This kernel (6.x, Landlock ABI 6+): the full level, no warning.
    backend, warnings = await resolve_sandbox(config(DEBIAN), policy(tmp_path))
    async with backend:
        assert isinstance(backend, DockerBackend)
        assert backend.command_isolation == "proc+signals"  # before: no such field
        assert backend.isolation_warning is None and warnings == []
    # Landlock refused by the daemon's profile: still runs, told once, level "none".
    seccomp.append(_profile([(_LANDLOCK, _ENOSYS)]))
    with caplog.at_level(logging.WARNING, logger="sandbox.docker"):
        backend, warnings = await resolve_sandbox(config(DEBIAN), policy(tmp_path))
        async with backend:
            assert isinstance(backend, DockerBackend)
            assert backend.command_isolation == "none"
            assert len(warnings) == 1 and "NOT isolated" in warnings[0], warnings
            assert "require_command_isolation" in warnings[0]
            for _ in range(2):  # commands run as before (round 27's level), the warning is not repeated
                rc, out = await run_sh(backend, "echo ok")
                assert (rc, out) == (0, "ok\n")
    said = [r for r in caplog.records if "NOT isolated" in r.getMessage()]
    assert len(said) == 1, said


@pytest.mark.parametrize(
    ("rules", "why"),
    [
        ([(_LANDLOCK, _ENOSYS)], "Landlock is unavailable"),
        ([(["landlock_restrict_self"], _EPERM)], "the probe for it failed"),  # fail closed
    ],
    ids=["landlock-off", "probe-fails"],
)
async def test_require_command_isolation_refuses_to_start(
    tmp_path: Path, seccomp: list[str], rules: list[tuple[list[str], int]], why: str
) -> None:
    require_docker()
    seccomp.append(_profile(rules))
    before = managed_container_ids(owner_pid=os.getpid())
    backend = DockerBackend(config(DEBIAN, require_command_isolation=True), policy(tmp_path))
    try:
        with pytest.raises(BackendUnavailableError) as caught:  # before: no such option
            await backend.start()
    finally:
        await backend.close()
    text = str(caught.value)
    assert "require_command_isolation" in text and why in text and "Linux 5.19" in text, text
    assert managed_container_ids(owner_pid=os.getpid()) <= before  # the container is gone
