"""Round 17, interfaces: ``bypassPermissions`` ran every command on the host, unasked, when
``auto`` found no bubblewrap.

``Runtime()`` (and ``shellrt serve``) default to the sandbox ``auto``: bubblewrap where it works,
else the local backend, which isolates nothing, with a warning in a log. Under
``bypassPermissions`` nothing is asked, so the sandbox is the only boundary; without
bubblewrap (not installed, no user namespaces in this container) the model's ``touch`` outside
the workspace ran as the caller (root here) and only a log line said so. A boundary may be
dropped only when the operator names it: such a session now does not start (it says to make
bubblewrap work, use docker, or name ``local``), and a session ``auto`` started without a
sandbox refuses a later switch to ``bypassPermissions``. Bubblewrap is made unusable by a
``PATH`` without it (the backend's own "not installed" refusal).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError
from shellrt.permissions.governance import InvalidModeError
from shellrt.runtime import Runtime


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with the programs the calls use and no ``bwrap``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "sh", "env", "touch", "id", "cat", "pwd"):
        found = shutil.which(name)
        assert found is not None, name
        os.symlink(found, bin_dir / name)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    return tmp_path


def _touch(target: Path) -> dict[str, object]:
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"touch {target}"}}
    return {"role": "assistant", "content": [use]}


def test_bypass_permissions_does_not_fall_back_to_no_sandbox(no_bwrap: Path) -> None:
    escaped = no_bwrap / "escaped"

    async def main() -> None:
        async with Runtime(no_bwrap / "ws", mode="bypassPermissions", session_dir=no_bwrap / "s") as rt:
            await rt.run(_touch(escaped))

    with pytest.raises(BackendUnavailableError, match="--sandbox local"):
        anyio.run(main)
    assert not escaped.exists()  # ran on the host, outside the workspace, unasked


def test_a_session_auto_started_without_a_sandbox_refuses_bypass_later(no_bwrap: Path) -> None:
    async def main() -> str:
        async with Runtime(no_bwrap / "ws", session_dir=no_bwrap / "s") as rt:
            assert rt.backend is not None and rt.backend.name == "local", rt.warnings  # the warned fall-back
            with pytest.raises(InvalidModeError, match="without isolation"):
                rt.governance.set_mode("bypassPermissions")
            rt.governance.set_mode("acceptEdits")  # other modes still ask for commands
            return str(rt.governance.mode)

    assert anyio.run(main) == "acceptEdits"


def test_local_named_explicitly_still_runs_bypass(no_bwrap: Path) -> None:
    inside = no_bwrap / "ws" / "made"

    async def main() -> None:
        async with Runtime(no_bwrap / "ws", "local", mode="bypassPermissions", session_dir=no_bwrap / "s") as rt:
            await rt.run(_touch(inside))

    anyio.run(main)
    assert inside.exists()  # the operator chose no isolation by name
