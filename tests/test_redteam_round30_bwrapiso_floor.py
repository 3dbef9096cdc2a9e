"""Red team, round 30 (bwrapiso): a bwrap session on a kernel without Landlock's scopes.

Round 29 (bwrapabs) put each session command in a Landlock domain scoped for abstract unix sockets;
before Landlock ABI 6 (Linux 6.12: Debian 12's 6.1, Ubuntu 22.04's 5.15 and 24.04's 6.8) nothing
is scoped and a background task answers a later command's connect to an abstract name. Only a log
line said so: the runtime's start warnings -- what the person running a session reads, as they read
docker's (round 28 docker2) -- said nothing, no property told a harness, and no setting refused
such a host (docker has ``require_command_isolation``). Failed before: 1 of 1 (no level, no warning,
no refusal). The kernel's ABI is stood in for (``_bwrap_scope.landlock_abi``): this host has 6.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy, _bwrap_scope
from sandbox.bwrap import BwrapBackend
from shellrt.runtime.sandbox_choice import resolve_sandbox
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The workspace, once bubblewrap is known to be here (fails under CI without)."""
    require_bwrap()
    made = tmp_path / "ws"
    made.mkdir()
    return made


async def _started(config: BwrapConfig, policy: SandboxPolicy) -> BwrapBackend:
    backend = BwrapBackend(config, policy)
    await backend.start()
    return backend


async def test_an_unscoped_session_says_so_at_its_start(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = SandboxPolicy(workspace=ws)
    backend, said = await resolve_sandbox("bwrap", policy)  # a session: the zygote
    try:
        assert backend.command_isolation == "full" and backend.isolation_warning is None, said  # type: ignore[attr-defined]
        assert not any("Landlock" in line for line in said), said
    finally:
        await backend.close()

    monkeypatch.setattr(_bwrap_scope, "landlock_abi", lambda: 5)
    for choice in ("bwrap", "auto"):
        backend, said = await resolve_sandbox(choice, policy)
        try:
            assert isinstance(backend, BwrapBackend) and backend.persistent, choice
            assert backend.command_isolation == "abstract-shared", choice
            warned = [line for line in said if "Landlock ABI 5" in line]
            assert len(warned) == 1 and "abstract unix sockets" in warned[0], said
            assert "require_command_isolation" in warned[0] and "persistent=False" in warned[0], warned
        finally:
            await backend.close()
        assert backend.command_isolation is None  # closed
    # One bwrap per command: each command its own network namespace, isolated on any kernel.
    single = await _started(BwrapConfig(persistent=False), policy)
    try:
        assert not single.persistent and single.command_isolation == "full"
        assert single.isolation_warning is None
    finally:
        await single.close()


async def test_require_command_isolation_refuses_an_unscoped_session(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bwrap_scope, "landlock_abi", lambda: 5)
    strict = BwrapConfig(persistent=True, require_command_isolation=True)
    backend = BwrapBackend(strict, SandboxPolicy(workspace=ws))
    with pytest.raises(BackendUnavailableError, match=r"Landlock ABI 5.*persistent=False"):
        await backend.start()
    assert backend._zygote is None and backend.command_isolation is None  # nothing left running
    # What the refusal says to do works: one bwrap per command under the same requirement.
    single = await _started(
        BwrapConfig(persistent=False, require_command_isolation=True), SandboxPolicy(workspace=ws)
    )
    try:
        assert single.command_isolation == "full"
        async with Supervisor(single, session_dir=tmp_path / "s") as sup:
            assert (await sup.run("echo ran", timeout_s=30)).preview == "ran\n"
    finally:
        await single.close()
    # network 'host' shares the host's abstract names whatever the kernel: refused under the setting.
    monkeypatch.setattr(_bwrap_scope, "landlock_abi", lambda: 6)
    host = BwrapBackend(strict, SandboxPolicy(workspace=ws, network="host"))
    with pytest.raises(BackendUnavailableError, match="network 'host'"):
        await host.start()
    assert host._zygote is None
    # A scoped kernel: the strict session starts and runs under its zygote.
    ok = await _started(strict, SandboxPolicy(workspace=ws))
    try:
        assert ok.persistent and ok.command_isolation == "full"
    finally:
        await ok.close()
