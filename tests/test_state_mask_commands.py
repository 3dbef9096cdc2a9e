"""shellrt's per-user state is out of every command's sight, not only below a writable root.

A non-root caller's home is the host view in bwrap: outside the masked secrets it is
readable. A command printed ``~/.local/state/shellrt/sessions/*/transcript.jsonl`` and
``tool-results/`` of every earlier session (MCP answers, fetched pages, what a local
session read), the trust store and the in-flight records. They are masked for commands
now; the Read tool still reads this session's persisted results, and not another's.

Run as root here (the files world-readable, so the sandbox uid could read them but for the
mask) and as uid 65534 (`test_the_state_masks_hold_for_an_unprivileged_caller`, the
caller's own 0700 files, the case that was open).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests import _nonroot
from tests.conftest import require

pytestmark = pytest.mark.anyio

SECRET = "OTHER-SESSION-SECRET-7f3a"
#: What an earlier session and the operator left under the home (relative to it).
STATE_FILES = [
    ".local/state/shellrt/sessions/earlier/transcript.jsonl",
    ".local/state/shellrt/sessions/earlier/tool-results/toolu_1.txt",
    ".local/state/shellrt/inflight/0123.4567.json",
    ".local/state/shellrt/serve/http-8765.token",
    ".config/shellrt/trusted-workspaces.json",
    ".cache/shellrt/priv-0123456789abcdef",
]


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home outside /tmp (bwrap gives commands a private /tmp) holding an earlier session's state."""
    path = Path(tempfile.mkdtemp(prefix="shellrt-statemask-", dir="/var/tmp"))
    path.chmod(0o755)
    for name in (
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "SHELLRT_HOME",
        "SHELLRT_TRUST_STORE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(path))
    for relative in STATE_FILES:
        target = path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'{{"secret": "{SECRET}"}}\n')
    if os.geteuid() == 0:  # readable for the sandbox uid: only the mask may stop it
        for directory, _, files in os.walk(path):
            os.chmod(directory, 0o755)
            for name in files:
                os.chmod(os.path.join(directory, name), 0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _runtime(workspace: Path) -> shellrt.Runtime:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    return shellrt.Runtime(workspace=workspace, sandbox="bwrap", mode="bypassPermissions", settings_files=())


async def _call(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    user = await rt.run(
        [{"type": "tool_use", "id": f"statemask-{os.urandom(5).hex()}", "name": name, "input": tool_input}]
    )
    block: dict[str, Any] = user["content"][0]
    return block


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def test_a_command_cannot_read_other_sessions_or_shellrts_state(home: Path) -> None:
    workspace = home / "project"
    workspace.mkdir()
    reads = "\n".join(f"cat {home / relative} 2>&1" for relative in STATE_FILES)
    async with _runtime(workspace) as rt:
        assert rt.session_dir.is_relative_to(home / ".local/state/shellrt/sessions")
        out = _text(await _call(rt, "Bash", {"command": reads}))
        listing = _text(
            await _call(rt, "Bash", {"command": f"ls -A {home}/.local/state/shellrt {home}/.config/shellrt"})
        )
        grep = _text(
            await _call(rt, "Bash", {"command": f"grep -r {SECRET} {home} 2>/dev/null; echo grep-done"})
        )
    assert SECRET not in out, out
    # Only this session's result directories are shown again (bwrap makes their way in the mask).
    assert not any(n in listing for n in ("earlier", "inflight", "serve", "trusted-workspaces", "priv-")), (
        listing
    )
    assert SECRET not in grep and "grep-done" in grep, grep


async def test_the_read_tool_reads_this_sessions_results_and_not_anothers(home: Path) -> None:
    workspace = home / "project"
    workspace.mkdir()
    async with _runtime(workspace) as rt:
        big = _text(await _call(rt, "Bash", {"command": "seq 1 40000"}))
        path = next(w for w in big.split() if "/tool-results/" in w or "/shell/" in w).strip("().,`'\"")
        assert Path(path).is_relative_to(rt.session_dir), path
        own = await _call(rt, "Read", {"file_path": path, "offset": 39990, "limit": 3})
        other = await _call(rt, "Read", {"file_path": str(home / STATE_FILES[0])})
        listed = _text(await _call(rt, "Bash", {"command": f"tail -n 1 {path}"}))
        written = _text(
            await _call(
                rt,
                "Bash",
                {
                    "command": f"echo forged >> {path} 2>/dev/null && echo WROTE; ln -s /etc/passwd {path}.x 2>/dev/null && echo WROTE; ls {rt.session_dir} 2>&1"
                },
            )
        )
    assert not own.get("is_error") and "39990" in _text(own), own
    assert other.get("is_error") and SECRET not in _text(other), other
    # This session's outputs are shown again to commands, read-only (cat/grep of a path it was given);
    # as root they are root's 0600 files, which the sandbox uid cannot open (Read can).
    if os.geteuid() == 0:
        assert "Permission denied" in listed, listed
    else:
        assert listed.strip() == "40000", listed
    assert "WROTE" not in written and "transcript" not in written, written


def test_the_state_masks_hold_for_an_unprivileged_caller() -> None:
    """The tests above, as uid 65534: the caller's own state is 0700 and its own, so only the mask
    stands between it and a command (the case docs/security.md listed as open)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests above are it)"
    )
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    args = [
        "tests/test_state_mask_commands.py",
        "--deselect",
        "tests/test_state_mask_commands.py::test_the_state_masks_hold_for_an_unprivileged_caller",
    ]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items == 2, summary
